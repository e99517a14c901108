/* unique_id.c — xcclGetUniqueId. */
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

/* xcclCommInitRank is lifecycle.c's, beside xcclCommInitRankConfig. */
