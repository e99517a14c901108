/*
 * check.c — XCCL_CHECK=1: before a collective runs, every rank's call is
 * compared with every other's through the bootstrap, so that ranks that call
 * different collectives, counts, types, ops or roots in the same slot get an
 * error that names them instead of a hang or wrong data. All ranks see the
 * same table and so all refuse the call together; nothing was sent, so the
 * communicator stays usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"
#include "reduce.h"

typedef struct {
  char name[16];
  uint64_t count;
  int32_t type, op, root;
  uint32_t pad;
} check_desc_t;

static void desc_text(const check_desc_t *d, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s count %llu %s", d->name, (unsigned long long)d->count,
                   kern_type_name((xcclDataType_t)d->type));
  if (d->op >= 0 && d->op < xcclNumOps) n += snprintf(buf + n, len - (size_t)n, " %s", kern_op_name((xcclRedOp_t)d->op));
  if (d->root >= 0) snprintf(buf + n, len - (size_t)n, " root %d", d->root);
}

xcclResult_t check_collective(xcclComm_t comm, uint64_t seq, const char *name, size_t count, xcclDataType_t type,
                              int op, int root) {
  int n = comm->nranks;
  if (n == 1) return xcclSuccess;
  check_desc_t *all = calloc((size_t)n, sizeof(*all));
  if (!all) return err_set(xcclSystemError, LOG_COLL, "XCCL_CHECK: out of memory");
  check_desc_t *me = &all[comm->rank];
  snprintf(me->name, sizeof(me->name), "%s", name);
  me->count = count;
  me->type = (int32_t)type;
  me->op = op;
  me->root = root;
  xcclResult_t res = bootstrap_allgather(comm->bs, all, sizeof(*all));
  if (res != xcclSuccess) {
    free(all);
    return err_prefix(res, "XCCL_CHECK of %s #%llu", name, (unsigned long long)seq);
  }
  /* Rank 0's call is the yardstick; list who differs from it. */
  char msg[ERR_MSG_MAX], d0[128], di[128];
  int len = 0, differ = 0;
  desc_text(&all[0], d0, sizeof(d0));
  for (int r = 1; r < n; r++) {
    all[r].name[sizeof(all[r].name) - 1] = '\0';
    if (memcmp(&all[r], &all[0], sizeof(all[0])) == 0) continue;
    desc_text(&all[r], di, sizeof(di));
    if (differ++ < 4) len += snprintf(msg + len, sizeof(msg) - (size_t)len, "; rank %d called %s", r, di);
  }
  free(all);
  if (!differ) return xcclSuccess;
  return err_set(xcclInvalidUsage, LOG_COLL,
                 "XCCL_CHECK: call #%llu differs between ranks: rank 0 called %s%s%s", (unsigned long long)seq, d0, msg,
                 differ > 4 ? "; ..." : "");
}
