/*
 * algo.h — the algorithms that run collectives, as one table. Each
 * algorithm is a descriptor (algo_desc_t) saying which collectives it runs,
 * the work it does (which cost.h prices), what a launch of one operation
 * takes and builds, and which connections it needs beyond the ring channels
 * made at init. The tuner
 * (tuning.c) chooses among the descriptors and the group launch (group.c)
 * goes through them; neither names an algorithm.
 *
 * Adding an algorithm: a file algo_<name>.c that defines its descriptor
 * algo_<name>, its entry in XCCL_ALGO_LIST below, and the file in
 * CMakeLists.txt.
 *
 * Contract of the slots, all called on the thread that runs the operation,
 * holding its communicator, never blocking (max_items, scratch_bytes and
 * build are 0 and NULL for pairwise, which runs as sends and receives and
 * is never launched as a collective):
 * - work: only for collectives the algorithm serves, on 2 or more ranks; a
 *   pure function of its arguments (xccl-sim calls it too).
 * - scratch_bytes, then build: once each per operation and launch, with the
 *   same arguments; build's memory is the launch's until kern_run returns.
 * - peers: what the launch connects (comm_connect_p2p, set COMM_P2P_ALGO)
 *   before the communicator's first operation that runs the algorithm; the
 *   connections are kept until the communicator is destroyed, and build may
 *   use them.
 * - op_peers (optional): for an algorithm whose connections depend on the
 *   operation (the tree's on broadcast's and reduce's root), what the launch
 *   connects before each operation, of which only those not yet made count.
 */
#ifndef XCCL_CORE_ALGO_H
#define XCCL_CORE_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "host_engine.h"
#include "host_hier.h"
#include "host_partners.h"
#include "ring_schedule.h"
#include "xccl.h"

struct xcclComm;

/* The algorithms, in table order: X(ENUM, name) gives ALGO_<ENUM> and the
 * descriptor algo_<name>. ALGO_RING serves every collective but all-to-all
 * and runs when there is nothing to choose from (one rank); all-to-all is
 * pairwise's (its sends and receives, enqueue.c) or bruck's. The tuner
 * prefers the earlier entry when two cost the same. */
#define XCCL_ALGO_LIST(X) \
  X(RING, ring)           \
  X(RD, rd)               \
  X(DIRECT, direct)       \
  X(TREE, tree)           \
  X(RAB, rab)             \
  X(PAT, pat)             \
  X(HIER, hier)           \
  X(PAIRWISE, pairwise)   \
  X(BRUCK, bruck)         \
  X(LINE, line)

/* An algorithm: its index in algo_table. */
typedef enum {
#define ALGO_ENUM_ENTRY(E, n) ALGO_##E,
  XCCL_ALGO_LIST(ALGO_ENUM_ENTRY)
#undef ALGO_ENUM_ENTRY
      ALGO_COUNT
} algo_t;

/* A collective's arguments as the call's one preparation step (op.h) checked
 * and completed them: everything below reads the derived fields instead of
 * working them out again. */
typedef struct {
  const char *name; /* "allreduce", for messages */
  coll_kind_t coll;
  const void *sendbuff;
  void *recvbuff;
  size_t count;                  /* the schedule's count (see host_ring.h) */
  size_t send_elems, recv_elems; /* what this rank reads and writes; 0 = unused here */
  xcclDataType_t type;
  xcclRedOp_t op; /* xcclNumOps when the collective has none */
  int root;       /* -1 when the collective has none */
  algo_t algo;    /* chosen at preparation (tuning.h) */
  size_t esize;   /* bytes of one element of type */
  size_t bytes;   /* count * esize: the size the tuner priced and every rank agrees on */
  int nchannels;  /* ring channels the collective uses (ring_nchannels_for of bytes) */
} coll_args_t;

/* The socket transport on loopback as measured here with xccl-perf (8-byte
 * all-reduce on 2 ranks: ~60 us for the ring's 2 steps, ~33 us for
 * recursive doubling's 1; 16 MiB: ~2.2 GB/s bus bandwidth): a network
 * link's per-step latency and bandwidth (tuning.c's tuning_links). They
 * decide crossovers, not absolute times. */
