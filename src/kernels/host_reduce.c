/*
 * host_reduce.c — element-wise reductions and the avg division on host
 * memory, for every xccl type and op (see reduce.h).
 *
 * Each (type, op) pair gets its own loop, stamped out by the macros below,
 * so that every loop body is a single expression on one element type that the
 * compiler can vectorize; kern_reduce and kern_divide only pick the loop. The
 * expressions are reduce_ops.h's element operations, which the CUDA kernels
 * use too.
 */
#include <stdint.h>
#include <string.h>

#include "reduce.h"
#include "reduce_ops.h"

/*
 * Why the loops are blocked. dst may be the same pointer as a or b, so no
 * pointer may carry `restrict`, and without it GCC 12 at -O2 (the "very
 * cheap" cost model, which refuses alias-check versioning) vectorizes
 * nothing; at -O3 it adds runtime overlap checks. Instead each block of
 * KERN_BLOCK elements is computed into a local array first and then copied
 * to dst. The compute loop reads only a and b and writes only the local
 * array, so it has a fixed trip count and no possible aliasing and is
 * vectorized at -O2 and -O3 alike; reading a whole block before writing any
 * of it is also exactly what makes dst == a or dst == b safe. The copy costs
 * little: the block stays in L1. 64 elements fill a 512-bit vector even for
 * 8-bit types.
 */
#define KERN_BLOCK 64

/* Defines `name`, computing dst[i] = EXPR with x = a[i] and y = b[i]. */
#define KERN_DEFINE_BINARY(name, T, EXPR)                                    \
  static void name(void *dst_v, const void *a_v, const void *b_v, size_t n) { \
    T *dst = (T *)dst_v;                                                     \
    const T *a = (const T *)a_v;                                             \
    const T *b = (const T *)b_v;                                             \
    size_t i = 0;                                                            \
    for (; n - i >= KERN_BLOCK; i += KERN_BLOCK) {                           \
      T blk[KERN_BLOCK];                                                     \
      for (size_t j = 0; j < KERN_BLOCK; j++) {                              \
        T x = a[i + j], y = b[i + j];                                        \
        blk[j] = (EXPR);                                                     \
      }                                                                      \
      for (size_t j = 0; j < KERN_BLOCK; j++)                                \
        dst[i + j] = blk[j];                                                 \
    }                                                                        \
    for (; i < n; i++) {                                                     \
      T x = a[i], y = b[i];                                                  \
      dst[i] = (EXPR);                                                       \
    }                                                                        \
  }

/* Defines `name`, computing dst[i] = EXPR with x = src[i] and a loop-invariant
 * parameter p of type P; blocked like the binary loops, for the same reason
 * (dst may equal src). */
#define KERN_DEFINE_UNARY(name, T, P, EXPR)                   \
  static void name(T *dst, const T *src, size_t n, P p) {     \
    size_t i = 0;                                             \
    for (; n - i >= KERN_BLOCK; i += KERN_BLOCK) {            \
      T blk[KERN_BLOCK];                                      \
      for (size_t j = 0; j < KERN_BLOCK; j++) {               \
        T x = src[i + j];                                     \
        blk[j] = (EXPR);                                      \
      }                                                       \
      for (size_t j = 0; j < KERN_BLOCK; j++)                 \
        dst[i + j] = blk[j];                                  \
    }                                                         \
    for (; i < n; i++) {                                      \
      T x = src[i];                                           \
      dst[i] = (EXPR);                                        \
    }                                                         \
  }

/* ---- the reduction loops --------------------------------------------------- */

/* The element operations are reduce_ops.h's, shared with the CUDA kernels;
 * here each becomes one loop per (type, op). */
#define KERN_DEFINE_REDUCE(TYPE, tname, T, D)                                \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_sum, T, xr_##tname##_sum(x, y))   \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_prod, T, xr_##tname##_prod(x, y)) \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_max, T, xr_##tname##_max(x, y))   \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_min, T, xr_##tname##_min(x, y))

XR_FOR_EACH_TYPE(KERN_DEFINE_REDUCE)

/* One case of kern_reduce's switch: the four loops of one type. avg combines
 * like sum; kern_divide finishes it. */
#define KERN_REDUCE_CASE(TYPE, tname, T, D)               \
  case TYPE:                                              \
    switch (op) {                                         \
      case xcclSum:                                       \
      case xcclAvg:                                       \
        kern_reduce_##tname##_sum(dst, a, b, n);          \
        return;                                           \
      case xcclProd:                                      \
        kern_reduce_##tname##_prod(dst, a, b, n);         \
        return;                                           \
      case xcclMax:                                       \
        kern_reduce_##tname##_max(dst, a, b, n);          \
        return;                                           \
      case xcclMin:                                       \
        kern_reduce_##tname##_min(dst, a, b, n);          \
        return;                                           \
      default:                                            \
        return;                                           \
    }

void kern_reduce(void *dst, const void *a, const void *b, size_t n, xcclDataType_t type,
                 xcclRedOp_t op) {
  switch (type) {
    XR_FOR_EACH_TYPE(KERN_REDUCE_CASE)
    default:
      return; /* unknown type: callers validate, nothing to do */
  }
}

