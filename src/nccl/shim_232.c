/*
 * shim_232.c — the calls NCCL 2.29 .. 2.32.3 added, over xccl (the
 * parameter API is in shim_param.c):
 *   - ncclCommSuspend / ncclCommResume / ncclCommMemStats: xcclCommSuspend,
 *     xcclCommResume and xcclCommMemStats (src/core/suspend.c): a suspended
 *     communicator refuses operations (ncclInvalidUsage) until resumed, and
 *     NCCL_SUSPEND_MEM releases its connections (collectively) until then;
 *   - nccl*Config: the same collective; the per-call fields that steer GPU
 *     resources are ignored (INFO once), an algorithm selection xccl cannot
 *     honour per call is refused when forced;
 *   - ncclWinGetUserPtr over xccl's windows;
 *   - ncclSetEncryption over xcclSetEncryption (TLS on the socket transport
 *     and the bootstrap, keyed by the program's psk and the job's secret).
 * The one-sided calls are in shim_rma.c.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "connect.h"
#include "encryption.h"
#include "error.h"
#include "log.h"
#include "nccl_232.h"
#include "op_record.h"
#include "reg.h"

static xcclComm_t X(ncclComm_t c) { return (xcclComm_t)(void *)c; }

/* ---- Suspend and resume ---------------------------------------------- */

/* xcclCommSuspend, xcclCommResume and xcclCommMemStats (src/core/suspend.c)
 * are NCCL's calls: the flag and the statistics have NCCL's values. */
_Static_assert(NCCL_SUSPEND_MEM == XCCL_SUSPEND_MEM, "suspend flags differ");
_Static_assert((int)ncclStatGpuMemSuspend == (int)xcclStatMemSuspend &&
                   (int)ncclStatGpuMemSuspended == (int)xcclStatMemSuspended &&
                   (int)ncclStatGpuMemPersist == (int)xcclStatMemPersist &&
                   (int)ncclStatGpuMemTotal == (int)xcclStatMemTotal,
               "memory statistics differ");

/* r, recorded on comm too, so that ncclGetLastError(comm) tells it. */
static ncclResult_t refuse(ncclComm_t comm, xcclResult_t r) { return shim_res(comm ? comm_record(X(comm), r) : r); }

ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags) { return shim_res(xcclCommSuspend(X(comm), flags)); }

ncclResult_t pncclCommResume(ncclComm_t comm) { return shim_res(xcclCommResume(X(comm))); }

/* NCCL's "GPU memory" is, in xccl, the memory its connections hold (host
 * memory on a host build): what NCCL_SUSPEND_MEM releases. */
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value) {
  return shim_res(xcclCommMemStats(X(comm), (xcclCommMemStat_t)stat, value));
}

/* ---- Windows ---------------------------------------------------------- */

ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void **outUserPtr) {
  if (!outUserPtr) return shim_res(err_set(xcclInvalidArgument, LOG_INIT, "ncclWinGetUserPtr: outUserPtr is NULL"));
  xcclResult_t r = comm_acquire(X(comm));
  if (r != xcclSuccess) return shim_res(err_prefix(r, "ncclWinGetUserPtr"));
  r = reg_window_buff(X(comm), (const struct xcclWindow *)(const void *)win, outUserPtr);
  comm_release(X(comm));
  return shim_res(r == xcclSuccess ? r : comm_record(X(comm), err_prefix(r, "ncclWinGetUserPtr")));
}

/* ---- Per-collective configuration ------------------------------------ */

#define COLL_CONFIG_MIN_SIZE (offsetof(ncclCollConfig_t, CTAPolicy) + sizeof(int))

/* Fields that steer GPU resources: said once per process, at INFO. */
static void coll_config_note(const char *fn, const ncclCollConfig_t *c) {
  static _Atomic int said;
#define HAS(f) (c->size >= offsetof(ncclCollConfig_t, f) + sizeof(c->f))
  int gpu = c->minCTAs != NCCL_CONFIG_UNDEF_INT || c->maxCTAs != NCCL_CONFIG_UNDEF_INT ||
            c->nvlsCTAs != NCCL_CONFIG_UNDEF_INT || c->cgaClusterSize != NCCL_CONFIG_UNDEF_INT ||
            c->CTAPolicy != NCCL_CONFIG_UNDEF_INT || (HAS(launchCompletionEvent) && c->launchCompletionEvent);
#undef HAS
  if ((gpu || c->ext) && !atomic_exchange(&said, 1))
    INFO(COLL,
         "%s: ncclCollConfig_t: CTA counts, cluster size, CTA policy and the launch-completion event steer NCCL's "
         "kernels and have no effect in xccl; vendor extensions are ignored, as NCCL does. Said once.",
         fn);
}

