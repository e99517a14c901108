/*
 * op_record.h — an operation as the run layer hands it on: the record
 * (group_op_t) every layer above the algorithms reads, and the few stores a
 * launch makes into the engine's state record (kern_state_t, which dumps
 * read) and the observers' counters. Below the engine's driver (group.h)
 * and the observers (comm_dump.h, comm_trace.h), which both include it, so
 * that neither includes the other (src/core/layers.txt).
 */
#ifndef XCCL_CORE_OP_RECORD_H
#define XCCL_CORE_OP_RECORD_H

#include <stdatomic.h>
#include <stdint.h>

#include "algo.h"
#include "clock.h"
#include "comm.h"
#include "redop.h"

typedef enum { GROUP_COLL, GROUP_SEND, GROUP_RECV } group_kind_t;

typedef struct group_op {
  group_kind_t kind;
  xcclComm_t comm;
  uint64_t seq;     /* the communicator's operation number, for messages */
  coll_args_t coll; /* GROUP_COLL; for SEND/RECV: name, count, type */
  int peer;         /* SEND/RECV */
  void *buf;        /* SEND/RECV */
  size_t bytes;     /* SEND/RECV */
  redop_premul_t premul; /* GROUP_COLL with a PreMulSum op: its scalar (redop.h) */
  size_t scratch;        /* GROUP_COLL, during a launch: its algorithm's scratch_bytes, asked once (group.c) */
  uint64_t user_tag;     /* the caller's tag for observers (op_user_tag when the call was made), 0: none */
} group_op_t;

/* The tag this thread's next calls carry into their records (group_op_t's
 * user_tag; the trace shows it): set around one call by libnccl.so.2's
 * nccl*Config (NCCL's userProfilerTag) and back to 0 after. Defined in
 * enqueue.c. */
extern _Thread_local uint64_t op_user_tag;

/* What a call is, as xccl_operations_total's collective label: the
 * collectives of coll_kind_t, then those made of sends and receives and the
 * sends and receives themselves. */
typedef enum {
  COMM_STATS_GATHER = COLL_NKINDS,
  COMM_STATS_SCATTER,
  COMM_STATS_ALLTOALLV,
  COMM_STATS_SEND,
  COMM_STATS_RECV,
  COMM_STATS_NOPS
} comm_stats_op_t;

/* The algorithm label of what runs as sends and receives ("p2p"): one past
 * the algorithm table. */
#define COMM_STATS_P2P ALGO_COUNT

/* A call of op (coll_kind_t or comm_stats_op_t) run by algo (algo_t, or
 * COMM_STATS_P2P) was accepted: counted when comm has counters
 * (XCCL_STATS_FILE); otherwise one branch. */
static inline void comm_count_op(struct xcclComm *comm, int op, int algo) {
  if (comm->stats) comm->obs->count_op(comm, op, algo);
}

/* The calling thread starts, and then has completed, the operations of comm
 * among ops[0..n-1] (a group; the record names the first). A few stores,
 * inline: they run on every call, whose fast path takes a third of a
 * microsecond. */
static inline void dump_op_begin(struct xcclComm *comm, const group_op_t *ops, int n) {
  kern_state_t *s = comm->env.state;
  const group_op_t *op = ops;
  int nops = 1;
  if (n > 1 || ops->comm != comm) { /* a group: its first operation on comm */
    op = NULL, nops = 0;
    for (int i = 0; i < n; i++)
      if (ops[i].comm == comm) op = op ? op : &ops[i], nops++;
    if (!op) return;
  }
  const coll_args_t *a = &op->coll;
  int ring = op->kind == GROUP_COLL; /* a->op is xcclNumOps, a->root -1 where the collective has none */
  uint64_t info =
      kern_op_info(KERN_STATE_RUNNING, (int)a->type, ring ? (int)a->op : -1, ring ? (int)a->algo : -1, nops);
  uint64_t where = (uint32_t)(ring ? a->root : -1) | (uint64_t)(uint32_t)(ring ? -1 : op->peer) << 32;
  kern_state_write_begin(s);
  atomic_store_explicit(&s->op_name, a->name, memory_order_release);
  atomic_store_explicit(&s->seq, op->seq, memory_order_release);
  atomic_store_explicit(&s->count, a->count, memory_order_release);
  atomic_store_explicit(&s->op_info, info, memory_order_release);
  atomic_store_explicit(&s->op_where, where, memory_order_release);
  kern_state_write_end(s);
}

/* completed 0: they did not run to the end (refused, or failed: see
 * dump_op_failed, whose record stays). */
static inline void dump_op_end(struct xcclComm *comm, const group_op_t *ops, int n, int completed) {
  kern_state_t *s = comm->env.state;
  uint64_t info = atomic_load_explicit(&s->op_info, memory_order_relaxed);
  if ((info & 0xff) != KERN_STATE_RUNNING) return;
  uint64_t last_seq = atomic_load_explicit(&s->done_seq, memory_order_relaxed);
  for (int i = 0; i < n && completed; i++)
    if (ops[i].comm == comm && ops[i].seq > last_seq) last_seq = ops[i].seq;
  kern_state_write_begin(s);
  atomic_store_explicit(&s->op_info, kern_op_info_with_state(info, KERN_STATE_IDLE), memory_order_release);
  atomic_store_explicit(&s->done_seq, last_seq, memory_order_release);
  if (!completed) atomic_store_explicit(&s->nwaits, 0, memory_order_release);
  kern_state_write_end(s);
}

/* The clock when any of ops[0..n-1]'s communicators traces, else 0. */
static inline uint64_t comm_trace_clock(const group_op_t *ops, int n) {
  for (int i = 0; i < n; i++)
    if (ops[i].comm->trace) return clock_ns();
  return 0;
}

#endif