#define ALGO_ALPHA_S 30e-6
#define ALGO_BETA_BPS 1.5e9

/* A message sent beside others to other peers in one step costs this much
 * of a step (its issue, not the latency it shares with them): pairwise's
 * k-1 sends, hier's G-1 inside a host (algo_pairwise.c says how it was
 * measured). */
#define ALGO_MSG_ISSUE (1.0 / 8)

/* The classes of link a step may cross. */
typedef enum {
  ALGO_LINK_LOCAL, /* between two ranks of one host: shared memory where it is used, else the network */
  ALGO_LINK_NET,   /* between hosts */
  ALGO_NLINKS
} algo_link_class_t;

/* A link: the latency of one step and the bytes per second one rank moves. */
typedef struct {
  double alpha_s, beta_bps;
} algo_link_t;

/* What one operation of an algorithm does (its descriptor's `work`): the
 * latency steps the busiest rank waits through and the bytes it moves, per
 * class of link. cost.h's cost_price turns it into seconds. */
typedef struct {
  double steps[ALGO_NLINKS];
  double bytes[ALGO_NLINKS]; /* or what costs as much on that link (direct's single copy reads slower) */
  int ok;     /* 0: it cannot run there (priced HUGE_VAL) */
  int forced; /* a setting makes it run whatever its price (direct under XCCL_SHM_COPY=single or zero) */
  /* 1: every link carries its bytes at the same time (a ring's pieces go
   * round all of its hops at once), so the slowest class's bytes bound the
   * time; 0: one class after the other (levels, phases), their times add. */
  int pipelined;
} algo_work_t;

/* Lanes (lane.h) of an operation, counted from the communicator's first
 * lane in the launch (kern_lane_comm). Items on one lane run in issue order;
 * all of these sit below the point-to-point lanes (KERN_LANE_P2P). */
#define ALGO_LANE_CHANNEL 0 /* + channel: an algorithm's items on the ring channels, one per channel */
/* Every algorithm's items on the COMM_P2P_ALGO connections: the algorithms
 * share those fifos, so their operations must run one after the other. */
#define ALGO_LANE_PEERS 900
#define ALGO_LANE_PEERS2 901 /* items on the COMM_P2P_ALGO2 connections */
_Static_assert(ALGO_LANE_CHANNEL + 64 <= ALGO_LANE_PEERS && ALGO_LANE_PEERS2 < KERN_LANE_P2P,
               "channel lanes, algorithm lanes and point-to-point lanes do not meet");

#define ALGO_MAX_PEERS 64

/* Peers an algorithm sends to and receives from, per set of connections:
 * set[0] on COMM_P2P_ALGO, which every algorithm shares (their items run on
 * ALGO_LANE_PEERS, one after the other), set[1] on COMM_P2P_ALGO2, for an
 * algorithm that runs two streams at once that may share a pair of ranks
 * (the tree's second tree, on ALGO_LANE_PEERS2). */
#define ALGO_PEER_SETS 2
typedef struct {
  int nsend, nrecv;
  int send[ALGO_MAX_PEERS], recv[ALGO_MAX_PEERS];
} algo_peer_set_t;
typedef struct {
  algo_peer_set_t set[ALGO_PEER_SETS];
} algo_peers_t;

/* The CPUs a rank may run on, as the cost model tells them apart: the
 * lowest CPU of its affinity and how many it has (count 0: unknown). Ranks
 * of one host with the same pair share those CPUs; different pairs are
 * taken as disjoint, as launchers bind (a core, or a socket, each). */
typedef struct {
  int32_t first, count;
} algo_cpus_t;

/* What the cost model knows of where a communicator's ranks are, the same on
 * every rank (from the peer info all-gathered at init). */
