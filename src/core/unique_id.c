/* unique_id.c — xcclGetUniqueId. */
#include <string.h>

#include "comm.h"
#include "init.h"
#include "config.h"
#include "launch.h"
#include "log.h"

/* With XCCL_ROOT (or NCCL_COMM_ID) set, the id names that address and its
 * secret is derived from XCCL_SECRET and it, so every rank that calls
 * xcclGetUniqueId gets the same id without passing it around; no root runs
 * until rank 0's init starts it there. As NCCL does with NCCL_COMM_ID. */
static xcclResult_t unique_id_at_root(xcclUniqueId *uniqueId) {
  const char *root = config_str(CFG_ROOT);
  sock_addr_t addr;
  TRY(sock_addr_parse(root, &addr));
  bs_id_t id;
  memset(&id, 0, sizeof(id));
  launch_id_derive(config_str(CFG_SECRET), root, &addr, &id);
  id.flags = BS_ID_ROOT_AT_RANK0;
  bs_id_encode(&id, uniqueId);
  INFO(INIT, "xcclGetUniqueId: the root will be at %s (%s), started by rank 0's init", root, config_source(CFG_ROOT));
  return xcclSuccess;
}

xcclResult_t unique_id_fresh(bs_id_t *id, double timeout_s) {
  char ifname[64];
  TRY(sock_pick_interface(&id->root, ifname, sizeof(ifname)));
  if (bs_random(id->secret, sizeof(id->secret)) != 0 || bs_random(&id->job, sizeof(id->job)) != 0)
    return err_set(xcclSystemError, LOG_INIT, "cannot draw random bytes for the unique id's secret");
  return bootstrap_root_start(id, timeout_s);
}

xcclResult_t xcclGetUniqueId(xcclUniqueId *uniqueId) {
  if (!uniqueId) return err_set(xcclInvalidArgument, LOG_INIT, "xcclGetUniqueId: uniqueId is NULL");
  if (*config_str(CFG_ROOT)) return unique_id_at_root(uniqueId); /* set and not empty */
  bs_id_t id;
  memset(&id, 0, sizeof(id));
  xcclResult_t res = unique_id_fresh(&id, config_double(CFG_TIMEOUT));
  if (res != xcclSuccess) return err_prefix(res, "xcclGetUniqueId");
  bs_id_encode(&id, uniqueId);
  return xcclSuccess;
}

/* xcclCommInitRank is lifecycle.c's, beside xcclCommInitRankConfig. */
