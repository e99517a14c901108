/* A 2-rank (or n-rank) program against an installed xccl, started by
 * xccl-run: an all-reduce sum of 1 Mi int32 values, element i of rank r
 * being (r + 1) * (i % 1000 + 1), checked against n (n + 1) / 2 times
 * (i % 1000 + 1) on every rank. Exits 0 when every value is right. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <xccl.h>

#define COUNT (1 << 20)

int main(void) {
  xcclComm_t comm;
  int rank = -1, nranks = 0;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess || xcclCommUserRank(comm, &rank) != xcclSuccess ||
      xcclCommCount(comm, &nranks) != xcclSuccess) {
    fprintf(stderr, "allreduce: init: %s\n", xcclGetLastError(NULL));
    return 1;
  }
  int32_t *buf = malloc(COUNT * sizeof(*buf));
  if (buf == NULL) return 1;
  for (int i = 0; i < COUNT; i++) buf[i] = (rank + 1) * (i % 1000 + 1);
  if (xcclAllReduce(buf, buf, COUNT, xcclInt32, xcclSum, comm, NULL) != xcclSuccess) {
    fprintf(stderr, "allreduce: rank %d: %s\n", rank, xcclGetLastError(comm));
    return 1;
  }
  int32_t sum = nranks * (nranks + 1) / 2;
  int bad = 0;
  for (int i = 0; i < COUNT; i++) bad += buf[i] != sum * (i % 1000 + 1);
  if (bad) fprintf(stderr, "allreduce: rank %d: %d of %d values wrong (buf[1] %d, want %d)\n", rank, bad, COUNT,
                   buf[1], sum * 2);
  else printf("allreduce: rank %d of %d: %d values summed right\n", rank, nranks, COUNT);
  free(buf);
  xcclCommDestroy(comm);
  return bad != 0;
}
