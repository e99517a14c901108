/*
 * dev_reduce_cuda.h — device-side data movement shared by the CUDA kernels:
 * block-wide reduce and copy loops over 16-byte vectors, per (type, op),
 * and the acquire/release accessors of the slot counters. CUDA only.
 *
 * The element operations are reduce_ops.h's, the same functions the host
 * loops use, so both sides compute the same bits. Where the hardware has the
 * operation natively and it rounds the same way, a 16-byte vector uses it:
 * fp16 sum and prod (add/mul.rn.f16x2, every architecture built here), bf16
 * sum and prod on sm_90 (add/mul.rn.bf16x2), and the fp8 <-> half
 * conversions on sm_90 (cvt ... e4m3x2 / e5m2x2; narrowing only for e4m3,
 * whose saturation to 448 is also the host's rule). Native and shared code
 * agree on every result that is not NaN (reduce_ops.h says why rounding once
 * equals rounding through float); a NaN result stays NaN with possibly
 * another payload, as float NaNs from the GPU's adder do anyway.
 */
#ifndef XCCL_KERNELS_DEV_REDUCE_CUDA_H
#define XCCL_KERNELS_DEV_REDUCE_CUDA_H

#include <stdint.h>

#include "reduce_ops.h"

/* ---- counters: system-scope acquire and release --------------------------- */