typedef struct {
  /* Each class's link (tuning_site_hosts, from tuning_links; XCCL_TUNE=measure replaces link[flat]), ranks
   * taking turns on too few cores already in (cpu_share). */
  algo_link_t link[ALGO_NLINKS];
  int flat;          /* the class every step of a one-level algorithm (all but hier) is priced on:
                        ALGO_LINK_LOCAL where every rank is on one host, in one PID namespace as one user, and
                        shared memory is allowed (direct_setup), else ALGO_LINK_NET */
  int direct;        /* the ranks may read each other's memory: ALGO_DIRECT can run */
  int direct_forced; /* XCCL_SHM_COPY=single or zero: ALGO_DIRECT for whatever it serves */
  int zero_copy;     /* XCCL_SHM_COPY is not single: map peers' xcclMemAlloc buffers */
  int line;          /* ALGO_LINE can run: every rank on one host, all connected by shared memory, no
                        XCCL_CHECKSUM, at most LINE_MAX_RANKS (algo_direct.c's direct_setup) */
  int zero_agreed;   /* per operation: its buffers lie in windows that every rank registered in
                        xcclMemAlloc memory, so every rank's can be mapped (reg.c) */
  size_t peer_slot;  /* slot bytes of the algorithms' own connections (XCCL_ALGO_CHUNK_SIZE); 0: the
                        ring's */
  /* The hosts (tuning_site_hosts), for ALGO_HIER; all 0 and NULL: unknown,
   * as one host. */
  int nhosts;
  int local_min, local_max;         /* ranks on the host with the fewest, the most (local_max: hier's shards) */
  int hier_owned;                   /* the most shards one rank owns (local_max / local_min, rounded up) */
  double hier_local_frac;           /* the most a rank receives inside its host in hier's (1), over the buffer */
  int hier_peers_ok;                /* no rank needs more than ALGO_MAX_PEERS connections for hier */
  unsigned hier_inter;              /* hier's (2) shapes XCCL_HIER_INTER allows: HIER_INTER_RING | _TREE */
  int blocked; /* two or more hosts of local_max ranks each, host h holding ranks h*G .. h*G+G-1 (G =
                  local_max): the one-level algorithms' steps can be told apart by level (algo_work_levels) */
  int nics;    /* NICs a host's ranks send through at once (the plan's rails; 0 or 1: one) */
  double cpu_share; /* ranks per core on the most crowded host (>= 1; 0 or 1: a core each), already in
                       link[] (tuning_site_hosts) */
  const hier_layout_t *layout;      /* the communicator's (freed with it) */
} algo_site_t;

typedef struct {
  const char *name; /* as XCCL_ALGO spells it */
  unsigned colls;   /* the collectives it serves: bit 1u << coll */
  /* The work of coll of `bytes` (the schedule's count times the element
   * size) on nranks ranks with slots of slot bytes at site, into *work_p,
   * which arrives zeroed (cost_work, cost.h): the one statement of what the
   * algorithm does, which the tuner, xcclGroupSimulateEnd and xccl-sim
   * price alike. ok stays 0 where it cannot run there. */
  void (*work)(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site, algo_work_t *work_p);
  int max_items; /* work items build writes at most */
  /* Scratch one operation's launch needs (build's `scratch`). */
  size_t (*scratch_bytes)(const coll_args_t *a, const struct xcclComm *comm);
  /* Lays out the operation's work items in scratch (aligned as malloc's,
   * not zeroed), on lanes lane0 + ALGO_LANE_*, and writes pointers to them
   * to items; returns how many. a must outlive the items. */
  int (*build)(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items);
  /* The COMM_P2P_ALGO(2) connections it needs on a communicator of nranks,
   * seen from rank, into a zeroed *peers_p (site: where the ranks are, as
   * the communicator's). algo_peers_none: none, it runs on the ring
   * channels. */
  void (*peers)(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p);
  /* Optional; NULL: every operation needs `peers`, made once (a bit in
   * comm->algo_connected). Otherwise the COMM_P2P_ALGO(2) connections
   * operation a needs, as `peers` gives them; a NULL: every operation's at
   * once (what a communicator whose ranks share a process makes at init),
   * which `peers` must give too. The launch connects what is not made yet
   * (`ready` at both ends alike, so both ranks of a pair agree) before each
   * operation. */
  void (*op_peers)(const coll_args_t *a, int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p);
  /* Optional: operation a alone (no group open, comm held) as one item laid
   * out in mem (ALGO_LONE_BYTES, 64-byte aligned) from what the
   * communicator keeps between calls, so the launch builds no tables
   * (group.c). NULL where it cannot: its connections are not all made yet,
   * or one is not in shared memory (the proxy thread would have to run), or
   * XCCL_LONE=0. */
  kern_item_t *(*lone)(const coll_args_t *a, struct xcclComm *comm, void *mem);
  /* Optional: what the algorithm keeps on a communicator between calls, in
   * comm->algo_state[its algo_t]: state_bytes zeroed bytes made with the
   * communicator, before its ranks meet (algo_states_make), and freed with
   * it after state_free (optional) has released what they point to. 0: it
   * keeps nothing, and its slot is NULL. */
  size_t state_bytes;
  void (*state_free)(void *state);
  /* Optional: comm's connections were released (xcclCommSuspend) and will
   * be made again, elsewhere: drops what the state keeps that points into
   * them (fifos), keeping the rest. */
  void (*state_conns_gone)(void *state);
  /* The most bytes (the schedule's count times the element size) one
   * operation may have, 0: any. Forced by XCCL_ALGO, larger operations are
   * the cost model's to place (tuning_pick). */
  size_t max_bytes;
} algo_desc_t;