/* NULL or a valid config: ncclSuccess; else the reason. */
static ncclResult_t coll_config_check(const char *fn, ncclComm_t comm, const ncclCollConfig_t *c) {
  if (!c) return ncclSuccess;
  if (c->magic != XCCL_NCCL_API_MAGIC || c->size < COLL_CONFIG_MIN_SIZE)
    return refuse(comm, err_set(xcclInvalidArgument, LOG_COLL,
                                "%s: config was not initialized with NCCL_COLLCONFIG_INITIALIZER "
                                "(magic 0x%x, size %zu)",
                                fn, c->magic, c->size));
  int n = 0;
  for (const ncclConfigExt_t *e = c->ext; e; e = e->next)
    if (++n > 1024)
      return refuse(comm, err_set(xcclInvalidArgument, LOG_COLL,
                                  "%s: config's ext list has more than 1024 options: is it circular?", fn));
  if (c->algSelection && *c->algSelection) { /* NULL or "": automatic */
    if (c->forceAlgSelection != 0)
      return refuse(comm, err_set(xcclInvalidUsage, LOG_COLL,
                                  "%s: algSelection \"%s\": xccl chooses algorithms per communicator, not per "
                                  "call; set XCCL_ALGO (or NCCL_ALGO) for the job, or forceAlgSelection = 0 to let "
                                  "this call run with the communicator's choice",
                                  fn, c->algSelection));
    INFO(COLL, "%s: algSelection \"%s\" ignored (forceAlgSelection = 0): the communicator's algorithm choice runs",
         fn, c->algSelection);
  }
  coll_config_note(fn, c);
  return ncclSuccess;
}

#define T(t) ((xcclDataType_t)(t))
#define O(o) ((xcclRedOp_t)(o))
#define S(s) ((void *)(s))
/* The config's userProfilerTag, carried into the call's record (the trace
 * shows it as the event's "tag"); 0 when none. */
static uint64_t coll_config_tag(const ncclCollConfig_t *c) {
  if (!c || c->size < offsetof(ncclCollConfig_t, userProfilerTag) + sizeof(c->userProfilerTag)) return 0;
  return c->userProfilerTag;
}

/* Checks the config, then runs call with its tag set for this thread. */
#define RUN_CONFIG(fn, call)                                  \
  do {                                                        \
    ncclResult_t cr_ = coll_config_check(fn, comm, config); \
    if (cr_ != ncclSuccess) return cr_;                       \
    op_user_tag = coll_config_tag(config);                    \
    xcclResult_t xr_ = (call);                                \
    op_user_tag = 0;                                          \
    return shim_res(xr_);                                     \
  } while (0)

ncclResult_t pncclAllReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclAllReduceConfig", xcclAllReduce(sendbuff, recvbuff, count, T(datatype), O(op), X(comm), S(stream)));
}
ncclResult_t pncclBroadcastConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclBroadcastConfig", xcclBroadcast(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclReduceConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                               ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
                               const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclReduceConfig", xcclReduce(sendbuff, recvbuff, count, T(datatype), O(op), root, X(comm), S(stream)));
}
ncclResult_t pncclAllGatherConfig(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                  ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclAllGatherConfig", xcclAllGather(sendbuff, recvbuff, sendcount, T(datatype), X(comm), S(stream)));
}
ncclResult_t pncclReduceScatterConfig(const void *sendbuff, void *recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
                                      const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclReduceScatterConfig",
             xcclReduceScatter(sendbuff, recvbuff, recvcount, T(datatype), O(op), X(comm), S(stream)));
}
ncclResult_t pncclAlltoAllConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                 ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclAlltoAllConfig", xcclAllToAll(sendbuff, recvbuff, count, T(datatype), X(comm), S(stream)));
}
ncclResult_t pncclGatherConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                               ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclGatherConfig", xcclGather(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}
ncclResult_t pncclScatterConfig(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config) {
  RUN_CONFIG("ncclScatterConfig", xcclScatter(sendbuff, recvbuff, count, T(datatype), root, X(comm), S(stream)));
}

/* ---- Encryption ------------------------------------------------------- */

/* NCCL's process-wide setting, as xcclSetEncryption: mode PSK turns TLS on
 * with keys derived from config->psk, NONE turns it off. */
_Static_assert(XCCL_NCCL_ENCRYPTION_NONE == ENCRYPTION_NONE && XCCL_NCCL_ENCRYPTION_PSK == ENCRYPTION_PSK,
               "NCCL's encryption modes are xccl's");
ncclResult_t pncclSetEncryption(const ncclEncryptionConfig_t *config) {
  if (!config || config->magic != XCCL_NCCL_API_MAGIC ||
      config->size < offsetof(ncclEncryptionConfig_t, mode) + sizeof(int))
    return shim_res(err_set(xcclInvalidArgument, LOG_INIT, "ncclSetEncryption: %s",
                            config ? "config was not initialized with NCCL_ENCRYPTION_CONFIG_INITIALIZER"
                                   : "config is NULL"));
  int has_psk = config->size >= offsetof(ncclEncryptionConfig_t, psk) + sizeof(const char *);
  return shim_res(encryption_set(config->mode, has_psk ? config->psk : NULL, "ncclSetEncryption"));
}

XCCL_NCCL_ALIAS(ncclCommSuspend);
XCCL_NCCL_ALIAS(ncclCommResume);
XCCL_NCCL_ALIAS(ncclCommMemStats);
XCCL_NCCL_ALIAS(ncclWinGetUserPtr);
XCCL_NCCL_ALIAS(ncclAllReduceConfig);
XCCL_NCCL_ALIAS(ncclBroadcastConfig);
XCCL_NCCL_ALIAS(ncclReduceConfig);
XCCL_NCCL_ALIAS(ncclAllGatherConfig);
XCCL_NCCL_ALIAS(ncclReduceScatterConfig);
XCCL_NCCL_ALIAS(ncclAlltoAllConfig);
XCCL_NCCL_ALIAS(ncclGatherConfig);
XCCL_NCCL_ALIAS(ncclScatterConfig);
XCCL_NCCL_ALIAS(ncclSetEncryption);
