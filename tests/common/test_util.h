/* test_util.h — small helpers shared by the test programs. */
#ifndef XCCL_TEST_UTIL_H
#define XCCL_TEST_UTIL_H

#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>

#define TEST_SKIP_CODE 77

extern _Atomic int test_failures; /* CHECK may run on several threads */

/* Records a failure (with file:line and the message) and goes on. */
#define CHECK(cond, ...)                                                   \
  do {                                                                     \
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

/* Prints "<name>: N passed, N failed" style summary; returns the exit code. */
int test_finish(const char *name, int checks_run);

/* Exits with TEST_SKIP_CODE after printing why. */
void test_skip(const char *why) __attribute__((noreturn));

#endif
