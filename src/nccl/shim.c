/*
 * shim.c — libnccl.so.2: NCCL's API (include/xccl-nccl/nccl.h, checked
 * against NVIDIA's nccl.h by tests/nccl) mapped onto xccl's.
 *
 * The handle types are xccl's own: an ncclComm_t is an xcclComm_t, an
 * ncclWindow_t an xcclWindow_t, and the result codes, datatypes, ops and
 * the unique id have the same values and bytes, so most calls are one line.
 * What needs more than a cast is here: NCCL's config (its fields and its
 * version-dependent size), the shrink and revoke flags, the simulation
 * info, and the result xccl has and NCCL lacks (xcclTimeout, reported as
 * ncclRemoteError with the timeout's sentence in ncclGetLastError).
 *
 * Every function is defined as pncclX, and ncclX is a weak alias of it, so a
 * profiler can interpose on ncclX and call pncclX (NCCL's convention).
 */
#include "nccl.h"
#include "nccl_232.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "log.h"
#include "xccl.h"

#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_SIM_INFO_MAGIC 0x74685283u
/* The oldest NCCL whose config struct we read: 2.14 introduced it. */
#define NCCL_CONFIG_OLDEST 21400

_Static_assert(sizeof(ncclUniqueId) == sizeof(xcclUniqueId), "the unique ids must have one size");
_Static_assert((int)ncclInProgress == (int)xcclInProgress && (int)ncclRemoteError == (int)xcclRemoteError,
               "result codes 0..7 are shared");
_Static_assert((int)ncclNumTypes == (int)xcclNumTypes && (int)ncclBfloat16 == (int)xcclBfloat16 &&
                   (int)ncclFloat8e5m2 == (int)xcclFloat8e5m2,
               "datatypes are shared");
_Static_assert((int)ncclNumOps == (int)xcclNumOps && (int)ncclAvg == (int)xcclAvg, "ops are shared");
_Static_assert((int)ncclScalarHostImmediate == (int)xcclScalarHostImmediate, "scalar residences are shared");

static ncclResult_t res(xcclResult_t r) {
  /* NCCL has no timeout code: a peer that gave no sign of life is a remote
   * failure, and the sentence in ncclGetLastError says it was a timeout. */
  return r == xcclTimeout ? ncclRemoteError : (ncclResult_t)r;
}

ncclResult_t shim_res(xcclResult_t r) { return res(r); }

static xcclComm_t X(ncclComm_t c) { return (xcclComm_t)(void *)c; }

/* ---- Config --------------------------------------------------------- */

/* Reads the fields of NCCL's config that this caller's header had (its
 * size says which) into xccl's. Fields xccl gives no meaning are named in
 * one INFO line when set. */
static xcclResult_t config_from_nccl(const char *fn, const ncclConfig_t *in, xcclConfig_t *out) {
  *out = (xcclConfig_t)XCCL_CONFIG_INITIALIZER;
  if (!in) return xcclSuccess;
  if (in->magic != NCCL_CONFIG_MAGIC || in->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "%s: config was not initialized with NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)", fn, in->magic,
                   in->size);
  if (in->version < NCCL_CONFIG_OLDEST)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "%s: config version %u is older than NCCL 2.14's, the first with a config", fn, in->version);
#define HAS(field) (in->size >= offsetof(ncclConfig_t, field) + sizeof(in->field))
  if (in->blocking != NCCL_CONFIG_UNDEF_INT) {
    if (in->blocking != 0 && in->blocking != 1)
      return err_set(xcclInvalidArgument, LOG_INIT, "%s: config blocking = %d (give 0 or 1)", fn, in->blocking);
    out->blocking = in->blocking;
  }
  if (HAS(commName)) out->commName = in->commName;
  char unused[512] = "";
  size_t n = 0;
  /* 2.29 .. 2.32 appended fields: read where the caller's header had them. */
  const ncclConfig_232_t *in232 = (const ncclConfig_232_t *)(const void *)in;
