/*
 * test_reduce.c — the host reduction kernels (kern_reduce, kern_divide) and
 * the narrow float conversions of fp_convert.h.
 *
 * Expected values never come from the code under test. Integers are
 * recomputed on raw bit patterns in uint64_t. Floats are recomputed in double
 * and, for the narrow formats, rounded with a reference encoder that searches
 * a table of every representable value decoded from the format's definition
 * (ldexp on the fields) — a different method from fp_convert.h's bit
 * arithmetic. Rounding an exact double once gives the same answer as the
 * kernels' float-then-narrow double rounding because float has at least
 * 2p+2 bits for every narrow format (p = 11 for fp16), so the two must agree
 * exactly. Hand-computed bit patterns pin the rounding rules themselves.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fp_convert.h"
#include "reduce.h"
#include "test_util.h"
#include "xccl.h"

static const char *const type_names[xcclNumTypes] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
static const char *const op_names[xcclNumOps] = {"sum", "prod", "max", "min", "avg"};

/* ---- float <-> bits, for building inputs and reading results -------------- */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

static double bits_f64(uint64_t u) {
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* ---- reference model of the narrow formats -------------------------------- */

typedef struct {
  const char *name;
  int ebits, mbits, bias;
  int ieee;       /* all-ones exponent holds inf/NaN; else only S.1..1 is NaN (e4m3) */
  int saturate;   /* overflow gives max finite instead of inf */
  uint32_t maxp;  /* pattern of the largest finite value */
  double *val;    /* val[p] for p in [0, maxp]: the positive finite values */
} ref_fmt;

static ref_fmt fmt_fp16 = {"fp16", 5, 10, 15, 1, 0, 0x7BFF, NULL};
static ref_fmt fmt_bf16 = {"bf16", 8, 7, 127, 1, 0, 0x7F7F, NULL};
static ref_fmt fmt_e4m3 = {"e4m3", 4, 3, 7, 0, 1, 0x7E, NULL};
static ref_fmt fmt_e5m2 = {"e5m2", 5, 2, 15, 1, 0, 0x7B, NULL};

/* The value of pattern p, straight from the definition of the format. */
static double ref_decode(const ref_fmt *f, uint32_t p) {
  int nbits = f->ebits + f->mbits;
  uint32_t body = p & ((1u << nbits) - 1u);
  uint32_t e = body >> f->mbits;
  uint32_t m = body & ((1u << f->mbits) - 1u);
  uint32_t emax = (1u << f->ebits) - 1u;
  double v;

  if (f->ieee && e == emax)
    v = m ? NAN : INFINITY;
  else if (!f->ieee && body == (1u << nbits) - 1u)
    v = NAN;
  else if (e == 0)
    v = ldexp((double)m, 1 - f->bias - f->mbits);
  else
    v = ldexp((double)((1u << f->mbits) + m), (int)e - f->bias - f->mbits);
  return ((p >> nbits) & 1u) ? -v : v;
}

static int ref_is_nan(const ref_fmt *f, uint32_t p) {
  return isnan(ref_decode(f, p));
}

static void ref_init(ref_fmt *f) {
  f->val = malloc(sizeof(double) * (f->maxp + 1));
  if (!f->val) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (uint32_t p = 0; p <= f->maxp; p++)
    f->val[p] = ref_decode(f, p);
}

/*
 * v rounded to the nearest value of the format, ties to the even pattern,
 * with the format's overflow policy. The positive finite patterns are in
 * increasing order of value, so a binary search over val[] finds the two
 * neighbours; their midpoint is exact in double.
 */
static uint32_t ref_encode(const ref_fmt *f, double v) {
  int nbits = f->ebits + f->mbits;
  uint32_t sign = signbit(v) ? 1u << nbits : 0;
  double a = fabs(v);
  uint32_t lo, hi;

  if (isnan(v)) /* any NaN will do; callers compare NaN-ness */
    return sign | (f->ieee ? (((1u << f->ebits) - 1u) << f->mbits) | 1u : (1u << nbits) - 1u);
  if (a >= f->val[f->maxp]) {
    /* The would-be next value is 2^(emax+1); half-way to it from max
     * finite is where IEEE rounding goes to inf (ties too: max finite has
     * an odd, all-ones fraction). */
    double next = ldexp(1.0, (int)(f->maxp >> f->mbits) - f->bias + 1);
    if (f->saturate || a < (f->val[f->maxp] + next) / 2)
      return sign | f->maxp;
    return sign | (f->maxp + 1); /* inf: all-ones exponent, zero fraction */
  }
  lo = 0;
  hi = f->maxp;
  while (hi - lo > 1) { /* invariant: val[lo] <= a < val[hi] */
    uint32_t mid = lo + (hi - lo) / 2;
    if (f->val[mid] <= a)
      lo = mid;
    else
      hi = mid;
  }
  if (a == f->val[lo])
    return sign | lo;
  double mid = (f->val[lo] + f->val[hi]) / 2;
  if (a < mid)
    return sign | lo;
  if (a > mid)
    return sign | hi;
  return sign | ((lo & 1u) ? hi : lo);
}

/* ---- elements as raw bit patterns ----------------------------------------- */

static const size_t type_sizes[xcclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static size_t type_size(xcclDataType_t t) {
  return type_sizes[t];
}

static int is_float(xcclDataType_t t) {
  return t >= xcclFloat16 && t != xcclNumTypes;
}

static int is_signed_int(xcclDataType_t t) {
  return t == xcclInt8 || t == xcclInt32 || t == xcclInt64;
}

static ref_fmt *narrow_fmt(xcclDataType_t t) {
  return t == xcclFloat16 ? &fmt_fp16 : t == xcclBfloat16 ? &fmt_bf16
         : t == xcclFloat8e4m3 ? &fmt_e4m3 : &fmt_e5m2;
}

static uint64_t type_mask(xcclDataType_t t) {
  size_t bits = type_size(t) * 8;
  return bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
}

static uint64_t get_raw(const void *buf, size_t i, xcclDataType_t t) {
  switch (type_size(t)) {
    case 1:
      return ((const uint8_t *)buf)[i];
    case 2:
      return ((const uint16_t *)buf)[i];
    case 4:
      return ((const uint32_t *)buf)[i];
    default:
      return ((const uint64_t *)buf)[i];
  }
}

static void put_raw(void *buf, size_t i, xcclDataType_t t, uint64_t v) {
  switch (type_size(t)) {
    case 1:
      ((uint8_t *)buf)[i] = (uint8_t)v;
      break;
    case 2:
      ((uint16_t *)buf)[i] = (uint16_t)v;
      break;
    case 4:
      ((uint32_t *)buf)[i] = (uint32_t)v;
      break;
    default:
      ((uint64_t *)buf)[i] = v;
      break;
  }
}

/* Sign-extended value of a signed integer pattern. */
static int64_t raw_signed(xcclDataType_t t, uint64_t raw) {
  size_t bits = type_size(t) * 8;
  if (bits < 64 && (raw >> (bits - 1)) & 1u)
    raw |= ~type_mask(t);
  return (int64_t)raw;
}

/* A floating pattern's value as a double (exact for every type). */
static double raw_to_double(xcclDataType_t t, uint64_t raw) {
  if (t == xcclFloat32)
    return bits_f32((uint32_t)raw);
  if (t == xcclFloat64)
    return bits_f64(raw);
  return ref_decode(narrow_fmt(t), (uint32_t)raw);
}

/* v rounded once to nearest-even in type t. */
static uint64_t double_to_raw(xcclDataType_t t, double v) {
  if (t == xcclFloat32)
    return f32_bits((float)v);
  if (t == xcclFloat64)
    return f64_bits(v);
  return ref_encode(narrow_fmt(t), v);
}

static int raw_is_nan(xcclDataType_t t, uint64_t raw) {
  return is_float(t) && isnan(raw_to_double(t, raw));
}

/* Equal results: identical bits, or both NaN (payloads are not specified). */
static int raw_same(xcclDataType_t t, uint64_t x, uint64_t y) {
  if (raw_is_nan(t, x) || raw_is_nan(t, y))
    return raw_is_nan(t, x) && raw_is_nan(t, y);
  return x == y;
}

/* max/min by the contract: NaN wins, -0 < +0. */
static double ref_fmax(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return (signbit(x) && signbit(y)) ? -0.0 : 0.0;
  return x > y ? x : y;
}

static double ref_fmin(double x, double y) {
  if (isnan(x) || isnan(y))
    return NAN;
  if (x == 0 && y == 0)
    return (signbit(x) || signbit(y)) ? -0.0 : 0.0;
  return x < y ? x : y;
}

/* The expected a op b, from the raw operands. */
static uint64_t ref_combine(xcclDataType_t t, xcclRedOp_t op, uint64_t a, uint64_t b) {
  if (!is_float(t)) {
    /* Wrapping sum and product are the same bits for signed and unsigned. */
    int gt = is_signed_int(t) ? raw_signed(t, a) > raw_signed(t, b) : a > b;
    switch (op) {
      case xcclSum:
      case xcclAvg:
        return (a + b) & type_mask(t);
      case xcclProd:
        return (a * b) & type_mask(t);
      case xcclMax:
        return gt ? a : b;
      default:
        return gt ? b : a;
    }
  }
  double x = raw_to_double(t, a), y = raw_to_double(t, b), r;
  switch (op) {
    case xcclSum:
    case xcclAvg:
      r = x + y;
      break;
    case xcclProd:
      r = x * y;
      break;
    case xcclMax:
      r = ref_fmax(x, y);
      break;
    default:
      r = ref_fmin(x, y);
      break;
  }
  return double_to_raw(t, r);
}

/* The expected x / d, truncating toward zero for integers. */
static uint64_t ref_divide(xcclDataType_t t, uint64_t x, int d) {
  if (is_float(t))
    return double_to_raw(t, raw_to_double(t, x) / d);
  if (d == 0)
    return x;
  if (is_signed_int(t)) {
    int64_t v = raw_signed(t, x);
    if (d == -1) /* the wrapping negation; avoids INT64_MIN / -1 here too */
      return (0 - (uint64_t)v) & type_mask(t);
    return (uint64_t)(v / d) & type_mask(t);
  }
  /* Unsigned by a negative divisor: the negated quotient of the magnitudes. */
  uint64_t q = x / (d > 0 ? (uint64_t)d : 0 - (uint64_t)(int64_t)d);
  return (d > 0 ? q : 0 - q) & type_mask(t);
}

/* ---- random inputs --------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

/*
 * One input element. wild = 0: ordinary values (small integers and
 * quarters, rounded into the type), wild = 1: any bit pattern at all, NaN,
 * inf and subnormals included, which the references handle as well.
 */
static uint64_t random_raw(xcclDataType_t t, int wild) {
  uint64_t r = rng_next();
  if (wild)
    return r & type_mask(t);
  if (!is_float(t)) {
    int64_t v = (int64_t)(r % 41) - 20;
    if (!is_signed_int(t) && v < 0)
      v = -v;
    return (uint64_t)v & type_mask(t);
  }
  return double_to_raw(t, ((double)(int64_t)(r % 129) - 64) / 4);
}

/* ---- kern_reduce and kern_divide against the references ------------------ */

#define GUARD 16          /* elements of canary on each side of every buffer */
#define CANARY 0xA5u

enum { ALIAS_NONE, ALIAS_DST_A, ALIAS_DST_B, ALIAS_A_B, ALIAS_ALL, ALIAS_MODES };
static const char *const alias_names[ALIAS_MODES] = {"distinct", "dst=a", "dst=b", "a=b",
                                                     "dst=a=b"};

static const size_t sizes[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 1027};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAXN 1027

typedef struct {
  _Alignas(64) unsigned char raw[(GUARD + MAXN + GUARD) * 8];
  void *p; /* the first real element, after GUARD elements of canary */
} guarded_buf;

static guarded_buf bufs[3];

/* Fills the whole buffer with canary bytes and points p at element 0. */
static void gbuf_reset(guarded_buf *g, xcclDataType_t t) {
  memset(g->raw, CANARY, sizeof g->raw);
  g->p = g->raw + GUARD * type_size(t);
}

/* True when the GUARD elements before p and those after element n are intact. */
static int gbuf_guards_ok(const guarded_buf *g, xcclDataType_t t, size_t n) {
  size_t es = type_size(t);
  const unsigned char *before = g->raw;
  const unsigned char *after = (const unsigned char *)g->p + n * es;
  for (size_t i = 0; i < GUARD * es; i++)
    if (before[i] != CANARY || after[i] != CANARY)
      return 0;
  return 1;
}

static uint64_t expect[MAXN];

/* Index of the first of n results in buf that differs from expect[], or n. */
static size_t first_mismatch(xcclDataType_t t, const void *buf, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!raw_same(t, get_raw(buf, i, t), expect[i]))
      return i;
  return n;
}

static void test_reduce_one(xcclDataType_t t, xcclRedOp_t op, size_t n, int alias, int wild) {
  guarded_buf *ga = &bufs[0], *gb = &bufs[1], *gd = &bufs[2];
  void *a, *b, *dst;

  for (int k = 0; k < 3; k++)
    gbuf_reset(&bufs[k], t);
  a = ga->p;
  b = (alias == ALIAS_A_B || alias == ALIAS_ALL) ? a : gb->p;
  if (alias == ALIAS_DST_A || alias == ALIAS_ALL)
    dst = a;
  else if (alias == ALIAS_DST_B)
    dst = b;
  else
    dst = gd->p;
  for (size_t i = 0; i < n; i++) {
    put_raw(a, i, t, random_raw(t, wild));
    if (b != a)
      put_raw(b, i, t, random_raw(t, wild));
  }
  for (size_t i = 0; i < n; i++)
    expect[i] = ref_combine(t, op, get_raw(a, i, t), get_raw(b, i, t));

  kern_reduce(dst, a, b, n, t, op);

  size_t bad = first_mismatch(t, dst, n);
  CHECK(bad == n, "%s %s n=%zu %s %s: element %zu is 0x%llx, expected 0x%llx", type_names[t],
        op_names[op], n, alias_names[alias], wild ? "wild" : "ordinary", bad,
        bad < n ? (unsigned long long)get_raw(dst, bad, t) : 0ull,
        bad < n ? (unsigned long long)expect[bad] : 0ull);
  CHECK(gbuf_guards_ok(ga, t, n) && gbuf_guards_ok(gb, t, n) && gbuf_guards_ok(gd, t, n),
        "%s %s n=%zu %s: wrote outside the buffers", type_names[t], op_names[op], n,
        alias_names[alias]);
}

static void test_reduce_all(void) {
  for (int t = 0; t < xcclNumTypes; t++)
    for (int op = 0; op < xcclNumOps; op++)
      for (size_t s = 0; s < NSIZES; s++)
        for (int alias = 0; alias < ALIAS_MODES; alias++)
          for (int wild = 0; wild < 2; wild++)
            test_reduce_one((xcclDataType_t)t, (xcclRedOp_t)op, sizes[s], alias, wild);

  /* n = 0 touches nothing, not even the pointers. */
  for (int t = 0; t < xcclNumTypes; t++) {
    kern_reduce(NULL, NULL, NULL, 0, (xcclDataType_t)t, xcclSum);
    kern_divide(NULL, NULL, 0, (xcclDataType_t)t, 3);
  }
}

static void test_divide_one(xcclDataType_t t, size_t n, int d, int inplace, int wild) {
  guarded_buf *gs = &bufs[0], *gd = &bufs[1];

  gbuf_reset(gs, t);
  gbuf_reset(gd, t);
  void *out = inplace ? gs->p : gd->p;
  for (size_t i = 0; i < n; i++) {
    put_raw(gs->p, i, t, random_raw(t, wild));
    expect[i] = ref_divide(t, get_raw(gs->p, i, t), d);
  }

  kern_divide(out, gs->p, n, t, d);

  size_t bad = first_mismatch(t, out, n);
  CHECK(bad == n, "divide %s n=%zu by %d%s: element %zu is 0x%llx, expected 0x%llx",
        type_names[t], n, d, inplace ? " in place" : "", bad,
        bad < n ? (unsigned long long)get_raw(out, bad, t) : 0ull,
        bad < n ? (unsigned long long)expect[bad] : 0ull);
  CHECK(gbuf_guards_ok(gs, t, n) && gbuf_guards_ok(gd, t, n),
        "divide %s n=%zu: wrote outside the buffers", type_names[t], n);
}

static void test_divide_all(void) {
  /* 0 and negative divisors are outside what avg asks for, but defined. */
  static const int divisors[] = {1, 2, 3, 7, 8, 1000, 0, -1, -3};
  for (int t = 0; t < xcclNumTypes; t++)
    for (size_t s = 0; s < NSIZES; s++)
      for (size_t k = 0; k < sizeof divisors / sizeof divisors[0]; k++)
        for (int inplace = 0; inplace < 2; inplace++)
          for (int wild = 0; wild < 2; wild++)
            test_divide_one((xcclDataType_t)t, sizes[s], divisors[k], inplace, wild);
}

/* ---- hand-computed edge cases ---------------------------------------------- */

/* One element: checks kern_reduce(a op b), in both operand orders for the
 * commutative ops, against a hand-written expected pattern. For float types
 * an expected NaN matches any NaN. */
static void edge(xcclDataType_t t, xcclRedOp_t op, uint64_t a, uint64_t b, uint64_t want,
                 const char *what) {
  unsigned char x[8], y[8], d[8];
  for (int order = 0; order < 2; order++) {
    put_raw(x, 0, t, order ? b : a);
    put_raw(y, 0, t, order ? a : b);
    kern_reduce(d, x, y, 1, t, op);
    uint64_t got = get_raw(d, 0, t);
    CHECK(raw_same(t, got, want), "%s %s: %s: got 0x%llx, want 0x%llx", type_names[t],
          op_names[op], what, (unsigned long long)got, (unsigned long long)want);
  }
}

static void edge_div(xcclDataType_t t, uint64_t a, int divisor, uint64_t want, const char *what) {
  unsigned char x[8];
  put_raw(x, 0, t, a);
  kern_divide(x, x, 1, t, divisor);
  uint64_t got = get_raw(x, 0, t);
  CHECK(raw_same(t, got, want), "divide %s: %s: got 0x%llx, want 0x%llx", type_names[t], what,
        (unsigned long long)got, (unsigned long long)want);
}

#define U8(v) ((uint64_t)(uint8_t)(v))
#define U32(v) ((uint64_t)(uint32_t)(v))
#define U64(v) ((uint64_t)(v))

static void test_int_edges(void) {
  edge(xcclInt8, xcclSum, U8(INT8_MAX), U8(1), U8(INT8_MIN), "127 + 1 wraps to -128");
  edge(xcclInt8, xcclSum, U8(INT8_MIN), U8(-1), U8(INT8_MAX), "-128 + -1 wraps to 127");
  edge(xcclInt8, xcclProd, U8(16), U8(16), U8(0), "16 * 16 = 256 wraps to 0");
  edge(xcclInt8, xcclProd, U8(INT8_MIN), U8(-1), U8(INT8_MIN), "-128 * -1 wraps to -128");
  edge(xcclInt8, xcclProd, U8(-3), U8(50), U8(106), "-150 wraps to 106");
  edge(xcclInt8, xcclMax, U8(-1), U8(1), U8(1), "signed compare");
  edge(xcclInt8, xcclMin, U8(-128), U8(127), U8(-128), "signed compare");
  edge(xcclUint8, xcclSum, U8(255), U8(1), U8(0), "255 + 1 wraps to 0");
  edge(xcclUint8, xcclProd, U8(16), U8(17), U8(16), "272 wraps to 16");
  edge(xcclUint8, xcclMax, U8(255), U8(1), U8(255), "unsigned compare");
  edge(xcclUint8, xcclMin, U8(255), U8(1), U8(1), "unsigned compare");

  edge(xcclInt32, xcclSum, U32(INT32_MAX), U32(1), U32(INT32_MIN), "INT32_MAX + 1");
  edge(xcclInt32, xcclProd, U32(INT32_MIN), U32(-1), U32(INT32_MIN), "INT32_MIN * -1");
  edge(xcclInt32, xcclProd, U32(65536), U32(65536), U32(0), "2^16 * 2^16");
  edge(xcclInt32, xcclProd, U32(-65537), U32(65537), U32(-131073),
       "-(2^16+1)^2 = -(2^32 + 2^17 + 1) wraps to -(2^17 + 1)");
  edge(xcclInt32, xcclMax, U32(INT32_MIN), U32(INT32_MAX), U32(INT32_MAX), "signed compare");
  edge(xcclUint32, xcclSum, U32(UINT32_MAX), U32(2), U32(1), "UINT32_MAX + 2 wraps to 1");
  edge(xcclUint32, xcclProd, U32(0x10000), U32(0x10000), U32(0), "2^16 * 2^16 wraps to 0");
  edge(xcclUint32, xcclProd, U32(UINT32_MAX), U32(UINT32_MAX), U32(1), "(2^32-1)^2 = 1 mod 2^32");
  edge(xcclUint32, xcclMin, U32(0x80000000u), U32(1), U32(1), "unsigned compare");

  edge(xcclInt64, xcclSum, U64(INT64_MAX), U64(1), U64(INT64_MIN), "INT64_MAX + 1");
  edge(xcclInt64, xcclSum, U64(INT64_MIN), U64(INT64_MIN), U64(0), "INT64_MIN + INT64_MIN");
  edge(xcclInt64, xcclProd, U64(INT64_MIN), U64(-1), U64(INT64_MIN), "INT64_MIN * -1");
  edge(xcclInt64, xcclProd, U64(0x100000001ull), U64(0x100000001ull), U64(0x200000001ull),
       "(2^32+1)^2 = 2^64 + 2^33 + 1 wraps to 2^33 + 1");
  edge(xcclInt64, xcclMin, U64(INT64_MIN), U64(0), U64(INT64_MIN), "signed compare");
  edge(xcclUint64, xcclSum, U64(UINT64_MAX), U64(UINT64_MAX), U64(UINT64_MAX - 1),
       "max + max wraps to max - 1");
  edge(xcclUint64, xcclProd, U64(1ull << 63), U64(2), U64(0), "2^63 * 2 wraps to 0");
  edge(xcclUint64, xcclMax, U64(1ull << 63), U64(1), U64(1ull << 63), "unsigned compare");
  /* avg reduces like sum, wrap included. */
  edge(xcclInt8, xcclAvg, U8(INT8_MAX), U8(1), U8(INT8_MIN), "avg sums: 127 + 1");

  edge_div(xcclInt8, U8(-7), 2, U8(-3), "-7 / 2 truncates to -3");
  edge_div(xcclInt8, U8(7), 2, U8(3), "7 / 2 = 3");
  edge_div(xcclInt8, U8(-7), -2, U8(3), "-7 / -2 = 3");
  edge_div(xcclInt8, U8(INT8_MIN), -1, U8(INT8_MIN), "-128 / -1 wraps to -128");
  edge_div(xcclInt8, U8(-100), 1000, U8(0), "divisor beyond the type's range");
  edge_div(xcclUint8, U8(200), 3, U8(66), "200 / 3");
  edge_div(xcclUint8, U8(10), -3, U8(253), "unsigned by negative: -(10/3) = -3 mod 256");
  edge_div(xcclInt32, U32(-7), 2, U32(-3), "-7 / 2 truncates to -3");
  edge_div(xcclInt32, U32(INT32_MIN), -1, U32(INT32_MIN), "INT32_MIN / -1 wraps");
  edge_div(xcclInt32, U32(INT32_MIN), 2, U32(-1073741824), "INT32_MIN / 2");
  edge_div(xcclInt32, U32(-5), 0, U32(-5), "divisor 0 leaves the value");
  edge_div(xcclUint32, U32(UINT32_MAX), 2, U32(0x7FFFFFFFu), "UINT32_MAX / 2");
  edge_div(xcclInt64, U64(-7), 2, U64(-3), "-7 / 2 truncates to -3");
  edge_div(xcclInt64, U64(INT64_MIN), -1, U64(INT64_MIN), "INT64_MIN / -1 wraps");
  edge_div(xcclInt64, U64(INT64_MIN), 4, U64(-(INT64_C(1) << 61)), "INT64_MIN / 4");
  edge_div(xcclUint64, U64(UINT64_MAX), 3, U64(0x5555555555555555ull), "UINT64_MAX / 3");
  edge_div(xcclUint64, U64(UINT64_MAX), 0, U64(UINT64_MAX), "divisor 0 leaves the value");
}

/* A NaN, +inf, -inf, +0, -0, 1.0 and 2.0 of every float type, by hand. */
typedef struct {
  xcclDataType_t t;
  uint64_t nan, ninf, pinf, pzero, nzero, one, two;
  int has_inf;
} float_consts;

static const float_consts fconsts[] = {
    {xcclFloat16, 0x7E00, 0xFC00, 0x7C00, 0x0000, 0x8000, 0x3C00, 0x4000, 1},
    {xcclBfloat16, 0x7FC0, 0xFF80, 0x7F80, 0x0000, 0x8000, 0x3F80, 0x4000, 1},
    {xcclFloat8e4m3, 0x7F, 0, 0, 0x00, 0x80, 0x38, 0x40, 0},
    {xcclFloat8e5m2, 0x7E, 0xFC, 0x7C, 0x00, 0x80, 0x3C, 0x40, 1},
    {xcclFloat32, 0x7FC00000u, 0xFF800000u, 0x7F800000u, 0, 0x80000000u, 0x3F800000u, 0x40000000u,
     1},
    {xcclFloat64, 0x7FF8000000000000ull, 0xFFF0000000000000ull, 0x7FF0000000000000ull, 0,
     0x8000000000000000ull, 0x3FF0000000000000ull, 0x4000000000000000ull, 1},
};

static void test_float_edges(void) {
  for (size_t k = 0; k < sizeof fconsts / sizeof fconsts[0]; k++) {
    const float_consts *c = &fconsts[k];
    xcclDataType_t t = c->t;
    /* The sign bit of a negative NaN: the top bit of the type. */
    uint64_t neg_nan = c->nan | ((uint64_t)1 << (type_size(t) * 8 - 1));

    CHECK(raw_is_nan(t, c->nan) && raw_is_nan(t, neg_nan), "%s: NaN constants", type_names[t]);
    for (int op = 0; op < xcclNumOps; op++) {
      edge(t, (xcclRedOp_t)op, c->nan, c->one, c->nan, "NaN op 1 is NaN");
      edge(t, (xcclRedOp_t)op, neg_nan, c->two, c->nan, "-NaN op 2 is NaN");
      edge(t, (xcclRedOp_t)op, c->nan, c->nan, c->nan, "NaN op NaN is NaN");
      edge(t, (xcclRedOp_t)op, c->nan, c->nzero, c->nan, "NaN op -0 is NaN");
    }
    edge(t, xcclMax, c->one, c->two, c->two, "max(1, 2)");
    edge(t, xcclMin, c->one, c->two, c->one, "min(1, 2)");
    edge(t, xcclSum, c->one, c->one, c->two, "1 + 1");
    edge(t, xcclMax, c->pzero, c->nzero, c->pzero, "max(+0, -0) = +0");
    edge(t, xcclMin, c->pzero, c->nzero, c->nzero, "min(+0, -0) = -0");
    edge(t, xcclMax, c->nzero, c->nzero, c->nzero, "max(-0, -0) = -0");
    edge(t, xcclMin, c->pzero, c->pzero, c->pzero, "min(+0, +0) = +0");
    edge(t, xcclSum, c->pzero, c->nzero, c->pzero, "+0 + -0 = +0");
    edge(t, xcclSum, c->nzero, c->nzero, c->nzero, "-0 + -0 = -0");
    if (c->has_inf) {
      edge(t, xcclSum, c->pinf, c->ninf, c->nan, "inf + -inf = NaN");
      edge(t, xcclSum, c->pinf, c->one, c->pinf, "inf + 1 = inf");
      edge(t, xcclProd, c->pinf, c->pzero, c->nan, "inf * 0 = NaN");
      edge(t, xcclProd, c->ninf, c->two, c->ninf, "-inf * 2 = -inf");
      edge(t, xcclMax, c->pinf, c->ninf, c->pinf, "max(inf, -inf)");
      edge(t, xcclMin, c->pinf, c->ninf, c->ninf, "min(inf, -inf)");
      edge(t, xcclMax, c->pinf, c->nan, c->nan, "max(inf, NaN) = NaN");
      edge(t, xcclMin, c->ninf, c->nan, c->nan, "min(-inf, NaN) = NaN");
    }
    edge_div(t, c->nan, 2, c->nan, "NaN / 2");
    edge_div(t, c->two, 2, c->one, "2 / 2");
  }

  /* fp16 ties through the reduction. 1.0 = 0x3C00 (ulp 2^-10), 2^-11 =
   * 0x1000 (biased exponent 4). 1 + 2^-11 is exactly half-way between
   * 0x3C00 and 0x3C01 and goes to the even 0x3C00; 1 + 2^-10 + 2^-11 is
   * half-way between 0x3C01 and 0x3C02 and goes to the even 0x3C02. */
  edge(xcclFloat16, xcclSum, 0x3C00, 0x1000, 0x3C00, "1 + 2^-11: tie to even 1.0");
  edge(xcclFloat16, xcclSum, 0x3C01, 0x1000, 0x3C02, "1 + 3*2^-11: tie to even 1 + 2^-9");
  /* 2^-11 + 2^-20 = 2^-11 * (1 + 2^-9) = 0x1002: the sum is just past the
   * tie and goes up to 0x3C01. */
  edge(xcclFloat16, xcclSum, 0x3C00, 0x1002, 0x3C01, "1 + 2^-11 + 2^-20: past the tie, up");
  /* 65504 = 0x7BFF is max finite, ulp 32. + 8 (0x4800) = 65512 rounds back
   * down; + 16 (0x4C00) = 65520 is the tie with 65536 and goes to inf. */
  edge(xcclFloat16, xcclSum, 0x7BFF, 0x4800, 0x7BFF, "65504 + 8 stays 65504");
  edge(xcclFloat16, xcclSum, 0x7BFF, 0x4C00, 0x7C00, "65504 + 16 = 65520 -> inf");
  edge(xcclFloat16, xcclSum, 0xFBFF, 0xCC00, 0xFC00, "-65520 -> -inf");
  edge(xcclFloat16, xcclProd, 0x7BFF, 0x4000, 0x7C00, "65504 * 2 -> inf");
  /* Subnormals: 2^-24 = 0x0001, 2^-14 = 0x0400 (smallest normal). */
  edge(xcclFloat16, xcclSum, 0x0001, 0x0001, 0x0002, "2^-24 + 2^-24");
  edge(xcclFloat16, xcclSum, 0x03FF, 0x0001, 0x0400, "largest subnormal + 2^-24 = 2^-14");
  edge(xcclFloat16, xcclProd, 0x0001, 0x3800, 0x0000, "2^-24 * 0.5 = 2^-25: tie to 0");
  edge(xcclFloat16, xcclProd, 0x0003, 0x3800, 0x0002, "3 * 2^-25: tie to even 2 * 2^-24");
  edge(xcclFloat16, xcclProd, 0x0400, 0x3800, 0x0200, "2^-14 * 0.5 = 0x0200");
  edge_div(xcclFloat16, 0x4200, 2, 0x3E00, "3 / 2 = 1.5");
  edge_div(xcclFloat16, 0x3C00, 3, 0x3555, "1/3 = 1.0101010101(01..)b * 2^-2 rounds down");
  edge_div(xcclFloat16, 0x0001, 2, 0x0000, "2^-25: tie to 0");
  edge_div(xcclFloat16, 0x0003, 2, 0x0002, "1.5 * 2^-24: tie to 2 * 2^-24");

  /* bf16: 1.0 = 0x3F80, ulp 2^-7; 2^-8 = 0x3B80. */
  edge(xcclBfloat16, xcclSum, 0x3F80, 0x3B80, 0x3F80, "1 + 2^-8: tie to even 1.0");
  edge(xcclBfloat16, xcclSum, 0x3F81, 0x3B80, 0x3F82, "1 + 3*2^-8: tie to even 0x3F82");
  edge(xcclBfloat16, xcclSum, 0x7F7F, 0x7F7F, 0x7F80, "max + max -> inf");
  edge(xcclBfloat16, xcclProd, 0x0001, 0x3F00, 0x0000, "2^-133 * 0.5: tie to 0");

  /* e4m3: 1.0 = 0x38, 448 = 0x7E (S.1111.110), 16 = 0x58, 32 = 0x60,
   * 0.5 = 0x30, 2^-4 = 0x18, 1.125 = 0x39 (ulp 2^-3 at 1). */
  edge(xcclFloat8e4m3, xcclSum, 0x7E, 0x7E, 0x7E, "448 + 448 saturates to 448");
  edge(xcclFloat8e4m3, xcclSum, 0xFE, 0xFE, 0xFE, "-448 + -448 saturates to -448");
  edge(xcclFloat8e4m3, xcclSum, 0x7E, 0x58, 0x7E, "448 + 16 = 464: tie, to 448");
  edge(xcclFloat8e4m3, xcclSum, 0x7E, 0x60, 0x7E, "448 + 32 = 480 saturates, not NaN");
  edge(xcclFloat8e4m3, xcclProd, 0x7E, 0x7E, 0x7E, "448 * 448 saturates");
  edge(xcclFloat8e4m3, xcclProd, 0x01, 0x30, 0x00, "2^-9 * 0.5: tie to 0");
  edge(xcclFloat8e4m3, xcclSum, 0x38, 0x18, 0x38, "1 + 2^-4: tie to even 1.0");
  edge(xcclFloat8e4m3, xcclSum, 0x39, 0x18, 0x3A, "1.125 + 2^-4: tie to even 1.25");

  /* e5m2: max finite 57344 = 0x7B (1.75 * 2^15, ulp 8192); 2048 = 0x68,
   * 4096 = 0x6C, 8192 = 0x70. 61440 is the tie between 57344 (odd
   * fraction) and 65536, so it goes to inf. */
  edge(xcclFloat8e5m2, xcclSum, 0x7B, 0x68, 0x7B, "57344 + 2048 = 59392 stays 57344");
  edge(xcclFloat8e5m2, xcclSum, 0x7B, 0x6C, 0x7C, "57344 + 4096 = 61440: tie -> inf");
  edge(xcclFloat8e5m2, xcclSum, 0x7B, 0x70, 0x7C, "57344 + 8192 -> inf");
  edge(xcclFloat8e5m2, xcclSum, 0x7B, 0x7B, 0x7C, "57344 + 57344 -> inf");

  /* float32 and float64 in their own precision: 1 + 2^-24 is a tie in
   * float (to 1.0), exact in double. */
  edge(xcclFloat32, xcclSum, 0x3F800000u, 0x33800000u, 0x3F800000u, "1 + 2^-24 ties to 1");
  edge(xcclFloat64, xcclSum, 0x3FF0000000000000ull, 0x3E70000000000000ull, 0x3FF0000010000000ull,
       "1 + 2^-24 exact in double");
  edge_div(xcclFloat32, 0x3F800000u, 3, 0x3EAAAAABu, "1/3 in float");
  edge_div(xcclFloat64, 0x3FF0000000000000ull, 3, 0x3FD5555555555555ull, "1/3 in double");
}

/* ---- conversions ------------------------------------------------------------ */

static uint32_t to_narrow(const ref_fmt *f, float v) {
  if (f == &fmt_fp16)
    return fp16_from_float(v);
  if (f == &fmt_bf16)
    return bf16_from_float(v);
  if (f == &fmt_e4m3)
    return fp8_e4m3_from_float(v);
  return fp8_e5m2_from_float(v);
}

static float from_narrow(const ref_fmt *f, uint32_t p) {
  if (f == &fmt_fp16)
    return fp16_to_float((uint16_t)p);
  if (f == &fmt_bf16)
    return bf16_to_float((uint16_t)p);
  if (f == &fmt_e4m3)
    return fp8_e4m3_to_float((uint8_t)p);
  return fp8_e5m2_to_float((uint8_t)p);
}

/* Named float -> narrow cases, by hand. */
static void conv(const ref_fmt *f, float v, uint32_t want, const char *what) {
  uint32_t got = to_narrow(f, v);
  int nbits = f->ebits + f->mbits;
  if (ref_is_nan(f, want))
    CHECK(ref_is_nan(f, got) && (got >> nbits) == (want >> nbits),
          "%s: %s: got 0x%x, want a NaN with sign of 0x%x", f->name, what, got, want);
  else
    CHECK(got == want, "%s: %s: got 0x%x, want 0x%x", f->name, what, got, want);
}

static void test_conversion_edges(void) {
  float pnan = bits_f32(0x7FC00000u), nnan = bits_f32(0xFFC00000u);
  float inf = bits_f32(0x7F800000u);

  /* fp16: 1 + 2^-11 ties to 1.0 (0x3C00); 1 + 3*2^-11 ties to 1 + 2^-9
   * (0x3C02); a hair above the first tie goes up to 0x3C01. */
  conv(&fmt_fp16, 1.0f + 0x1p-11f, 0x3C00, "1 + 2^-11");
  conv(&fmt_fp16, 1.0f + 0x1p-11f + 0x1p-20f, 0x3C01, "1 + 2^-11 + 2^-20");
  conv(&fmt_fp16, 1.0f + 0x3p-11f, 0x3C02, "1 + 3*2^-11");
  conv(&fmt_fp16, 0x1p-24f, 0x0001, "2^-24, smallest subnormal");
  conv(&fmt_fp16, 0x1p-25f, 0x0000, "2^-25 ties to 0");
  conv(&fmt_fp16, 0x1.000002p-25f, 0x0001, "just above 2^-25");
  conv(&fmt_fp16, -0x1p-25f, 0x8000, "-2^-25 ties to -0");
  conv(&fmt_fp16, 0x3p-25f, 0x0002, "3*2^-25 ties to 2*2^-24");
  conv(&fmt_fp16, 0x3FFp-24f, 0x03FF, "largest subnormal");
  conv(&fmt_fp16, 0x7FFp-25f, 0x0400, "1023.5 * 2^-24 ties up to 2^-14");
  conv(&fmt_fp16, 0x1p-14f, 0x0400, "2^-14, smallest normal");
  conv(&fmt_fp16, 0x1p-149f, 0x0000, "float denormal -> 0");
  conv(&fmt_fp16, 65504.0f, 0x7BFF, "65504, max finite");
  conv(&fmt_fp16, 65519.996f, 0x7BFF, "just below 65520");
  conv(&fmt_fp16, 65520.0f, 0x7C00, "65520 -> inf");
  conv(&fmt_fp16, -65520.0f, 0xFC00, "-65520 -> -inf");
  conv(&fmt_fp16, 1e30f, 0x7C00, "1e30 -> inf");
  conv(&fmt_fp16, inf, 0x7C00, "inf");
  conv(&fmt_fp16, -inf, 0xFC00, "-inf");
  conv(&fmt_fp16, pnan, 0x7E00, "NaN");
  conv(&fmt_fp16, nnan, 0xFE00, "-NaN keeps its sign");
  conv(&fmt_fp16, bits_f32(0x7F800001u), 0x7E00, "NaN with a low payload stays NaN");
  conv(&fmt_fp16, -0.0f, 0x8000, "-0");

  /* bf16: 1.0 = 0x3F80 = float 0x3F800000; its half-ulp is float 0x8000. */
  conv(&fmt_bf16, bits_f32(0x3F808000u), 0x3F80, "1 + half-ulp ties to even 0x3F80");
  conv(&fmt_bf16, bits_f32(0x3F808001u), 0x3F81, "just above the tie");
  conv(&fmt_bf16, bits_f32(0x3F807FFFu), 0x3F80, "just below the tie");
  conv(&fmt_bf16, bits_f32(0x3F818000u), 0x3F82, "0x3F81 + half-ulp ties to even 0x3F82");
  conv(&fmt_bf16, bits_f32(0x7F7F7FFFu), 0x7F7F, "just below the top tie");
  conv(&fmt_bf16, bits_f32(0x7F7F8000u), 0x7F80, "top tie -> inf");
  conv(&fmt_bf16, bits_f32(0x7F7FFFFFu), 0x7F80, "FLT_MAX -> inf");
  conv(&fmt_bf16, bits_f32(0x00008000u), 0x0000, "subnormal tie to 0");
  conv(&fmt_bf16, bits_f32(0x00018000u), 0x0002, "subnormal tie to even 2");
  conv(&fmt_bf16, bits_f32(0x7F800001u), 0x7FC0, "NaN with a low payload is not inf");
  conv(&fmt_bf16, bits_f32(0xFFFFFFFFu), 0xFFC0, "-NaN all ones stays a -NaN");
  conv(&fmt_bf16, -inf, 0xFF80, "-inf");

  /* e4m3: 448 = 0x7E is max finite, NaN is 0x7F, no inf. */
  conv(&fmt_e4m3, 448.0f, 0x7E, "448");
  conv(&fmt_e4m3, 464.0f, 0x7E, "464 ties to 448");
  conv(&fmt_e4m3, 480.0f, 0x7E, "480 saturates");
  conv(&fmt_e4m3, 500.0f, 0x7E, "500 saturates to 448");
  conv(&fmt_e4m3, -500.0f, 0xFE, "-500 saturates to -448");
  conv(&fmt_e4m3, 1e30f, 0x7E, "1e30 saturates");
  conv(&fmt_e4m3, inf, 0x7E, "inf saturates to 448");
  conv(&fmt_e4m3, -inf, 0xFE, "-inf saturates to -448");
  conv(&fmt_e4m3, pnan, 0x7F, "NaN");
  conv(&fmt_e4m3, nnan, 0xFF, "-NaN");
  conv(&fmt_e4m3, 1.0f, 0x38, "1.0");
  conv(&fmt_e4m3, 0x1p-9f, 0x01, "2^-9, smallest subnormal");
  conv(&fmt_e4m3, 0x1p-10f, 0x00, "2^-10 ties to 0");
  conv(&fmt_e4m3, 0x7p-9f + 0x1p-10f, 0x08, "7.5 * 2^-9 ties up to 2^-6");
  conv(&fmt_e4m3, 0x1p-6f, 0x08, "2^-6, smallest normal");

  /* e5m2: 57344 = 0x7B max finite; 61440 is the tie with 65536 -> inf. */
  conv(&fmt_e5m2, 57344.0f, 0x7B, "57344");
  conv(&fmt_e5m2, 61439.996f, 0x7B, "just below 61440");
  conv(&fmt_e5m2, 61440.0f, 0x7C, "61440 -> inf");
  conv(&fmt_e5m2, 1e6f, 0x7C, "1e6 -> inf");
  conv(&fmt_e5m2, -1e6f, 0xFC, "-1e6 -> -inf");
  conv(&fmt_e5m2, inf, 0x7C, "inf");
  conv(&fmt_e5m2, pnan, 0x7E, "NaN");
  conv(&fmt_e5m2, nnan, 0xFE, "-NaN");
  conv(&fmt_e5m2, 1.0f, 0x3C, "1.0");
  conv(&fmt_e5m2, 0x1p-16f, 0x01, "2^-16, smallest subnormal");
  conv(&fmt_e5m2, 0x1p-17f, 0x00, "2^-17 ties to 0");
}

/*
 * Every pattern of a format: widening gives the value the definition says
 * (exactly, with its sign, NaN for NaN), and narrowing it again gives the
 * same pattern back, or a NaN of the same sign.
 */
static void test_roundtrip(const ref_fmt *f) {
  int nbits = f->ebits + f->mbits;
  uint32_t count = 1u << (nbits + 1);
  uint32_t bad_widen = count, bad_back = count;

  for (uint32_t p = 0; p < count; p++) {
    float w = from_narrow(f, p);
    double want = ref_decode(f, p);
    uint32_t back = to_narrow(f, w);
    int widen_ok = isnan(want) ? (isnan(w) && !signbit(w) == !signbit(want))
                               : ((double)w == want && !signbit(w) == !signbit(want));
    int back_ok = isnan(want) ? (ref_is_nan(f, back) && (back >> nbits) == (p >> nbits))
                              : back == p;
    if (!widen_ok && bad_widen == count)
      bad_widen = p;
    if (!back_ok && bad_back == count)
      bad_back = p;
  }
  CHECK(bad_widen == count, "%s: pattern 0x%x widens to %a, expected %a", f->name, bad_widen,
        (double)from_narrow(f, bad_widen), ref_decode(f, bad_widen));
  CHECK(bad_back == count, "%s: pattern 0x%x comes back as 0x%x", f->name, bad_back,
        to_narrow(f, from_narrow(f, bad_back)));
}

/* Compares one float -> narrow conversion with the reference encoder. */
static int conv_matches(const ref_fmt *f, float v) {
  uint32_t got = to_narrow(f, v), want = ref_encode(f, v);
  int nbits = f->ebits + f->mbits;
  if (isnan(v))
    return ref_is_nan(f, got) && (got >> nbits) == (want >> nbits);
  return got == want;
}

/*
 * float -> narrow against the reference: every midpoint between adjacent
 * values (the exact ties) and its float neighbours on both sides, then
 * random floats near the format's range and random bit patterns.
 */
static void test_narrowing(const ref_fmt *f) {
  float first_bad = 0;
  int bad = 0;

  for (uint32_t p = 0; p < f->maxp; p++) {
    /* Midpoints need one more bit than the format: exact in float. */
    float mid = (float)((f->val[p] + f->val[p + 1]) / 2);
    float cases[6] = {mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), -mid,
                      (float)f->val[p], -(float)f->val[p]};
    for (int k = 0; k < 6; k++)
      if (!conv_matches(f, cases[k]) && !bad++)
        first_bad = cases[k];
  }
  for (int i = 0; i < 2000000; i++) {
    uint64_t r = rng_next();
    float v;
    if (i & 1) {
      v = bits_f32((uint32_t)r);
    } else {
      /* A random significand at an exponent from below the smallest
       * subnormal to above the largest finite value. */
      int lo = 1 - f->bias - f->mbits - 3;
      int hi = (int)(f->maxp >> f->mbits) - f->bias + 3;
      int e = lo + (int)((r >> 32) % (uint64_t)(hi - lo + 1));
      v = ldexpf(1.0f + (float)(r & 0x7FFFFF) * 0x1p-23f, e);
      if (r & (1ull << 31))
        v = -v;
    }
    if (!conv_matches(f, v) && !bad++)
      first_bad = v;
  }
  CHECK(bad == 0, "%s: %d conversions differ from the reference, first %a (bits 0x%08x): got "
        "0x%x, want 0x%x", f->name, bad, (double)first_bad, f32_bits(first_bad),
        to_narrow(f, first_bad), ref_encode(f, first_bad));
}

static void test_conversions(void) {
  ref_fmt *fmts[4] = {&fmt_fp16, &fmt_bf16, &fmt_e4m3, &fmt_e5m2};
  test_conversion_edges();
  for (int k = 0; k < 4; k++) {
    test_roundtrip(fmts[k]);
    test_narrowing(fmts[k]);
  }
}

int main(void) {
  ref_init(&fmt_fp16);
  ref_init(&fmt_bf16);
  ref_init(&fmt_e4m3);
  ref_init(&fmt_e5m2);

  test_conversions();
  test_int_edges();
  test_float_edges();
  test_reduce_all();
  test_divide_all();

  free(fmt_fp16.val);
  free(fmt_bf16.val);
  free(fmt_e4m3.val);
  free(fmt_e5m2.val);
  return test_finish("reduce");
}
