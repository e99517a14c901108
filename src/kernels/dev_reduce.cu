/*
 * dev_reduce.cu — the local reduction kernel, dst = a op b in device memory
 * for every type and op (kern_cuda.h): the collective kernel's inner loop on
 * its own, which the GPU benchmark (tests/gpu/bench_reduce.c) measures
 * against a device-to-device copy.
 */
#include <stdint.h>

#include "dev_reduce_cuda.h"
#include "kern_cuda.h"

namespace {

enum { KCU_REDUCE_THREADS = 512 };

template <class Op>
__global__ void __launch_bounds__(KCU_REDUCE_THREADS)
    kcu_reduce_kernel(typename Op::T *dst, const typename Op::T *a, const typename Op::T *b, size_t n) {
  size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x, nthreads = (size_t)gridDim.x * blockDim.x;
  kcu_reduce_loop<Op, false, true>(dst, (typename Op::T *)NULL, a, b, n, (typename Op::D)0, tid, nthreads);
}

int kcu_sms; /* multiprocessors of the device first used; only sizes the grid */

/* Enough blocks to fill the GPU a few times over, no more than the data
 * needs (each thread takes four 16-byte vectors per pass). */
template <class Op>
cudaError_t kcu_reduce_start(void *dst, const void *a, const void *b, size_t n, cudaStream_t stream) {
  typedef typename Op::T T;
  int sms = kcu_sms;
  if (!sms) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      sms = 1;
    kcu_sms = sms;
  }
  size_t per_block = (size_t)KCU_REDUCE_THREADS * 4 * (16 / sizeof(T));
  size_t want = (n + per_block - 1) / per_block, cap = (size_t)sms * 4;
  unsigned blocks = (unsigned)(want < 1 ? 1 : (want < cap ? want : cap));
  kcu_reduce_kernel<Op><<<blocks, KCU_REDUCE_THREADS, 0, stream>>>((T *)dst, (const T *)a, (const T *)b, n);
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t kcu_reduce_launch(void *dst, const void *a, const void *b, size_t n, int type, int op,
                                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
#define KCU_START_CASE(TYPE, tname, T, D)                                  \
  case TYPE:                                                               \
    switch (op) {                                                          \
      case xcclProd:                                                       \
        return kcu_reduce_start<kcu_##tname##_prod>(dst, a, b, n, stream); \
      case xcclMax:                                                        \
        return kcu_reduce_start<kcu_##tname##_max>(dst, a, b, n, stream);  \
      case xcclMin:                                                        \
        return kcu_reduce_start<kcu_##tname##_min>(dst, a, b, n, stream);  \
      default: /* sum, avg */                                              \
        return kcu_reduce_start<kcu_##tname##_sum>(dst, a, b, n, stream);  \
    }
  switch (type) {
    XR_FOR_EACH_TYPE(KCU_START_CASE)
    default:
      return cudaErrorInvalidValue;
  }
#undef KCU_START_CASE
}
