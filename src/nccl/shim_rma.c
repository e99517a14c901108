/*
 * shim_rma.c — NCCL 2.29's one-sided calls, ncclPutSignal, ncclSignal and
 * ncclWaitSignal, over xcclPutSignal, xcclSignal and xcclWaitSignal
 * (src/core/rma.c): an ncclWindow_t is an xcclWindow_t, and
 * ncclWaitSignalDesc_t has xcclWaitSignalDesc_t's layout. A suspended
 * communicator refuses them as it refuses every operation.
 */
#include <stddef.h>

#include "nccl_232.h"

_Static_assert(sizeof(ncclWaitSignalDesc_t) == sizeof(xcclWaitSignalDesc_t) &&
                   offsetof(ncclWaitSignalDesc_t, opCnt) == offsetof(xcclWaitSignalDesc_t, opCnt) &&
                   offsetof(ncclWaitSignalDesc_t, peer) == offsetof(xcclWaitSignalDesc_t, peer) &&
                   offsetof(ncclWaitSignalDesc_t, sigIdx) == offsetof(xcclWaitSignalDesc_t, sigIdx) &&
                   offsetof(ncclWaitSignalDesc_t, ctx) == offsetof(xcclWaitSignalDesc_t, ctx),
               "ncclWaitSignalDesc_t is passed as xcclWaitSignalDesc_t");

#define X(c) ((xcclComm_t)(void *)(c))
#define W(w) ((xcclWindow_t)(void *)(w))
#define S(s) ((void *)(s))

ncclResult_t pncclPutSignal(const void *localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                            ncclComm_t comm, cudaStream_t stream) {
  return shim_res(xcclPutSignal(localbuff, count, (xcclDataType_t)datatype, peer, W(peerWin), peerWinOffset, sigIdx,
                                ctx, flags, X(comm), S(stream)));
}

ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm, cudaStream_t stream) {
  return shim_res(xcclSignal(peer, sigIdx, ctx, flags, X(comm), S(stream)));
}

ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t *signalDescs, ncclComm_t comm, cudaStream_t stream) {
  return shim_res(xcclWaitSignal(nDesc, (xcclWaitSignalDesc_t *)(void *)signalDescs, X(comm), S(stream)));
}

XCCL_NCCL_ALIAS(ncclPutSignal);
XCCL_NCCL_ALIAS(ncclSignal);
XCCL_NCCL_ALIAS(ncclWaitSignal);
