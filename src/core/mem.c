/*
 * mem.c — xcclMemAlloc and xcclMemFree, and the registry behind mem_lookup
 * (mem.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "xccl.h"
#ifdef XCCL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

typedef struct {
  void *ptr;
  size_t size; /* what was asked for */
  size_t mapped; /* host: the mapping's length, whole pages */
  int fd;      /* host: the memfd; -1 for device memory */
  uint64_t ino; /* host: the memfd's inode, by which a peer checks it opened the right file */
} mem_entry_t;

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_entry_t *mems;
static int nmems, mems_cap;

/* Under mem_lock: the entry holding p..p+len, -1 when none. */
static int mem_find(const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p;
  for (int i = 0; i < nmems; i++) {
    uintptr_t b = (uintptr_t)mems[i].ptr;
    if (a >= b && a - b <= mems[i].size && len <= mems[i].size - (a - b)) return i;
  }
  return -1;
}

static xcclResult_t mem_host_alloc(size_t size, void **ptr_p, size_t *mapped_p, int *fd_p, uint64_t *ino_p) {
  long page = sysconf(_SC_PAGESIZE);
  size_t pg = page > 0 ? (size_t)page : 4096, mapped = (size + pg - 1) / pg * pg;
  if (mapped < size) return err_set(xcclInvalidArgument, LOG_INIT, "xcclMemAlloc: %zu bytes is too large", size);
  int fd = memfd_create("xccl-mem", MFD_CLOEXEC);
  if (fd < 0) return err_set(xcclSystemError, LOG_INIT, "xcclMemAlloc: memfd_create failed: %s", strerror(errno));
  if (ftruncate(fd, (off_t)mapped) != 0) {
    xcclResult_t res = err_set(xcclSystemError, LOG_INIT, "xcclMemAlloc: ftruncate of %zu bytes failed: %s", mapped,
                               strerror(errno));
    close(fd);
    return res;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    xcclResult_t res =
        err_set(xcclSystemError, LOG_INIT, "xcclMemAlloc: fstat of its memfd failed: %s", strerror(errno));
    close(fd);
    return res;
  }
  void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0); /* zero-filled, page aligned */
  if (p == MAP_FAILED) {
    xcclResult_t res = err_set(xcclSystemError, LOG_INIT, "xcclMemAlloc: mmap of %zu bytes failed: %s", mapped,
                               strerror(errno));
    close(fd);
    return res;
  }
  *ptr_p = p, *mapped_p = mapped, *fd_p = fd, *ino_p = (uint64_t)st.st_ino;
  return xcclSuccess;
}

#ifdef XCCL_HAVE_CUDA
/* Device memory of the current device; 0 when there is no usable one. */
static int mem_device_alloc(size_t size, void **ptr_p) {
  int dev;
  void *p = NULL;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaMalloc(&p, size) != cudaSuccess) {
    cudaGetLastError(); /* not sticky: the host path takes over */
    return 0;
  }
  if (cudaMemset(p, 0, size) != cudaSuccess) {
    cudaFree(p);
    cudaGetLastError();
    return 0;
  }
  *ptr_p = p;
  return 1;
}
#endif

static void mem_release(const mem_entry_t *e) {
  if (e->fd < 0) {
#ifdef XCCL_HAVE_CUDA
    cudaFree(e->ptr);
#endif
    return;
  }
  munmap(e->ptr, e->mapped);
  close(e->fd);
}

xcclResult_t xcclMemAlloc(void **ptr, size_t size) {
  if (!ptr || size == 0)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclMemAlloc: %s", !ptr ? "ptr is NULL" : "size is 0");
  mem_entry_t e = {.size = size, .fd = -1};
#ifdef XCCL_HAVE_CUDA
  if (!mem_device_alloc(size, &e.ptr))
#endif
    TRY(mem_host_alloc(size, &e.ptr, &e.mapped, &e.fd, &e.ino));
  pthread_mutex_lock(&mem_lock);
  if (nmems == mems_cap) {
    int cap = mems_cap ? 2 * mems_cap : 16;
    mem_entry_t *t = realloc(mems, sizeof(*t) * (size_t)cap);
    if (!t) {
      pthread_mutex_unlock(&mem_lock);
      mem_release(&e);
      return err_set(xcclSystemError, LOG_INIT, "xcclMemAlloc: out of memory for the registry");
    }
    mems = t;
    mems_cap = cap;
  }
  mems[nmems++] = e;
  pthread_mutex_unlock(&mem_lock);
  INFO(INIT, "xcclMemAlloc: %zu bytes of %s memory at %p", size, e.fd < 0 ? "device" : "shared host", e.ptr);
  *ptr = e.ptr;
  return xcclSuccess;
}

xcclResult_t xcclMemFree(void *ptr) {
  if (!ptr) return xcclSuccess;
  pthread_mutex_lock(&mem_lock);
  int i = -1;
  for (int k = 0; k < nmems && i < 0; k++)
    if (mems[k].ptr == ptr) i = k;
  mem_entry_t e = i >= 0 ? mems[i] : (mem_entry_t){0};
  if (i >= 0) mems[i] = mems[--nmems];
  pthread_mutex_unlock(&mem_lock);
  if (i < 0)
    return err_set(xcclInvalidArgument, LOG_INIT,
                   "xcclMemFree: %p is not the start of a live allocation of xcclMemAlloc (freed already, or from "
                   "elsewhere)", ptr);
  mem_release(&e);
  return xcclSuccess;
}

int mem_lookup(const void *p, size_t len, int *fd_p, uint64_t *ino_p, size_t *offset_p) {
  pthread_mutex_lock(&mem_lock);
  int i = mem_find(p, len), ok = i >= 0 && mems[i].fd >= 0;
  if (ok) *fd_p = mems[i].fd, *ino_p = mems[i].ino, *offset_p = (size_t)((uintptr_t)p - (uintptr_t)mems[i].ptr);
  pthread_mutex_unlock(&mem_lock);
  return ok;
}

int mem_contains(const void *p, size_t len) {
  pthread_mutex_lock(&mem_lock);
  int ok = mem_find(p, len) >= 0;
  pthread_mutex_unlock(&mem_lock);
  return ok;
}
