/*
 * test_check.c — XCCL_CHECK=1 turns mismatched calls into errors that name
 * the ranks, on every rank, and the communicator stays usable. Run under
 * xccl-run with XCCL_CHECK=1 and at least 3 ranks; also prints what the
 * check costs on an 8-byte all-reduce (run it with XCCL_CHECK=0 to compare).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "xccl.h"

static int rank, nranks;

/* Every rank must fail with xcclInvalidUsage, and the message must name the
 * odd rank (or, on the odd rank itself, at least say what differs). */
static void expect_mismatch(xcclComm_t comm, xcclResult_t r, int odd, const char *what) {
  const char *msg = xcclGetLastError(comm);
  char want[32];
  snprintf(want, sizeof(want), "rank %d called", odd);
  if (rank == odd && r == xcclInvalidArgument) return; /* it refused its own arguments */
  CHECK(r == xcclInvalidUsage, "%s: rank %d got %s, not xcclInvalidUsage", what, rank, xcclGetErrorString(r));
  CHECK(strstr(msg, want) != NULL, "%s: message does not name rank %d: %s", what, odd, msg);
  CHECK(strstr(msg, "XCCL_CHECK") != NULL, "%s: message does not say who found it: %s", what, msg);
}

static void expect_usable(xcclComm_t comm) {
  float x = 1;
  xcclResult_t r = xcclAllReduce(&x, &x, 1, xcclFloat32, xcclSum, comm, NULL);
  CHECK(r == xcclSuccess && x == (float)nranks, "communicator unusable after a refused call: %s",
        xcclGetLastError(comm));
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(void) {
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  const char *on = getenv("XCCL_CHECK");
  if (on && strcmp(on, "1") == 0) {
    if (nranks < 3) test_skip("needs 3 ranks or more");
    float a[64] = {0}, b[64 * 8] = {0};
    int odd = nranks - 1;
    /* a count that differs */
    xcclResult_t r = xcclAllReduce(a, b, rank == 1 ? 9 : 8, xcclFloat32, xcclSum, comm, NULL);
    expect_mismatch(comm, r, 1, "count");
    expect_usable(comm);
    /* a type */
    r = xcclAllReduce(a, b, 8, rank == odd ? xcclInt32 : xcclFloat32, xcclSum, comm, NULL);
    expect_mismatch(comm, r, odd, "datatype");
    expect_usable(comm);
    /* an op */
    r = xcclAllReduce(a, b, 8, xcclFloat32, rank == odd ? xcclMax : xcclSum, comm, NULL);
    expect_mismatch(comm, r, odd, "op");
    expect_usable(comm);
    /* a root */
    r = xcclBroadcast(a, b, 8, xcclFloat32, rank == 1 ? 1 : 0, comm, NULL);
    expect_mismatch(comm, r, 1, "root");
    expect_usable(comm);
    /* a different collective */
    r = rank == odd ? xcclAllGather(a, b, 8, xcclFloat32, comm, NULL)
                    : xcclAllReduce(a, b, 8, xcclFloat32, xcclSum, comm, NULL);
    expect_mismatch(comm, r, odd, "collective");
    expect_usable(comm);
    /* a rank that refuses its own arguments: the others hear of it at once */
    r = xcclAllReduce(rank == 1 ? NULL : a, b, 8, xcclFloat32, xcclSum, comm, NULL);
    expect_mismatch(comm, r, 1, "refused locally");
    if (rank != 1) CHECK(strstr(xcclGetLastError(comm), "(refused)") != NULL, "no mention of the refusal: %s",
                         xcclGetLastError(comm));
    expect_usable(comm);
  }
  /* What a call costs, with the check as configured. */
  float x = 1;
  for (int i = 0; i < 20; i++) XCHECK(xcclAllReduce(&x, &x, 1, xcclFloat32, xcclMax, comm, NULL));
  double t0 = now_us();
  for (int i = 0; i < 200; i++) XCHECK(xcclAllReduce(&x, &x, 1, xcclFloat32, xcclMax, comm, NULL));
  if (rank == 0)
    printf("8-byte all-reduce with XCCL_CHECK=%s: %.1f us per call on %d ranks\n", on ? on : "0",
           (now_us() - t0) / 200, nranks);
  XCHECK(xcclCommDestroy(comm));
  char name[48];
  snprintf(name, sizeof(name), "check rank %d/%d", rank, nranks);
  return test_finish(name);
}
