/*
 * comm_dump.h — a communicator's in-flight state record: which operation it
 * is in and whom it waits on, kept current by the calls below (the caller
 * and the engine's kern_state_t), collected into src/observe/dump.h's
 * dump_info_t and written as JSON there when an operation fails with a
 * timeout or a broken connection, and on XCCL_DUMP_SIGNAL (the observe
 * layer's watcher thread asks for every registered record). The format, the
 * files and the signal path are documented in src/observe/dump.h.
 */
#ifndef XCCL_CORE_COMM_DUMP_H
#define XCCL_CORE_COMM_DUMP_H

#include <stdint.h>

#include "comm.h"
#include "dump.h"
#include "group.h"

/* Gives comm its state record (comm->dump, comm->env.state) and makes it
 * visible to XCCL_DUMP_SIGNAL; the first call in the process reads the dump
 * settings (dump_start). Call once comm's peers, ring and rank are known.
 * comm_id names the communicator's files (the same on every rank). Fails
 * only when out of memory. */
xcclResult_t dump_register(struct xcclComm *comm, uint64_t comm_id);
/* Takes the record away (after a dump of it under way on the watcher thread
 * ends). Safe when dump_register never ran or failed. */
void dump_unregister(struct xcclComm *comm);

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

/* The operations of comm among ops[0..n-1] wait for their connections to
 * be made (the first use of a peer): the record names those peers, with
 * channel -1, until dump_connect_end. */
void dump_connect_begin(struct xcclComm *comm, const group_op_t *ops, int n);
void dump_connect_end(struct xcclComm *comm);

/* The operation failed: f is the kernel's failure, here 1 when it happened on
 * this communicator (0: on another of the group), msg the error sentence.
 * Records the failure and, for a timeout or a connection error, writes the
 * dump and logs its path at WARN. */
void dump_op_failed(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg);

#endif