/* The most an algorithm's lone item (algo_desc_t.lone) takes. */
#define ALGO_LONE_BYTES 1024

/* A one-level algorithm's work: steps and bytes, all on site->flat. */
static inline void algo_work_flat(algo_work_t *w, const algo_site_t *site, double steps, double bytes) {
  w->ok = 1;
  w->steps[site->flat] = steps;
  w->bytes[site->flat] = bytes;
}

/* G, the ranks of each host, where a one-level algorithm's work can be
 * priced per level (site->blocked, between hosts): 0 where it cannot. */
static inline int algo_levels_g(const algo_site_t *site) {
  return site->flat == ALGO_LINK_NET && site->blocked && site->nhosts >= 2 && site->local_max >= 2 ? site->local_max
                                                                                                     : 0;
}

/* The NICs a host's G ranks send through at once (1 .. G). */
static inline double algo_rails(const algo_site_t *site) {
  int n = site->nics > 1 ? site->nics : 1;
  return n < site->local_max ? n : site->local_max > 0 ? site->local_max : 1;
}

/* A one-level algorithm's work where the steps inside a host and those
 * between hosts are counted apart: local_steps and local_bytes on the
 * host's link, net_* on the network; net_bytes as the bytes one NIC
 * carries (the caller divides a host's by the rails it uses). */
static inline void algo_work_levels(algo_work_t *w, double local_steps, double local_bytes, double net_steps,
                                    double net_bytes, int pipelined) {
  w->ok = 1;
  w->steps[ALGO_LINK_LOCAL] = local_steps;
  w->bytes[ALGO_LINK_LOCAL] = local_bytes;
  w->steps[ALGO_LINK_NET] = net_steps;
  w->bytes[ALGO_LINK_NET] = net_bytes;
  w->pipelined = pipelined;
}

/* 1 if hier's phase (2) runs as trees for an all-reduce of `bytes` with
 * slots of `slot` bytes on site (algo_hier.c): the cheaper of the two by
 * hier's model where site->hier_inter allows both, the ring on a tie. A
 * function of the size and the site only, so every rank (and xccl-sim)
 * makes the same choice. */
int algo_hier_inter_tree(size_t bytes, size_t slot, const algo_site_t *site);

/* Indexed by algo_t; every slot filled. */
extern const algo_desc_t *const algo_table[ALGO_COUNT];

#define ALGO_DESC_DECL(E, n) extern const algo_desc_t algo_##n; /* algo_<name>.c */
XCCL_ALGO_LIST(ALGO_DESC_DECL)
#undef ALGO_DESC_DECL

/* The `peers` of an algorithm that needs no connections of its own. */
void algo_peers_none(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p);

