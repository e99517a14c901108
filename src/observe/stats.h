/*
 * stats.h — the process's metrics in Prometheus text format (XCCL_STATS_FILE).
 *
 * What a job tells the outside, for node_exporter's textfile collector and
 * anything else that reads Prometheus' text exposition format 0.0.4. Every
 * communicator of the process is a source: the core registers it once it is
 * ready (stats_add) with a function that fills in its numbers, and takes it
 * back out at destroy or abort (stats_remove), which keeps its last numbers
 * in the file. One file per process holds every communicator, each series
 * labelled comm="<the communicator's id, 16 hex digits>" and rank="<its rank
 * in it>", so several communicators never clash and `sum by (rank)` works.
 *
 * The file is rewritten whole, atomically: written to a hidden temporary in
 * the same directory (".<name>.XXXXXX", which the textfile collector skips),
 * then renamed over the old one, so a reader sees the old file or the new
 * one, never a part. It is rewritten when stats_tick finds that
 * XCCL_STATS_INTERVAL seconds have passed (0: never by the clock), and at
 * once by stats_write (a communicator failed) and stats_remove. A file that
 * cannot be written gets one WARN naming the path and the error, and the job
 * goes on without metrics until a later write succeeds.
 *
 * The path is XCCL_STATS_FILE expanded as XCCL_DEBUG_FILE is
 * (log_expand_path): %h the host, %p the pid, and %r the rank of the
 * communicator that registered first in the process (the world, usually).
 *
 * Metric families, in this order (each with HELP and TYPE lines):
 *   xccl_communicator_info{comm,rank,nranks[,name]}       gauge, 1
 *   xccl_communicator_state{comm,rank,state}              gauge, 1 for the state it is in, 0 for the others
 *   xccl_communicator_error{comm,rank,peer,reason}        gauge, 1, only while it has failed
 *   xccl_operations_total{comm,rank,collective,algorithm} counter
 *   xccl_bytes_sent_total{comm,rank,peer,transport}       counter
 *   xccl_bytes_received_total{comm,rank,peer,transport}   counter
 *   xccl_wait_seconds_total{comm,rank}                    counter
 *   xccl_errors_total{comm,rank}                          counter
 *   xccl_timeouts_total{comm,rank}                        counter
 */
#ifndef XCCL_OBSERVE_STATS_H
#define XCCL_OBSERVE_STATS_H

#include <stdint.h>

/* Where a communicator is in its life, as xccl_communicator_state says. */
typedef enum {
  STATS_READY = 0,
  STATS_FINALIZED, /* xcclCommFinalize */
  STATS_REVOKED,   /* xcclCommRevoke */
  STATS_FAILED,    /* an operation failed: it takes no more (error and peer in xccl_communicator_error) */
  STATS_ABORTED,   /* xcclCommAbort, with no failure before */
  STATS_DESTROYED, /* xcclCommDestroy */
  STATS_NSTATES
} stats_state_t;

/* Operations of one collective run by one algorithm. */
typedef struct {
  const char *collective, *algorithm; /* static strings ("allreduce", "ring") */
  uint64_t count;
} stats_ops_t;

/* Bytes to and from one peer through one transport. */
typedef struct {
  int peer;
  const char *transport; /* static string ("shm", "net") */
  uint64_t sent, received;
} stats_link_t;

/* One communicator's numbers at one moment. The arrays are the writer's,
 * with room for max_ops and max_links entries (stats_add's); a fill
 * function writes at most that many and sets nops and nlinks. */
typedef struct {
  stats_state_t state;
  const char *fail_reason; /* STATS_FAILED: "timeout", "connection", ... (static); else NULL */
  int fail_peer;           /* the peer the failure names, -1 when none is known */
  double wait_s;           /* time the caller spent stalled, waiting for peers */
  uint64_t errors;         /* calls that returned an error */
  uint64_t timeouts;       /* operations that failed with xcclTimeout */
  stats_ops_t *ops;
  int nops, max_ops;
  stats_link_t *links;
  int nlinks, max_links;
} stats_comm_t;

/* Fills snap with the communicator's numbers now. Called with the writer's
 * lock held, on whatever thread writes (a proxy thread, a caller of
 * stats_write or stats_remove): it must only read, take no lock that a
 * writer's caller may hold, and not call back into this file. */
typedef void stats_fill_fn(void *ctx, stats_comm_t *snap);

typedef struct stats_source stats_source_t;

/* 1 when XCCL_STATS_FILE is set: a caller may skip everything else. */
int stats_enabled(void);

/*
 * Registers a communicator: comm_id and rank label its series, nranks and
 * name (NULL or "": none; copied) its info line. fill is called at every
 * write until stats_remove, with ctx, which must stay valid until then.
 * Returns the source, or NULL when XCCL_STATS_FILE is unset or memory ran
 * out (then a WARN says so once and the communicator runs without metrics).
 */
stats_source_t *stats_add(uint64_t comm_id, int rank, int nranks, const char *name, int max_ops, int max_links,
                          stats_fill_fn *fill, void *ctx);

/* For a periodic path (the proxy thread's wake-ups; a plain callback, so
 * the proxy need not know this file): rewrites the file when
 * XCCL_STATS_INTERVAL has passed since the last write. Costs a clock read
 * otherwise; never waits for another writer. arg is unused. */
void stats_tick(void *arg);

/* Rewrites the file now (a communicator failed). Any thread. */
void stats_write(void);

/*
 * Takes source out: fills it one last time, stamps it with state (when it
 * has not failed), keeps those numbers in the file from then on (the 64
 * most recent removed communicators are kept) and rewrites the file. After
 * it returns fill is never called again. NULL is fine.
 */
void stats_remove(stats_source_t *source, stats_state_t state);

#endif
