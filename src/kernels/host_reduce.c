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
#define KERN_DEFINE_REDUCE(tname, T)                                         \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_sum, T, xr_##tname##_sum(x, y))   \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_prod, T, xr_##tname##_prod(x, y)) \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_max, T, xr_##tname##_max(x, y))   \
  KERN_DEFINE_BINARY(kern_reduce_##tname##_min, T, xr_##tname##_min(x, y))

KERN_DEFINE_REDUCE(int8, int8_t)
KERN_DEFINE_REDUCE(uint8, uint8_t)
KERN_DEFINE_REDUCE(int32, int32_t)
KERN_DEFINE_REDUCE(uint32, uint32_t)
KERN_DEFINE_REDUCE(int64, int64_t)
KERN_DEFINE_REDUCE(uint64, uint64_t)
KERN_DEFINE_REDUCE(float32, float)
KERN_DEFINE_REDUCE(float64, double)
KERN_DEFINE_REDUCE(float16, uint16_t)
KERN_DEFINE_REDUCE(bfloat16, uint16_t)
KERN_DEFINE_REDUCE(float8e4m3, uint8_t)
KERN_DEFINE_REDUCE(float8e5m2, uint8_t)

/* One case of kern_reduce's switch: the four loops of one type. avg combines
 * like sum; kern_divide finishes it. */
#define KERN_REDUCE_CASE(TYPE, tname)                     \
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
    KERN_REDUCE_CASE(xcclInt8, int8)
    KERN_REDUCE_CASE(xcclUint8, uint8)
    KERN_REDUCE_CASE(xcclInt32, int32)
    KERN_REDUCE_CASE(xcclUint32, uint32)
    KERN_REDUCE_CASE(xcclInt64, int64)
    KERN_REDUCE_CASE(xcclUint64, uint64)
    KERN_REDUCE_CASE(xcclFloat16, float16)
    KERN_REDUCE_CASE(xcclFloat32, float32)
    KERN_REDUCE_CASE(xcclFloat64, float64)
    KERN_REDUCE_CASE(xcclBfloat16, bfloat16)
    KERN_REDUCE_CASE(xcclFloat8e4m3, float8e4m3)
    KERN_REDUCE_CASE(xcclFloat8e5m2, float8e5m2)
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

/* Floating types divide in float (double for float64); the narrow ones widen
 * and round back, as in the reductions. */
KERN_DEFINE_UNARY(kern_divide_float32, float, float, xr_float32_div(x, p))
KERN_DEFINE_UNARY(kern_divide_float64, double, double, xr_float64_div(x, p))
KERN_DEFINE_UNARY(kern_divide_float16, uint16_t, float, xr_float16_div(x, p))
KERN_DEFINE_UNARY(kern_divide_bfloat16, uint16_t, float, xr_bfloat16_div(x, p))
KERN_DEFINE_UNARY(kern_divide_float8e4m3, uint8_t, float, xr_float8e4m3_div(x, p))
KERN_DEFINE_UNARY(kern_divide_float8e5m2, uint8_t, float, xr_float8e5m2_div(x, p))

void kern_divide(void *dst, const void *src, size_t n, xcclDataType_t type, int divisor) {
  /* Exact for any rank count up to 2^24. */
  float fdiv = (float)divisor;

  switch (type) {
    case xcclInt8:
      kern_divide_int8(dst, src, n, divisor);
      return;
    case xcclUint8:
      kern_divide_uint8(dst, src, n, divisor);
      return;
    case xcclInt32:
      kern_divide_int32(dst, src, n, divisor);
      return;
    case xcclUint32:
      kern_divide_uint32(dst, src, n, divisor);
      return;
    case xcclInt64:
      kern_divide_int64(dst, src, n, divisor);
      return;
    case xcclUint64:
      kern_divide_uint64(dst, src, n, divisor);
      return;
    case xcclFloat16:
      kern_divide_float16(dst, src, n, fdiv);
      return;
    case xcclFloat32:
      kern_divide_float32(dst, src, n, fdiv);
      return;
    case xcclFloat64:
      kern_divide_float64(dst, src, n, (double)divisor);
      return;
    case xcclBfloat16:
      kern_divide_bfloat16(dst, src, n, fdiv);
      return;
    case xcclFloat8e4m3:
      kern_divide_float8e4m3(dst, src, n, fdiv);
      return;
    case xcclFloat8e5m2:
      kern_divide_float8e5m2(dst, src, n, fdiv);
      return;
    default:
      return;
  }
}