__device__ __forceinline__ uint64_t kcu_ld_acquire(const uint64_t *p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void kcu_st_release(uint64_t *p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void kcu_st_release32(uint32_t *p, uint32_t v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ uint32_t kcu_ld_relaxed32(const void *p) {
  uint32_t v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t kcu_globaltimer(void) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/* ---- element operations as functors ---------------------------------------- */

/* Op::apply(x, y), Op::div(x, d) and Op::apply16 / Op::div16 on a 16-byte
 * vector of elements. The generic vector forms apply the element operation
 * lane by lane; specializations below replace them where the hardware has
 * the operation. */
template <class Op>
struct kcu_vec {
  typedef typename Op::T T;
  enum { N = 16 / sizeof(T) };
  union U {
    uint4 v;
    T e[N];
  };
  static __device__ __forceinline__ uint4 apply16(uint4 a, uint4 b) {
    U x, y, r;
    x.v = a;
    y.v = b;
#pragma unroll
    for (int i = 0; i < N; i++) r.e[i] = Op::apply(x.e[i], y.e[i]);
    return r.v;
  }
  static __device__ __forceinline__ uint4 div16(uint4 a, typename Op::D d) {
    U x, r;
    x.v = a;
#pragma unroll
    for (int i = 0; i < N; i++) r.e[i] = Op::div(x.e[i], d);
    return r.v;
  }
};

/* One functor per (type, op), named kcu_<tname>_<op>; avg is sum, divided at
 * the end of the reduction. */
#define KCU_DEFINE_OP(tname, TT, DD, opname)                                                    \
  struct kcu_##tname##_##opname {                                                               \
    typedef TT T;                                                                               \
    typedef DD D;                                                                               \
    static __device__ __forceinline__ T apply(T x, T y) { return xr_##tname##_##opname(x, y); } \
    static __device__ __forceinline__ T div(T x, D d) { return xr_##tname##_div(x, d); }        \
    static __device__ __forceinline__ uint4 apply16(uint4 a, uint4 b);                          \
    static __device__ __forceinline__ uint4 div16(uint4 a, D d) {                               \
      return kcu_vec<kcu_##tname##_##opname>::div16(a, d);                                      \
    }                                                                                           \
  };
#define KCU_DEFINE_OPS(TYPE, tname, T, D) \
  KCU_DEFINE_OP(tname, T, D, sum)         \
  KCU_DEFINE_OP(tname, T, D, prod)        \
  KCU_DEFINE_OP(tname, T, D, max)         \
  KCU_DEFINE_OP(tname, T, D, min)
XR_FOR_EACH_TYPE(KCU_DEFINE_OPS)
#undef KCU_DEFINE_OPS
#undef KCU_DEFINE_OP

/* The generic vector forms, except where a native one follows. */
#define KCU_GENERIC_APPLY16(tname, opname)                                             \
  __device__ __forceinline__ uint4 kcu_##tname##_##opname::apply16(uint4 a, uint4 b) { \
    return kcu_vec<kcu_##tname##_##opname>::apply16(a, b);                             \
  }
#define KCU_GENERIC_ALL(TYPE, tname, T, D) \
  KCU_GENERIC_APPLY16(tname, sum)          \
  KCU_GENERIC_APPLY16(tname, prod)         \
  KCU_GENERIC_APPLY16(tname, max)          \
  KCU_GENERIC_APPLY16(tname, min)
KCU_GENERIC_ALL(xcclInt8, int8, int8_t, int)
KCU_GENERIC_ALL(xcclUint8, uint8, uint8_t, unsigned)
KCU_GENERIC_ALL(xcclInt32, int32, int32_t, int)
KCU_GENERIC_ALL(xcclUint32, uint32, uint32_t, unsigned)
KCU_GENERIC_ALL(xcclInt64, int64, int64_t, int64_t)
KCU_GENERIC_ALL(xcclUint64, uint64, uint64_t, uint64_t)
KCU_GENERIC_ALL(xcclFloat32, float32, float, float)
KCU_GENERIC_ALL(xcclFloat64, float64, double, double)
#undef KCU_GENERIC_ALL
KCU_GENERIC_APPLY16(float16, max)
KCU_GENERIC_APPLY16(float16, min)
KCU_GENERIC_APPLY16(bfloat16, max)
KCU_GENERIC_APPLY16(bfloat16, min)

/* fp16 sum and prod: two halves per 32-bit word, rounded once to nearest-even
 * with subnormals kept (add/mul without .ftz), like the host's float path. */
#define KCU_HALF2_APPLY16(tname, opname, INSN)                                         \
  __device__ __forceinline__ uint4 kcu_##tname##_##opname::apply16(uint4 a, uint4 b) { \
    uint4 r;                                                                           \
    asm(INSN " %0, %1, %2;" : "=r"(r.x) : "r"(a.x), "r"(b.x));                         \
    asm(INSN " %0, %1, %2;" : "=r"(r.y) : "r"(a.y), "r"(b.y));                         \
    asm(INSN " %0, %1, %2;" : "=r"(r.z) : "r"(a.z), "r"(b.z));                         \
    asm(INSN " %0, %1, %2;" : "=r"(r.w) : "r"(a.w), "r"(b.w));                         \
    return r;                                                                          \
  }
KCU_HALF2_APPLY16(float16, sum, "add.rn.f16x2")
KCU_HALF2_APPLY16(float16, prod, "mul.rn.f16x2")

/* bf16 sum and prod: native on sm_90 (add/mul.rn.bf16x2); before it, the
 * shared float path. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
KCU_HALF2_APPLY16(bfloat16, sum, "add.rn.bf16x2")
KCU_HALF2_APPLY16(bfloat16, prod, "mul.rn.bf16x2")
#else
KCU_GENERIC_APPLY16(bfloat16, sum)
KCU_GENERIC_APPLY16(bfloat16, prod)
#endif
#undef KCU_HALF2_APPLY16

/*
 * fp8: no arithmetic in hardware, but sm_90 converts pairs: e4m3x2 and
 * e5m2x2 widen exactly to f16x2 (then to float, exactly), and float pairs
 * narrow to e4m3x2 with satfinite, which is the host's e4m3 rule (nearest-
 * even, +-448 on overflow and for inf, NaN stays NaN). e5m2 narrows in
 * software: the hardware's e5m2 satfinite would clamp what the host turns
 * into inf.
 */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void kcu_fp8x2_widen(uint16_t v, int e4m3, float *lo, float *hi) {
  uint32_t h2;
  if (e4m3)
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(v));
  else
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(v));
  *lo = fp16_to_float((uint16_t)(h2 & 0xFFFFu));
  *hi = fp16_to_float((uint16_t)(h2 >> 16));
}

__device__ __forceinline__ uint16_t kcu_e4m3x2_narrow(float lo, float hi) {
  uint16_t v;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(v) : "f"(hi), "f"(lo));
  return v;
}

