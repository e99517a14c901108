/*
 * comm.h — the communicator: its struct, its handle (acquire, release,
 * record) and its failure (comm_fail). What init, planning and connecting do
 * with it is declared beside them: registry.h, comm_plan.h, connect.h,
 * algo_direct.h, reg.h.
 */
#ifndef XCCL_CORE_COMM_H
#define XCCL_CORE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "algo.h"
#include "bootstrap.h"
#include "config.h"
#include "error.h"
#include "host_p2p.h"
#include "host_rd.h"
#include "host_ring.h"
#include "net.h"
#include "proxy.h"
#include "ring_schedule.h"
#include "slots.h"
#include "transport.h"
#include "xccl.h"

#define XCCL_MAX_CHANNELS 32
#define COMM_HOST_BYTES 64
#define COMM_REFUSAL_BYTES 240
#define COMM_NAME_BYTES 64
#define COMM_ALGO_BYTES 128 /* config->algo's words */
#define COMM_BUSID_BYTES 24

/* What each rank tells the others at init (bootstrap all-gather). */
typedef struct {
  int32_t rank;
  uint32_t pid;
  uint32_t uid;       /* user it runs as */
  uint64_t pidns;     /* PID namespace (inode of /proc/self/ns/pid), 0 when unknown */
  uint64_t host_hash; /* host name + network namespace: same value = same host */
  char host[COMM_HOST_BYTES];
  int32_t numa;                 /* NUMA domain the process runs on, -1 when unknown */
  algo_cpus_t cpus;             /* the CPUs the process may run on (its affinity), for the cost model */
  char busid[COMM_BUSID_BYTES]; /* PCI bus id of the CUDA device it drives, "" none (comm_cuda_busid) */
  uint64_t chunk_size;          /* this rank's XCCL_CHUNK_SIZE: its slots (equal on every rank: a shared setting) */
  uint64_t algo_hash;           /* FNV-1a of its config->algo, lower-cased (0: none): equal on every rank */
  config_shared_t shared;       /* the settings every rank must share (S entries of config.h) */
  /* A rank whose own settings or machine refuse it (a malformed XCCL_ALGO,
   * XCCL_NET=ib without a device...) still joins, so that every rank fails
   * at once with its reason instead of waiting for it: */
  /* Where a peer on this host reads probe_value to learn whether it may read
   * this process's memory (process_vm_readv; algo_direct.c). */
  uint64_t probe_addr, probe_value;
  int32_t trace;                    /* XCCL_TRACE is set: it takes part in the clock-offset exchange */
  int32_t refused;                  /* the xcclResult_t it failed with, 0 when it did not */
  char refusal[COMM_REFUSAL_BYTES]; /* its sentence, cut to fit */
} comm_peer_info_t;

/* The user's sends and receives, the algorithms' two sets (algo.h), and
 * the one-sided calls' (rma.h: every pair, made at the first window). */
enum { COMM_P2P_USER = 0, COMM_P2P_ALGO = 1, COMM_P2P_ALGO2 = 2, COMM_P2P_RMA = 3, COMM_P2P_SETS = 4 };

/* One direction of a point-to-point connection, made when first used. */
typedef struct {
  slot_fifo_t *fifo; /* conn's, once ready */
  uint64_t step;
  _Atomic int ready; /* stored last, after fifo and conn: a thread that reads it (the metrics) sees them */
  transport_conn_t conn;
} comm_p2p_t;

typedef struct {
  slot_fifo_t *send; /* to next */
  slot_fifo_t *recv; /* from prev */
  int next, prev;    /* this channel's ring neighbours (each channel has its own ring, issue 24) */
  uint64_t send_step, recv_step;
  transport_conn_t send_conn, recv_conn; /* whose fifos send and recv are, once connected */
} comm_channel_t;

/* The device path's state of a communicator (src/cuda), made on its first
 * device launch; NULL in a build without CUDA and until then. */
typedef struct cuda_comm cuda_comm_t;

