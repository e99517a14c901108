/* check.h — XCCL_CHECK: compare every rank's call before it runs (check.c). */
#ifndef XCCL_CORE_CHECK_H
#define XCCL_CORE_CHECK_H

#include "comm.h"

/* op and root: -1 where the collective has none. xcclInvalidUsage, with the
 * ranks that differ named, when not every rank made the same call. */
xcclResult_t check_collective(xcclComm_t comm, uint64_t seq, const char *name, size_t count, xcclDataType_t type,
                              int op, int root);

#endif