/* 16 fp8 values: eight pairs, widened, combined in float, narrowed. */
#define KCU_FP8_APPLY16(tname, opname, E4M3, COMBINE, NARROW1)                                            \
  __device__ __forceinline__ uint4 kcu_##tname##_##opname::apply16(uint4 a, uint4 b) {                    \
    union {                                                                                               \
      uint4 v;                                                                                            \
      uint16_t p[8];                                                                                      \
    } x, y, r;                                                                                            \
    x.v = a;                                                                                              \
    y.v = b;                                                                                              \
    _Pragma("unroll") for (int i = 0; i < 8; i++) {                                                       \
      float xl, xh, yl, yh;                                                                               \
      kcu_fp8x2_widen(x.p[i], E4M3, &xl, &xh);                                                            \
      kcu_fp8x2_widen(y.p[i], E4M3, &yl, &yh);                                                            \
      float lo = COMBINE(xl, yl), hi = COMBINE(xh, yh);                                                   \
      r.p[i] = E4M3 ? kcu_e4m3x2_narrow(lo, hi) : (uint16_t)(NARROW1(lo) | ((uint16_t)NARROW1(hi) << 8)); \
    }                                                                                                     \
    return r.v;                                                                                           \
  }
__device__ __forceinline__ float kcu_addf(float x, float y) { return x + y; }
__device__ __forceinline__ float kcu_mulf(float x, float y) { return x * y; }
KCU_FP8_APPLY16(float8e4m3, sum, 1, kcu_addf, fp8_e4m3_from_float)
KCU_FP8_APPLY16(float8e4m3, prod, 1, kcu_mulf, fp8_e4m3_from_float)
KCU_FP8_APPLY16(float8e4m3, max, 1, xr_maxf, fp8_e4m3_from_float)
KCU_FP8_APPLY16(float8e4m3, min, 1, xr_minf, fp8_e4m3_from_float)
KCU_FP8_APPLY16(float8e5m2, sum, 0, kcu_addf, fp8_e5m2_from_float)
KCU_FP8_APPLY16(float8e5m2, prod, 0, kcu_mulf, fp8_e5m2_from_float)
KCU_FP8_APPLY16(float8e5m2, max, 0, xr_maxf, fp8_e5m2_from_float)
KCU_FP8_APPLY16(float8e5m2, min, 0, xr_minf, fp8_e5m2_from_float)
#undef KCU_FP8_APPLY16
#else
KCU_GENERIC_APPLY16(float8e4m3, sum)
KCU_GENERIC_APPLY16(float8e4m3, prod)
KCU_GENERIC_APPLY16(float8e4m3, max)
KCU_GENERIC_APPLY16(float8e4m3, min)
KCU_GENERIC_APPLY16(float8e5m2, sum)
KCU_GENERIC_APPLY16(float8e5m2, prod)
KCU_GENERIC_APPLY16(float8e5m2, max)
KCU_GENERIC_APPLY16(float8e5m2, min)
#endif
#undef KCU_GENERIC_APPLY16

/* ---- block-wide loops ------------------------------------------------------- */

/* A load of data another agent (a peer's GPU, the proxy) wrote into mapped
 * host memory: uncached, so no stale line from the slot's previous use is
 * read. Device memory takes plain loads. */
template <bool HOST, typename V>
__device__ __forceinline__ V kcu_load(const V *p) {
  if (HOST) return __ldcv(p);
  return *p;
}

/*
 * r = a op b for n elements, a[i] first (the host's order: kern_reduce(dst,
 * recv, in)); when divisor != 0, r = Op::div(r, divisor) (the end of avg);
 * r goes to out and to snd, either may be NULL. a is mapped host memory
 * when A_HOST. dst pointers may equal a or b element for element. Every
 * thread of the block (or of the grid, with tid/nthreads over it) calls it.
 */
