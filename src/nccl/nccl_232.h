/*
 * nccl_232.h — what NCCL 2.29 .. 2.32.3 added to nccl.h, as libnccl.so.2
 * serves it (private to src/nccl). The installed header,
 * include/xccl-nccl/nccl.h, stays NCCL 2.28.9's, the layout the
 * nccl_abi_layout test holds it to; the types here have the byte layout of
 * NVIDIA's 2.32.3 header (nccl_prog_232 is built against that header and
 * passes these structs in), written from its field list.
 *
 * Who owns what: every struct here is the caller's and is read during the
 * call only; strings returned by the ncclParam* calls are the library's.
 */
#ifndef XCCL_NCCL_232_H
#define XCCL_NCCL_232_H

#include <stdint.h>

#include "nccl.h"
#include "xccl.h"

/* The API version libnccl.so.2 reports (ncclGetVersion) and serves. */
#define XCCL_NCCL_SERVED_VERSION 23203

/* Every versioned NCCL struct starts with size, magic, version. */
#define XCCL_NCCL_API_MAGIC 0xcafebeefu

/* ---- The communicator config's fields 2.29 .. 2.32 appended ---- */

/* NCCL's ncclConfig_t grows at its end only: 2.28's fields, then these
 * (2.28's struct ends 8-byte aligned, so they sit where 2.32's header puts
 * them). Read only as far as the caller's config->size says it has. */
typedef struct {
  ncclConfig_t v228;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
  int launchOrderImplicit;
  int numRmaSig;
  int rmaEagerInit;
  int hostCftMode;
  int nvlsHostMode;
} ncclConfig_232_t;
_Static_assert(sizeof(ncclConfig_t) % 8 == 0, "2.28's config ends 8-byte aligned, as 2.32's header assumes");

/* ---- Per-collective configuration (2.31) ---- */

typedef struct ncclConfigExt {
  struct ncclConfigExt *next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char *s;
    void *raw;
  } val;
} ncclConfigExt_t;

typedef struct CUevent_st *xccl_cuda_event_t; /* cudaEvent_t's representation */

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclConfigExt_t *ext;
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  const char *algSelection;
  int forceAlgSelection;
  int CTAPolicy;
  uint64_t userProfilerTag;
  xccl_cuda_event_t launchCompletionEvent;
} ncclCollConfig_t;

/* ---- Suspend, memory statistics (2.29) ---- */

#define NCCL_SUSPEND_MEM 0x01

typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

/* ---- One-sided operations (2.29) ---- */

typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

/* ---- Socket encryption (2.32) ---- */

typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int mode;
  const char *psk;
} ncclEncryptionConfig_t;

#define XCCL_NCCL_ENCRYPTION_NONE 0
#define XCCL_NCCL_ENCRYPTION_PSK 1

/* ---- Parameters (2.32) ---- */

typedef struct ncclParamHandle *ncclParamHandle_t;

/* ---- The functions, each also as pnccl* (the profiler convention) ---- */

#define XCCL_NCCL_232_DECLARE(ret, name, args) \
  ret name args;                               \
  ret p##name args

XCCL_NCCL_232_DECLARE(ncclResult_t, ncclCommSuspend, (ncclComm_t comm, int flags));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclCommResume, (ncclComm_t comm));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclCommMemStats, (ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclWinGetUserPtr, (ncclComm_t comm, ncclWindow_t win, void **outUserPtr));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclAllReduceConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclBroadcastConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclReduceConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                       int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclAllGatherConfig,
                      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclReduceScatterConfig,
                      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclAlltoAllConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                       cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclGatherConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclScatterConfig,
                      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                       ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclPutSignal,
                      (const void *localbuff, size_t count, ncclDataType_t datatype, int peer, ncclWindow_t peerWin,
                       size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                       cudaStream_t stream));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclSignal,
                      (int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclWaitSignal,
                      (int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclSetEncryption, (const ncclEncryptionConfig_t *config));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamBind, (ncclParamHandle_t * out, const char *key));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetI8, (ncclParamHandle_t h, int8_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetI16, (ncclParamHandle_t h, int16_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetI32, (ncclParamHandle_t h, int32_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetI64, (ncclParamHandle_t h, int64_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetU8, (ncclParamHandle_t h, uint8_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetU16, (ncclParamHandle_t h, uint16_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetU32, (ncclParamHandle_t h, uint32_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetU64, (ncclParamHandle_t h, uint64_t *out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetStr, (ncclParamHandle_t h, const char **out));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGet, (ncclParamHandle_t h, void *out, int maxLen, int *len));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetParameter, (const char *key, const char **value, int *valueLen));
XCCL_NCCL_232_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, (const char ***table, int *tableLen));
XCCL_NCCL_232_DECLARE(void, ncclParamDumpAll, (void));

/* ncclX as a weak alias of pncclX: a profiler interposes on ncclX. */
#define XCCL_NCCL_ALIAS(name) extern __typeof__(p##name) name __attribute__((weak, alias("p" #name)))


/* The shim's translation of xccl's result (shim.c). */
ncclResult_t shim_res(xcclResult_t r);

#endif
