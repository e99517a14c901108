/*
 * grow.c — xcclCommGetUniqueId and xcclCommGrow: new ranks join the ranks
 * of a communicator in a new, larger one (xccl.h says who calls what).
 *
 * The id is xcclGetUniqueId's (a root serving it in the calling process, a
 * fresh secret) marked BS_ID_GROW and carrying the parent's job and size:
 * every check that needs only the caller's own arguments is made before
 * anything is sent, and the rest (a rank missing, twice, or with the wrong
 * secret) is the bootstrap's, which names the rank. Like NCCL's grow, the new
 * communicator is a whole init: it shares nothing with its parent.
 */
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "init.h"
#include "group.h"
#include "log.h"

xcclResult_t xcclCommGetUniqueId(xcclComm_t comm, xcclUniqueId *uniqueId) {
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  if (!uniqueId) {
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommGetUniqueId: uniqueId is NULL");
  } else {
    bs_id_t id;
    memset(&id, 0, sizeof(id));
    id.flags = BS_ID_GROW;
    id.parent = comm->job;
    id.parent_nranks = (uint32_t)comm->nranks;
    res = unique_id_fresh(&id, comm->timeout_s);
    if (res == xcclSuccess) {
      bs_id_encode(&id, uniqueId);
      INFO(INIT, "rank %d of %d: xcclCommGetUniqueId: a grow id, its root in this process for %.0f s", comm->rank,
           comm->nranks, comm->timeout_s);
    } else {
      err_prefix(res, "xcclCommGetUniqueId on rank %d of %d", comm->rank, comm->nranks);
    }
    memset(&id, 0, sizeof(id)); /* its secret */
  }
  comm_release(comm);
  return res;
}

/* The caller's own arguments against the id: its rank in the new
 * communicator (*rank_p) and options, or xcclInvalidArgument. comm is
 * acquired by the caller where not NULL. */
static xcclResult_t grow_check(const struct xcclComm *comm, int nranks, const bs_id_t *id, int rank,
                               const xcclConfig_t *config, int *rank_p, comm_opts_t *opts) {
  if (!(id->flags & BS_ID_GROW))
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "the id was made by xcclGetUniqueId: xcclCommGrow takes one from xcclCommGetUniqueId of the "
                   "communicator that grows");
  int parent_n = (int)id->parent_nranks;
  if (nranks <= parent_n || nranks > BS_MAX_RANKS)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "nranks %d: the communicator has %d ranks, so the grown one needs more (at most %d)", nranks,
                   parent_n, BS_MAX_RANKS);
  if (comm) {
    if (id->parent != comm->job)
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "the id was handed out by another communicator: take it from xcclCommGetUniqueId of this one");
    if (rank != -1)
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "rank %d: a rank of the communicator that grows passes -1 and keeps its number (%d)", rank,
                     comm->rank);
    *rank_p = comm->rank;
    return comm_opts_inherit("xcclCommGrow", comm, config, opts);
  }
  if (rank < parent_n || rank >= nranks)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "rank %d: a joining process takes a rank from %d (the communicator's size) to %d (nranks - 1)", rank,
                   parent_n, nranks - 1);
  *rank_p = rank;
  return comm_opts_from_config("xcclCommGrow", config, opts);
}

xcclResult_t xcclCommGrow(xcclComm_t comm, int nranks, const xcclUniqueId *uniqueId, int rank, xcclComm_t *newcomm,
                          const xcclConfig_t *config) {
  if (comm) TRY(comm_acquire(comm));
  uint64_t t0 = clock_ns();
  int job_rank = comm ? comm->fault.rank : rank, me = -1;
  comm_opts_t opts;
  bs_id_t id;
  memset(&id, 0, sizeof(id));
  char why[160];
  xcclResult_t res = xcclSuccess;
  if (!newcomm)
    res = err_set(xcclInvalidArgument, LOG_INIT, "newcomm is NULL");
  else if (!uniqueId)
    res = err_set(xcclInvalidArgument, LOG_INIT, "uniqueId is NULL");
  else if (group_open())
    res = err_set(xcclInvalidUsage, LOG_INIT, "not allowed between xcclGroupStart and xcclGroupEnd (it waits for the others)");
  else if (bs_id_decode(uniqueId, &id, why, sizeof(why)) != 0)
    res = err_set(xcclInvalidArgument, LOG_INIT, "%s", why);
  else
    res = grow_check(comm, nranks, &id, rank, config, &me, &opts);
  int parent_n = comm ? comm->nranks : (int)id.parent_nranks;
  if (comm) comm_release(comm); /* the new communicator needs nothing more of it */
  if (res != xcclSuccess) {
    memset(&id, 0, sizeof(id));
    return comm ? comm_record(comm, err_prefix(res, "xcclCommGrow on rank %d of %d", comm->rank, parent_n))
                : err_prefix(res, "xcclCommGrow (joining as rank %d of %d)", rank, nranks);
  }
  xcclComm_t nc = NULL;
  res = comm_start(&nc, nranks, &id, me, job_rank, &opts, !opts.blocking);
  memset(&id, 0, sizeof(id));
  if (res != xcclSuccess) {
    err_prefix(res, "xcclCommGrow from %d to %d ranks (rank %d%s)", parent_n, nranks, me, comm ? "" : ", joining");
    return comm ? comm_record(comm, res) : res;
  }
  INFO(INIT, "xcclCommGrow from %d to %d ranks: rank %d%s %s communicator %p in %.1f ms", parent_n, nranks, me,
       comm ? "" : " (joined)", opts.blocking ? "made" : "is making", (void *)nc, (double)(clock_ns() - t0) / 1e6);
  *newcomm = nc;
  return opts.blocking ? xcclSuccess : xcclInProgress;
}