#define UNUSED_INT(type, p, field)                                                             \
  if (in->size >= offsetof(type, field) + sizeof(int) && p->field != NCCL_CONFIG_UNDEF_INT && \
      n < sizeof(unused))                                                                      \
  n += (size_t)snprintf(unused + n, sizeof(unused) - n, "%s" #field "=%d", n ? ", " : "", p->field)
  UNUSED_INT(ncclConfig_t, in, cgaClusterSize);
  UNUSED_INT(ncclConfig_t, in, minCTAs);
  UNUSED_INT(ncclConfig_t, in, maxCTAs);
  UNUSED_INT(ncclConfig_t, in, splitShare);
  UNUSED_INT(ncclConfig_t, in, trafficClass);
  UNUSED_INT(ncclConfig_t, in, collnetEnable);
  UNUSED_INT(ncclConfig_t, in, CTAPolicy);
  UNUSED_INT(ncclConfig_t, in, shrinkShare);
  UNUSED_INT(ncclConfig_t, in, nvlsCTAs);
  UNUSED_INT(ncclConfig_t, in, nChannelsPerNetPeer);
  UNUSED_INT(ncclConfig_t, in, nvlinkCentricSched);
  UNUSED_INT(ncclConfig_232_t, in232, graphUsageMode);
  UNUSED_INT(ncclConfig_232_t, in232, numRmaCtx);
  UNUSED_INT(ncclConfig_232_t, in232, maxP2pPeers);
  UNUSED_INT(ncclConfig_232_t, in232, graphStreamOrdering);
  UNUSED_INT(ncclConfig_232_t, in232, launchOrderImplicit);
  UNUSED_INT(ncclConfig_232_t, in232, numRmaSig);
  UNUSED_INT(ncclConfig_232_t, in232, rmaEagerInit);
  UNUSED_INT(ncclConfig_232_t, in232, hostCftMode);
  UNUSED_INT(ncclConfig_232_t, in232, nvlsHostMode);
  if (HAS(netName) && in->netName && n < sizeof(unused))
    n += (size_t)snprintf(unused + n, sizeof(unused) - n, "%snetName=%s", n ? ", " : "", in->netName);
  if (n)
    INFO(INIT, "%s: config %s: no effect in xccl, ignored (its XCCL_* settings choose channels and the network)", fn,
         unused);
#undef UNUSED_INT
#undef HAS
  return xcclSuccess;
}

/* Which config to pass on: NULL where NCCL's was NULL (xccl's defaults, or
 * for split the parent's). */
static const xcclConfig_t *config_or_null(const ncclConfig_t *in, const xcclConfig_t *conv) { return in ? conv : NULL; }

/* ---- Version, errors ----------------------------------------------- */

ncclResult_t pncclGetVersion(int *version) {
  if (!version) return res(err_set(xcclInvalidArgument, LOG_INIT, "ncclGetVersion: version is NULL"));
  *version = XCCL_NCCL_SERVED_VERSION;
  return ncclSuccess;
}

const char *pncclGetErrorString(ncclResult_t result) {
  /* 8 is NCCL 2.32's ncclTimeout (and xcclTimeout); the calls here report
   * timeouts as ncclRemoteError, which 2.28-era programs know. */
  if ((int)result < 0 || (int)result >= (int)xcclNumResults) return "unknown result code";
  return xcclGetErrorString((xcclResult_t)result);
}

const char *pncclGetLastError(ncclComm_t comm) { return xcclGetLastError(X(comm)); }

void pncclResetDebugInit(void) { xcclResetDebugInit(); }

/* ---- Communicators ------------------------------------------------- */

ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId) {
  if (!uniqueId) return res(err_set(xcclInvalidArgument, LOG_INIT, "ncclGetUniqueId: uniqueId is NULL"));
  return res(xcclGetUniqueId((xcclUniqueId *)(void *)uniqueId));
}

static void say_version_once(void) {
  static _Atomic int said;
  if (atomic_exchange(&said, 1)) return;
  int v = 0;
  xcclGetVersion(&v);
  INFO(INIT, "libnccl.so.2 of xccl: NCCL %d.%d.%d's API over xccl %d.%d.%d", XCCL_NCCL_SERVED_VERSION / 10000,
       XCCL_NCCL_SERVED_VERSION / 100 % 100, XCCL_NCCL_SERVED_VERSION % 100, v / 10000, v / 100 % 100, v % 100);
}

static ncclResult_t init_rank(const char *fn, ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
                              ncclConfig_t *config) {
  say_version_once();
  xcclConfig_t c;
  xcclResult_t r = config_from_nccl(fn, config, &c);
  if (r != xcclSuccess) return res(r);
  xcclUniqueId xid;
  memcpy(&xid, id, sizeof(xid));
  return res(xcclCommInitRankConfig((xcclComm_t *)(void *)comm, nranks, xid, rank, config_or_null(config, &c)));
}

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t *config) {
  return init_rank("ncclCommInitRankConfig", comm, nranks, &commId, rank, config);
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return init_rank("ncclCommInitRank", comm, nranks, &commId, rank, NULL);
}