/*
 * What the observers (in-flight dumps, XCCL_STATS_FILE's counters, XCCL_TRACE's
 * timeline: comm_dump.c, comm_stats.c, comm_trace.c, a layer above run) are
 * told, as a table of hooks: the communicator and run layers call through
 * comm->obs and never name an observer's function, so the observers may read
 * everything below them while nothing below depends on them
 * (src/core/layers.txt). Init lays the observers' table (comm_observe_v1,
 * comm_observe.h) on every communicator before anything can fail; every
 * slot is filled. Each hook runs on the calling thread, must not block, and
 * is safe on a communicator whose observers never started (comm->dump,
 * comm->stats, comm->trace NULL).
 */
struct group_op; /* op_record.h's group_op_t */
typedef struct comm_obs_v1 {
  /* A call on comm returned an error (comm_record, comm live). */
  void (*error)(struct xcclComm *comm);
  /* comm failed with res (comm_fail, after its peers were told): the files show it now. */
  void (*failed)(struct xcclComm *comm, xcclResult_t res);
  /* A call of op (coll_kind_t or comm_stats_op_t) run by algo was accepted;
   * called only while comm->stats is set (op_record.h's comm_count_op). */
  void (*count_op)(struct xcclComm *comm, int op, int algo);
  /* The operations of comm among ops[0..n-1] wait for their connections
   * to be made, until connect_end. */
  void (*connect_begin)(struct xcclComm *comm, const struct group_op *ops, int n);
  void (*connect_end)(struct xcclComm *comm);
  /* A launch failed with f: before comm_fail, what the engine saw (peer: whom
   * it names on comm, -1 when none); after it, the record and the dump
   * (here 1 when it happened on comm, msg its sentence). */
  void (*fail_seen)(struct xcclComm *comm, const kern_failure_t *f, int peer);
  void (*op_failed)(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg);
  /* The operations of comm among ops[0..n-1] ran from t0 until now; called
   * only while comm->trace is set. */
  void (*ran)(struct xcclComm *comm, const struct group_op *ops, int n, uint64_t t0);
} comm_obs_v1_t;

