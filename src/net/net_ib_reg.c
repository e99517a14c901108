/*
 * net_ib_reg.c — memory registration for the ib transport, with a cache.
 *
 * Registrations live per protection domain (one per HCA), keyed by their
 * page-aligned range and counted: reg_mr() takes a reference on a covering
 * registration or makes one, dereg_mr() drops it, and the last reference
 * deregisters. isend/irecv given a NULL mhandle register through the same
 * cache and keep their reference until the comm closes, so such a buffer must
 * stay allocated while its comm lives (the proxy's slot fifos do).
 *
 * GPU memory (reg_mr with NET_PTR_CUDA, in a build with CUDA) is registered
 * through a dma-buf of the range that the CUDA driver exports
 * (cuMemGetHandleForAddressRange) and ibv_reg_dmabuf_mr(), with the GPU
 * virtual address as the IOVA, so remote writes name GPU addresses as they
 * name host ones. The driver entry point is looked up at run time: the
 * static CUDA runtime links no libcuda. Where dma-buf is unavailable (an
 * older driver, the proprietary kernel module, a provider without it), plain
 * ibv_reg_mr on the GPU address is tried: the nvidia-peermem kernel module
 * makes that work. When both fail, the error gives both reasons.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "net_ib.h"

/* XCCL_IB_PCI_RELAXED_ORDERING: the access flag that lets the NIC's PCI
 * writes to registered memory pass each other (faster on hosts whose root
 * complex orders them strictly, e.g. with a GPU behind a switch). It is in
 * verbs' optional range: a device without it registers as if it were not
 * asked. 1 with a verbs library that lacks it fails ib_init (ib_relaxed_check). */
int ib_access_relaxed(void) {
#ifdef XCCL_HAVE_IBV_RELAXED_ORDERING
  return config_int(CFG_IB_PCI_RELAXED_ORDERING) ? IBV_ACCESS_RELAXED_ORDERING : 0;
#else
  return 0;
#endif
}

xcclResult_t ib_relaxed_check(void) {
#ifndef XCCL_HAVE_IBV_RELAXED_ORDERING
  if (config_int(CFG_IB_PCI_RELAXED_ORDERING) == 1)
    return err_set(xcclInvalidUsage, LOG_NET,
                   "XCCL_IB_PCI_RELAXED_ORDERING=1, but this build's rdma-core has no relaxed-ordering registration "
                   "(rdma-core 28 or later): unset it, or set 2 to use it where offered");
#endif
  return xcclSuccess;
}

#ifdef XCCL_HAVE_CUDA
#include <cuda_runtime_api.h>

/* cuMemGetHandleForAddressRange (cuda.h, CUDA 11.7), by the values cuda.h gives. */
typedef int (*ib_cu_get_handle_fn)(void *handle, unsigned long long dptr, size_t size, int handle_type,
                                   unsigned long long flags);
#define IB_CU_HANDLE_DMA_BUF_FD 1

/* A dma-buf fd for the GPU range [start, end), or -1 with the reason in why. */
static int ib_gpu_dmabuf(uintptr_t start, uintptr_t end, char *why, size_t whylen) {
  static ib_cu_get_handle_fn get_handle;
  if (!get_handle) {
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 11070, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
      snprintf(why, whylen, "the CUDA driver has no cuMemGetHandleForAddressRange: it is older than 11.7");
      return -1;
    }
    get_handle = (ib_cu_get_handle_fn)fn;
  }
  int fd = -1;
  int rc = get_handle(&fd, (unsigned long long)start, (size_t)(end - start), IB_CU_HANDLE_DMA_BUF_FD, 0);
  if (rc != 0 || fd < 0) {
    snprintf(why, whylen,
             "the CUDA driver gave no dma-buf for the range (CUresult %d): the GPU, its kernel module (dma-buf "
             "needs the open one) or the kernel lacks dma-buf export",
             rc);
    return -1;
  }
  return fd;
}

#define IB_GPU_ROUTE_DMABUF 0x1
#define IB_GPU_ROUTE_PEERMEM 0x2

/* GPU memory: through a dma-buf of the range, else with ibv_reg_mr on the
 * GPU virtual address (the older GPUDirect path: the nvidia-peermem kernel
 * module resolves it). The route taken is logged once per context. Called
 * under ctx->lock. */
static xcclResult_t ib_register_gpu(ib_ctx_t *ctx, uintptr_t start, uintptr_t end, int access, struct ibv_mr **mr_p) {
  const char *dev = ibv_get_device_name(ctx->verbs->device);
  char why[256];
  struct ibv_mr *mr = NULL;
  int fd = -1;
  if (ctx->dmabuf)
    fd = ib_gpu_dmabuf(start, end, why, sizeof(why));
  else
    snprintf(why, sizeof(why), "%s does not take dma-buf registrations (probed when it was opened)", dev);
  if (fd >= 0) {
    mr = ibv_reg_dmabuf_mr(ctx->pd, 0, end - start, start, fd, access);
    int e = errno;
    close(fd); /* the registration holds its own reference to the buffer */
    if (mr) {
      if (!(ctx->gpu_routes_logged & IB_GPU_ROUTE_DMABUF))
        INFO(NET, "ib: GPU memory on %s is registered through dma-buf (ibv_reg_dmabuf_mr)", dev);
      ctx->gpu_routes_logged |= IB_GPU_ROUTE_DMABUF;
      *mr_p = mr;
      return xcclSuccess;
    }
    snprintf(why, sizeof(why), "ibv_reg_dmabuf_mr failed: %s", strerror(e));
  }
  mr = ibv_reg_mr(ctx->pd, (void *)start, end - start, access);
  if (!mr) {
    int e = errno;
    return err_set(xcclSystemError, LOG_NET,
                   "ib: cannot register %zu bytes of GPU memory at %p on %s: dma-buf unavailable (%s), and "
                   "ibv_reg_mr failed: %s; load nvidia-peermem or use a driver with dma-buf",
                   (size_t)(end - start), (void *)start, dev, why, strerror(e));
  }
  if (!(ctx->gpu_routes_logged & IB_GPU_ROUTE_PEERMEM))
    INFO(NET, "ib: GPU memory on %s is registered with ibv_reg_mr (nvidia-peermem), dma-buf being unavailable: %s",
         dev, why);
  ctx->gpu_routes_logged |= IB_GPU_ROUTE_PEERMEM;
  *mr_p = mr;
  return xcclSuccess;
}
#endif

