// abi_layout.cpp — xccl's nccl.h against NVIDIA's, at compile time: every
// type that crosses the library boundary has the same size, alignment and
// field offsets, every enumerator and constant the same value, and the
// config and simulation-info initializers the same contents. Built only
// where NVIDIA's nccl.h is found (NCCL_HOME, else the CUDA directory): it
// fails to build if anything differs. Run, it says what it compared.
//
// Both headers declare the same names, so xccl's is read first with every
// name it declares renamed (xn_*), its constants are captured in constexpr
// values, and its macros are dropped before NVIDIA's is read. The lists are
// the names of NCCL 2.28's nccl.h; nccl_abi_symbols checks that no function
// of the real header is missing from the library.
#include <cstddef>
#include <cstdio>
#include <type_traits>

// ---- 1. xccl's header, renamed

#define ncclComm xn_ncclComm
#define ncclComm_t xn_ncclComm_t
#define ncclWindow_vidmem xn_ncclWindow_vidmem
#define ncclWindow_t xn_ncclWindow_t
#define ncclUniqueId xn_ncclUniqueId
#define ncclResult_t xn_ncclResult_t
#define ncclConfig_v22800 xn_ncclConfig_v22800
#define ncclConfig_t xn_ncclConfig_t
#define ncclSimInfo_v22200 xn_ncclSimInfo_v22200
#define ncclSimInfo_t xn_ncclSimInfo_t
#define ncclRedOp_dummy_t xn_ncclRedOp_dummy_t
#define ncclRedOp_t xn_ncclRedOp_t
#define ncclDataType_t xn_ncclDataType_t
#define ncclScalarResidence_t xn_ncclScalarResidence_t
#define ncclSuccess xn_ncclSuccess
#define ncclUnhandledCudaError xn_ncclUnhandledCudaError
#define ncclSystemError xn_ncclSystemError
#define ncclInternalError xn_ncclInternalError
#define ncclInvalidArgument xn_ncclInvalidArgument
#define ncclInvalidUsage xn_ncclInvalidUsage
#define ncclRemoteError xn_ncclRemoteError
#define ncclInProgress xn_ncclInProgress
#define ncclNumResults xn_ncclNumResults
#define ncclNumOps_dummy xn_ncclNumOps_dummy
#define ncclSum xn_ncclSum
#define ncclProd xn_ncclProd
#define ncclMax xn_ncclMax
#define ncclMin xn_ncclMin
#define ncclAvg xn_ncclAvg
#define ncclNumOps xn_ncclNumOps
#define ncclMaxRedOp xn_ncclMaxRedOp
#define ncclInt8 xn_ncclInt8
#define ncclChar xn_ncclChar
#define ncclUint8 xn_ncclUint8
#define ncclInt32 xn_ncclInt32
#define ncclInt xn_ncclInt
#define ncclUint32 xn_ncclUint32
#define ncclInt64 xn_ncclInt64
#define ncclUint64 xn_ncclUint64
#define ncclFloat16 xn_ncclFloat16
#define ncclHalf xn_ncclHalf
#define ncclFloat32 xn_ncclFloat32
#define ncclFloat xn_ncclFloat
#define ncclFloat64 xn_ncclFloat64
#define ncclDouble xn_ncclDouble
#define ncclBfloat16 xn_ncclBfloat16
#define ncclFloat8e4m3 xn_ncclFloat8e4m3
#define ncclFloat8e5m2 xn_ncclFloat8e5m2
#define ncclNumTypes xn_ncclNumTypes
#define ncclScalarDevice xn_ncclScalarDevice
#define ncclScalarHostImmediate xn_ncclScalarHostImmediate
#define ncclMemAlloc xn_ncclMemAlloc
#define ncclMemFree xn_ncclMemFree
#define ncclGetVersion xn_ncclGetVersion
#define ncclGetUniqueId xn_ncclGetUniqueId
#define ncclCommInitRankConfig xn_ncclCommInitRankConfig
#define ncclCommInitRank xn_ncclCommInitRank
#define ncclCommInitAll xn_ncclCommInitAll
#define ncclCommFinalize xn_ncclCommFinalize
#define ncclCommDestroy xn_ncclCommDestroy
#define ncclCommAbort xn_ncclCommAbort
#define ncclCommRevoke xn_ncclCommRevoke
#define ncclCommSplit xn_ncclCommSplit
#define ncclCommShrink xn_ncclCommShrink
#define ncclCommInitRankScalable xn_ncclCommInitRankScalable
#define ncclGetErrorString xn_ncclGetErrorString
#define ncclGetLastError xn_ncclGetLastError
#define ncclResetDebugInit xn_ncclResetDebugInit
#define ncclCommGetAsyncError xn_ncclCommGetAsyncError
#define ncclCommCount xn_ncclCommCount
#define ncclCommCuDevice xn_ncclCommCuDevice
#define ncclCommUserRank xn_ncclCommUserRank
#define ncclCommRegister xn_ncclCommRegister
#define ncclCommDeregister xn_ncclCommDeregister
#define ncclCommWindowRegister xn_ncclCommWindowRegister
#define ncclCommWindowDeregister xn_ncclCommWindowDeregister
#define ncclRedOpCreatePreMulSum xn_ncclRedOpCreatePreMulSum
#define ncclRedOpDestroy xn_ncclRedOpDestroy
#define ncclReduce xn_ncclReduce
#define ncclBcast xn_ncclBcast
#define ncclBroadcast xn_ncclBroadcast
#define ncclAllReduce xn_ncclAllReduce
#define ncclReduceScatter xn_ncclReduceScatter
#define ncclAllGather xn_ncclAllGather
#define ncclAlltoAll xn_ncclAlltoAll
#define ncclGather xn_ncclGather
#define ncclScatter xn_ncclScatter
#define ncclSend xn_ncclSend
#define ncclRecv xn_ncclRecv
#define ncclGroupStart xn_ncclGroupStart
#define ncclGroupEnd xn_ncclGroupEnd
#define ncclGroupSimulateEnd xn_ncclGroupSimulateEnd
#define pncclMemAlloc xn_pncclMemAlloc
#define pncclMemFree xn_pncclMemFree
#define pncclGetVersion xn_pncclGetVersion
#define pncclGetUniqueId xn_pncclGetUniqueId
#define pncclCommInitRankConfig xn_pncclCommInitRankConfig
#define pncclCommInitRank xn_pncclCommInitRank
#define pncclCommInitAll xn_pncclCommInitAll
#define pncclCommFinalize xn_pncclCommFinalize
#define pncclCommDestroy xn_pncclCommDestroy
#define pncclCommAbort xn_pncclCommAbort
#define pncclCommRevoke xn_pncclCommRevoke
#define pncclCommSplit xn_pncclCommSplit
#define pncclCommShrink xn_pncclCommShrink
#define pncclCommInitRankScalable xn_pncclCommInitRankScalable
#define pncclGetErrorString xn_pncclGetErrorString
#define pncclGetLastError xn_pncclGetLastError
#define pncclResetDebugInit xn_pncclResetDebugInit
#define pncclCommGetAsyncError xn_pncclCommGetAsyncError
#define pncclCommCount xn_pncclCommCount
#define pncclCommCuDevice xn_pncclCommCuDevice
#define pncclCommUserRank xn_pncclCommUserRank
#define pncclCommRegister xn_pncclCommRegister
#define pncclCommDeregister xn_pncclCommDeregister
#define pncclCommWindowRegister xn_pncclCommWindowRegister
#define pncclCommWindowDeregister xn_pncclCommWindowDeregister
#define pncclRedOpCreatePreMulSum xn_pncclRedOpCreatePreMulSum
#define pncclRedOpDestroy xn_pncclRedOpDestroy
#define pncclReduce xn_pncclReduce
#define pncclBcast xn_pncclBcast
#define pncclBroadcast xn_pncclBroadcast
#define pncclAllReduce xn_pncclAllReduce
#define pncclReduceScatter xn_pncclReduceScatter
#define pncclAllGather xn_pncclAllGather
#define pncclAlltoAll xn_pncclAlltoAll
#define pncclGather xn_pncclGather
#define pncclScatter xn_pncclScatter
#define pncclSend xn_pncclSend
#define pncclRecv xn_pncclRecv
#define pncclGroupStart xn_pncclGroupStart
#define pncclGroupEnd xn_pncclGroupEnd
#define pncclGroupSimulateEnd xn_pncclGroupSimulateEnd
#include "xccl-nccl/nccl.h"

