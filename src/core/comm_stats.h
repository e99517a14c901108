/*
 * comm_stats.h — what a communicator counts for XCCL_STATS_FILE, and its
 * place among the metrics' sources (src/observe/stats.h).
 *
 * comm->stats is NULL unless XCCL_STATS_FILE is set: then the enqueue path
 * pays one branch per call and nothing else. When set, each call adds one
 * to its (collective, algorithm) counter with a plain relaxed add (one
 * thread issues a communicator's operations), the engine adds the time it
 * stalled (kern_env_t's wait_ns), and a failure records its reason and
 * peer and rewrites the file at once. Bytes are not counted here: the fifos
 * already count them (comm_peer_bytes_on).
 */
#ifndef XCCL_CORE_COMM_STATS_H
#define XCCL_CORE_COMM_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "comm.h"
#include "host_engine.h"
#include "op_record.h"
#include "stats.h"

struct comm_stats {
  _Atomic uint64_t ops[COMM_STATS_NOPS][ALGO_COUNT + 1];
  _Atomic uint64_t wait_ns; /* kern_env_t's wait_ns points here */
  _Atomic uint64_t errors, timeouts;
  _Atomic int fail_noted; /* the first failure's reason and peer are set */
  int fail_kind;          /* its kern_fail_kind_t, KERN_FAIL_NONE when it came without one */
  int fail_peer;          /* the peer it names, -1 when none */
  stats_source_t *source;
};

/* One more of c (a single writer's counter). */
static inline void comm_stats_bump(_Atomic uint64_t *c) {
  atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Once comm is ready (the end of init): when XCCL_STATS_FILE is set, its
 * counters, its source (labelled with comm_id, as its dumps are) and the
 * proxy's tick that rewrites the file. Without memory it runs uncounted. */
void comm_stats_start(struct xcclComm *comm, uint64_t comm_id);
/* At destroy or abort, before anything it reads goes: its last numbers
 * stay in the file. Safe when comm_stats_start never ran. */
void comm_stats_stop(struct xcclComm *comm);
/* Hooks the file's periodic rewrite to comm->proxy, a new one
 * (xcclCommResume); nothing when the counters are off. */
void comm_stats_proxy(struct xcclComm *comm);
/* A call on comm returned res (not success): counted. */
void comm_stats_error(struct xcclComm *comm);
/* What the engine saw when an operation on comm failed (peer: whom the
 * failure names, -1 when none), noted before comm_fail so that the file it
 * writes has it; the first failure's is kept. */
void comm_stats_note(struct xcclComm *comm, const kern_failure_t *f, int peer);
/* comm_fail's: comm failed with res (a timeout is counted) and the file is
 * rewritten now, showing the failure. */
void comm_stats_failed(struct xcclComm *comm, xcclResult_t res);

#endif
