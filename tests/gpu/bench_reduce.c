/*
 * bench_reduce.c — the local reduction kernel (dst = a op b, kern_cuda.h's
 * kcu_reduce_launch) against cudaMemcpyAsync device to device, in the same
 * run on the same buffers. Bandwidth counts the bytes each moves: a
 * reduction reads two buffers and writes one (3 x size), a copy reads one and
 * writes one (2 x size). Prints one line per case and a last line
 *   BENCH fraction=F reduce_GBps=R copy_GBps=C type=float32 op=sum bytes=N
 * for tests/gpu/run.sh. Exit 77 without a usable GPU.
 *
 * usage: bench_reduce [MiB per buffer, default 256]
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "kern_cuda.h"
#include "test_util.h"
#include "xccl.h"

#define CU(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

/* Best seconds per call over `reps` calls after one warm-up, timed with events. */
static double time_reduce(void *dst, void *a, void *b, size_t n, xcclDataType_t t, xcclRedOp_t op, int reps,
                          cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  double best = 1e30;
  CU(kcu_reduce_launch(dst, a, b, n, t, op, s));
  for (int r = 0; r < reps; r++) {
    float ms = 0;
    CU(cudaEventRecord(e0, s));
    CU(kcu_reduce_launch(dst, a, b, n, t, op, s));
    CU(cudaEventRecord(e1, s));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&ms, e0, e1));
    if (ms * 1e-3 < best) best = ms * 1e-3;
  }
  return best;
}

static double time_copy(void *dst, void *src, size_t bytes, int reps, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1) {
  double best = 1e30;
  CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
  for (int r = 0; r < reps; r++) {
    float ms = 0;
    CU(cudaEventRecord(e0, s));
    CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s));
    CU(cudaEventRecord(e1, s));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&ms, e0, e1));
    if (ms * 1e-3 < best) best = ms * 1e-3;
  }
  return best;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 256, bytes = mib << 20;
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    fprintf(stderr, "bench_reduce: no usable GPU (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "no device");
    return TEST_SKIP_CODE;
  }
  struct cudaDeviceProp p;
  CU(cudaGetDeviceProperties(&p, 0));
  CU(cudaSetDevice(0));
  void *a, *b, *d;
  CU(cudaMalloc(&a, bytes));
  CU(cudaMalloc(&b, bytes));
  CU(cudaMalloc(&d, bytes));
  CU(cudaMemset(a, 0x3c, bytes)); /* finite values in every type */
  CU(cudaMemset(b, 0x3b, bytes));
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CU(cudaStreamCreate(&s));
  CU(cudaEventCreate(&e0));
  CU(cudaEventCreate(&e1));
  const int reps = 10;
  double copy_s = time_copy(d, a, bytes, reps, s, e0, e1), copy_bw = 2.0 * (double)bytes / copy_s / 1e9;
  printf("device %s (sm_%d%d), %zu MiB per buffer\n", p.name, p.major, p.minor, mib);
  printf("copy D2D            %8.1f GB/s\n", copy_bw);
  static const struct {
    xcclDataType_t t;
    xcclRedOp_t op;
    const char *name;
  } cases[] = {{xcclFloat16, xcclSum, "float16 sum"},       {xcclBfloat16, xcclSum, "bfloat16 sum"},
               {xcclFloat8e4m3, xcclSum, "float8e4m3 sum"}, {xcclInt8, xcclMax, "int8 max"},
               {xcclFloat64, xcclProd, "float64 prod"},     {xcclFloat32, xcclSum, "float32 sum"}};
  double red_bw = 0;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t n = bytes / (cases[i].t == xcclFloat64                                 ? 8
                        : cases[i].t == xcclFloat32                               ? 4
                        : cases[i].t == xcclFloat16 || cases[i].t == xcclBfloat16 ? 2
                                                                                  : 1);
    double t = time_reduce(d, a, b, n, cases[i].t, cases[i].op, reps, s, e0, e1);
    red_bw = 3.0 * (double)bytes / t / 1e9;
    printf("reduce %-14s %8.1f GB/s = %.2f x copy\n", cases[i].name, red_bw, red_bw / copy_bw);
  }
  printf("BENCH fraction=%.3f reduce_GBps=%.1f copy_GBps=%.1f type=float32 op=sum bytes=%zu device=\"%s\"\n",
         red_bw / copy_bw, red_bw, copy_bw, bytes, p.name);
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return 0;
}