constexpr xn_ncclConfig_t xn_config_init = NCCL_CONFIG_INITIALIZER;
constexpr xn_ncclSimInfo_t xn_sim_init = NCCL_SIM_INFO_INITIALIZER;
constexpr long long xn_MAJOR = NCCL_MAJOR;
constexpr long long xn_MINOR = NCCL_MINOR;
constexpr long long xn_PATCH = NCCL_PATCH;
constexpr long long xn_VERSION_CODE = NCCL_VERSION_CODE;
constexpr long long xn_UNIQUE_ID_BYTES = NCCL_UNIQUE_ID_BYTES;
constexpr long long xn_CONFIG_UNDEF_INT = NCCL_CONFIG_UNDEF_INT;
constexpr long long xn_SPLIT_NOCOLOR = NCCL_SPLIT_NOCOLOR;
constexpr long long xn_WIN_DEFAULT = NCCL_WIN_DEFAULT;
constexpr long long xn_WIN_COLL_SYMMETRIC = NCCL_WIN_COLL_SYMMETRIC;
constexpr long long xn_WIN_REQUIRED_ALIGNMENT = NCCL_WIN_REQUIRED_ALIGNMENT;
constexpr long long xn_CTA_POLICY_DEFAULT = NCCL_CTA_POLICY_DEFAULT;
constexpr long long xn_CTA_POLICY_EFFICIENCY = NCCL_CTA_POLICY_EFFICIENCY;
constexpr long long xn_CTA_POLICY_ZERO = NCCL_CTA_POLICY_ZERO;
constexpr long long xn_SHRINK_DEFAULT = NCCL_SHRINK_DEFAULT;
constexpr long long xn_SHRINK_ABORT = NCCL_SHRINK_ABORT;
constexpr long long xn_REVOKE_DEFAULT = NCCL_REVOKE_DEFAULT;
constexpr long long xn_V2_8_0 = NCCL_VERSION(2, 8, 0), xn_V2_28_9 = NCCL_VERSION(2, 28, 9);
constexpr float xn_UNDEF_FLOAT = NCCL_UNDEF_FLOAT;
static_assert(NCCL_CONFIG_UNDEF_PTR == nullptr && NCCL_COMM_NULL == nullptr, "null constants");
constexpr const char xn_SUFFIX[] = NCCL_SUFFIX;

