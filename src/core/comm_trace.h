/*
 * comm_trace.h — what a communicator records for XCCL_TRACE, and when its
 * timeline is written (src/observe/trace.h has the format and the file).
 *
 * comm->trace is NULL unless XCCL_TRACE is set: then a launch pays one
 * branch per operation, the engine one per pass and per item it polls
 * (kern_env_t's trace) and the proxy one load per pass. When set, a launch
 * reads the clock twice and puts one TRACE_COLL event per operation in the
 * communicator's ring; the engine and the proxy add theirs (host_engine.h,
 * proxy.h). At init every tracing rank measures its clock's offset to rank
 * 0's over the bootstrap (the round trip with the smallest time of a few);
 * ranks whose XCCL_TRACE differs from rank 0's learn it from the peer info
 * and skip it, so nobody waits. The file is written when the communicator
 * fails, and again at destroy or abort.
 */
#ifndef XCCL_CORE_COMM_TRACE_H
#define XCCL_CORE_COMM_TRACE_H

#include <stdint.h>

#include "clock.h"
#include "comm.h"
#include "op_record.h"
#include "trace.h"

struct comm_trace {
  trace_ring_t *ring;
  uint64_t comm_id;
  int offset_known;
  int64_t offset_ns; /* this clock minus rank 0's */
  uint64_t uncertainty_ns;
};

/* Before the allgather of peer info: whether this rank traces. */
static inline void comm_trace_announce(comm_peer_info_t *me) { me->trace = trace_enabled(); }

/* Once comm is ready (the end of init, every rank together): when
 * XCCL_TRACE is set, its ring, its clock offset to rank 0, and the engine's
 * and proxy's pointers to the ring. Without memory it runs untraced; a
 * failed exchange leaves the offset unknown (a WARN). */
void comm_trace_start(struct xcclComm *comm, uint64_t comm_id);

/* ops[0..n-1] ran from t0 until now: a TRACE_COLL event for each of
 * comm's, when comm traces. */
void comm_trace_ops(struct xcclComm *comm, const group_op_t *ops, int n, uint64_t t0);

/* comm failed: its timeline so far is written now. */
void comm_trace_failed(struct xcclComm *comm);
/* At destroy or abort, after the proxy stopped: the file, then the ring
 * goes. Safe when comm_trace_start never ran. */
void comm_trace_stop(struct xcclComm *comm);
/* Points comm->proxy, a new one (xcclCommResume), at the timeline; nothing
 * when XCCL_TRACE is unset. */
void comm_trace_proxy(struct xcclComm *comm);

#endif
