/*
 * reduce_ops.h — the element operations of every reduction: x op y for one
 * element of each type and op, and the division that ends avg.
 *
 * The host loops (host_reduce.c) and the CUDA kernels (dev_*.cu) both call
 * these functions, so a reduction computes the same bits on either side. They
 * are named xr_<type>_<op> (xr_float16_sum, xr_int8_max, ...) and
 * xr_<type>_div; XR_FOR_EACH_TYPE lists the types for code that dispatches on
 * xcclDataType_t.
 *
 * The rules (reduce.h says them for users): integer sum and prod wrap modulo
 * 2^bits, signed types included; floating max and min return NaN when either
 * input is NaN and order -0 below +0; fp16, bf16 and fp8 widen to float,
 * combine there and round back to nearest-even. The division takes a positive
 * divisor (the rank count): integers truncate toward zero, floating types
 * divide in float (double for float64). kern_divide handles the other
 * divisors outside its loops.
 *
 * Header-only and libc-free (see hd.h). Written so that GCC vectorizes a
 * loop of them at -O2: selects between values computed unconditionally, bits
 * reinterpreted through unions.
 */
#ifndef XCCL_KERNELS_REDUCE_OPS_H
#define XCCL_KERNELS_REDUCE_OPS_H

#include <stdint.h>

#include "fp_convert.h"
#include "hd.h"
#include "xccl.h"

/* ---- floating-point combiners -------------------------------------------- */

/*
 * max and min propagate NaN: if either input is NaN the result is a NaN
 * (x when x is NaN, else y). +0 and -0 compare equal but are ordered
 * -0 < +0, as IEEE 754-2019 maximum/minimum do, so max(+0, -0) = +0 and
 * min(+0, -0) = -0 whatever the operand order; being symmetric keeps results
 * independent of the order in which ranks' contributions meet.
 *
 * The zeros are sorted out on the bits: when x == y, AND of the two patterns
 * clears the sign unless both are -0 (max) and OR sets it if either is -0
 * (min); equal non-zero values have equal bits, so nothing else changes.
 * Written as three unconditional selects because GCC vectorizes this shape
 * for float and double, and neither signbit() on double nor a conditional
 * x + y (a possible trap, so not if-converted).
 */
typedef union {
  double d;
  uint64_t u;
} xr_f64_pun;

static inline XCCL_HD uint64_t xr_double_to_bits(double d) {
  xr_f64_pun p;
  p.d = d;
  return p.u;
}

static inline XCCL_HD double xr_bits_to_double(uint64_t u) {
  xr_f64_pun p;
  p.u = u;
  return p.d;
}

static inline XCCL_HD float xr_maxf(float x, float y) {
  float r = x > y ? x : y;
  r = x == y ? fpc_bits_to_float(fpc_float_to_bits(x) & fpc_float_to_bits(y)) : r;
  return x != x ? x : r;
}

static inline XCCL_HD float xr_minf(float x, float y) {
  float r = x < y ? x : y;
  r = x == y ? fpc_bits_to_float(fpc_float_to_bits(x) | fpc_float_to_bits(y)) : r;
  return x != x ? x : r;
}

static inline XCCL_HD double xr_maxd(double x, double y) {
  double r = x > y ? x : y;
  r = x == y ? xr_bits_to_double(xr_double_to_bits(x) & xr_double_to_bits(y)) : r;
  return x != x ? x : r;
}

static inline XCCL_HD double xr_mind(double x, double y) {
  double r = x < y ? x : y;
  r = x == y ? xr_bits_to_double(xr_double_to_bits(x) | xr_double_to_bits(y)) : r;
  return x != x ? x : r;
}

/* ---- integers -------------------------------------------------------------- */

/*
 * Sum and product are done in the unsigned type (1u * promotes 8-bit operands
 * to unsigned int rather than int, so no product can overflow a signed type);
 * the conversion back to a signed type wraps on every compiler xccl supports
 * (GCC, Clang and nvcc define it as modulo 2^bits). D is the type the
 * division happens in: at least int, so an 8-bit value divided by any int is
 * plain division.
 */
#define XR_DEFINE_INT(tname, T, UT, D)                                                    \
  static inline XCCL_HD T xr_##tname##_sum(T x, T y) { return (T)(1u * (UT)x + (UT)y); }  \
  static inline XCCL_HD T xr_##tname##_prod(T x, T y) { return (T)(1u * (UT)x * (UT)y); } \
  static inline XCCL_HD T xr_##tname##_max(T x, T y) { return x > y ? x : y; }            \
  static inline XCCL_HD T xr_##tname##_min(T x, T y) { return x < y ? x : y; }            \
  static inline XCCL_HD T xr_##tname##_div(T x, D d) { return (T)(x / d); }

