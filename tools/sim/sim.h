/*
 * sim.h — xccl-sim's event engine and its schedule table.
 *
 * A modelled cluster: `hosts` hosts of `gpus` ranks each (rank = host *
 * gpus + gpu). Inside a host every rank has one port to the NVLink fabric,
 * between hosts one NIC per GPU (rail). Every port is full duplex: a
 * direction (tx or rx) carries one message at a time, and a message holds
 * its sender's tx and its receiver's rx from the moment both are free for
 * bytes / bandwidth, then arrives one latency later. Messages that cross a
 * busy direction queue behind it in the order they were sent.
 *
 * A schedule (sim_sched_t) replays one of xccl's algorithms over the
 * engine: it keeps per-rank state, sends with sim_send when the project's
 * own schedule says a message may go, and is told of each arrival through
 * deliver. Reductions and copies take no time.
 *
 * The slot window: each connection has c.window slots (XCCL_STEPS of
 * slots.h; 0: unlimited). A schedule sends only while fewer than window of
 * its messages on that connection are unconsumed (sim_room), and when a
 * receiver consumes a message it frees the slot with sim_credit, which the
 * sender learns one link latency later (a credit event: e->credit set).
 *
 * Adding an algorithm: a file sim_<name>.c defining `const sim_sched_t
 * sim_<name>` and one entry in SIM_SCHED_LIST.
 */
#ifndef XCCL_TOOLS_SIM_H
#define XCCL_TOOLS_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "algo.h"
#include "ring_schedule.h"
#include "slots.h"

/* The algorithms xccl-sim replays, in output order; X(name) is the
 * schedule sim_<name>, named as XCCL_ALGO spells the algorithm. */
#define SIM_SCHED_LIST(X) \
  X(ring)                 \
  X(rd)                   \
  X(tree)                 \
  X(rab)                  \
  X(pat)                  \
  X(hier)                 \
  X(pairwise)             \
  X(bruck)

/* One arrival: deliver's argument. */
typedef struct {
  double t;
  uint64_t seq; /* ties broken in send order: deterministic */
  int32_t dst;  /* the schedule's index of the receiver (a rank, or a ring position) */
  int32_t src;  /* the sender's rank */
  int32_t tag;  /* the schedule's: which stream of the receiver it feeds */
  uint32_t bytes;
  int credit;   /* 1: not a message but a freed slot, from src (the consumer) to its sender dst */
} sim_ev_t;

/* The modelled cluster (sim_main.c fills it from the flags and --topo's file). */
typedef struct {
  int hosts, gpus, nranks;
  int nchannels;           /* ring channels of the communicator (rails) */
  double nvl_bps, nvl_lat; /* a GPU's NVLink port, per direction: bytes/s and seconds */
  double nic_bps, nic_lat; /* a NIC */
  int nics;                /* NICs per host (<= gpus): NIC n carries channel n, n + nics, ... */
  int window;              /* slots per connection (XCCL_STEPS), 0: unlimited */
  double msg_s, local_msg_s; /* a sender's own time per message between hosts and inside one (--msg-us,
                                --local-msg-us), its messages one after another; 0: none */
  double cores;              /* cores per host (--cores; 0: a core per rank). With f = gpus / cores > 1
                                every latency gains (f - 1) TUNING_HANDOVER_S and every bandwidth is
                                divided by f, as the tuner prices ranks taking turns (tuning.c) */
} sim_cluster_t;

typedef struct sim {
  sim_cluster_t c;
  /* The operation. */
  coll_kind_t coll;
  int root;                   /* broadcast's and reduce's root rank */
  size_t bytes, count, esize; /* the schedule's count (per rank block for all-gather, reduce-scatter) */
  size_t ring_slot, peer_slot; /* XCCL_CHUNK_SIZE, XCCL_ALGO_CHUNK_SIZE */
  int symmetric;               /* run one host's ranks and fold the next host onto it (sim_ring.c) */
  const algo_site_t *site;     /* what the tuner knows of the cluster (sim_site_make) */
  /* Progress. */
  double now, end;
  uint64_t nmsgs, ndone, expect; /* messages sent; items finished of expect */
  double net_bytes;              /* bytes sent between hosts */
  /* Link directions: when each is next free. nvl_*: per rank; nic_*: per
   * host * gpus + NIC. */
  double *nvl_tx, *nvl_rx, *nic_tx, *nic_rx;
  double *busy; /* [sender]: when it is done issuing its messages so far (msg_s) */
  sim_ev_t *heap;
  size_t nheap, capheap;
  uint64_t seq;
  void *state; /* the schedule's */
} sim_t;

typedef struct {
  const char *name; /* as XCCL_ALGO spells it */
  /* 1 if it can run the reduced instance of one host (s->symmetric);
   * NULL: it never folds. */
  int (*can_fold)(const sim_t *s);
  /* Messages a run of s's operation sends (an estimate, to choose the method). */
  double (*msgs)(const sim_t *s);
  /* Makes the per-rank state in s->state and sets s->expect; 0 on success,
   * -1 (with a message on stderr) when memory runs out. */
  int (*setup)(sim_t *s);
  /* At time 0: every rank starts. */
  void (*start)(sim_t *s);
  void (*deliver)(sim_t *s, const sim_ev_t *e);
  void (*teardown)(sim_t *s);
} sim_sched_t;

#define SIM_SCHED_DECL(n) extern const sim_sched_t sim_##n;
SIM_SCHED_LIST(SIM_SCHED_DECL)
#undef SIM_SCHED_DECL