#undef NCCL_MAJOR
#undef NCCL_MINOR
#undef NCCL_PATCH
#undef NCCL_SUFFIX
#undef NCCL_VERSION
#undef NCCL_VERSION_CODE
#undef NCCL_COMM_NULL
#undef NCCL_UNIQUE_ID_BYTES
#undef NCCL_CONFIG_UNDEF_INT
#undef NCCL_CONFIG_UNDEF_PTR
#undef NCCL_SPLIT_NOCOLOR
#undef NCCL_UNDEF_FLOAT
#undef NCCL_WIN_DEFAULT
#undef NCCL_WIN_COLL_SYMMETRIC
#undef NCCL_WIN_REQUIRED_ALIGNMENT
#undef NCCL_CTA_POLICY_DEFAULT
#undef NCCL_CTA_POLICY_EFFICIENCY
#undef NCCL_CTA_POLICY_ZERO
#undef NCCL_SHRINK_DEFAULT
#undef NCCL_SHRINK_ABORT
#undef NCCL_REVOKE_DEFAULT
#undef NCCL_CONFIG_INITIALIZER
#undef NCCL_SIM_INFO_INITIALIZER
#undef ncclComm
#undef ncclComm_t
#undef ncclWindow_vidmem
#undef ncclWindow_t
#undef ncclUniqueId
#undef ncclResult_t
#undef ncclConfig_v22800
#undef ncclConfig_t
#undef ncclSimInfo_v22200
#undef ncclSimInfo_t
#undef ncclRedOp_dummy_t
#undef ncclRedOp_t
#undef ncclDataType_t
#undef ncclScalarResidence_t
#undef ncclSuccess
#undef ncclUnhandledCudaError
#undef ncclSystemError
#undef ncclInternalError
#undef ncclInvalidArgument
#undef ncclInvalidUsage
#undef ncclRemoteError
#undef ncclInProgress
#undef ncclNumResults
#undef ncclNumOps_dummy
#undef ncclSum
#undef ncclProd
#undef ncclMax
#undef ncclMin
#undef ncclAvg
#undef ncclNumOps
#undef ncclMaxRedOp
#undef ncclInt8
#undef ncclChar
#undef ncclUint8
#undef ncclInt32
#undef ncclInt
#undef ncclUint32
#undef ncclInt64
#undef ncclUint64
#undef ncclFloat16
#undef ncclHalf
#undef ncclFloat32
#undef ncclFloat
#undef ncclFloat64
#undef ncclDouble
#undef ncclBfloat16
#undef ncclFloat8e4m3
#undef ncclFloat8e5m2
#undef ncclNumTypes
#undef ncclScalarDevice
#undef ncclScalarHostImmediate
#undef ncclMemAlloc
#undef ncclMemFree
#undef ncclGetVersion
#undef ncclGetUniqueId
#undef ncclCommInitRankConfig
#undef ncclCommInitRank
#undef ncclCommInitAll
#undef ncclCommFinalize
#undef ncclCommDestroy
#undef ncclCommAbort
#undef ncclCommRevoke
#undef ncclCommSplit
#undef ncclCommShrink
#undef ncclCommInitRankScalable
#undef ncclGetErrorString
#undef ncclGetLastError
#undef ncclResetDebugInit
#undef ncclCommGetAsyncError
#undef ncclCommCount
#undef ncclCommCuDevice
#undef ncclCommUserRank
#undef ncclCommRegister
#undef ncclCommDeregister
#undef ncclCommWindowRegister
#undef ncclCommWindowDeregister
#undef ncclRedOpCreatePreMulSum
#undef ncclRedOpDestroy
#undef ncclReduce
#undef ncclBcast
#undef ncclBroadcast
#undef ncclAllReduce
#undef ncclReduceScatter
#undef ncclAllGather
#undef ncclAlltoAll
#undef ncclGather
#undef ncclScatter
#undef ncclSend
#undef ncclRecv
#undef ncclGroupStart
#undef ncclGroupEnd
#undef ncclGroupSimulateEnd
#undef pncclMemAlloc
#undef pncclMemFree
#undef pncclGetVersion
#undef pncclGetUniqueId
#undef pncclCommInitRankConfig
#undef pncclCommInitRank
#undef pncclCommInitAll
#undef pncclCommFinalize
#undef pncclCommDestroy
#undef pncclCommAbort
#undef pncclCommRevoke
#undef pncclCommSplit
#undef pncclCommShrink
#undef pncclCommInitRankScalable
#undef pncclGetErrorString
#undef pncclGetLastError
#undef pncclResetDebugInit
#undef pncclCommGetAsyncError
#undef pncclCommCount
#undef pncclCommCuDevice
#undef pncclCommUserRank
#undef pncclCommRegister
#undef pncclCommDeregister
#undef pncclCommWindowRegister
#undef pncclCommWindowDeregister
#undef pncclRedOpCreatePreMulSum
#undef pncclRedOpDestroy
#undef pncclReduce
#undef pncclBcast
#undef pncclBroadcast
#undef pncclAllReduce
#undef pncclReduceScatter
#undef pncclAllGather
#undef pncclAlltoAll
#undef pncclGather
#undef pncclScatter
#undef pncclSend
#undef pncclRecv
#undef pncclGroupStart
#undef pncclGroupEnd
#undef pncclGroupSimulateEnd