XR_DEFINE_INT(int8, int8_t, uint8_t, int)
XR_DEFINE_INT(uint8, uint8_t, uint8_t, unsigned)
XR_DEFINE_INT(int32, int32_t, uint32_t, int)
XR_DEFINE_INT(uint32, uint32_t, uint32_t, unsigned)
XR_DEFINE_INT(int64, int64_t, uint64_t, int64_t)
XR_DEFINE_INT(uint64, uint64_t, uint64_t, uint64_t)

/* ---- float and double: their own precision ------------------------------- */

static inline XCCL_HD float xr_float32_sum(float x, float y) { return x + y; }
static inline XCCL_HD float xr_float32_prod(float x, float y) { return x * y; }
static inline XCCL_HD float xr_float32_max(float x, float y) { return xr_maxf(x, y); }
static inline XCCL_HD float xr_float32_min(float x, float y) { return xr_minf(x, y); }
static inline XCCL_HD float xr_float32_div(float x, float p) { return x / p; }
static inline XCCL_HD double xr_float64_sum(double x, double y) { return x + y; }
static inline XCCL_HD double xr_float64_prod(double x, double y) { return x * y; }
static inline XCCL_HD double xr_float64_max(double x, double y) { return xr_maxd(x, y); }
static inline XCCL_HD double xr_float64_min(double x, double y) { return xr_mind(x, y); }
static inline XCCL_HD double xr_float64_div(double x, double p) { return x / p; }

/*
 * ---- narrow floats: widen (exact), combine in float, round back ----------
 *
 * Rounding twice (to float, then to the narrow format) gives the same result
 * as rounding the exact value once, because float carries at least 2p+2 bits
 * for every format here (p = 11 for fp16). So a device that adds two fp16 or
 * bf16 values natively, rounding once, gets the same bits (NaN payloads
 * aside), which is what lets dev_reduce_cuda.h use the hardware there.
 */
#define XR_DEFINE_NARROW(tname, T, TO_F, FROM_F)                                                   \
  static inline XCCL_HD T xr_##tname##_sum(T x, T y) { return FROM_F(TO_F(x) + TO_F(y)); }         \
  static inline XCCL_HD T xr_##tname##_prod(T x, T y) { return FROM_F(TO_F(x) * TO_F(y)); }        \
  static inline XCCL_HD T xr_##tname##_max(T x, T y) { return FROM_F(xr_maxf(TO_F(x), TO_F(y))); } \
  static inline XCCL_HD T xr_##tname##_min(T x, T y) { return FROM_F(xr_minf(TO_F(x), TO_F(y))); } \
  static inline XCCL_HD T xr_##tname##_div(T x, float p) { return FROM_F(TO_F(x) / p); }

XR_DEFINE_NARROW(float16, uint16_t, fp16_to_float, fp16_from_float)
XR_DEFINE_NARROW(bfloat16, uint16_t, bf16_to_float, bf16_from_float)
XR_DEFINE_NARROW(float8e4m3, uint8_t, fp8_e4m3_to_float, fp8_e4m3_from_float)
XR_DEFINE_NARROW(float8e5m2, uint8_t, fp8_e5m2_to_float, fp8_e5m2_from_float)

/*
 * X(TYPE, tname, T, D) for every datatype: its enum value, the name in the
 * xr_ functions, the element type, and the divisor type of xr_<tname>_div.
 * Signed integers divide by an int (int64: int64_t), unsigned ones by the
 * divisor's magnitude in their own promoted type, floats in float, float64 in
 * double.
 */
#define XR_FOR_EACH_TYPE(X)                     \
  X(xcclInt8, int8, int8_t, int)                \
  X(xcclUint8, uint8, uint8_t, unsigned)        \
  X(xcclInt32, int32, int32_t, int)             \
  X(xcclUint32, uint32, uint32_t, unsigned)     \
  X(xcclInt64, int64, int64_t, int64_t)         \
  X(xcclUint64, uint64, uint64_t, uint64_t)     \
  X(xcclFloat16, float16, uint16_t, float)      \
  X(xcclFloat32, float32, float, float)         \
  X(xcclFloat64, float64, double, double)       \
  X(xcclBfloat16, bfloat16, uint16_t, float)    \
  X(xcclFloat8e4m3, float8e4m3, uint8_t, float) \
  X(xcclFloat8e5m2, float8e5m2, uint8_t, float)

#endif
