/* test_util.h — small helpers shared by the test programs. */
#ifndef XCCL_TEST_UTIL_H
#define XCCL_TEST_UTIL_H

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "xccl.h"

#define TEST_SKIP_CODE 77

/* CHECK may run on several threads, hence atomic counters. */
extern _Atomic int test_failures; /* CHECKs that failed */
extern _Atomic int test_checks;   /* CHECKs evaluated, passed or failed */

/* Counts the check, and on failure records it (with file:line and the
 * message) and goes on. */
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    test_checks++;                                                         \
    if (!(cond)) {                                                         \
      test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                        \
      fprintf(stderr, "\n");                                               \
    }                                                                      \
  } while (0)

/* Calls an xccl function that must succeed; on failure prints the last error
 * and exits 1. */
#define XCHECK(call)                                                          \
  do {                                                                        \
    xcclResult_t r_ = (call);                                                 \
    if (r_ != xcclSuccess) {                                                  \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call,     \
              xcclGetErrorString(r_), xcclGetLastError(NULL));                \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

/* Prints "<name>: OK (N checks)", N being test_checks plus the checks run in
 * children by test_run_in_child, or "<name>: FAILED (N failed checks)";
 * returns the exit code. */
int test_finish(const char *name);

/* Runs fn in a fork()ed child and waits for it: the child calls prepare (if
 * not NULL), starts with test_failures and test_checks at zero, runs fn and
 * exits 1 if any of its checks failed. The child's checks are added to the
 * count test_finish prints (through a shared page, made on first use), and
 * the child's exit status is itself one check in this process. Call it while
 * this process has no other threads. */
void test_run_in_child(const char *name, void (*prepare)(void), void (*fn)(void));

/* Exits with TEST_SKIP_CODE after printing why. */
void test_skip(const char *why) __attribute__((noreturn));

/* The whole file at path, NUL-terminated, its length in *len_p (may be
 * NULL); NULL when it cannot be read. The caller frees it. */
char *test_read_file(const char *path, size_t *len_p);

/* Waits up to wait_s for the file at path to hold exactly len bytes (as a
 * writer that renames it into place leaves it), then copies them to buf.
 * 0, or -1 when the deadline passed. */
int test_wait_file(const char *path, void *buf, size_t len, double wait_s);

/* Buffers for the collectives under test: malloc's, or with TEST_MEMALLOC=1
 * in the environment xcclMemAlloc's (memory peers on the host can map: the
 * zero-copy path). */
void *test_buf_alloc(size_t bytes);
void test_buf_free(void *p);

/* The end of a test's communicator: checks that no asynchronous error is
 * left after a clean run, then destroys it. */
void test_comm_end(xcclComm_t comm);

/* parent[u] for u in lo..hi of the in-order binary tree over them (up: the
 * range's parent, 0 for the whole tree), built by brute force: a range's
 * root is its number with the most trailing zeros. The reference the tree
 * tests check host_tree_links' traffic against. */
void test_inorder_parents(int lo, int hi, int up, int *parent);

/* ---- Tests that drive xccl-run and judge what the ranks print ---- */

/* CLOCK_MONOTONIC in seconds. */
double test_now_s(void);

/* Runs argv (argv[0] the program) with its stdout and stderr into a pipe,
 * echoed to this stdout, for limit_s at most (then it is killed, a failed
 * check). Returns what it printed, NUL-terminated (the caller frees; NULL
 * when out of memory or the pipe cannot be made), and its exit code (128 +
 * the signal when a signal ended it) in *code_p. */
char *test_run_capture(char *const argv[], double limit_s, int *code_p);
/* Judges what test_run_capture returned for ranks 0..nranks-1 that print
 * "rank R: PASS": exit code `want`, no sanitizer report (a survivor's shows
 * only in the output when a killed rank's status is xccl-run's), and every
 * rank but `dead` (-1: none) passed. Frees out. */
void test_judge_ranks(char *out, int code, int want, int nranks, int dead);

/* An in-place all-reduce where the rank `me` gives (me + 1) * ((i + it) % 7):
 * the sum must be weight * ((i + it) % 7), weight being the sum of (r + 1)
 * over the members. Returns whether it was right. */
int test_allreduce_checked(xcclComm_t comm, int me, size_t count, int it, float weight, const char *what);

/* comm has nranks ranks and the caller is its rank `rank` (me: for messages). */
void test_expect_size(xcclComm_t comm, int me, int nranks, int rank, const char *what);

#endif
