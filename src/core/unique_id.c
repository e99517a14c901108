/* unique_id.c — xcclGetUniqueId and xcclCommInitRank. */
#include <string.h>

#include "comm.h"
#include "config.h"
#include "log.h"

xcclResult_t xcclGetUniqueId(xcclUniqueId *uniqueId) {
  if (!uniqueId) return err_set(xcclInvalidArgument, LOG_INIT, "xcclGetUniqueId: uniqueId is NULL");
  bs_id_t id;
  memset(&id, 0, sizeof(id));
  char ifname[64];
  TRY(sock_pick_interface(&id.root, ifname, sizeof(ifname)));
  if (bs_random(id.secret, sizeof(id.secret)) != 0 || bs_random(&id.job, sizeof(id.job)) != 0)
    return err_set(xcclSystemError, LOG_INIT, "xcclGetUniqueId: cannot draw random bytes for the secret");
  TRY(bootstrap_root_start(&id, config_double(CFG_TIMEOUT)));
  bs_id_encode(&id, uniqueId);
  return xcclSuccess;
}

xcclResult_t xcclCommInitRank(xcclComm_t *comm, int nranks, xcclUniqueId commId, int rank) {
  config_load();
  if (!comm) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitRank: comm is NULL");
  if (nranks < 1 || nranks > BS_MAX_RANKS)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitRank: nranks=%d is not in 1..%d", nranks, BS_MAX_RANKS);
  if (rank < 0 || rank >= nranks)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitRank: rank %d is not in 0..%d", rank, nranks - 1);
  bs_id_t id;
  char why[256];
  if (bs_id_decode(&commId, &id, why, sizeof(why)) != 0)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitRank: %s", why);
  return comm_init(comm, nranks, &id, rank);
}
