/*
 * host_engine.h — runs host kernels: the calling thread drives a set of work
 * items over slot fifos (slots.h) until all are done, polling the transport
 * while it waits, with a deadline and the abort flag checked throughout.
 *
 * A work item is one stream of actions on one lane (fifos whose messages
 * go in order: a ring channel, an algorithm's own connections such as
 * recursive doubling's partners, or the connection to one peer in one
 * direction). Items on the same lane run in issue order; items on different
 * lanes interleave, which is what lets a group of sends and receives, or of
 * collectives, complete without deadlock. An item is done when its last
 * action ran and the transport took all its sends.
 */
#ifndef XCCL_KERNELS_HOST_ENGINE_H
#define XCCL_KERNELS_HOST_ENGINE_H

#include <stdatomic.h>
#include <stdint.h>

#include "lane.h"
#include "slots.h"
#include "trace_ring.h"
#include "xccl.h"

/* How the items of one communicator wait and make the transport move. */
typedef struct {
  double timeout_s;              /* longest an item may go without progress */
  const _Atomic int *abort_flag; /* non-zero: stop now */
  uint64_t spin_ns;              /* how long an idle caller polls before it sleeps */
  int yield;                     /* 1: give the core away between idle polls (more ranks than cores) */
  slot_bell_t *bell;             /* rung by whoever fills recv or frees send slots */
  /* Moves data for the fifos on this thread if it can. Returns 1 if anything moved. */
  int (*progress)(void *ctx);
  /* When set, called instead of sleeping on the bell: waits for the
   * transport (at most timeout_us) and moves data. Returns 1 if anything moved. */
  int (*wait)(void *ctx, int timeout_us);
  void *progress_ctx;
  /* The communicator's XCCL_FAULT context, for sends into shared memory
   * (slot_fifo_send); NULL: none. */
  const fault_ctx_t *fault;
  /* What the items of this environment wait on, for dumps (see
   * kern_state_t); NULL: nobody asks. */
  struct kern_state *state;
  /* Where the time a run spent stalled on its peers is added (ns: from the
   * first poll that found nothing to the move that ended the stall, counted
   * when it ends); NULL: nobody counts, and no clock is read for it. */
  _Atomic uint64_t *wait_ns;
  /* XCCL_TRACE's ring: each burst of actions an item runs (TRACE_STEP) and
   * each stall that ends (TRACE_WAIT) go here, with one clock read per
   * pass and one per burst; NULL: no clock is read for it (a branch per
   * pass and per item polled). */
  trace_ring_t *trace;
} kern_env_t;

/* Why a host kernel stopped early: what it was waiting on, and where. */
typedef enum {
  KERN_FAIL_NONE = 0,
  KERN_FAIL_TIMEOUT,  /* no progress for timeout_s */
  KERN_FAIL_CONN,     /* a fifo was marked failed by the proxy or peer */
  KERN_FAIL_ABORT,    /* abort_flag was raised */
  KERN_FAIL_PROTOCOL, /* the peer's slot did not have the size the schedule expects */
  KERN_FAIL_CHECKSUM  /* XCCL_CHECKSUM: a message's data did not match its CRC32C */
} kern_fail_kind_t;

typedef struct {
  kern_fail_kind_t kind;
  int item;            /* index of the item that failed */
  int peer;            /* the item's peer, -1 when the caller knows it */
  int channel;
  int waiting_on_recv; /* 1: waiting for data from the peer; 0: for room at the peer */
  int action;          /* step of the loop */
  uint64_t loop;       /* loop iteration */
  size_t got_bytes, want_bytes; /* PROTOCOL */
  int got_gpu;                  /* PROTOCOL: the message's data is in GPU memory (a device operation sent it) */
  int conn_result;              /* CONN: the fifo's xcclResult_t */
  uint32_t crc_computed, crc_carried; /* CHECKSUM: over want_bytes of data; step = the fifo's step */
  uint64_t step;                      /* CHECKSUM: the message's step on its fifo; else the step waited for */
  /* CONN: the item of this run that had waited longest when the connection
   * failed, if for half of timeout_s or more (also_ns 0: none). A peer that
   * gave up and closed is often itself behind what this rank waited for. */
  int also_item, also_peer, also_channel, also_recv;
  uint64_t also_ns;
  char msg[SLOT_ERROR_MAX];           /* CONN: the fifo's error text (last: kern_run clears the fields before it and
                                         msg's first byte, not its 256) */
} kern_failure_t;

/*
 * What a communicator is doing, kept current for dumps of its in-flight
 * state (a hung job, XCCL_DUMP_SIGNAL): the operation, written by the
 * caller of kern_run when it starts and ends, and the waits, written by the
 * engine when its items stop making progress (the pass before it sleeps)
 * and cleared when they move again. Never per poll: the fast path does not
 * touch it.
 *
 * One thread writes (the one that runs the communicator's operations); any
 * thread, or a signal handler on the writer's own thread, may read. Every
 * field is atomic and writes are bracketed by `gen` (a sequence lock): odd
 * while a write is under way. A reader copies the fields between two loads
 * of an equal, even gen (kern_state_snapshot); a handler that interrupted
 * the writer sees an odd gen that will not change while it runs, and takes
 * the copy as torn.
 */
#define KERN_STATE_WAITS 8

typedef enum { KERN_STATE_IDLE = 0, KERN_STATE_RUNNING, KERN_STATE_FAILED } kern_run_state_t;

