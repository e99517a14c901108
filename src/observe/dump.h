/*
 * dump.h — in-flight state dumps: which operation a communicator of a rank
 * is in, and whom it waits on, written as one JSON file when an operation
 * fails with a timeout or a broken connection, and on XCCL_DUMP_SIGNAL.
 * `xccl-stuck DIR` reads the dumps of all ranks and names the rank (or link)
 * that everyone waits on; `jq` and any JSON parser read them too.
 *
 * This layer knows the format, the files and the signal; it knows nothing of
 * communicators. The core (src/core/comm_dump.c) keeps each communicator's
 * record, collects it into a dump_info_t and hands it here to be written.
 *
 * Where: XCCL_DUMP_DIR (default /tmp: it exists and is writable on every
 * Linux host and outlives the process; "none" or empty: no dumps), one file
 * per communicator and rank, DIR/xccl-<comm id>-r<rank>.dump, written under a
 * temporary name and renamed, so a reader never sees half a file; a later
 * dump of the same communicator and rank replaces it. A file that parses as
 * JSON is whole: the text is one object, and a cut-short object does not
 * parse.
 *
 * XCCL_DUMP_SIGNAL=USR1 (a name, with or without SIG, or a number; default 0:
 * off): on that signal every communicator of the process writes its dump.
 * JSON is written through jansson, which allocates and is not
 * async-signal-safe, so the handler does not write the dumps: it write(2)s
 * one byte to a pipe and returns. A watcher thread, started with the handler
 * (only when XCCL_DUMP_SIGNAL is set and dumps are on), reads the pipe and
 * writes the dumps from an ordinary thread, where malloc and locks are
 * allowed; it runs whatever the signalled thread holds. A handler that was
 * installed before is called after ours; the signal's default action (USR1:
 * terminate) is replaced. The timeout and error paths write from the thread
 * that saw the failure.
 *
 * The format (version 2): one JSON object. Readers ignore keys they do not
 * know (later versions may add some). Times are seconds (JSON numbers);
 * `monotonic` values are CLOCK_MONOTONIC of the writing host, `realtime`
 * values CLOCK_REALTIME. Ranks are integers, -1 where there is none.
 *
 *   {
 *     "format": "xccl-dump", "version": 2,
 *     "process": {"host": H, "pid": P, "reason": R, "realtime": T, "monotonic": T},
 *                    R: "signal", "timeout" or "error"; T: when written
 *     "comm": {"id": "HEX16", "rank": R, "nranks": N, "prev": P, "next": Q},
 *                    id: 16 hex digits, the same on every rank; prev, next: the ring neighbours
 *     "state": {"run": S, "done": SEQ, "waits": N, "torn": false},
 *                    S: "idle", "running" or "failed"; done: the last operation completed;
 *                    N: items waiting; torn: the record was read while being written
 *     "op": {"name": NAME, "seq": SEQ, "count": C, "type": T, "redop": O, "algo": A,
 *            "root": R, "peer": P, "nops": K, "started": T},
 *                    the operation in progress; absent when idle. redop, algo: null where
 *                    none; K: operations in its group; started: monotonic, 0 until the
 *                    operation first waits
 *     "waits": [{"peer": P, "dir": D, "channel": C, "step": S, "loop": L, "action": A,
 *                "item": I, "since": T, "since_realtime": T}, ...],
 *                    one per waiting item (at most 8; empty when idle): D "recv" (data from
 *                    P) or "send" (room at P); since: its last progress; channel -1: the
 *                    connection to P is being set up
 *     "fail": {"kind": K, "peer": P, "dir": D, "channel": C, "step": S, "loop": L,
 *              "action": A, "item": I},
 *                    why the operation stopped; absent unless it failed. K: "timeout",
 *                    "conn", "abort", "protocol", "checksum"; "other", without the rest:
 *                    another communicator of its group failed
 *     "error": TEXT, the error sentence; with fail
 *     "peers": [{"rank": P, "pid": N, "host": H}, ...]
 *                    the ranks named above (waits, fail, prev, next)
 *   }
 */
#ifndef XCCL_OBSERVE_DUMP_H
#define XCCL_OBSERVE_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define DUMP_FORMAT_VERSION 2
#define DUMP_WAITS 8                  /* waits a dump names */
#define DUMP_PEERS (DUMP_WAITS + 3)   /* the waits', the failure's, prev and next */
#define DUMP_HOST_BYTES 64

typedef enum { DUMP_RUN_IDLE = 0, DUMP_RUN_RUNNING, DUMP_RUN_FAILED } dump_run_t;

/* A wait, or where an operation failed. */
typedef struct {
  int peer;    /* whom (resolved: never -1 for a wait) */
  int is_recv; /* 1: data from peer; 0: room at peer */
  int channel, action, item;
  uint64_t step, loop;
  uint64_t since_ns; /* waits: CLOCK_MONOTONIC of its last progress */
} dump_wait_t;

typedef struct {
  int rank;
  uint64_t pid;
  char host[DUMP_HOST_BYTES];
} dump_peer_t;

/* One dump, as the core collected it. Strings are the caller's (static or
 * inside this struct); NULL where a field has none. */
typedef struct {
  const char *reason; /* "signal", "timeout", "error" */
  char host[DUMP_HOST_BYTES];
  uint64_t realtime_ns, monotonic_ns; /* when collected */
  uint64_t id;
  int rank, nranks, prev, next;
  dump_run_t run;
  uint64_t done;
  int total_waits, torn;
  /* The operation, when run is not DUMP_RUN_IDLE: */
  const char *op_name, *type, *redop, *algo;
  uint64_t seq, count, started_ns;
  int root, op_peer, nops;
  dump_wait_t waits[DUMP_WAITS];
  int nwaits;
  /* The failure, when failed: fail_kind NULL for "other" (another
   * communicator of the group failed). */
  int failed;
  const char *fail_kind;
  dump_wait_t fail;
  char error[ERR_MSG_MAX];
  dump_peer_t peers[DUMP_PEERS];
  int npeers;
} dump_info_t;

/* Reads XCCL_DUMP_DIR and XCCL_DUMP_SIGNAL, once per process (later calls
 * return at once). With a signal set and dumps on, installs the handler and
 * starts the watcher thread, which calls dump_all("signal") on each signal;
 * dump_all must lock what it reads. */
void dump_start(void (*dump_all)(const char *reason));

/* The directory dumps go to, or NULL when dumps are off (before dump_start
 * too). */
const char *dump_dir(void);

/* info as JSON text (format above, a final newline); the caller frees it.
 * NULL when out of memory. */
char *dump_render(const dump_info_t *info);

/* Writes info to DIR/xccl-<id>-r<rank>.dump (its path into path, pathlen
 * bytes) through a temporary name and a rename. 0, or the errno of what
 * failed (ENOENT: dumps are off). */
int dump_write(const dump_info_t *info, char *path, size_t pathlen);

/* Parses an XCCL_DUMP_SIGNAL value: 0 and *sig_p = the signal (0: off), or
 * -1 with a sentence in why. */
int dump_parse_signal(const char *text, int *sig_p, char *why, size_t whylen);

#endif
