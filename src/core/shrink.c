/*
 * shrink.c — xcclCommShrink: the ranks that stay agree on who goes
 * (bootstrap_shrink, src/bootstrap/bootstrap_split.c) and make a new
 * communicator without them, as xcclCommSplit does (split.c).
 */
#include <stdlib.h>

#include "clock.h"
#include "comm.h"
#include "group.h"
#include "init.h"
#include "log.h"

/* Checks the arguments against comm; the list goes to *sorted_p ascending
 * (NULL when empty, else malloc'ed). */
static xcclResult_t shrink_check(const struct xcclComm *comm, const int *ex, int n, const xcclComm_t *newcomm,
                                 int **sorted_p) {
  int nr = comm->nranks;
  if (!newcomm) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: newcomm is NULL");
  if (n < 0 || n >= nr)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "xcclCommShrink: excludeCount=%d is not in 0..%d (the new communicator keeps at least one of the "
                   "%d ranks)",
                   n, nr - 1, nr);
  if (n > 0 && !ex)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: excludeRanks is NULL but excludeCount is %d", n);
  if (group_open())
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "xcclCommShrink: not allowed between xcclGroupStart and xcclGroupEnd (it waits for the others)");
  uint8_t *seen = calloc((size_t)nr, 1);
  int *sorted = n > 0 ? malloc(sizeof(int) * (size_t)n) : NULL;
  xcclResult_t res = xcclSuccess;
  if (!seen || (n > 0 && !sorted))
    res = err_set(xcclSystemError, LOG_INIT, "xcclCommShrink: out of memory for an exclude list of %d ranks", n);
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    if (ex[i] < 0 || ex[i] >= nr)
      res =
          err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommShrink: excludeRanks[%d] = %d is not a rank of this communicator (0..%d)", i, ex[i], nr - 1);
    else if (seen[ex[i]])
      res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommShrink: rank %d is in excludeRanks twice (again at [%d])",
                    ex[i], i);
    else
      seen[ex[i]] = 1;
  }
  if (res == xcclSuccess && seen[comm->rank])
    res = err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommShrink: rank %d is in excludeRanks: an excluded rank must not call xcclCommShrink (only "
                  "the ranks that stay do)",
                  comm->rank);
  for (int r = 0, k = 0; r < nr && res == xcclSuccess; r++)
    if (seen[r]) sorted[k++] = r;
  free(seen);
  if (res != xcclSuccess) {
    free(sorted);
    return res;
  }
  *sorted_p = sorted;
  return xcclSuccess;
}

xcclResult_t xcclCommShrink(xcclComm_t comm, const int *excludeRanks, int excludeCount, xcclComm_t *newcomm) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_REVOKED)); /* a revoked comm is what one shrinks */
  int rank = comm->rank, nranks = comm->nranks, job_rank = comm->fault.rank, *ex = NULL;
  uint64_t t0 = clock_ns();
  bs_id_t id;
  xcclResult_t res = shrink_check(comm, excludeRanks, excludeCount, newcomm, &ex);
  int checked = res == xcclSuccess;
  if (checked) res = bootstrap_shrink(comm->bs, ex, excludeCount, comm->timeout_s, &id);
  /* The new communicator needs nothing more of this one, which may be
   * aborted from now on without waiting for the new one's init. */
  comm_release(comm);
  int newrank = rank;
  for (int i = 0; i < excludeCount && ex; i++) newrank -= ex[i] < rank;
  free(ex);
  xcclComm_t nc = NULL;
  if (res == xcclSuccess) res = comm_init_shrunk(&nc, nranks - excludeCount, &id, newrank, job_rank);
  if (res != xcclSuccess) {
    if (checked) err_prefix(res, "xcclCommShrink on rank %d of %d", rank, nranks);
    return comm_record(comm, res);
  }
  INFO(INIT, "rank %d of %d: xcclCommShrink made communicator %p, rank %d of %d, in %.1f ms", rank, nranks, (void *)nc,
       newrank, nranks - excludeCount, (double)(clock_ns() - t0) / 1e6);
  *newcomm = nc;
  return xcclSuccess;
}