template <class Op, bool A_HOST, bool UNROLL>
__device__ void kcu_reduce_loop(typename Op::T *out, typename Op::T *snd, const typename Op::T *a,
                                const typename Op::T *b, size_t n, typename Op::D divisor, size_t tid,
                                size_t nthreads) {
  typedef typename Op::T T;
  const size_t N = 16 / sizeof(T);
  uintptr_t mis = ((uintptr_t)out | (uintptr_t)snd | (uintptr_t)a | (uintptr_t)b) & 15;
  size_t nv = mis ? 0 : n / N, i = tid;
  const uint4 *av = (const uint4 *)a, *bv = (const uint4 *)b;
  uint4 *ov = (uint4 *)out, *sv = (uint4 *)snd;
  /* Four vectors in flight per thread, so a warp keeps enough loads going
   * to reach device memory bandwidth (UNROLL; a copy over PCIe needs no
   * help, and the collective kernel compiles twice as fast without it). */
  for (; UNROLL && i + 3 * nthreads < nv; i += 4 * nthreads) {
    uint4 x[4], y[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
      x[u] = kcu_load<A_HOST>(av + i + u * nthreads);
      y[u] = bv[i + u * nthreads];
    }
#pragma unroll
    for (int u = 0; u < 4; u++) {
      uint4 r = Op::apply16(x[u], y[u]);
      if (divisor) r = Op::div16(r, divisor);
      if (ov) ov[i + u * nthreads] = r;
      if (sv) sv[i + u * nthreads] = r;
    }
  }
  for (; i < nv; i += nthreads) {
    uint4 r = Op::apply16(kcu_load<A_HOST>(av + i), bv[i]);
    if (divisor) r = Op::div16(r, divisor);
    if (ov) ov[i] = r;
    if (sv) sv[i] = r;
  }
  for (i = nv * N + tid; i < n; i += nthreads) {
    T r = Op::apply(kcu_load<A_HOST>(a + i), b[i]);
    if (divisor) r = Op::div(r, divisor);
    if (out) out[i] = r;
    if (snd) snd[i] = r;
  }
}

/* Copies `bytes` from src to out and to snd (either may be NULL; out may
 * equal src, then it is skipped), 16, 8, 4 or 1 bytes at a time as the
 * pointers allow. src is mapped host memory when SRC_HOST. */
template <bool SRC_HOST, typename V>
__device__ __forceinline__ size_t kcu_copy_as(char *out, char *snd, const char *src, size_t bytes, size_t tid,
                                              size_t nthreads) {
  size_t nv = bytes / sizeof(V);
  const V *s = (const V *)src;
  V *o = (V *)out, *d = (V *)snd;
  for (size_t i = tid; i < nv; i += nthreads) {
    V v = kcu_load<SRC_HOST>(s + i);
    if (o) o[i] = v;
    if (d) d[i] = v;
  }
  return nv * sizeof(V);
}

template <bool SRC_HOST>
__device__ void kcu_copy_loop(char *out, char *snd, const char *src, size_t bytes, size_t tid, size_t nthreads) {
  if (out == src) out = NULL; /* in place */
  if (!out && !snd) return;
  uintptr_t mis = ((uintptr_t)out | (uintptr_t)snd | (uintptr_t)src);
  size_t done;
  if (!(mis & 15))
    done = kcu_copy_as<SRC_HOST, uint4>(out, snd, src, bytes, tid, nthreads);
  else if (!(mis & 7))
    done = kcu_copy_as<SRC_HOST, unsigned long long>(out, snd, src, bytes, tid, nthreads);
  else if (!(mis & 3))
    done = kcu_copy_as<SRC_HOST, unsigned int>(out, snd, src, bytes, tid, nthreads);
  else
    done = 0;
  for (size_t i = done + tid; i < bytes; i += nthreads) {
    unsigned char v = kcu_load<SRC_HOST>((const unsigned char *)src + i);
    if (out) out[i] = (char)v;
    if (snd) snd[i] = (char)v;
  }
}

#endif
