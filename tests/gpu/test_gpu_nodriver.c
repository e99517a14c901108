/*
 * test_gpu_nodriver.c — a CUDA build of xccl on a machine without a CUDA
 * driver (or device): libxccl.so loads, host buffers work as ever, and what
 * would need the GPU is refused with a sentence instead of crashing.
 * Run under xccl-run (2 ranks); skipped where CUDA is usable.
 *
 * usage: test_gpu_nodriver [path/to/libxccl.so]
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "test_util.h"
#include "xccl.h"

static int has(const char *s, const char *word) { return s && strstr(s, word) != NULL; }

/* An address that is not mapped: a page mapped, then given back. */
/* An address no mapping can ever take: just past the top of 48-bit user
 * space (x86-64, arm64). A page mapped and unmapped again would not do: by
 * the next call another thread (the proxy, the allocator, a lazy connection's
 * segment) may have mapped something there, and then it is host memory. */
static void *unmapped_address(void) { return (void *)(uintptr_t)0x800000000000ull; }

static void check_shared_library(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  CHECK(h != NULL, "dlopen(%s) without a CUDA driver: %s", path, dlerror());
  if (!h) return;
  xcclResult_t (*version)(int *) = (xcclResult_t(*)(int *))dlsym(h, "xcclGetVersion");
  int v = 0;
  CHECK(version && version(&v) == xcclSuccess && v == XCCL_VERSION_CODE, "xcclGetVersion from %s gave %d", path, v);
  dlclose(h);
}

int main(int argc, char **argv) {
  int ndev = 0;
  cudaError_t ce = cudaGetDeviceCount(&ndev);
  if (ce == cudaSuccess && ndev > 0)
    test_skip(
        "a CUDA driver and device are present: this test is for machines without one (the other gpu tests "
        "run here)");
  printf("CUDA here: %s (%s)\n", ce == cudaSuccess ? "no device" : cudaGetErrorString(ce), cudaGetErrorName(ce));
  if (argc > 1) check_shared_library(argv[1]);

  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  int rank = 0, nranks = 0;
  XCHECK(xcclCommUserRank(comm, &rank));
  XCHECK(xcclCommCount(comm, &nranks));

  /* Host buffers, stream NULL: as in a build without CUDA. */
  float send[1000], recv[1000];
  for (int i = 0; i < 1000; i++) send[i] = (float)(rank + 1) * (float)(i % 17);
  XCHECK(xcclAllReduce(send, recv, 1000, xcclFloat32, xcclSum, comm, NULL));
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += recv[i] != (float)(nranks * (nranks + 1) / 2) * (float)(i % 17);
  CHECK(bad == 0, "host all-reduce: %d wrong elements", bad);
  int64_t v = rank == 0 ? 42 : -1;
  XCHECK(xcclBroadcast(&v, &v, 1, xcclInt64, 0, comm, NULL));
  CHECK(v == 42, "host broadcast gave %lld", (long long)v);

  /* A device pointer (here: any address that is not host memory). */
  void *fake = unmapped_address();
  xcclResult_t r = xcclAllReduce(fake, recv, 16, xcclFloat32, xcclSum, comm, NULL);
  const char *msg = xcclGetLastError(comm);
  CHECK(r == xcclInvalidArgument, "all-reduce from %p returned %s", fake, xcclGetErrorString(r));
  CHECK(has(msg, "sendbuff") && has(msg, "is not host memory") && has(msg, "no CUDA support"),
        "all-reduce from %p: the message '%s' does not say which buffer and why", fake, msg);
  printf("refused as it should be: %s\n", msg);
  r = xcclAllReduce(send, fake, 16, xcclFloat32, xcclSum, comm, NULL);
  CHECK(r == xcclInvalidArgument && has(xcclGetLastError(comm), "recvbuff"), "all-reduce into %p: %s (%s)", fake,
        xcclGetErrorString(r), xcclGetLastError(comm));
  r = xcclSend(fake, 16, xcclFloat32, (rank + 1) % nranks, comm, NULL);
  CHECK(r == xcclInvalidArgument && has(xcclGetLastError(comm), "is not host memory"), "send from %p: %s (%s)", fake,
        xcclGetErrorString(r), xcclGetLastError(comm));
  /* A stream: there is nothing to order on it. */
  r = xcclAllReduce(send, recv, 16, xcclFloat32, xcclSum, comm, (void *)0x1000);
  CHECK(r == xcclInvalidArgument && has(xcclGetLastError(comm), "stream"), "all-reduce with a stream: %s (%s)",
        xcclGetErrorString(r), xcclGetLastError(comm));

  /* Refused calls are local: the communicator still works. */
  xcclResult_t async = xcclInternalError;
  XCHECK(xcclCommGetAsyncError(comm, &async));
  CHECK(async == xcclSuccess, "async error after refused calls: %s", xcclGetErrorString(async));
  XCHECK(xcclAllReduce(send, recv, 1000, xcclFloat32, xcclMax, comm, NULL));
  CHECK(recv[16] == (float)nranks * (float)(16 % 17), "host all-reduce after the refused calls: %g", recv[16]);
  XCHECK(xcclCommDestroy(comm));
  return test_finish("test_gpu_nodriver");
}