/* Every rank passes the same nId ids; one is all xccl's bootstrap needs (its
 * root admits the ranks), so the first serves and the others go unused. */
ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                                       ncclConfig_t *config) {
  if (nId < 1 || !commIds)
    return res(err_set(xcclInvalidArgument, LOG_INIT, "ncclCommInitRankScalable: %s",
                       !commIds ? "commIds is NULL" : "nId must be >= 1"));
  if (nId > 1) INFO(INIT, "ncclCommInitRankScalable: %d ids given; xccl's bootstrap uses the first", nId);
  return init_rank("ncclCommInitRankScalable", newcomm, nranks, &commIds[0], myrank, config);
}

ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) {
  say_version_once();
  return res(xcclCommInitAll((xcclComm_t *)(void *)comm, ndev, devlist));
}

ncclResult_t pncclCommFinalize(ncclComm_t comm) { return res(xcclCommFinalize(X(comm))); }
ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  return res(xcclCommDestroy(X(comm)));
}
ncclResult_t pncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess; /* NCCL: aborting NULL is allowed */
  return res(xcclCommAbort(X(comm)));
}
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags) { return res(xcclCommRevoke(X(comm), revokeFlags)); }

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  xcclConfig_t c;
  xcclResult_t r = config_from_nccl("ncclCommSplit", config, &c);
  if (r != xcclSuccess) return res(comm_record(X(comm), r));
  return res(xcclCommSplit(X(comm), color, key, (xcclComm_t *)(void *)newcomm, config_or_null(config, &c)));
}

ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                             ncclConfig_t *config, int shrinkFlags) {
  if (shrinkFlags & ~NCCL_SHRINK_ABORT)
    return res(comm_record(
        X(comm), err_set(xcclInvalidArgument, LOG_INIT,
                         "ncclCommShrink: shrinkFlags 0x%x has bits other than NCCL_SHRINK_ABORT", shrinkFlags)));
  xcclConfig_t c;
  xcclResult_t r = config_from_nccl("ncclCommShrink", config, &c);
  if (r != xcclSuccess) return res(comm_record(X(comm), r));
  if (config && c.blocking == 0)
    INFO(INIT, "ncclCommShrink: a non-blocking config: the shrink completes before the call returns");
  /* NCCL_SHRINK_ABORT: stop what runs on the parent first. xccl's shrink
   * needs none of the parent's connections, so a failed revoke (a parent
   * already failed or revoked) does not stop it. */
  if (shrinkFlags & NCCL_SHRINK_ABORT) {
    xcclResult_t rv = xcclCommRevoke(X(comm), 0);
    if (rv != xcclSuccess)
      INFO(INIT, "ncclCommShrink: NCCL_SHRINK_ABORT: revoking the parent: %s", xcclGetLastError(NULL));
  }
  return res(xcclCommShrink(X(comm), excludeRanksList, excludeRanksCount, (xcclComm_t *)(void *)newcomm));
}

ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId) {
  return res(xcclCommGetUniqueId(X(comm), (xcclUniqueId *)(void *)uniqueId));
}

/* NCCL (2.29) gives the grow id to the rank of comm that made it only, the
 * others pass NULL; xccl's grow wants it on every rank of comm. So the ranks
 * of comm first gather what each holds, and take the one id among them. */
