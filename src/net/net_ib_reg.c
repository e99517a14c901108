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
 * Host memory only for now; GPU memory would come through
 * ibv_reg_dmabuf_mr() on a dma-buf of the allocation when CUDA is present.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "net_ib.h"

xcclResult_t ib_reg_get(ib_ctx_t *ctx, void *addr, size_t size, ib_reg_t **reg_p) {
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
  r->mr = ibv_reg_mr(ctx->pd, (void *)start, end - start,
                     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (!r->mr) {
    int e = errno;
    free(r);
    res = err_set(xcclSystemError, LOG_NET, "ib: ibv_reg_mr of %zu bytes at %p on %s failed: %s%s",
                  (size_t)(end - start), (void *)start, ibv_get_device_name(ctx->verbs->device), strerror(e),
                  e == ENOMEM || e == EPERM ? " (the locked-memory limit, ulimit -l, may be too low)" : "");
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
  if (ptr_type & NET_PTR_CUDA)
    return err_set(xcclInvalidUsage, LOG_NET,
                   "ib: GPU memory needs dma-buf registration, which this build does not have (no CUDA)");
  ib_reg_t *r;
  TRY(ib_reg_get(c->ctx, data, size, &r));
  *mhandle_p = r;
  return xcclSuccess;
}

xcclResult_t ib_dereg_mr(void *comm, void *mhandle) {
  ib_reg_put(mhandle);
  return xcclSuccess;
}
