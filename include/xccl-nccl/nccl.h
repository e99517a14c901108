/*
 * nccl.h — NCCL's programming interface, as xccl's libnccl.so.2 serves it.
 *
 * A program written for NCCL compiles against this header (or NVIDIA's own:
 * the two declare the same functions, types and values, and a test checks
 * that they agree) and runs on xccl by linking, or being pointed at run
 * time, to xccl's libnccl.so.2 (installed in lib/xccl-nccl/ so that it never
 * shadows a real NCCL unless asked to).
 *
 * What differs from NVIDIA's library is written in docs/NCCL.md; in short:
 *  - host buffers are served (pass stream 0): any NCCL program runs on a
 *    machine without a GPU;
 *  - every wait has a deadline (XCCL_TIMEOUT, or NCCL_* aliases of xccl's
 *    settings) and a timeout is reported as ncclRemoteError, with
 *    ncclGetLastError naming the peer;
 *  - what xccl does not serve returns ncclInvalidUsage and
 *    ncclGetLastError says what and why.
 *
 * This header needs no CUDA: without cuda_runtime.h, cudaStream_t is
 * declared here as the same opaque pointer CUDA declares.
 */
#ifndef XCCL_NCCL_H
#define XCCL_NCCL_H

#include <limits.h>
#include <stddef.h>

#if defined(__CUDACC__) || defined(XCCL_NCCL_WITH_CUDA_RUNTIME)
#include <cuda_runtime.h>
#elif !defined(CUDART_VERSION)
typedef struct CUstream_st *cudaStream_t;
#endif

/* The version of NCCL's API this header declares (docs/NCCL.md says what
 * is served of it). The library serves NCCL 2.32.3's, which only appends to
 * it, and ncclGetVersion says 2.32.3: a program built with NVIDIA's 2.32
 * header reaches the additions (src/nccl/nccl_232.h). */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""
/* From 2.9 on the code is X*10000 + Y*100 + Z; before it, X*1000 + Y*100 + Z. */
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/* Made by ncclGetUniqueId on one process and carried to every rank. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6, /* also: a peer gave no sign of life for XCCL_TIMEOUT */
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommWindowRegister's flags. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy (GPU thread-block policy: no meaning on xccl). */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink's flags: ABORT stops the parent's operations first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke's flags: only the default. */
#define NCCL_REVOKE_DEFAULT 0x00

/*
 * How a communicator is made (ncclCommInitRankConfig, ncclCommSplit,
 * ncclCommShrink). Start from NCCL_CONFIG_INITIALIZER. xccl uses blocking
 * and commName; the GPU scheduling fields (cgaClusterSize, minCTAs, maxCTAs,
 * CTAPolicy, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched), netName,
 * splitShare, shrinkShare, trafficClass and collnetEnable are accepted and,
 * when set, named in one INFO line as having no effect here.
 */
typedef struct ncclConfig_v22800 {
  size_t size;          /* set by the initializer */
  unsigned int magic;   /* set by the initializer */
  unsigned int version; /* set by the initializer */
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
  int splitShare;
  int trafficClass;
  const char *commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                       \
  {                                                                                                   \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,   \
        NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR,   \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,   \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                                  \
  }

/* What ncclGroupSimulateEnd reports: estimatedTime in microseconds. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/* Built-in reduction ops; ncclRedOpCreatePreMulSum returns values from
 * ncclNumOps up. The dummy enum keeps ncclRedOp_t int-sized, as NCCL's. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0, ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2, ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6, ncclHalf = 6,
  ncclFloat32 = 7, ncclFloat = 7,
  ncclFloat64 = 8, ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where ncclRedOpCreatePreMulSum's scalar is: read at each operation, or
 * once when the op is made. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/*
 * Every function comes twice: ncclX, and pncclX for profilers that
 * interpose on ncclX (ncclX is a weak alias of pncclX).
 */
#define XCCL_NCCL_DECLARE(ret, name, args) \
  ret name args;                           \
  ret p##name args

/* Memory and version. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclMemAlloc, (void **ptr, size_t size));
XCCL_NCCL_DECLARE(ncclResult_t, ncclMemFree, (void *ptr));
XCCL_NCCL_DECLARE(ncclResult_t, ncclGetVersion, (int *version));

/* Communicators. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommFinalize, (ncclComm_t comm));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommDestroy, (ncclComm_t comm));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommAbort, (ncclComm_t comm));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommSplit,
                  (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommShrink,
                  (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,
                   ncclConfig_t *config, int shrinkFlags));
/* NCCL 2.29: ranks join a communicator (xccl.h's xcclCommGrow). */
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommGetUniqueId, (ncclComm_t comm, ncclUniqueId *uniqueId));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommGrow,
                  (ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank, ncclComm_t *newcomm,
                   ncclConfig_t *config));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommInitRankScalable,
                  (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,
                   ncclConfig_t *config));

/* Errors. */
XCCL_NCCL_DECLARE(const char *, ncclGetErrorString, (ncclResult_t result));
XCCL_NCCL_DECLARE(const char *, ncclGetLastError, (ncclComm_t comm));
#if defined(__GNUC__) || defined(__clang__)
__attribute__((deprecated("ncclResetDebugInit is not part of NCCL's supported API"))) void ncclResetDebugInit(void);
__attribute__((deprecated("pncclResetDebugInit is not part of NCCL's supported API"))) void pncclResetDebugInit(void);
#else
void ncclResetDebugInit(void);
void pncclResetDebugInit(void);
#endif
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t *asyncError));

/* Queries. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int *count));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int *device));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int *rank));

/* Registration. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void *handle));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommWindowRegister,
                  (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags));
XCCL_NCCL_DECLARE(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

/* Reduction ops made at run time. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum,
                  (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                   ncclComm_t comm));
XCCL_NCCL_DECLARE(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

/* Collectives: the semantics of xccl.h's functions of the same names. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclReduce,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   int root, ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclBcast,
                  (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                   cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclBroadcast,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclAllReduce,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclReduceScatter,
                  (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                   ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclAllGather,
                  (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                   ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclAlltoAll,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                   cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclGather,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclScatter,
                  (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                   ncclComm_t comm, cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclSend,
                  (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));
XCCL_NCCL_DECLARE(ncclResult_t, ncclRecv,
                  (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                   cudaStream_t stream));

/* Groups. */
XCCL_NCCL_DECLARE(ncclResult_t, ncclGroupStart, (void));
XCCL_NCCL_DECLARE(ncclResult_t, ncclGroupEnd, (void));
XCCL_NCCL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo));

#undef XCCL_NCCL_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* XCCL_NCCL_H */
