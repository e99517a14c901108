/*
 * test_barrier.c — xcclBarrier returns on no rank before every rank has
 * entered it. Rank r sleeps r * 50 ms before the barrier; after it, every
 * rank must see a clock at least (nranks - 1) * 50 ms past a shared start
 * (a first barrier). Inside a group it is refused.
 */
#include <stdio.h>
#include <time.h>

#include "test_util.h"
#include "xccl.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* one host: the same clock for every rank */
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(void) {
  xcclComm_t comm;
  int rank, nranks;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  XCHECK(xcclBarrier(comm));
  /* Everyone agrees on when the barrier above ended: the latest rank's time. */
  double start = now_ms();
  XCHECK(xcclAllReduce(&start, &start, 1, xcclFloat64, xcclMax, comm, NULL));
  struct timespec nap = {0, (long)rank * 50 * 1000000L};
  nanosleep(&nap, NULL);
  XCHECK(xcclBarrier(comm));
  double waited = now_ms() - start;
  CHECK(waited >= (nranks - 1) * 50.0 - 1.0, "rank %d left the barrier after %.1f ms, before rank %d arrived", rank,
        waited, nranks - 1);
  XCHECK(xcclGroupStart());
  CHECK(xcclBarrier(comm) == xcclInvalidUsage, "a barrier inside a group was accepted");
  XCHECK(xcclGroupEnd());
  XCHECK(xcclBarrier(comm));
  XCHECK(xcclCommDestroy(comm));
  char name[32];
  snprintf(name, sizeof(name), "barrier rank %d/%d", rank, nranks);
  return test_finish(name);
}
