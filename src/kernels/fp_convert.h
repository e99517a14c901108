/*
 * fp_convert.h — conversions between float and the narrow floating formats
 * xccl reduces: fp16 (IEEE binary16), bf16, fp8 e4m3 and fp8 e5m2.
 *
 * Values travel as raw bit patterns: uint16_t for fp16 and bf16, uint8_t for
 * both fp8 formats. Reductions widen each operand to float, combine in float
 * and narrow the result again, so the two directions below are all a kernel
 * needs.
 *
 * Widening (narrow -> float) is exact for every pattern; NaN stays NaN with
 * its sign and is returned quiet.
 *
 * Narrowing (float -> narrow) rounds to nearest, ties to even, into normals
 * and subnormals alike (never flushes to zero). NaN stays NaN and keeps its
 * sign. What happens past the largest finite value depends on the format:
 *
 *   format  layout (s.exp.frac)  bias  max finite       overflow / inf input
 *   fp16    1.5.10               15    65504   (0x7BFF)  -> +-inf (0x7C00)
 *   bf16    1.8.7                127   ~3.39e38 (0x7F7F) -> +-inf (0x7F80)
 *   e5m2    1.5.2                15    57344   (0x7B)    -> +-inf (0x7C)
 *   e4m3    1.4.3 ("E4M3FN")     7     448     (0x7E)    -> +-448 (0x7E)
 *
 * fp16, bf16 and e5m2 behave like IEEE formats: a value whose rounded
 * magnitude does not fit becomes infinity (so 65520, the tie between 65504 and
 * 65536, goes to inf in fp16). e4m3 has no infinity: its only special pattern
 * is the NaN S.1111.111, and S.1111.110 = 448 is an ordinary number. A sum
 * that overflows e4m3 should not turn into NaN, so e4m3 saturates: every
 * finite value beyond 448 and +-inf itself become +-448, as CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) does (and with it the
 * __nv_fp8_e4m3 constructor from float). NaN is never saturated. Note that
 * e5m2 deliberately differs from CUDA's __NV_SATFINITE, which would clamp
 * e5m2 overflow (and inf) to 57344: here e5m2 keeps IEEE overflow to inf.
 *
 * Canonical NaNs produced here: fp16 keeps the top 9 payload bits of the float
 * NaN and sets the quiet bit (0x7E00 for the default NaN), bf16 likewise
 * (0x7FC0), e5m2 gives S.11111.10 (0x7E) and e4m3 gives S.1111.111 (0x7F).
 *
 * Everything here is header-only integer and float arithmetic with no libc
 * calls, so the same header compiles as CUDA device code: XCCL_HD (hd.h)
 * expands to __host__ __device__ under nvcc. Bits are reinterpreted through a
 * union (well defined in C and supported by nvcc), not memcpy.
 *
 * Floating-point environment: the fp16 and fp8 paths never create or read a
 * float subnormal, so they are exact under flush-to-zero (nvcc -ftz=true,
 * x86 FTZ/DAZ); bf16, whose subnormals are float subnormals, is converted on
 * the bits alone. Narrowing into fp16/fp8 subnormals uses one float addition
 * and so assumes the default round-to-nearest mode, which xccl never changes.
 */
#ifndef XCCL_KERNELS_FP_CONVERT_H
#define XCCL_KERNELS_FP_CONVERT_H

#include <stdint.h>

#include "hd.h"

/* ---- float <-> bits ----------------------------------------------------- */

typedef union {
  float f;
  uint32_t u;
} fpc_f32_pun;

static inline XCCL_HD uint32_t fpc_float_to_bits(float f) {
  fpc_f32_pun p;
  p.f = f;
  return p.u;
}

static inline XCCL_HD float fpc_bits_to_float(uint32_t u) {
  fpc_f32_pun p;
  p.u = u;
  return p.f;
}

/* ---- shared cores --------------------------------------------------------- */

/*
 * cond ? a : b, as mask arithmetic. Used where a comes from a float
 * operation: with a plain ?: GCC sinks that operation into the branch that
 * uses it, and then will not if-convert the branch (the operation could
 * trap), which stops the loop around it from vectorizing.
 */
