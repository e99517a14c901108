/*
 * split.c — xcclCommSplit: the ranks agree over the parent's bootstrap
 * (bootstrap_split), then each color's ranks init a communicator of their
 * own, blocking or in the background as the config says.
 */
#include <stdio.h>

#include "clock.h"
#include "comm.h"
#include "init.h"
#include "group.h"
#include "log.h"

/* Rank 0 of the parent hosts every color's root (bootstrap_split): it must
 * not return, and perhaps exit, while a color's ranks still connect to one.
 * A non-blocking split does not wait here: its caller keeps the process up
 * until the polls say done. */
static void split_roots_wait(int rank, double timeout_s) {
  if (rank != 0) return;
  int left = bootstrap_roots_wait(timeout_s);
  if (left > 0) WARN(INIT, "xcclCommSplit: %d bootstrap root(s) of this rank still wait for their ranks", left);
}

xcclResult_t xcclCommSplit(xcclComm_t comm, int color, int key, xcclComm_t *newcomm, const xcclConfig_t *config) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_REVOKED));
  int rank = comm->rank, nranks = comm->nranks, job_rank = comm->fault.rank;
  uint64_t t0 = clock_ns();
  comm_opts_t opts;
  bs_split_t sp;
  xcclResult_t res = xcclSuccess;
  if (color < XCCL_SPLIT_NOCOLOR)
    res = err_set(xcclInvalidArgument, LOG_INIT,
                  "xcclCommSplit: color %d is negative: give a color >= 0, or XCCL_SPLIT_NOCOLOR (-1) for none", color);
  else if (!newcomm)
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommSplit: newcomm is NULL");
  else if (group_open())
    res = err_set(xcclInvalidUsage, LOG_INIT,
                  "xcclCommSplit: not allowed between xcclGroupStart and xcclGroupEnd (it waits for the others)");
  else
    res = comm_opts_inherit("xcclCommSplit", comm, config, &opts);
  int checked = res == xcclSuccess;
  if (checked) res = bootstrap_split(comm->bs, color, key, comm->timeout_s, &sp);
  /* The new communicator needs nothing more of this one. */
  comm_release(comm);
  if (res != xcclSuccess) {
    if (checked) err_prefix(res, "xcclCommSplit on rank %d of %d (color %d, key %d)", rank, nranks, color, key);
    return comm_record(comm, res);
  }
  if (sp.nranks == 0) {
    INFO(INIT, "rank %d of %d: xcclCommSplit with XCCL_SPLIT_NOCOLOR: no new communicator", rank, nranks);
    split_roots_wait(rank, comm->timeout_s);
    *newcomm = NULL;
    return xcclSuccess;
  }
  xcclComm_t nc = NULL;
  res = comm_start(&nc, sp.nranks, &sp.id, sp.rank, job_rank, &opts, !opts.blocking);
  if (res != xcclSuccess) {
    err_prefix(res, "xcclCommSplit on rank %d of %d (color %d, key %d)", rank, nranks, color, key);
    return comm_record(comm, res);
  }
  if (opts.blocking) split_roots_wait(rank, comm->timeout_s);
  INFO(INIT, "rank %d of %d: xcclCommSplit (color %d, key %d) %s communicator %p, rank %d of %d, in %.1f ms", rank,
       nranks, color, key, opts.blocking ? "made" : "is making", (void *)nc, sp.rank, sp.nranks,
       (double)(clock_ns() - t0) / 1e6);
  *newcomm = nc;
  return opts.blocking ? xcclSuccess : xcclInProgress;
}