/* Registers [start, end) on ctx's protection domain: host memory directly,
 * GPU memory through ib_register_gpu. */
static xcclResult_t ib_register(ib_ctx_t *ctx, uintptr_t start, uintptr_t end, int gpu, struct ibv_mr **mr_p) {
  int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | ib_access_relaxed();
  if (gpu) {
#ifdef XCCL_HAVE_CUDA
    return ib_register_gpu(ctx, start, end, access, mr_p);
#else
    return err_set(xcclInvalidUsage, LOG_NET,
                   "ib: GPU memory needs a build with CUDA (this one was built without it)");
#endif
  }
  *mr_p = ibv_reg_mr(ctx->pd, (void *)start, end - start, access);
  if (!*mr_p) {
    int e = errno;
    return err_set(xcclSystemError, LOG_NET, "ib: ibv_reg_mr of %zu bytes at %p on %s failed: %s%s",
                   (size_t)(end - start), (void *)start, ibv_get_device_name(ctx->verbs->device), strerror(e),
                   e == ENOMEM || e == EPERM ? " (the locked-memory limit, ulimit -l, may be too low)" : "");
  }
  return xcclSuccess;
}

xcclResult_t ib_reg_get(ib_ctx_t *ctx, void *addr, size_t size, int gpu, ib_reg_t **reg_p) {
  static long page;
  if (!page) page = sysconf(_SC_PAGESIZE);
  uintptr_t a = (uintptr_t)addr, pg = (uintptr_t)page;
  uintptr_t start = a & ~(pg - 1), end = (a + (size ? size : 1) + pg - 1) & ~(pg - 1);
  xcclResult_t res = xcclSuccess;
  pthread_mutex_lock(&ctx->lock);
  for (int i = 0; i < ctx->nregs; i++) {
    ib_reg_t *r = ctx->regs[i];
    if (r->start <= a && a + size <= r->end) {
      r->refs++;
      *reg_p = r;
      goto unlock;
    }
  }
  if (ctx->nregs == ctx->cap) {
    int cap = ctx->cap ? 2 * ctx->cap : 16;
    ib_reg_t **regs = realloc(ctx->regs, sizeof(*regs) * (size_t)cap);
    if (!regs) {
      res = err_set(xcclSystemError, LOG_NET, "ib: out of memory for the registration cache");
      goto unlock;
    }
    ctx->regs = regs;
    ctx->cap = cap;
  }
  ib_reg_t *r = calloc(1, sizeof(*r));
  if (!r) {
    res = err_set(xcclSystemError, LOG_NET, "ib: out of memory for a registration");
    goto unlock;
  }
  if ((res = ib_register(ctx, start, end, gpu, &r->mr)) != xcclSuccess) {
    free(r);
    goto unlock;
  }
  r->ctx = ctx;
  r->start = start;
  r->end = end;
  r->refs = 1;
  ctx->regs[ctx->nregs++] = r;
  *reg_p = r;
unlock:
  pthread_mutex_unlock(&ctx->lock);
  return res;
}

void ib_reg_put(ib_reg_t *r) {
  if (!r) return;
  ib_ctx_t *ctx = r->ctx;
  pthread_mutex_lock(&ctx->lock);
  if (--r->refs == 0) {
    for (int i = 0; i < ctx->nregs; i++)
      if (ctx->regs[i] == r) {
        ctx->regs[i] = ctx->regs[--ctx->nregs];
        break;
      }
    if (ibv_dereg_mr(r->mr) != 0) WARN(NET, "ib: ibv_dereg_mr failed: %s", strerror(errno));
    free(r);
  }
  pthread_mutex_unlock(&ctx->lock);
}

xcclResult_t ib_reg_mr(void *comm, void *data, size_t size, int ptr_type, void **mhandle_p) {
  ib_comm_t *c = comm;
  ib_reg_t *r;
  TRY(ib_reg_get(c->ctx, data, size, (ptr_type & NET_PTR_CUDA) != 0, &r));
  /* GPU memory on the receive side will be flushed (iflush): its loopback
   * QP now, so that a failure here means "stage instead", not a failed
   * transfer later. */
  xcclResult_t res = ptr_type & NET_PTR_CUDA ? ib_flush_prepare(c) : xcclSuccess;
  if (res != xcclSuccess) {
    ib_reg_put(r);
    return res;
  }
  *mhandle_p = r;
  return xcclSuccess;
}

xcclResult_t ib_dereg_mr(void *comm, void *mhandle) {
  ib_reg_put(mhandle);
  return xcclSuccess;
}