struct xcclComm {
  int rank, nranks;
  int next, prev; /* channel 0's ring neighbours (logs and dumps; each channel has its own) */
  /* The planner's rings (topo_plan_join, issue 24): ring[c * nranks + i] is
   * the rank at position i of channel c, ring_pos[c * nranks + r] rank r's
   * position in it; comm_ring / comm_ring_pos read them. */
  int *ring;
  int *ring_pos;
  bootstrap_t *bs;
  uint64_t job; /* the bootstrap id's job: names this communicator in dumps, stats and grow ids */
  const xccl_net_ops_v1_t *net;
  uint8_t net_key[NET_KEY_BYTES]; /* the network transport's key (XCCL_TLS), from the bootstrap secret */
  proxy_t *proxy;
  int nchannels;
  int rails; /* the NICs each host's channels go through (the plan's, the fewest over hosts; 0: none known) */
  int chan_dev[XCCL_MAX_CHANNELS]; /* net device each channel receives by (its listener) and p2p uses (net_select.h) */
  int chan_send_dev[XCCL_MAX_CHANNELS]; /* net device each channel sends by: its host's NIC out where it leaves the host
                                         */
  comm_channel_t *channels;
  comm_peer_info_t *peers;
  /* The host layout (host_hier.h: hosts told apart by the peers' host_hash,
   * numbered in order of their lowest rank, each host's ranks in rank
   * order): made once, as soon as the peer info is all-gathered
   * (comm_hosts_make), and read by whatever asks which ranks share a host. */
  const hier_layout_t *hosts;
  /* Point-to-point connections per peer, in separate sets so that an
   * algorithm's messages never interleave with the user's sends. */
  comm_p2p_t *p2p_send[COMM_P2P_SETS], *p2p_recv[COMM_P2P_SETS];
  slot_bell_t bell;             /* the calling thread sleeps on it while a collective waits */
  kern_env_t env;               /* how host kernels on this comm wait and progress */
  int algo_forced[COLL_NKINDS]; /* XCCL_ALGO, -1 where not forced */
  int check;                    /* XCCL_CHECK */
  unsigned algo_connected;      /* bit 1u << algo_t: its COMM_P2P_ALGO connections are made (algo.h) */
  /* The answers the call's preparation step keeps between calls (op.c's
   * op_pick and coll_in_windows), made at the first call. */
  struct op_memo *_Atomic op_memo;
  /* What each algorithm keeps between calls (algo_desc_t.state_bytes), its
   * own type in its own file; NULL for one that keeps nothing. */
  void *algo_state[ALGO_COUNT];
  _Atomic int abort_flag;
  _Atomic int busy; /* API calls in progress on this comm */
  /* Sticky: an operation failed; the comm must be destroyed. Set once, by
   * comm_fail (the calling thread, or the CUDA watcher), after
   * fail_msg: a reader that sees it non-zero reads a finished fail_msg. */
  _Atomic xcclResult_t failed;
  _Atomic int fail_claimed;
  char fail_msg[ERR_MSG_MAX]; /* what that failure said */
  uint64_t seq;               /* operations issued (collectives, sends and receives) */
  fault_ctx_t fault;          /* what XCCL_FAULT matches: rank= is rank, or for xcclCommShrink's comm its parent's */
  double timeout_s;
  cuda_comm_t *_Atomic cuda;
  pthread_mutex_t err_lock;
  char last_error[ERR_MSG_MAX];
  /* reduction ops and registrations (issue 16) */
  struct comm_reg *regs;      /* xcclCommRegister's records, newest first (reg.h); under reg.c's lock */
  struct xcclWindow *windows; /* xcclCommWindowRegister's windows, newest first (reg.h); likewise */
  uint64_t windows_made;      /* windows registered so far: the next one's id, the same on every rank (reg.c) */
  _Atomic int rma_connected;  /* the COMM_P2P_RMA set connects every pair (reg.c, at the first window) */
  struct comm_rma *_Atomic rma; /* the one-sided calls' state (rma.c), made at the first; NULL before */
  /* lifecycle (issue 16) */
  _Atomic int life;                 /* comm_life_t: what the handle takes (comm_acquire_in) */
  _Atomic xcclResult_t init_result; /* xcclInProgress while a background init runs, then its result */
  _Atomic int revoked;              /* set by xcclCommRevoke before it stops the calls in flight: their errors say so */
  int blocking;                     /* of its config: what xcclCommSplit's NULL config inherits */
  char name[COMM_NAME_BYTES];       /* config->commName, "" when none */
  char algo_text[COMM_ALGO_BYTES];  /* config->algo, "" when none (XCCL_ALGO): what a NULL-config split inherits */
  int cuda_dev;                     /* the CUDA device init made current (xcclCommInitAll's devlist), -1 when none */
  pthread_mutex_t init_lock;        /* serialises joins of init_thread */
  pthread_t init_thread;
  pid_t caller_tid;   /* the thread that created it (XCCL_CPU_BIND binds that one, comm_bind_cpu) */
  int init_running;   /* init_thread started and not joined yet (under init_lock) */
  bs_id_t init_id;    /* what the background init joins; wiped when it ends */
  int shares_process; /* another of its ranks runs in this process (threads): see comm_group_connect_shared */
  /* Collectives that read peers' buffers in place (issue 17, algo_direct.c) */
  algo_site_t site;               /* what the cost model knows of where the ranks are */
  unsigned site_gen;              /* bumped by every comm_site_edit: answers weighed on an older site are stale */
  _Atomic int windows_shared;     /* windows registered with every rank's in xcclMemAlloc memory (reg.c) */
  _Atomic uint64_t windows_gen;   /* bumped whenever a window comes or goes (reg.c) */
  struct dump_slot *dump;         /* what it is doing, for in-flight state dumps (comm_dump.h); last: off the hot lines */
  struct comm_stats *stats;       /* XCCL_STATS_FILE's counters (comm_stats.h); NULL when it is unset */
  struct comm_trace *trace;       /* XCCL_TRACE's ring and clock offset (comm_trace.h); NULL when it is unset */
  const comm_obs_v1_t *obs;       /* the observers' hooks (above), set by comm_alloc */
  /* xcclCommSuspend with XCCL_SUSPEND_MEM released the connections (and the
   * proxy) until xcclCommResume makes them again (suspend.c). */
  int conns_released;
  unsigned released_algos; /* algo_connected then: resume connects them again */
  _Atomic int resuming; /* a thread is in xcclCommSuspend or xcclCommResume */
};