static inline XCCL_HD uint32_t fpc_select(int cond, uint32_t a, uint32_t b) {
  uint32_t m = 0u - (uint32_t)(cond != 0);
  return (a & m) | (b & ~m);
}

/*
 * Both cores are written as straight-line code whose few decisions are
 * selects between values computed unconditionally, so that GCC and Clang can
 * vectorize a loop of conversions (with plain SSE2: no per-lane variable
 * shifts are needed). They are specialised by inlining: ebits, mbits and bias
 * are always constants.
 */

/*
 * Widens a narrow pattern v (the sign at bit ebits + mbits) to float. With
 * ieee_special the all-ones exponent holds inf and NaN; without it (e4m3)
 * only the all-ones pattern is special, and it is NaN.
 */
static inline XCCL_HD float fpc_widen(uint32_t v, int ebits, int mbits, int bias, int ieee_special) {
  uint32_t nbits = (uint32_t)(ebits + mbits);
  uint32_t sign = (v >> nbits) << 31;
  uint32_t em = v & ((1u << nbits) - 1u); /* exponent and fraction fields */
  uint32_t frac = em & ((1u << mbits) - 1u);
  uint32_t top = ((1u << ebits) - 1u) << mbits; /* all-ones exponent, zero fraction */
  /* Normal: move the fields into place and rebias the exponent. */
  uint32_t r = (em << (23 - mbits)) + ((uint32_t)(127 - bias) << 23);
  /* Zero or subnormal: frac * 2^(1 - bias - mbits), exact and a float normal
   * (so denormal flushing cannot touch it). */
  float sub = (float)em * fpc_bits_to_float((uint32_t)(128 - bias - mbits) << 23);

  r = fpc_select(em < (1u << mbits), fpc_float_to_bits(sub), r);
  if (ieee_special) /* inf keeps a zero fraction; NaN its payload, made quiet */
    r = fpc_select(em >= top, 0x7F800000u | (frac << (23 - mbits)) | ((uint32_t)(frac != 0) << 22),
                   r);
  else
    r = fpc_select(em == (1u << nbits) - 1u, 0x7FC00000u, r);
  return fpc_bits_to_float(sign | r);
}

/*
 * Rounds the magnitude of a float that is not NaN (mag: its bits without the
 * sign) to nearest-even in a format with mbits fraction bits and exponent
 * bias `bias`, and clamps the result to maxv: the largest finite pattern when
 * the format saturates, the inf pattern when it does not. Returns the narrow
 * exponent and fraction fields. +-inf inputs clamp like any huge value.
 */
static inline XCCL_HD uint32_t fpc_narrow(uint32_t mag, int mbits, int bias, uint32_t maxv) {
  int shift = 23 - mbits;
  /* Normal result: rebias, then round on the integer bits. Adding half an
   * ulp less one, plus the bit that will be the last kept one, rounds up
   * exactly when the dropped bits exceed half an ulp or equal it with an odd
   * kept part. A carry out of the fraction lands in the exponent, which is
   * the right answer, up to the inf pattern. Below the normal range this
   * wraps (unsigned, defined) and is not selected. */
  uint32_t odd = (mag >> shift) & 1u;
  uint32_t normal =
      (mag - ((uint32_t)(127 - bias) << 23) + ((1u << (shift - 1)) - 1u) + odd) >> shift;
  /* Subnormal result: let the float adder round. magic is the power of two
   * whose float ulp is the narrow format's subnormal step 2^(1-bias-mbits),
   * so |f| + magic = magic + round(|f| / step) * step, rounded to nearest-even
   * by the hardware, and the difference of the bit patterns is the narrow
   * pattern itself (reaching 1 << mbits, the smallest normal, when it rounds
   * up into it). This relies on the default round-to-nearest mode, which
   * xccl never changes. Float denormal inputs, flushed or not, give 0, which
   * is their correct result in every format using this path. */
  float magic = fpc_bits_to_float((uint32_t)(127 + 1 - bias - mbits + 23) << 23);
  uint32_t sub = fpc_float_to_bits(fpc_bits_to_float(mag) + magic) - fpc_float_to_bits(magic);
  uint32_t r = fpc_select(mag < ((uint32_t)(127 + 1 - bias) << 23), sub, normal);

  return r > maxv ? maxv : r;
}

