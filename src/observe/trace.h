/*
 * trace.h — a rank's timeline as Chrome trace-event JSON (XCCL_TRACE).
 *
 * With XCCL_TRACE=DIR each communicator keeps its events in a ring
 * (src/base/trace_ring.h; XCCL_TRACE_EVENTS of them, the oldest dropped
 * when it is full) and writes them, at destroy, abort or failure, to
 *
 *   DIR/xccl-trace-<comm id, 16 hex digits>-r<rank>.json
 *
 * the format chrome://tracing and Perfetto open: {"traceEvents": [...]},
 * complete events ("ph": "X", "ts"/"dur" in microseconds of this rank's
 * CLOCK_MONOTONIC), "pid" the rank, "tid" a lane:
 *   0 calls     one per collective or send/receive: name the collective,
 *               args seq, algorithm, count, bytes, datatype, and tag where
 *               the call had one (NCCL's userProfilerTag, op_record.h)
 *   1 waits     the caller stalled on a peer: args peer, direction
 *               ("recv": data from it, "send": room at it), channel
 *   2 net send, 3 net recv   the proxy's network requests: args peer, step, bytes
 *   10 + c      channel c's host-kernel steps: args peer, loop, actions, bytes sent
 * (the engine's peer -1, a ring neighbour, is written as the rank: prev for
 * a wait for data, next otherwise) and metadata events naming the process
 * "rank R (host)" and the lanes. The top-level object "xccl" (repeated as
 * "otherData", which the viewers show) holds format 1, comm, rank, nranks,
 * host, pid, state, clock_offset_ns (this clock minus rank 0's, measured
 * over the bootstrap at init; null when unknown), clock_uncertainty_ns
 * (half the best round trip), events, dropped, capacity. tools/xccl-trace
 * merges the ranks' files onto rank 0's clock.
 *
 * The file is written to a hidden temporary beside it and renamed over, so
 * a reader never sees part of one. One that cannot be written gets one
 * WARN naming the path and the error; the job goes on.
 */
#ifndef XCCL_OBSERVE_TRACE_H
#define XCCL_OBSERVE_TRACE_H

#include <stdint.h>

#include "trace_ring.h"

typedef struct {
  uint64_t comm_id;
  int rank, nranks;
  const char *host;  /* this rank's */
  int pid;
  const char *state; /* "destroyed", "aborted", "failed" */
  int offset_known;  /* clock_offset_ns was measured */
  int64_t offset_ns; /* this rank's clock minus rank 0's */
  uint64_t uncertainty_ns;
  /* Each channel's ring neighbours, for events whose peer is -1 (the
   * engine's items of a ring know only their channel): a wait for data
   * names prev[c], any other next[c]. NULL: left -1. */
  int nchannels;
  const int *prev, *next;
} trace_meta_t;

/* 1 when XCCL_TRACE is set: a caller may skip everything else. */
int trace_enabled(void);

/* A ring of XCCL_TRACE_EVENTS events (zeroed), or NULL without memory (a
 * WARN says so). Free it with free(). */
trace_ring_t *trace_ring_new(void);

/* Writes ring's events and meta to the file above. Events being written
 * while it reads are left out. Returns 0, or -1 after its WARN. */
int trace_write(const trace_meta_t *meta, trace_ring_t *ring);

#endif
