/*
 * enqueue_cuda.h — the CUDA device path of the collectives (built with
 * XCCL_HAVE_CUDA only): where a call's buffers live, and how device work is
 * enqueued on the caller's stream.
 *
 * A call whose buffers are device memory becomes work items of the CUDA
 * collective kernel (src/kernels/kern_cuda.h), enqueued on the caller's
 * stream; the call returns at once, like NCCL's. Inside a group, device
 * operations queue until xcclGroupEnd, which launches one kernel for all of
 * them (enqueue_cuda_group_end). The kernel speaks the slot protocol over the
 * communicator's own fifos (registered with CUDA as mapped host memory), so
 * the proxy thread and shared memory work for it as for the host path; a
 * watcher thread drives the proxy while device work is in flight, passes
 * xcclCommAbort on to the kernel, and turns a kernel's failure into the
 * communicator's error (xcclCommGetAsyncError, xcclGetLastError(comm)).
 *
 * Rules that follow from sharing the connections with the host path:
 *  - launches on one communicator run one after the other, whatever their
 *    streams (each waits for the previous one);
 *  - a host-buffer operation waits for the communicator's device work to
 *    finish first (enqueue_cuda_host_fence), and one group does not mix host
 *    and device operations on one communicator;
 *  - device collectives always use the ring (XCCL_ALGO=rd is not used for
 *    them), so a rank with device buffers and one with host buffers agree
 *    only when the host side runs the ring too.
 * In-flight device work holds the communicator busy: xcclCommDestroy waits
 * for it, xcclCommAbort stops it.
 */
#ifndef XCCL_CORE_ENQUEUE_CUDA_H
#define XCCL_CORE_ENQUEUE_CUDA_H

#include <stddef.h>

#include "group.h"

/* The CUDA side of init, in a build with CUDA only (src/cuda/cuda_device.c):
 * the calling thread's current device (-1 where CUDA cannot be used);
 * making *dev current on the calling thread (*dev = -1 where CUDA cannot be
 * used; xcclInvalidArgument for a device that does not exist); the device
 * comm's device work was bound to at its first device call (-1 before). */
int comm_cuda_current_device(void);
xcclResult_t comm_cuda_use_device(int *dev);
int comm_cuda_bound_device(const struct xcclComm *comm);
/* The PCI bus id ("0000:3b:00.0", as cudaDeviceGetPCIBusId gives it) of the
 * device this rank drives: comm->cuda_dev when set, else the current one;
 * "" where CUDA cannot be used. For the planner (issue 24). */
void comm_cuda_busid(const struct xcclComm *comm, char *buf, size_t len);

/* One buffer of a call, for enqueue_cuda_where: what it is called in
 * messages, its address, and the bytes the call touches (0: unused). */
typedef struct {
  const char *what;
  const void *ptr;
  size_t bytes;
} cuda_buf_t;

/*
 * Where the buffers of one call live, asked of CUDA per call
 * (cudaPointerGetAttributes): *on_device_p = 1 when the call runs on the
 * device, i.e. its buffers are device or managed memory of the current
 * device, or page-locked host memory with a stream given. Refused with
 * xcclInvalidArgument and a sentence: device memory of another device than
 * the current one, device memory next to pageable host memory in one call,
 * a stream with pageable host buffers, and, where CUDA cannot be used at
 * all (no driver, no device), a stream or an address that is not host
 * memory. *on_device_p is written only on success.
 */
xcclResult_t enqueue_cuda_where(const char *fn, const cuda_buf_t *bufs, int n, void *stream, int *on_device_p);

/*
 * Takes a checked device operation (enqueue_cuda_where said so): enqueues it
 * on stream now, or inside a group queues it for xcclGroupEnd. The caller
 * holds op->comm (op.h prepared it). A single-rank collective is a copy on
 * the stream.
 */
xcclResult_t enqueue_cuda_submit(const group_op_t *op, void *stream);

/* xcclGroupEnd's hook, called when the outermost group ends and before its
 * host operations run: launches the device operations queued since
 * xcclGroupStart, one kernel for all of them. xcclSuccess when there were
 * none. */
xcclResult_t enqueue_cuda_group_end(void);

/* For operations made of several (gather, scatter, all-to-all), like
 * group_mark/group_rollback: the device queue's length now, and dropping what
 * was queued after it. */
int enqueue_cuda_group_mark(void);
void enqueue_cuda_group_rollback(int mark);

/* Called before a host-buffer operation (fn, for messages) runs on comm:
 * refuses one that joins a group holding device operations on comm, and
 * waits (XCCL_TIMEOUT at most, watching the abort flag) until the
 * communicator's device work has completed. Free when comm never ran device
 * work. */
xcclResult_t enqueue_cuda_host_fence(xcclComm_t comm, const char *fn);

/* comm_free's hook, once nothing runs on comm: unregisters its fifos from
 * CUDA and frees its device state. */
void enqueue_cuda_comm_free(xcclComm_t comm);

#endif
