/*
 * perf_device.c — xccl-perf's device buffers (perf_device.h): the CUDA
 * runtime where xccl was built with it, refusals with the reason otherwise.
 */
#include "perf_device.h"

#include <stdio.h>
#include <string.h>

#ifdef XCCL_HAVE_CUDA
#include <cuda_runtime_api.h>

static cudaStream_t stream;
static char name[160];

static int fail(cudaError_t e, const char *call, char *why, size_t len) {
  cudaGetLastError();
  snprintf(why, len, "%s failed: %s", call, cudaGetErrorString(e));
  return -1;
}

int perf_dev_open(int local_rank, char *why, size_t len) {
  int n = 0, dev;
  struct cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) return fail(e, "cudaGetDeviceCount (is there an NVIDIA GPU and its driver?)", why, len);
  if (n <= 0) return snprintf(why, len, "no CUDA device"), -1;
  dev = (local_rank < 0 ? 0 : local_rank) % n;
  if ((e = cudaSetDevice(dev)) != cudaSuccess) return fail(e, "cudaSetDevice", why, len);
  if ((e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)) != cudaSuccess)
    return fail(e, "cudaStreamCreate", why, len);
  if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess)
    snprintf(name, sizeof(name), "%s (device %d of %d)", prop.name, dev, n);
  return 0;
}

void *perf_dev_stream(void) { return stream; }

void *perf_dev_alloc(size_t bytes) {
  void *p = NULL;
  /* The memset is queued on the legacy stream, which the non-blocking
   * stream of the calls does not wait for: finish it here. */
  if (cudaMalloc(&p, bytes ? bytes : 64) != cudaSuccess || cudaMemset(p, 0, bytes ? bytes : 64) != cudaSuccess ||
      cudaStreamSynchronize(0) != cudaSuccess) {
    cudaGetLastError();
    if (p) cudaFree(p);
    return NULL;
  }
  return p;
}

void perf_dev_free(void *p) {
  if (p) cudaFree(p);
}

int perf_dev_copy(void *dst, const void *src, size_t bytes) {
  /* From pageable memory cudaMemcpy may return before its DMA lands: the
   * legacy stream's sync waits for it (the calls' stream does not). */
  if (cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) == cudaSuccess && cudaStreamSynchronize(0) == cudaSuccess)
    return 0;
  cudaGetLastError();
  return -1;
}

int perf_dev_sync(char *why, size_t len) {
  cudaError_t e = cudaStreamSynchronize(stream);
  return e == cudaSuccess ? 0 : fail(e, "cudaStreamSynchronize", why, len);
}

const char *perf_dev_name(void) { return name; }

#else

int perf_dev_open(int local_rank, char *why, size_t len) {
  (void)local_rank;
  snprintf(why, len, "this xccl was built without CUDA (configure with -DXCCL_WITH_CUDA=ON where nvcc is)");
  return -1;
}
void *perf_dev_stream(void) { return NULL; }
void *perf_dev_alloc(size_t bytes) { return (void)bytes, NULL; }
void perf_dev_free(void *p) { (void)p; }
int perf_dev_copy(void *dst, const void *src, size_t bytes) { return (void)dst, (void)src, (void)bytes, -1; }
int perf_dev_sync(char *why, size_t len) { return (void)why, (void)len, 0; }
const char *perf_dev_name(void) { return ""; }

#endif

int perf_mem_windows(xcclComm_t comm, int rank, const void *input, size_t send_bytes, size_t recv_bytes,
                     void **send_p, void **recv_p, xcclWindow_t wins[2]) {
  xcclResult_t res;
  *send_p = *recv_p = NULL;
  wins[0] = wins[1] = NULL;
  if ((res = xcclMemAlloc(send_p, send_bytes)) != xcclSuccess ||
      (res = xcclMemAlloc(recv_p, recv_bytes)) != xcclSuccess ||
      (res = xcclCommWindowRegister(comm, *send_p, send_bytes, &wins[0], XCCL_WIN_COLL_SYMMETRIC)) != xcclSuccess ||
      (res = xcclCommWindowRegister(comm, *recv_p, recv_bytes, &wins[1], XCCL_WIN_COLL_SYMMETRIC)) != xcclSuccess) {
    fprintf(stderr, "xccl-perf: rank %d: --memalloc: %s: %s\n", rank, xcclGetErrorString(res), xcclGetLastError(NULL));
    return -1;
  }
  memcpy(*send_p, input, send_bytes);
  return 0;
}

void perf_mem_deregister(xcclComm_t comm, xcclWindow_t wins[2]) {
  for (int w = 0; w < 2; w++)
    if (wins[w]) (void)xcclCommWindowDeregister(comm, wins[w]);
}

void perf_mem_free(void *send, void *recv) {
  if (send) (void)xcclMemFree(send);
  if (recv) (void)xcclMemFree(recv);
}