// ---- 2. NVIDIA's header
#include <nccl.h>

#define SAME(a, b) static_assert((long long)(a) == (long long)(b), #a " differs from NVIDIA's")
SAME(xn_ncclSuccess, ncclSuccess);
SAME(xn_ncclUnhandledCudaError, ncclUnhandledCudaError);
SAME(xn_ncclSystemError, ncclSystemError);
SAME(xn_ncclInternalError, ncclInternalError);
SAME(xn_ncclInvalidArgument, ncclInvalidArgument);
SAME(xn_ncclInvalidUsage, ncclInvalidUsage);
SAME(xn_ncclRemoteError, ncclRemoteError);
SAME(xn_ncclInProgress, ncclInProgress);
SAME(xn_ncclNumResults, ncclNumResults);
SAME(xn_ncclNumOps_dummy, ncclNumOps_dummy);
SAME(xn_ncclSum, ncclSum);
SAME(xn_ncclProd, ncclProd);
SAME(xn_ncclMax, ncclMax);
SAME(xn_ncclMin, ncclMin);
SAME(xn_ncclAvg, ncclAvg);
SAME(xn_ncclNumOps, ncclNumOps);
SAME(xn_ncclMaxRedOp, ncclMaxRedOp);
SAME(xn_ncclInt8, ncclInt8);
SAME(xn_ncclChar, ncclChar);
SAME(xn_ncclUint8, ncclUint8);
SAME(xn_ncclInt32, ncclInt32);
SAME(xn_ncclInt, ncclInt);
SAME(xn_ncclUint32, ncclUint32);
SAME(xn_ncclInt64, ncclInt64);
SAME(xn_ncclUint64, ncclUint64);
SAME(xn_ncclFloat16, ncclFloat16);
SAME(xn_ncclHalf, ncclHalf);
SAME(xn_ncclFloat32, ncclFloat32);
SAME(xn_ncclFloat, ncclFloat);
SAME(xn_ncclFloat64, ncclFloat64);
SAME(xn_ncclDouble, ncclDouble);
SAME(xn_ncclBfloat16, ncclBfloat16);
SAME(xn_ncclFloat8e4m3, ncclFloat8e4m3);
SAME(xn_ncclFloat8e5m2, ncclFloat8e5m2);
SAME(xn_ncclNumTypes, ncclNumTypes);
SAME(xn_ncclScalarDevice, ncclScalarDevice);
SAME(xn_ncclScalarHostImmediate, ncclScalarHostImmediate);
SAME(xn_MAJOR, NCCL_MAJOR);
SAME(xn_MINOR, NCCL_MINOR);
SAME(xn_PATCH, NCCL_PATCH);
SAME(xn_VERSION_CODE, NCCL_VERSION_CODE);
SAME(xn_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES);
SAME(xn_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT);
SAME(xn_SPLIT_NOCOLOR, NCCL_SPLIT_NOCOLOR);
SAME(xn_WIN_DEFAULT, NCCL_WIN_DEFAULT);
SAME(xn_WIN_COLL_SYMMETRIC, NCCL_WIN_COLL_SYMMETRIC);
SAME(xn_WIN_REQUIRED_ALIGNMENT, NCCL_WIN_REQUIRED_ALIGNMENT);
SAME(xn_CTA_POLICY_DEFAULT, NCCL_CTA_POLICY_DEFAULT);
SAME(xn_CTA_POLICY_EFFICIENCY, NCCL_CTA_POLICY_EFFICIENCY);
SAME(xn_CTA_POLICY_ZERO, NCCL_CTA_POLICY_ZERO);
SAME(xn_SHRINK_DEFAULT, NCCL_SHRINK_DEFAULT);
SAME(xn_SHRINK_ABORT, NCCL_SHRINK_ABORT);
SAME(xn_REVOKE_DEFAULT, NCCL_REVOKE_DEFAULT);
SAME(xn_V2_8_0, NCCL_VERSION(2, 8, 0));
SAME(xn_V2_28_9, NCCL_VERSION(2, 28, 9));
static_assert(xn_UNDEF_FLOAT == NCCL_UNDEF_FLOAT, "NCCL_UNDEF_FLOAT differs");
static_assert(sizeof(xn_SUFFIX) == sizeof(NCCL_SUFFIX), "NCCL_SUFFIX differs");
#define LAYOUT(xt, t) static_assert(sizeof(xt) == sizeof(t) && alignof(xt) == alignof(t), #t " size or alignment differs")
LAYOUT(xn_ncclUniqueId, ncclUniqueId);
LAYOUT(xn_ncclResult_t, ncclResult_t);
LAYOUT(xn_ncclConfig_t, ncclConfig_t);
LAYOUT(xn_ncclSimInfo_t, ncclSimInfo_t);
LAYOUT(xn_ncclRedOp_t, ncclRedOp_t);
LAYOUT(xn_ncclDataType_t, ncclDataType_t);
LAYOUT(xn_ncclScalarResidence_t, ncclScalarResidence_t);
LAYOUT(xn_ncclComm_t, ncclComm_t);
LAYOUT(xn_ncclWindow_t, ncclWindow_t);
#define FIELD(xt, t, f) static_assert(offsetof(xt, f) == offsetof(t, f) && sizeof(((xt *)0)->f) == sizeof(((t *)0)->f), #t "." #f " differs")
FIELD(xn_ncclConfig_t, ncclConfig_t, size);
FIELD(xn_ncclConfig_t, ncclConfig_t, magic);
FIELD(xn_ncclConfig_t, ncclConfig_t, version);
FIELD(xn_ncclConfig_t, ncclConfig_t, blocking);
FIELD(xn_ncclConfig_t, ncclConfig_t, cgaClusterSize);
FIELD(xn_ncclConfig_t, ncclConfig_t, minCTAs);
FIELD(xn_ncclConfig_t, ncclConfig_t, maxCTAs);
FIELD(xn_ncclConfig_t, ncclConfig_t, netName);
FIELD(xn_ncclConfig_t, ncclConfig_t, splitShare);
FIELD(xn_ncclConfig_t, ncclConfig_t, trafficClass);
FIELD(xn_ncclConfig_t, ncclConfig_t, commName);
FIELD(xn_ncclConfig_t, ncclConfig_t, collnetEnable);
FIELD(xn_ncclConfig_t, ncclConfig_t, CTAPolicy);
FIELD(xn_ncclConfig_t, ncclConfig_t, shrinkShare);
FIELD(xn_ncclConfig_t, ncclConfig_t, nvlsCTAs);
FIELD(xn_ncclConfig_t, ncclConfig_t, nChannelsPerNetPeer);
FIELD(xn_ncclConfig_t, ncclConfig_t, nvlinkCentricSched);
FIELD(xn_ncclSimInfo_t, ncclSimInfo_t, size);
FIELD(xn_ncclSimInfo_t, ncclSimInfo_t, magic);
FIELD(xn_ncclSimInfo_t, ncclSimInfo_t, version);
FIELD(xn_ncclSimInfo_t, ncclSimInfo_t, estimatedTime);
FIELD(xn_ncclUniqueId, ncclUniqueId, internal);
static_assert(std::is_signed<std::underlying_type<xn_ncclRedOp_t>::type>::value == std::is_signed<std::underlying_type<ncclRedOp_t>::type>::value, "ncclRedOp_t signedness differs");