/* The name of a (as XCCL_ALGO spells it), "?" when it is none. */
const char *algo_name(algo_t a);
/* 1 if a serves coll. */
int algo_serves(algo_t a, coll_kind_t coll);
/* The algorithms' own connections of set (0: COMM_P2P_ALGO, 1:
 * COMM_P2P_ALGO2) of comm, for build: fifo[p] and steps[p] send to rank p,
 * fifo[k + p] and steps[k + p] receive from it (k ranks; NULL where not
 * connected). */
void algo_peer_fifos(struct xcclComm *comm, int set, slot_fifo_t **fifo, uint64_t **steps);
/* For an algorithm whose one item exchanges with partners on set 0 (rd,
 * rab): the bytes of scratch its arguments take, and the arguments of
 * all-reduce a on comm laid out in mem (that many bytes, aligned as
 * malloc's, kept until the item is done). */
size_t algo_partner_args_bytes(const struct xcclComm *comm);
const partner_args_t *algo_partner_args(const coll_args_t *a, struct xcclComm *comm, void *mem);
/* What such an algorithm keeps for its lone item (algo_desc_t.lone), in
 * its state: the partner arguments, and whether it can never run lone. */
typedef struct {
  partner_args_t *args; /* NULL until made (algo_lone_args) */
  int off;              /* it cannot run lone here (XCCL_LONE=0, or a partner not in shared memory) */
} algo_lone_t;
/* At a call while lone->args is NULL: the partner arguments of all-reduce
 * a, kept in lone->args from the first call on which algo's connections are
 * made, where those to and from every rank in peers[0..n) are shared memory
 * (the kernel moves all the data, no proxy) and XCCL_LONE allows it;
 * lone->off set, with an INFO line naming the partner, where they never
 * will be. NULL: take the group launch. Later calls take lone->args with
 * algo_lone_set; algo_lone_free releases them (the state's state_free). */
partner_args_t *algo_lone_args(const coll_args_t *a, struct xcclComm *comm, algo_t algo, const int *peers, int n,
                               algo_lone_t *lone);
void algo_lone_free(algo_lone_t *lone);
static inline void algo_lone_set(partner_args_t *pa, const coll_args_t *a) {
  pa->sendbuff = a->sendbuff, pa->recvbuff = a->recvbuff;
  pa->count = a->count, pa->type = a->type, pa->op = a->op;
}
/* Makes comm->algo_state (algo_desc_t.state_bytes): xcclSystemError when
 * out of memory, the slots made so far left for algo_states_free, which
 * frees them all (any made, any NULL). */
xcclResult_t algo_states_make(struct xcclComm *comm);
void algo_states_free(struct xcclComm *comm);
/* comm's connections were released: no algorithm's is made any more
 * (algo_connected cleared), and each state drops what points into them. */
void algo_conns_gone(struct xcclComm *comm);
/* A `peers` set of both directions with each of the n ranks in s->send. */
void algo_peer_set_both(algo_peer_set_t *s, int n);
/* The connections a needs on comm for operation op (NULL: for every
 * operation) that are not made yet (none once made). */
void algo_peers_missing(const struct xcclComm *comm, algo_t a, const coll_args_t *op, algo_peers_t *peers_p);
/* The slot bytes a's messages travel in: ring_slot on the ring channels,
 * peer_slot (when not 0) on the algorithms' own connections. */
size_t algo_slot(algo_t a, size_t ring_slot, size_t peer_slot);
/* Connections in all sets of p. */
int algo_peers_count(const algo_peers_t *p);
/* Makes the connections a needs on comm for operation op (NULL: for every
 * operation) that are not made yet, every set; collective over the peers
 * involved (comm_connect_p2p), which ask for the same connections: every
 * rank connects its collectives' in their (common) order. */
xcclResult_t algo_connect(struct xcclComm *comm, algo_t a, const coll_args_t *op);
/* Adds peer to s (both directions) unless it is there; 0 when s is full. */
int algo_peer_set_add(algo_peer_set_t *s, int peer);

#endif