typedef struct {
  _Atomic int32_t item;     /* index of the work item in the run */
  _Atomic int32_t peer;     /* whom it waits on; -1: the ring neighbour (previous for recv, next for send) */
  _Atomic int32_t channel;
  _Atomic int32_t is_recv;  /* 1: data from peer; 0: room at peer (or the transport taking sends) */
  _Atomic int32_t action;   /* step of the loop */
  _Atomic uint64_t loop;
  _Atomic uint64_t step;    /* the fifo step it waits for */
  _Atomic uint64_t since_ns; /* CLOCK_MONOTONIC of its last progress */
} kern_wait_t;

typedef struct kern_state {
  _Atomic uint64_t gen;
  /* The operation (the caller's; in a group, its first on this communicator),
   * in few words: the caller writes them on every call. */
  _Atomic(const char *) op_name; /* static string */
  _Atomic uint64_t seq, count;
  _Atomic uint64_t op_info;     /* kern_op_info() */
  _Atomic uint64_t op_where;    /* root in the low 32 bits, peer in the high (int32_t, -1: none) */
  _Atomic uint64_t done_seq;    /* seq of the last operation that completed */
  /* The engine's. */
  _Atomic uint64_t start_ns;    /* CLOCK_MONOTONIC when kern_run began, set at its first wait; 0 before */
  _Atomic int32_t nwaits;       /* items waiting; the first KERN_STATE_WAITS are in waits; 0 between operations */
  kern_wait_t waits[KERN_STATE_WAITS];
} kern_state_t;

/* A plain copy of a kern_state_t. */
typedef struct {
  int torn; /* the writer was interrupted mid-write: fields may disagree */
  int run_state;
  const char *op_name;
  uint64_t seq, count, done_seq, start_ns;
  int type, redop, algo, root, peer, nops, nwaits;
  struct {
    int item, peer, channel, is_recv, action;
    uint64_t loop, step, since_ns;
  } waits[KERN_STATE_WAITS];
} kern_state_copy_t;

/* op_info: run state (kern_run_state_t), datatype, reduction op, algorithm
 * (-1: none) and operations in the group, 8 bits each but the last. */
static inline uint64_t kern_op_info(int run_state, int type, int redop, int algo, int nops) {
  return (uint64_t)(run_state & 0xff) | (uint64_t)(type & 0xff) << 8 | (uint64_t)(redop & 0xff) << 16 |
         (uint64_t)(algo & 0xff) << 24 | (uint64_t)(uint32_t)nops << 32;
}
static inline uint64_t kern_op_info_with_state(uint64_t info, int run_state) {
  return (info & ~(uint64_t)0xff) | (uint64_t)(run_state & 0xff);
}

/* Brackets the writer's stores (the writer's thread only), which are release
 * stores, read with acquire loads: a reader that sees any of them sees the
 * odd gen before it, so it cannot take a half-written copy for a whole one.
 * (Release and acquire are plain moves on x86, and unlike fences
 * ThreadSanitizer understands them.) */
static inline void kern_state_write_begin(kern_state_t *s) {
  atomic_store_explicit(&s->gen, atomic_load_explicit(&s->gen, memory_order_relaxed) + 1, memory_order_release);
}
static inline void kern_state_write_end(kern_state_t *s) {
  atomic_store_explicit(&s->gen, atomic_load_explicit(&s->gen, memory_order_relaxed) + 1, memory_order_release);
}

/* Copies s into out; async-signal-safe (loads only, a bounded number of
 * tries). */
void kern_state_snapshot(kern_state_t *s, kern_state_copy_t *out);

typedef struct kern_item kern_item_t;

typedef struct {
  /* Runs the next actions whose slots are ready. Returns 1 if one ran, 0 if
   * it must wait, -1 on a protocol error (fail's PROTOCOL fields filled).
   * Sets it->finished after the last action. */
  int (*step)(kern_item_t *it, kern_failure_t *fail);
  /* The fifo the item waits on now, the step it waits for, and whether it
   * is a receive (wait for tail > step) or a send (wait for head + STEPS > step). */
  slot_fifo_t *(*waiting)(kern_item_t *it, uint64_t *step_p, int *is_recv_p);
  /* Optional, for items that send on several fifos: all sends taken by the
   * transport. Without it the engine looks at `sends`. */
  int (*drained)(kern_item_t *it);
  /* Optional, for an item that may wait on something other than a fifo's
   * counters (host_line.h): sleeps until it may have moved, at most
   * timeout_us, and returns 1; 0: it waits on the fifo `waiting` names,
   * which the engine sleeps on as for any item. */
  int (*sleep)(kern_item_t *it, int timeout_us);
} kern_item_ops_t;

struct kern_item {
  const kern_item_ops_t *ops;
  const kern_env_t *env;
  kern_lane_t lane;     /* items on one lane run in order (lane.h) */
  slot_fifo_t *sends;   /* the fifo it sends on (NULL: none): drained before done */
  uint64_t *send_step;
  /* Where it is, for failure messages (peer: whom `waiting` said it waits
   * on, -1 when the caller knows it from the lane): */
  int channel, action, peer;
  uint64_t loop;
  /* The engine's: */
  int finished, done, progressed;
  uint64_t last_progress_ns;
  /* The engine's count of bursts when this item last moved: the clock is
   * read only when every item stalls, so items that time out in one check
   * share a clock; the one with the oldest burst stalled first and names the
   * peer the others ended up waiting behind. */
  uint64_t last_burst;
};

/* The engine's fields of a new item: ops, env and lane, waiting on no peer
 * yet; the rest zero. */
static inline void kern_item_init(kern_item_t *it, const kern_item_ops_t *ops, const kern_env_t *env, kern_lane_t lane) {
  *it = (kern_item_t){.ops = ops, .env = env, .lane = lane, .peer = -1};
}

/* Runs items to completion. xcclSuccess, or the error of the first item
 * that failed with *fail filled in. */
xcclResult_t kern_run(kern_item_t *const *items, int n, kern_failure_t *fail);

#endif