static xcclResult_t grow_id_share(ncclComm_t comm, const ncclUniqueId *mine, xcclUniqueId *id_p) {
  int n = 0;
  TRY(xcclCommCount(X(comm), &n));
  xcclUniqueId own, *all = calloc((size_t)n, sizeof(*all));
  if (!all) return err_set(xcclSystemError, LOG_INIT, "ncclCommGrow: out of memory for %d ids", n);
  memset(&own, 0, sizeof(own));
  if (mine) memcpy(&own, mine, sizeof(own));
  xcclResult_t r = xcclAllGather(&own, all, sizeof(own), xcclUint8, X(comm), NULL);
  int found = -1;
  for (int i = 0; r == xcclSuccess && i < n; i++) {
    static const xcclUniqueId zero;
    if (memcmp(&all[i], &zero, sizeof(zero)) == 0) continue;
    if (found >= 0 && memcmp(&all[i], &all[found], sizeof(zero)) != 0)
      r = err_set(xcclInvalidUsage, LOG_INIT,
                  "ncclCommGrow: ranks %d and %d of the communicator pass different ids; pass the one "
                  "ncclCommGetUniqueId made, or NULL",
                  found, i);
    else if (found < 0)
      found = i;
  }
  if (r == xcclSuccess && found < 0)
    r = err_set(xcclInvalidUsage, LOG_INIT,
                "ncclCommGrow: no rank of the communicator passes an id: the rank that called ncclCommGetUniqueId "
                "must pass it");
  if (r == xcclSuccess) *id_p = all[found];
  memset(all, 0, (size_t)n * sizeof(*all)); /* the ids are secrets */
  memset(&own, 0, sizeof(own));
  free(all);
  return r;
}

ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  xcclConfig_t c;
  xcclResult_t r = config_from_nccl("ncclCommGrow", config, &c);
  if (r != xcclSuccess) return res(comm ? comm_record(X(comm), r) : r);
  xcclUniqueId shared;
  const xcclUniqueId *id = (const xcclUniqueId *)(const void *)uniqueId;
  if (comm && rank == -1) {
    r = grow_id_share(comm, uniqueId, &shared);
    if (r != xcclSuccess) return res(comm_record(X(comm), r));
    id = &shared;
  }
  r = xcclCommGrow(X(comm), nRanks, id, rank, (xcclComm_t *)(void *)newcomm, config_or_null(config, &c));
  memset(&shared, 0, sizeof(shared)); /* its secret */
  return res(r);
}

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  if (!asyncError) return res(err_set(xcclInvalidArgument, LOG_COLL, "ncclCommGetAsyncError: asyncError is NULL"));
  xcclResult_t state;
  xcclResult_t r = xcclCommGetAsyncError(X(comm), &state);
  if (r == xcclSuccess) *asyncError = res(state);
  return res(r);
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count) { return res(xcclCommCount(X(comm), count)); }
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device) { return res(xcclCommCuDevice(X(comm), device)); }
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank) { return res(xcclCommUserRank(X(comm), rank)); }

/* ---- Memory and registration ---------------------------------------- */

ncclResult_t pncclMemAlloc(void **ptr, size_t size) { return res(xcclMemAlloc(ptr, size)); }
ncclResult_t pncclMemFree(void *ptr) { return res(xcclMemFree(ptr)); }

ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  return res(xcclCommRegister(X(comm), buff, size, handle));
}
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle) {
  return res(xcclCommDeregister(X(comm), handle));
}
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags) {
  return res(xcclCommWindowRegister(X(comm), buff, size, (xcclWindow_t *)(void *)win, winFlags));
}
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return res(xcclCommWindowDeregister(X(comm), (xcclWindow_t)(void *)win));
}

/* ---- Reduction ops -------------------------------------------------- */

ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm) {
  return res(xcclRedOpCreatePreMulSum((xcclRedOp_t *)(void *)op, scalar, (xcclDataType_t)datatype,
                                      (xcclScalarResidence_t)residence, X(comm)));
}
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return res(xcclRedOpDestroy((xcclRedOp_t)op, X(comm)));
}

/* ---- Collectives and point to point ---------------------------------- */