/* ---- fp16 (IEEE binary16) ------------------------------------------------ */

static inline XCCL_HD float fp16_to_float(uint16_t h) {
  return fpc_widen(h, 5, 10, 15, 1);
}

static inline XCCL_HD uint16_t fp16_from_float(float f) {
  uint32_t u = fpc_float_to_bits(f);
  uint32_t mag = u & 0x7FFFFFFFu;
  /* Overflow and inf give inf (0x7C00); NaN stays quiet with the top payload
   * bits it had. */
  uint32_t r = fpc_narrow(mag, 10, 15, 0x7C00u);
  r = fpc_select(mag > 0x7F800000u, 0x7E00u | ((mag >> 13) & 0x3FFu), r);
  return (uint16_t)(((u >> 16) & 0x8000u) | r);
}

/* ---- bf16 (the top half of a float) ------------------------------------ */

static inline XCCL_HD float bf16_to_float(uint16_t h) {
  /* Exact for every pattern, NaN included; only the quiet bit is forced. */
  uint32_t u = (uint32_t)h << 16;
  u = (u & 0x7FFFFFFFu) > 0x7F800000u ? (u | 0x400000u) : u;
  return fpc_bits_to_float(u);
}

static inline XCCL_HD uint16_t bf16_from_float(float f) {
  uint32_t u = fpc_float_to_bits(f);
  /* bf16 shares float's exponent, so rounding is an add on the raw bits:
   * 0x7FFF rounds anything above the half-way point up and the kept LSB
   * breaks the tie towards even. A carry out of the fraction bumps the
   * exponent, and out of the largest finite value lands exactly on inf;
   * float subnormals round into bf16 subnormals the same way. */
  uint32_t r = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  /* A NaN whose payload sits in the low 16 bits would round to inf (or
   * carry into the sign), so NaN truncates instead and is forced quiet. */
  r = (u & 0x7FFFFFFFu) > 0x7F800000u ? ((u >> 16) | 0x0040u) : r;
  return (uint16_t)r;
}

/* ---- fp8 e4m3 (OCP E4M3FN: no inf, NaN = S.1111.111, saturating) --------- */

static inline XCCL_HD float fp8_e4m3_to_float(uint8_t v) {
  /* The all-ones exponent is an ordinary binade here (up to 448). */
  return fpc_widen(v, 4, 3, 7, 0);
}

static inline XCCL_HD uint8_t fp8_e4m3_from_float(float f) {
  uint32_t u = fpc_float_to_bits(f);
  uint32_t mag = u & 0x7FFFFFFFu;
  /* Clamping to 0x7E saturates overflow and inf at 448, and keeps a value
   * that rounds up past 448 off the NaN pattern 0x7F. */
  uint32_t r = fpc_narrow(mag, 3, 7, 0x7Eu);
  r = fpc_select(mag > 0x7F800000u, 0x7Fu, r);
  return (uint8_t)(((u >> 24) & 0x80u) | r);
}

/* ---- fp8 e5m2 (IEEE-like: inf and NaN) ----------------------------------- */

static inline XCCL_HD float fp8_e5m2_to_float(uint8_t v) {
  return fpc_widen(v, 5, 2, 15, 1);
}

static inline XCCL_HD uint8_t fp8_e5m2_from_float(float f) {
  uint32_t u = fpc_float_to_bits(f);
  uint32_t mag = u & 0x7FFFFFFFu;
  /* Overflow and inf give inf (0x7C); NaN is the quiet pattern S.11111.10. */
  uint32_t r = fpc_narrow(mag, 2, 15, 0x7Cu);
  r = fpc_select(mag > 0x7F800000u, 0x7Eu, r);
  return (uint8_t)(((u >> 24) & 0x80u) | r);
}

#endif
