/*
 * rma_api.c — xcclPutSignal, xcclSignal and xcclWaitSignal: each call's
 * checks (a refusal changes nothing), then rma.c's data path.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h"
#endif
#include "error.h"
#include "log.h"
#include "op.h"
#include "reg.h"
#include "rma.h"

/* What every one-sided call checks first: usable, host buffers, flags,
 * peer, signal and context. */
static xcclResult_t rma_check(const char *fn, struct xcclComm *comm, void *stream, unsigned flags, int peer, int sig,
                              int ctx) {
  TRY(op_check_usable(fn, comm, stream));
  if (stream)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: stream %p given: one-sided calls run on host buffers in the calling thread; pass NULL", fn,
                   stream);
  if (flags) return err_set(xcclInvalidArgument, LOG_COLL, "%s: flags 0x%x: none is defined, pass 0", fn, flags);
  TRY(op_check_rank(fn, "peer", peer, comm->nranks));
  if (peer != comm->rank && !atomic_load(&comm->rma_connected))
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: no window is registered on this communicator yet: the first xcclCommWindowRegister connects "
                   "its ranks for one-sided calls",
                   fn);
  if (sig < 0 || sig >= XCCL_RMA_SIGNALS || ctx < 0 || ctx >= XCCL_RMA_CTXS)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: %s %d is out of range: sigIdx goes from 0 to %d and ctx from 0 to %d (XCCL_RMA_SIGNALS, "
                   "XCCL_RMA_CTXS)",
                   fn, sig < 0 || sig >= XCCL_RMA_SIGNALS ? "sigIdx" : "ctx",
                   sig < 0 || sig >= XCCL_RMA_SIGNALS ? sig : ctx, XCCL_RMA_SIGNALS - 1, XCCL_RMA_CTXS - 1);
  return xcclSuccess;
}

static xcclResult_t put_signal(const void *localbuff, size_t count, xcclDataType_t datatype, int peer,
                               xcclWindow_t peerWin, size_t offset, int sig, int ctx, unsigned flags,
                               struct xcclComm *comm, void *stream) {
  static const char fn[] = "xcclPutSignal";
  size_t esize = 0, win_size = 0;
  uint64_t id = 0;
  TRY(rma_check(fn, comm, stream, flags, peer, sig, ctx));
  TRY(op_check_type(fn, datatype, &esize));
  TRY(op_check_count(fn, count, esize, 1, datatype));
  TRY(op_check_buffer(fn, "localbuff", localbuff, count, esize));
  if (!peerWin) return err_set(xcclInvalidArgument, LOG_COLL, "%s: peerWin is NULL", fn);
  if (!reg_window_peer(comm, peerWin, peer, &id, &win_size))
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: peerWin %p is not a window of this communicator (deregistered already, or another "
                   "communicator's)",
                   fn, (void *)peerWin);
  size_t bytes = count * esize;
#ifdef XCCL_HAVE_CUDA
  void *own = NULL;
  int on_device = 0;
  TRY(reg_window_buff(comm, peerWin, &own));
  cuda_buf_t bufs[2] = {{"localbuff", localbuff, bytes}, {"peerWin's buffer on this rank", own, 1}};
  TRY(enqueue_cuda_where(fn, bufs, 2, NULL, &on_device));
  if (on_device)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: localbuff or the window is device memory: one-sided calls move host buffers only", fn);
#endif
  if (offset > win_size || bytes > win_size - offset)
    return err_set(xcclInvalidArgument, LOG_COLL,
                   "%s: %zu bytes at offset %zu pass the end of rank %d's window, which holds %zu bytes", fn, bytes,
                   offset, peer, win_size);
  return rma_issue(comm, peer, peerWin, id, offset, localbuff, bytes, sig, ctx, fn);
}

xcclResult_t xcclPutSignal(const void *localbuff, size_t count, xcclDataType_t datatype, int peer,
                           xcclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
                           xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res =
      put_signal(localbuff, count, datatype, peer, peerWin, peerWinOffset, sigIdx, ctx, flags, comm, stream);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

xcclResult_t xcclSignal(int peer, int sigIdx, int ctx, unsigned int flags, xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = rma_check("xcclSignal", comm, stream, flags, peer, sigIdx, ctx);
  if (res == xcclSuccess) res = rma_issue(comm, peer, NULL, 0, 0, NULL, 0, sigIdx, ctx, "xcclSignal");
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

static xcclResult_t wait_check(int nd, const xcclWaitSignalDesc_t *d, struct xcclComm *comm, void *stream) {
  static const char fn[] = "xcclWaitSignal";
  if (nd < 0) return err_set(xcclInvalidArgument, LOG_COLL, "%s: nDesc %d is negative", fn, nd);
  if (nd > 0 && !d) return err_set(xcclInvalidArgument, LOG_COLL, "%s: signalDescs is NULL with nDesc %d", fn, nd);
  for (int i = 0; i < nd; i++) {
    xcclResult_t res = rma_check(fn, comm, stream, 0, d[i].peer, d[i].sigIdx, d[i].ctx);
    if (res == xcclSuccess && d[i].opCnt < 0)
      res = err_set(xcclInvalidArgument, LOG_COLL, "%s: opCnt %d is negative", fn, d[i].opCnt);
    if (res != xcclSuccess) return err_prefix(res, "signalDescs[%d]", i);
  }
  return nd == 0 ? op_check_usable(fn, comm, stream) : xcclSuccess;
}

xcclResult_t xcclWaitSignal(int nDesc, xcclWaitSignalDesc_t *signalDescs, xcclComm_t comm, void *stream) {
  TRY(comm_acquire(comm));
  xcclResult_t res = wait_check(nDesc, signalDescs, comm, stream);
  if (res == xcclSuccess) res = rma_wait(comm, nDesc, signalDescs, "xcclWaitSignal");
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}