/* Sends `bytes` from rank src to rank dst now, delivered to the schedule's
 * index `to` with tag. nic: the NIC index (of both hosts) when the two are
 * on different hosts; -1: the point-to-point rule of connect.c's
 * comm_p2p_dev, the NIC of channel net_p2p_channel(src, dst). */
void sim_send(sim_t *s, int src, int dst, int to, int tag, size_t bytes, int nic);
/* sim_send, but the message waits `delay` seconds before it takes the links
 * (a handshake), and takes rx_rank's receive side instead of dst's (a folded
 * replay receives on the host it runs; dst still says which kind of link). */
void sim_send_via(sim_t *s, int src, int dst, int rx_rank, int to, int tag, size_t bytes, int nic, double delay);
/* Rank `from` consumed a message of the connection from rank to_rank: a
 * credit event for the schedule's index `to` with tag, one latency of the
 * link between them later. Nothing when the window is unlimited. */
void sim_credit(sim_t *s, int from, int to_rank, int to, int tag);
/* May a connection with `sent` messages of which `freed` were consumed take
 * one more? */
static inline int sim_room(const sim_t *s, uint32_t sent, uint32_t freed) {
  return s->c.window <= 0 || sent - freed < (uint32_t)s->c.window;
}

/* One connection between two ranks over the algorithms' own fifos
 * (COMM_P2P_ALGO), as one end counts it: messages arrived and not consumed
 * (in), messages sent (sent) and, of those, consumed at the other end
 * (freed). rd, rab and hier keep one per partner (or level) and move a piece
 * over it with the three calls below, the same way for every schedule. */
typedef struct {
  uint32_t in, sent, freed;
} sim_conn_t;

/* Can a piece move now: a receive has a message in, a send a free slot? */
static inline int sim_conn_ready(const sim_t *s, const sim_conn_t *cn, int is_recv) {
  return is_recv ? cn->in > 0 : sim_room(s, cn->sent, cn->freed);
}
/* Moves it (sim_conn_ready said so): rank r consumes a message from peer
 * and frees its slot there, or sends `bytes` to peer, on the NIC of
 * net_p2p_channel (sim_send's -1) or `nic`; the event goes to the
 * schedule's index `peer` with tag. */
static inline void sim_conn_take(sim_t *s, sim_conn_t *cn, int r, int peer, int tag, int is_recv, size_t bytes,
                                 int nic) {
  if (is_recv) {
    cn->in--;
    sim_credit(s, r, peer, peer, tag);
  } else {
    cn->sent++;
    sim_send(s, r, peer, peer, tag, bytes, nic);
  }
}
/* Both: 1 if the piece moved, 0 if it waits. */
static inline int sim_conn_move(sim_t *s, sim_conn_t *cn, int r, int peer, int tag, int is_recv, size_t bytes) {
  if (!sim_conn_ready(s, cn, is_recv)) return 0;
  sim_conn_take(s, cn, r, peer, tag, is_recv, bytes, -1);
  return 1;
}
/* An event on the connection: a credit frees a slot, a message is one in. */
static inline void sim_conn_arrive(sim_conn_t *cn, const sim_ev_t *e) {
  if (e->credit)
    cn->freed++;
  else
    cn->in++;
}

/* One item of s->expect finished now. */
void sim_finish(sim_t *s);

/* Runs sched on s (cluster and operation set, the rest zero): returns 0 and
 * the operation's time in s->end, or -1 (with a message) when it could not
 * run or stopped with items not finished. Frees what it made. */
int sim_run(sim_t *s, const sim_sched_t *sched);

/* xccl-sim --topo (sim_topo.c): what one host of the cluster takes from a
 * topology file, every host being that machine. */
typedef struct {
  int file_gpus;       /* GPUs in the file */
  int gpus;            /* GPUs per host: the file's first `gpus` (all unless --gpus said fewer) */
  int nchannels;       /* the planner's channels for a job across hosts */
  int nics;            /* distinct NICs those channels use (rails); 0: the file has none */
  double nic_bps;      /* the slowest of them, bytes/s per direction (0 without NICs) */
  double local_bps;    /* a GPU's link inside the host, bytes/s per direction (0: one GPU) */
  char local_kind[16]; /* "NVLink", or the path kind of the narrowest GPU pair ("PIX", "SYS"...) */
  char nic_names[256]; /* the rail NICs, comma-separated (truncated) */
} sim_topo_t;
/* Reads path (hwloc or NCCL XML) into *out; gpus > 0 takes the file's first
 * gpus GPUs, 0 all. 0 on success; -1 with one sentence on stderr when the
 * file does not load, has no GPU or fewer than gpus. */
int sim_topo_read(const char *path, int gpus, sim_topo_t *out);

static inline int sim_host(const sim_t *s, int rank) { return rank / s->c.gpus; }
/* The site of c's ranks (algo.h), with c's links, into *site_p: what
 * xccl's tuner would know of them at init (tuning_site_hosts). 0 on
 * success; -1 when out of memory or XCCL_HIER_INTER is not valid (the
 * reason in xcclGetLastError). site_p->layout is then the caller's
 * (sim_site_free, which frees it). sim_site.c. */
int sim_site_make(const sim_cluster_t *c, size_t peer_slot, algo_site_t *site_p);
void sim_site_free(algo_site_t *site);

/* The host hash of a modelled rank, as the peer info carries one: what
 * tuning_site_hosts and hier_layout_make tell hosts apart by. */
static inline uint64_t sim_host_hash(int gpus, int rank) { return 0x9e3779b97f4a7c15ull * (uint64_t)(rank / gpus + 1); }

#endif
