/*
 * comm_dump.h — in-flight state dumps: which operation each communicator of a
 * rank is in, and whom it waits on, written to a file when an operation
 * fails with a timeout or a broken connection, and on XCCL_DUMP_SIGNAL.
 * `xccl-stuck DIR` reads the dumps of all ranks and names the rank (or link)
 * that everyone waits on.
 *
 * Where: XCCL_DUMP_DIR (default /tmp: it exists and is writable on every
 * Linux host and outlives the process; "none" or empty: no dumps), one file
 * per communicator and rank, DIR/xccl-<comm id>-r<rank>.dump, written under
 * a temporary name and renamed, so a reader never sees half a file; a later
 * dump of the same communicator and rank replaces it.
 *
 * XCCL_DUMP_SIGNAL=USR1 (a name, with or without SIG, or a number; default 0:
 * off): on that signal every communicator of the process writes its dump. The
 * handler writes the files itself, with nothing but atomic loads, open(2),
 * write(2) and rename(2): no thread to start, and it works whatever the
 * process's other threads hold (a lock in malloc or stdio). A handler that
 * was installed before is called after it; the signal's default action
 * (USR1: terminate) is replaced.
 *
 * The format (version 1), one record per line; a record is a keyword and
 * then name=value fields separated by single spaces (values have no spaces
 * and no '='), except `error`, whose text runs to the end of the line. Lines
 * starting with '#' are comments. Readers ignore records and fields they do
 * not know (later versions may add some). Times are seconds with 9 decimals;
 * `monotonic` values are CLOCK_MONOTONIC of the writing host, `realtime`
 * values CLOCK_REALTIME.
 *
 *   xccl-dump version=1                                      always first
 *   process host=H pid=P reason=R realtime=T monotonic=T     R: signal, timeout, error; T: when written
 *   comm id=HEX16 rank=R nranks=N prev=P next=Q              the ring neighbours
 *   state run=S done=SEQ waits=N torn=0|1                    S: idle, running, failed; done: last
 *                                                            operation completed; N: items waiting
 *   op name=NAME seq=SEQ count=C type=T redop=O algo=A root=R peer=P nops=K started=T
 *                                                            the operation in progress (run=running,
 *                                                            failed); redop, algo: "-" where none;
 *                                                            root, peer: -1 where none; K: operations
 *                                                            in its group; started: monotonic, 0 until
 *                                                            the operation first waits
 *   wait peer=P dir=D channel=C step=S loop=L action=A item=I since=T since_realtime=T
 *                                                            one per waiting item (at most 8): D recv
 *                                                            (data from P) or send (room at P); since:
 *                                                            its last progress; channel=-1: the
 *                                                            connection to P is being set up
 *   fail kind=K peer=P dir=D channel=C step=S loop=L action=A item=I
 *                                                            why the operation stopped (K: timeout,
 *                                                            conn, abort, protocol, checksum; other,
 *                                                            without the rest: another communicator
 *                                                            of its group failed)
 *   error TEXT                                               the error message
 *   peer rank=P pid=N host=H                                 ranks named above
 *   end                                                      always last: the file is whole
 */
#ifndef XCCL_CORE_COMM_DUMP_H
#define XCCL_CORE_COMM_DUMP_H

#include <stdint.h>

#include "comm.h"
#include "group.h"

#define DUMP_FORMAT_VERSION 1

/* Gives comm its state record (comm->dump, comm->env.state) and makes it
 * visible to XCCL_DUMP_SIGNAL; installs the handler on the first call. Call
 * once comm's peers, ring and rank are known. comm_id names the
 * communicator's files (the same on every rank). Fails only when out of
 * memory. */
xcclResult_t dump_register(struct xcclComm *comm, uint64_t comm_id);
/* Takes the record away (waits for a signal handler reading it on another
 * thread, at most a second). Safe when dump_register never ran or failed. */
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

/* Parses an XCCL_DUMP_SIGNAL value: 0 and *sig_p = the signal (0: off), or
 * -1 with a sentence in why. */
int dump_parse_signal(const char *text, int *sig_p, char *why, size_t whylen);

#endif
