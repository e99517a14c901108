/*
 * comm_observe.c — the observers behind comm_obs_v1_t: each hook hands on
 * to the dump, stats and trace functions, in the order they were called
 * from the run layer before the table existed (stats before dumps on a
 * failure, so that the file a dump writes has the reason).
 */
#include "comm_observe.h"

#include "comm_dump.h"
#include "comm_stats.h"
#include "comm_trace.h"

static void obs_error(struct xcclComm *comm) { comm_stats_error(comm); }

static void obs_failed(struct xcclComm *comm, xcclResult_t res) {
  comm_stats_failed(comm, res); /* the metrics show it now, before anyone destroys it */
  comm_trace_failed(comm);      /* and the timeline up to the failure */
}

static void obs_count_op(struct xcclComm *comm, int op, int algo) { comm_stats_bump(&comm->stats->ops[op][algo]); }

static void obs_connect_begin(struct xcclComm *comm, const group_op_t *ops, int n) {
  dump_connect_begin(comm, ops, n);
}

static void obs_connect_end(struct xcclComm *comm) { dump_connect_end(comm); }

static void obs_fail_seen(struct xcclComm *comm, const kern_failure_t *f, int peer) { comm_stats_note(comm, f, peer); }

static void obs_op_failed(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg) {
  dump_op_failed(comm, f, here, msg);
}

static void obs_ran(struct xcclComm *comm, const group_op_t *ops, int n, uint64_t t0) {
  comm_trace_ops(comm, ops, n, t0);
}

const comm_obs_v1_t comm_observe_v1 = {
    .error = obs_error,
    .failed = obs_failed,
    .count_op = obs_count_op,
    .connect_begin = obs_connect_begin,
    .connect_end = obs_connect_end,
    .fail_seen = obs_fail_seen,
    .op_failed = obs_op_failed,
    .ran = obs_ran,
};