/* comm's site, to change: the tuner's kept answer (op.c's op_pick) was
 * weighed on the old one and goes. Every write to comm->site goes through
 * here. */
static inline algo_site_t *comm_site_edit(struct xcclComm *comm) {
  comm->site_gen++;
  return &comm->site;
}

/* 1 when ranks a and b of comm share a host (comm->hosts). */
static inline int comm_same_host(const struct xcclComm *comm, int a, int b) {
  return comm->hosts->host_of[a] == comm->hosts->host_of[b];
}

/* Channel c's ring (nranks entries, position -> rank) and rank r's place in it. */
static inline const int *comm_ring(const struct xcclComm *comm, int c) {
  return comm->ring + (size_t)c * (size_t)comm->nranks;
}
static inline int comm_ring_pos(const struct xcclComm *comm, int c, int r) {
  return comm->ring_pos[(size_t)c * (size_t)comm->nranks + (size_t)r];
}

/* What a live handle takes (issue 16). Only READY takes operations. */
typedef enum {
  COMM_READY = 1,
  COMM_INITIALIZING = 2, /* a background init runs (non-blocking config, or init inside a group) */
  COMM_INIT_FAILED = 4,  /* that init failed: init_result and last_error say why */
  COMM_FINALIZED = 8,
  COMM_REVOKED = 16,
  COMM_SUSPENDED = 32, /* xcclCommSuspend until xcclCommResume (suspend.c) */
  COMM_ANY = 63
} comm_life_t;

/* Finds comm among the live communicators and marks a call in progress.
 * xcclInvalidArgument with a message for NULL, destroyed or aborted
 * handles. Every successful acquire is paired with comm_release. */
xcclResult_t comm_acquire(xcclComm_t comm);
void comm_release(xcclComm_t comm);
/* comm_acquire for a handle in one of the states of `states` (comm_life_t
 * bits); in another: xcclInvalidUsage saying why (initializing, its init
 * failed, finalized, revoked). comm_acquire takes COMM_READY only. */
xcclResult_t comm_acquire_in(xcclComm_t comm, unsigned states);
/* Like comm_acquire, but records no error: 1 if live (and acquired), in any state. */
int comm_acquire_quiet(xcclComm_t comm);

/* Copies this thread's last error into comm (when it is live) and returns res. */
xcclResult_t comm_record(xcclComm_t comm, xcclResult_t res);

/* "rank 3 (host h)" for messages. */
const char *comm_peer_desc(const struct xcclComm *comm, int peer, char *buf, size_t len);

/* Hash of host name and network namespace (XCCL_HOSTID overrides later). */
uint64_t comm_host_hash(char *host_p, size_t len);

/* 1 when this build has the CUDA device path, for xccl-info. */
int comm_cuda_built(void);
/* xcclCommCuDevice's answer: -1 without CUDA or a device. */
int comm_cuda_device(const struct xcclComm *comm);

/* An operation failed half-done: the connections are out of step, so the
 * comm becomes unusable (its first failure, res and msg, is kept; later ones
 * leave it as it is) and its peers are told at once (network connections
 * shut, shared-memory fifos marked). Any thread. */
void comm_fail(struct xcclComm *comm, xcclResult_t res, const char *msg);

/* The same, counting only the connections through transport tr (NULL:
 * every one). Any thread: it only loads the fifos' counters. */
void comm_peer_bytes_on(struct xcclComm *comm, int peer, const xccl_transport_v1_t *tr, uint64_t *sent_p,
                        uint64_t *recv_p);

#endif
