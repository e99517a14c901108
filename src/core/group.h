/*
 * group.h — operations queued between xcclGroupStart and xcclGroupEnd, and
 * how a group runs: connections it needs are made, then every operation of
 * every communicator in it becomes work items of one host-engine run, so a
 * ring of sends and receives, or several collectives, never deadlock. An
 * operation outside a group is a group of one.
 */
#ifndef XCCL_CORE_GROUP_H
#define XCCL_CORE_GROUP_H

#include "algo.h"
#include "comm.h"
#include "redop.h"

typedef enum { GROUP_COLL, GROUP_SEND, GROUP_RECV } group_kind_t;

typedef struct {
  group_kind_t kind;
  xcclComm_t comm;
  uint64_t seq;     /* the communicator's operation number, for messages */
  coll_args_t coll; /* GROUP_COLL; for SEND/RECV: name, count, type */
  int peer;         /* SEND/RECV */
  void *buf;        /* SEND/RECV */
  size_t bytes;     /* SEND/RECV */
  redop_premul_t premul; /* GROUP_COLL with a PreMulSum op: its scalar (redop.h) */
  size_t scratch;        /* GROUP_COLL, during a launch: its algorithm's scratch_bytes, asked once (group.c) */
} group_op_t;

int coll_has_op(const coll_args_t *a);
int coll_has_root(const coll_args_t *a);
/* "allreduce #3 (count 10 float32 sum) on rank 0", "send #4 (count 10 int8) on rank 1 to rank 2". */
void group_op_describe(const group_op_t *op, char *buf, size_t len);

/* Takes an operation whose arguments were checked: runs it now (no group
 * open on this thread) or queues it for xcclGroupEnd. */
xcclResult_t group_add(const group_op_t *op);
/* The same, called while holding op->comm (comm_acquire): a call outside a
 * group runs without taking the registry lock again. */
xcclResult_t group_add_held(const group_op_t *op);
/* Runs n operations on one communicator now, as one launch, whether or not
 * this thread has a group open: for the library's own operations during
 * init (tune_measure.c), on a communicator not yet handed out. */
xcclResult_t group_run_now(group_op_t *ops, int n);

/* For operations made of several: the queue's length now, and dropping what
 * was queued after it (when a later part is refused, none of it runs). */
int group_mark(void);
/* 1 between xcclGroupStart and its xcclGroupEnd on this thread. */
int group_open(void);
void group_rollback(int mark);

/* The cost model's estimate, in seconds, of the operations queued on this
 * thread since the outermost xcclGroupStart (cost_estimate_s, cost.h). */
double group_estimate_s(void);

#endif
