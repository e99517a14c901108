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
#include "op_record.h"
#include "redop.h"


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

/* xcclGroupEnd's hook (outermost end): waits for every blocking-config init
 * this thread started inside the group; the first failure, with its
 * sentence, or xcclSuccess (group_init.c). */
xcclResult_t comm_group_inits_finish(void);
/* xcclGroupEnd's hook before the group's operations run: the user's
 * point-to-point connections they need on communicators that share this
 * process with another of their ranks are made first, one thread per such
 * communicator, since one thread driving several ranks could not make them
 * one communicator after another (each waits for a peer that the same
 * thread drives). ops: the group's n group_op_t. xcclSuccess when there are none (group_init.c). */
xcclResult_t comm_group_connect_shared(const void *ops, int n);
/* A blocking-config init this thread started inside its open group: waited
 * for by the outermost xcclGroupEnd (comm_group_inits_finish). */
xcclResult_t group_inits_add(xcclComm_t comm);

/* The cost model's estimate, in seconds, of the operations queued on this
 * thread since the outermost xcclGroupStart (cost_estimate_s, cost.h). */
double group_estimate_s(void);

#endif