#define T(t) ((xcclDataType_t)(t))
#define O(o) ((xcclRedOp_t)(o))
#define S(s) ((void *)(s))
ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                         int root, ncclComm_t comm, cudaStream_t stream) {
  return res(xcclReduce(sendbuff, recvbuff, count, T(datatype), O(op), root, X(comm), S(stream)));
}
ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return res(xcclBcast(buff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream) {
  return res(xcclBroadcast(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                            ncclComm_t comm, cudaStream_t stream) {
  return res(xcclAllReduce(sendbuff, recvbuff, count, T(datatype), O(op), X(comm), S(stream)));
}
ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return res(xcclReduceScatter(sendbuff, recvbuff, recvcount, T(datatype), O(op), X(comm), S(stream)));
}
ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                            ncclComm_t comm, cudaStream_t stream) {
  return res(xcclAllGather(sendbuff, recvbuff, sendcount, T(datatype), X(comm), S(stream)));
}
ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                           cudaStream_t stream) {
  return res(xcclAllToAll(sendbuff, recvbuff, count, T(datatype), X(comm), S(stream)));
}
ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) {
  return res(xcclGather(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                          ncclComm_t comm, cudaStream_t stream) {
  return res(xcclScatter(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return res(xcclSend(sendbuff, count, T(datatype), peer, X(comm), S(stream)));
}
ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                       cudaStream_t stream) {
  return res(xcclRecv(recvbuff, count, T(datatype), peer, X(comm), S(stream)));
}

/* ---- Groups ---------------------------------------------------------- */

ncclResult_t pncclGroupStart(void) { return res(xcclGroupStart()); }
ncclResult_t pncclGroupEnd(void) { return res(xcclGroupEnd()); }

ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  if (!simInfo || simInfo->magic != NCCL_SIM_INFO_MAGIC ||
      simInfo->size < offsetof(ncclSimInfo_t, estimatedTime) + sizeof(float))
    return res(err_set(xcclInvalidArgument, LOG_COLL, "ncclGroupSimulateEnd: %s",
                       simInfo ? "simInfo was not initialized with NCCL_SIM_INFO_INITIALIZER" : "simInfo is NULL"));
  float t = 0;
  xcclResult_t r = xcclGroupSimulateEnd(&t);
  if (r == xcclSuccess) simInfo->estimatedTime = t;
  return res(r);
}

/* ---- NCCL 2.28's device API (nccl_device.h): not served ----------------
 *
 * Its host-side calls are exported so that a program built with it loads
 * and is told why at its first call, instead of failing in the loader. Their
 * arguments (device-API structs this file does not declare) are not read. */

static ncclResult_t device_api(const char *fn) {
  return res(err_set(xcclInvalidUsage, LOG_INIT,
                     "%s: NCCL's device API (nccl_device.h: device communicators, LSA and GIN barriers, LL "
                     "all-to-all) is not served by xccl's libnccl.so.2; use the host API's collectives",
                     fn));
}
ncclResult_t pncclDevCommCreate(void);
ncclResult_t pncclDevCommDestroy(void);
ncclResult_t pncclGinBarrierCreateRequirement(void);
ncclResult_t pncclLsaBarrierCreateRequirement(void);
ncclResult_t pncclLLA2ACreateRequirement(void);
ncclResult_t pncclDevCommCreate(void) { return device_api("ncclDevCommCreate"); }
ncclResult_t pncclDevCommDestroy(void) { return device_api("ncclDevCommDestroy"); }
ncclResult_t pncclGinBarrierCreateRequirement(void) { return device_api("ncclGinBarrierCreateRequirement"); }
ncclResult_t pncclLsaBarrierCreateRequirement(void) { return device_api("ncclLsaBarrierCreateRequirement"); }
ncclResult_t pncclLLA2ACreateRequirement(void) { return device_api("ncclLLA2ACreateRequirement"); }

/* ---- The public names: weak aliases of the p-names ------------------- */

#define ALIAS XCCL_NCCL_ALIAS
ALIAS(ncclMemAlloc);
ALIAS(ncclMemFree);
ALIAS(ncclGetVersion);
ALIAS(ncclGetUniqueId);
ALIAS(ncclCommInitRankConfig);
ALIAS(ncclCommInitRank);
ALIAS(ncclCommInitAll);
ALIAS(ncclCommFinalize);
ALIAS(ncclCommDestroy);
ALIAS(ncclCommAbort);
ALIAS(ncclCommRevoke);
ALIAS(ncclCommSplit);
ALIAS(ncclCommShrink);
ALIAS(ncclCommGetUniqueId);
ALIAS(ncclCommGrow);
ALIAS(ncclCommInitRankScalable);
ALIAS(ncclGetErrorString);
ALIAS(ncclGetLastError);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* deprecated for callers, still served */
ALIAS(ncclResetDebugInit);
#pragma GCC diagnostic pop
ALIAS(ncclCommGetAsyncError);
ALIAS(ncclCommCount);
ALIAS(ncclCommCuDevice);
ALIAS(ncclCommUserRank);
ALIAS(ncclCommRegister);
ALIAS(ncclCommDeregister);
ALIAS(ncclCommWindowRegister);
ALIAS(ncclCommWindowDeregister);
ALIAS(ncclRedOpCreatePreMulSum);
ALIAS(ncclRedOpDestroy);
ALIAS(ncclReduce);
ALIAS(ncclBcast);
ALIAS(ncclBroadcast);
ALIAS(ncclAllReduce);
ALIAS(ncclReduceScatter);
ALIAS(ncclAllGather);
ALIAS(ncclAlltoAll);
ALIAS(ncclGather);
ALIAS(ncclScatter);
ALIAS(ncclSend);
ALIAS(ncclRecv);
ALIAS(ncclGroupStart);
ALIAS(ncclGroupEnd);
ALIAS(ncclGroupSimulateEnd);
ALIAS(ncclDevCommCreate);
ALIAS(ncclDevCommDestroy);
ALIAS(ncclGinBarrierCreateRequirement);
ALIAS(ncclLsaBarrierCreateRequirement);
ALIAS(ncclLLA2ACreateRequirement);