/* ---- division (the end of avg) --------------------------------------------- */

/*
 * Integer division by zero is undefined. avg never asks for it (the divisor
 * is the rank count), but if it happens the values pass through unchanged
 * rather than trapping. Floating types divide as IEEE says instead (x/0 =
 * +-inf, 0/0 = NaN).
 */
#define KERN_DIVIDE_BY_ZERO(T)                  \
  if (divisor == 0) {                           \
    if (n && dst != src)                        \
      memcpy(dst, src, n * sizeof(T));          \
    return;                                     \
  }

/*
 * Signed integers: C division truncates toward zero, which is the contract.
 * The one quotient C leaves undefined, MIN / -1, is done as a wrapping
 * negation through the unsigned type instead (MIN stays MIN, as on two's
 * complement hardware). The quotient is computed in D, at least int, so an
 * 8-bit value divided by a divisor outside its range is still plain division.
 */
#define KERN_DEFINE_SIGNED_DIVIDE(tname, T, UT, D)                                     \
  static void kern_divide_##tname(void *dst_v, const void *src_v, size_t n, int divisor) { \
    T *dst = (T *)dst_v;                                                               \
    const T *src = (const T *)src_v;                                                   \
    KERN_DIVIDE_BY_ZERO(T)                                                             \
    if (divisor == -1) {                                                               \
      for (size_t i = 0; i < n; i++)                                                   \
        dst[i] = (T)(0u - (UT)src[i]);                                                 \
      return;                                                                          \
    }                                                                                  \
    D d = (D)divisor;                                                                  \
    for (size_t i = 0; i < n; i++)                                                     \
      dst[i] = xr_##tname##_div(src[i], d);                                            \
  }

/*
 * Unsigned integers divide by the divisor's magnitude, in D (at least
 * unsigned int, so the magnitude of any int fits, INT_MIN's included). A
 * negative divisor is not something avg produces, but it gets a defined
 * meaning rather than undefined behaviour: the mathematical quotient,
 * truncated toward zero and wrapped modulo 2^bits.
 */
#define KERN_DEFINE_UNSIGNED_DIVIDE(tname, T, D)                                       \
  static void kern_divide_##tname(void *dst_v, const void *src_v, size_t n, int divisor) { \
    T *dst = (T *)dst_v;                                                               \
    const T *src = (const T *)src_v;                                                   \
    KERN_DIVIDE_BY_ZERO(T)                                                             \
    if (divisor < 0) {                                                                 \
      D m = (D)0 - (D)divisor;                                                         \
      for (size_t i = 0; i < n; i++)                                                   \
        dst[i] = (T)((D)0 - src[i] / m);                                               \
      return;                                                                          \
    }                                                                                  \
    D d = (D)divisor;                                                                  \
    for (size_t i = 0; i < n; i++)                                                     \
      dst[i] = xr_##tname##_div(src[i], d);                                            \
  }

KERN_DEFINE_SIGNED_DIVIDE(int8, int8_t, uint8_t, int)
KERN_DEFINE_UNSIGNED_DIVIDE(uint8, uint8_t, unsigned)
KERN_DEFINE_SIGNED_DIVIDE(int32, int32_t, uint32_t, int)
KERN_DEFINE_UNSIGNED_DIVIDE(uint32, uint32_t, unsigned)
KERN_DEFINE_SIGNED_DIVIDE(int64, int64_t, uint64_t, int64_t)
KERN_DEFINE_UNSIGNED_DIVIDE(uint64, uint64_t, uint64_t)

/* Floating types divide in D: float (exact for any rank count up to 2^24),
 * double for float64; the narrow ones widen and round back, as in the
 * reductions. */
#define KERN_DEFINE_FLOAT_DIVIDE(tname, T, D)                                          \
  KERN_DEFINE_UNARY(kern_divide_##tname##_by, T, D, xr_##tname##_div(x, p))            \
  static void kern_divide_##tname(void *dst, const void *src, size_t n, int divisor) { \
    kern_divide_##tname##_by((T *)dst, (const T *)src, n, (D)divisor);                 \
  }

KERN_DEFINE_FLOAT_DIVIDE(float32, float, float)
KERN_DEFINE_FLOAT_DIVIDE(float64, double, double)
KERN_DEFINE_FLOAT_DIVIDE(float16, uint16_t, float)
KERN_DEFINE_FLOAT_DIVIDE(bfloat16, uint16_t, float)
KERN_DEFINE_FLOAT_DIVIDE(float8e4m3, uint8_t, float)
KERN_DEFINE_FLOAT_DIVIDE(float8e5m2, uint8_t, float)

#define KERN_DIVIDE_CASE(TYPE, tname, T, D)    \
  case TYPE:                                   \
    kern_divide_##tname(dst, src, n, divisor); \
    return;

void kern_divide(void *dst, const void *src, size_t n, xcclDataType_t type, int divisor) {
  switch (type) {
    XR_FOR_EACH_TYPE(KERN_DIVIDE_CASE)
    default:
      return;
  }
}
