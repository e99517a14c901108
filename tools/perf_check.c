/*
 * perf_check.c — xccl-perf's element values: type and op names, and its own
 * encoder and decoder for every type (see perf_check.h).
 */
#include <math.h>
#include <stdint.h>

#include "perf_check.h"

/* ---- Types and ops ------------------------------------------------------ */

const name_type_t perf_type_names[] = {
    {"int8", xcclInt8},         {"uint8", xcclUint8},         {"int32", xcclInt32},
    {"uint32", xcclUint32},     {"int64", xcclInt64},         {"uint64", xcclUint64},
    {"float16", xcclFloat16},   {"half", xcclFloat16},        {"bfloat16", xcclBfloat16},
    {"float32", xcclFloat32},   {"float", xcclFloat32},       {"float64", xcclFloat64},
    {"double", xcclFloat64},    {"fp8e4m3", xcclFloat8e4m3},  {"fp8e5m2", xcclFloat8e5m2},
};
const size_t perf_n_type_names = sizeof(perf_type_names) / sizeof(perf_type_names[0]);

const char *const perf_op_names[xcclNumOps] = {"sum", "prod", "max", "min", "avg"};

const char *perf_type_name(xcclDataType_t t) {
  for (size_t i = 0; i < perf_n_type_names; i++)
    if (perf_type_names[i].type == t) return perf_type_names[i].name;
  return "?";
}

int perf_type_is_unsigned(xcclDataType_t t) {
  return t == xcclUint8 || t == xcclUint32 || t == xcclUint64;
}

int perf_type_is_int(xcclDataType_t t) { return t <= xcclUint64; }

double perf_type_exact_limit(xcclDataType_t t) {
  switch (t) {
  case xcclInt8: return 127;
  case xcclUint8: return 255;
  case xcclFloat16: return 2048;
  case xcclBfloat16: return 256;
  case xcclFloat8e4m3: return 16;
  case xcclFloat8e5m2: return 8;
  case xcclFloat32: return 16777216.0;
  default: return 9007199254740992.0; /* int32 and up: far beyond what we add */
  }
}

double perf_scrambled_value(xcclDataType_t t, int rank, size_t i) {
  /* splitmix64's finaliser over the element index and the rank. */
  uint64_t x = (uint64_t)i * 0x9E3779B97F4A7C15ull + ((uint64_t)(unsigned)rank + 1) * 0xD1B54A32D192ED03ull;
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  double lim = perf_type_exact_limit(t);
  uint64_t l = lim < 100000 ? (uint64_t)lim : 100000;
  if (perf_type_is_unsigned(t)) return (double)(x % (l + 1));
  return (double)(x % (2 * l + 1)) - (double)l;
}

/* ---- Narrow floats: our own encoder and decoder, so the check does not
 * lean on the library's conversions. ------------------------------------- */

/* x (finite, in range) to a float with ebits exponent and mbits fraction bits,
 * rounding to nearest, ties to even. */
static uint32_t minifloat_encode(double x, int ebits, int mbits) {
  uint32_t sign = 0;
  if (signbit(x)) {
    sign = 1u << (ebits + mbits);
    x = -x;
  }
  if (x == 0) return sign;
  int bias = (1 << (ebits - 1)) - 1, e;
  (void)frexp(x, &e);
  int exp = e - 1; /* x in [2^exp, 2^(exp+1)) */
  if (exp < 1 - bias) exp = 1 - bias; /* subnormal: the scale stops there */
  double q = nearbyint(ldexp(x, mbits - exp)); /* fraction units; ties to even */
  if (q >= ldexp(1.0, mbits + 1)) { /* rounded up into the next binade */
    q /= 2;
    exp++;
  }
  uint32_t mant = (uint32_t)q;
  if (mant < (1u << mbits)) return sign | mant; /* subnormal */
  return sign | ((uint32_t)(exp + bias) << mbits) | (mant - (1u << mbits));
}

/* e4m3 is the "FN" variant: no infinities, only S.1111.111 is NaN. */
static double minifloat_decode(uint32_t bits, int ebits, int mbits, int fn) {
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t mant = bits & ((1u << mbits) - 1);
  uint32_t be = (bits >> mbits) & ((1u << ebits) - 1);
  int neg = (bits >> (ebits + mbits)) & 1;
  double v;
  if (!fn && be == (1u << ebits) - 1)
    v = mant ? NAN : INFINITY;
  else if (fn && be == (1u << ebits) - 1 && mant == (1u << mbits) - 1)
    v = NAN;
  else if (be == 0)
    v = ldexp((double)mant, 1 - bias - mbits);
  else
    v = ldexp((double)(mant + (1u << mbits)), (int)be - bias - mbits);
  return neg ? -v : v;
}

void perf_store_value(xcclDataType_t t, void *buf, size_t i, double v) {
  switch (t) {
  case xcclInt8: ((int8_t *)buf)[i] = (int8_t)v; break;
  case xcclUint8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
  case xcclInt32: ((int32_t *)buf)[i] = (int32_t)v; break;
  case xcclUint32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
  case xcclInt64: ((int64_t *)buf)[i] = (int64_t)v; break;
  case xcclUint64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
  case xcclFloat16: ((uint16_t *)buf)[i] = (uint16_t)minifloat_encode(v, 5, 10); break;
  case xcclBfloat16: ((uint16_t *)buf)[i] = (uint16_t)minifloat_encode(v, 8, 7); break;
  case xcclFloat32: ((float *)buf)[i] = (float)v; break;
  case xcclFloat64: ((double *)buf)[i] = v; break;
  case xcclFloat8e4m3: ((uint8_t *)buf)[i] = (uint8_t)minifloat_encode(v, 4, 3); break;
  case xcclFloat8e5m2: ((uint8_t *)buf)[i] = (uint8_t)minifloat_encode(v, 5, 2); break;
  default: break;
  }
}

double perf_load_value(xcclDataType_t t, const void *buf, size_t i) {
  switch (t) {
  case xcclInt8: return ((const int8_t *)buf)[i];
  case xcclUint8: return ((const uint8_t *)buf)[i];
  case xcclInt32: return ((const int32_t *)buf)[i];
  case xcclUint32: return ((const uint32_t *)buf)[i];
  case xcclInt64: return (double)((const int64_t *)buf)[i];
  case xcclUint64: return (double)((const uint64_t *)buf)[i];
  case xcclFloat16: return minifloat_decode(((const uint16_t *)buf)[i], 5, 10, 0);
  case xcclBfloat16: return minifloat_decode(((const uint16_t *)buf)[i], 8, 7, 0);
  case xcclFloat32: return ((const float *)buf)[i];
  case xcclFloat64: return ((const double *)buf)[i];
  case xcclFloat8e4m3: return minifloat_decode(((const uint8_t *)buf)[i], 4, 3, 1);
  case xcclFloat8e5m2: return minifloat_decode(((const uint8_t *)buf)[i], 5, 2, 0);
  default: return NAN;
  }
}