constexpr ncclConfig_t nv_config_init = NCCL_CONFIG_INITIALIZER;
constexpr ncclSimInfo_t nv_sim_init = NCCL_SIM_INFO_INITIALIZER;
SAME(xn_config_init.size, nv_config_init.size);
SAME(xn_config_init.magic, nv_config_init.magic);
SAME(xn_config_init.version, nv_config_init.version);
SAME(xn_config_init.blocking, nv_config_init.blocking);
SAME(xn_config_init.cgaClusterSize, nv_config_init.cgaClusterSize);
SAME(xn_config_init.minCTAs, nv_config_init.minCTAs);
SAME(xn_config_init.maxCTAs, nv_config_init.maxCTAs);
SAME(xn_config_init.splitShare, nv_config_init.splitShare);
SAME(xn_config_init.trafficClass, nv_config_init.trafficClass);
SAME(xn_config_init.collnetEnable, nv_config_init.collnetEnable);
SAME(xn_config_init.CTAPolicy, nv_config_init.CTAPolicy);
SAME(xn_config_init.shrinkShare, nv_config_init.shrinkShare);
SAME(xn_config_init.nvlsCTAs, nv_config_init.nvlsCTAs);
SAME(xn_config_init.nChannelsPerNetPeer, nv_config_init.nChannelsPerNetPeer);
SAME(xn_config_init.nvlinkCentricSched, nv_config_init.nvlinkCentricSched);
static_assert(xn_config_init.netName == nullptr && nv_config_init.netName == nullptr && xn_config_init.commName == nullptr && nv_config_init.commName == nullptr, "config pointers");
SAME(xn_sim_init.size, nv_sim_init.size);
SAME(xn_sim_init.magic, nv_sim_init.magic);
SAME(xn_sim_init.version, nv_sim_init.version);
static_assert(xn_sim_init.estimatedTime == nv_sim_init.estimatedTime, "sim info estimatedTime initializer differs");

int main() {
  std::printf("nccl.h ABI: xccl's header and NVIDIA's NCCL %d.%d.%d agree on %d enumerators, %d constants, "
              "%d types, %d config and %d sim-info fields and both initializers\n",
              NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, 37, 19, 9, 17, 4);
  return 0;
}
