/*
 * xccl-perf — bandwidth of xccl collectives, in the manner of nccl-tests.
 *
 *   xccl-run -n 4 xccl-perf allreduce -b 8 -e 64M -f 2 [options]
 *
 * Each rank joins with xcclCommInitFromEnv. For every size it runs warm-up
 * iterations, then times the measured ones; the reported time is the maximum
 * over ranks of each rank's average per iteration. algbw = size / time and
 * busbw = algbw * the collective's bus factor (2(n-1)/n for allreduce), both
 * in GB/s (1e9 bytes). With -c 1 the result of each size is compared, element
 * by element, with a value computed here from inputs chosen so that every
 * type reduces them exactly.
 *
 * Uses only the public API. New collectives go into the `collectives` table.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xccl.h"

/* ---- Types and ops ------------------------------------------------------ */

typedef struct {
  const char *name;
  xcclDataType_t type;
} name_type_t;

/* The first name of each type is the one printed. */
static const name_type_t type_names[] = {
    {"int8", xcclInt8},         {"uint8", xcclUint8},         {"int32", xcclInt32},
    {"uint32", xcclUint32},     {"int64", xcclInt64},         {"uint64", xcclUint64},
    {"float16", xcclFloat16},   {"half", xcclFloat16},        {"bfloat16", xcclBfloat16},
    {"float32", xcclFloat32},   {"float", xcclFloat32},       {"float64", xcclFloat64},
    {"double", xcclFloat64},    {"fp8e4m3", xcclFloat8e4m3},  {"fp8e5m2", xcclFloat8e5m2},
};
#define N_TYPE_NAMES (sizeof(type_names) / sizeof(type_names[0]))

static const char *const op_names[xcclNumOps] = {"sum", "prod", "max", "min", "avg"};

static const char *type_name(xcclDataType_t t) {
  for (size_t i = 0; i < N_TYPE_NAMES; i++)
    if (type_names[i].type == t) return type_names[i].name;
  return "?";
}

static int type_is_unsigned(xcclDataType_t t) {
  return t == xcclUint8 || t == xcclUint32 || t == xcclUint64;
}

static int type_is_int(xcclDataType_t t) { return t <= xcclUint64; }

/* The largest n such that every integer 0..n is exact (and in range) in t. */
static double type_exact_limit(xcclDataType_t t) {
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

static void store_value(xcclDataType_t t, void *buf, size_t i, double v) {
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

static double load_value(xcclDataType_t t, const void *buf, size_t i) {
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

/* ---- Context ------------------------------------------------------------ */

typedef struct {
  size_t min_bytes, max_bytes;
  size_t factor;
  int iters, warmup;
  xcclDataType_t type;
  xcclRedOp_t op;
  int check, inplace, json;
} options_t;

typedef struct {
  options_t opt;
  xcclComm_t comm;
  int rank, nranks;
  size_t tsize;
  int sum_max; /* sum/avg inputs are 0..sum_max; 0: the 0/1 fallback */
} perf_t;

/* ---- Collectives -------------------------------------------------------- */

typedef struct {
  const char *name;
  /* Elements in the send and receive buffers for `count`. */
  size_t (*send_count)(size_t count, int nranks);
  size_t (*recv_count)(size_t count, int nranks);
  xcclResult_t (*run)(const perf_t *p, const void *send, void *recv, size_t count);
  /* Element i of this rank's input, and of the expected output. */
  double (*input)(const perf_t *p, int rank, size_t i);
  double (*expected)(const perf_t *p, size_t i);
  double (*busbw_factor)(int nranks);
} coll_t;

static size_t same_count(size_t count, int nranks) {
  (void)nranks;
  return count;
}

static xcclResult_t allreduce_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclAllReduce(send, recv, count, p->opt.type, p->opt.op, p->comm, NULL);
}

/*
 * Inputs are small integers chosen so that every partial result of every
 * reduction order is exact in the type:
 *  sum, avg: 0..m per rank with m * nranks within the type's exact integers
 *            (m <= 7); where even m = 1 does not fit (e.g. fp8 e5m2 beyond 8
 *            ranks), 0/1 on the first `limit` ranks and 0 elsewhere;
 *  prod:     1, and 2 on at most one rank per element (products 1 or 2);
 *  max, min: 0..7, shifted to -3..4 for signed types.
 */
static double allreduce_input(const perf_t *p, int rank, size_t i) {
  size_t r = (size_t)rank;
  switch (p->opt.op) {
  case xcclProd: return (i + r) % (size_t)(p->nranks + 1) == 0 ? 2 : 1;
  case xcclMax:
  case xcclMin: {
    double v = (double)((i + 3 * r) % 8);
    return type_is_unsigned(p->opt.type) ? v : v - 3;
  }
  default:
    if (p->sum_max > 0) return (double)((i + 3 * r) % (size_t)(p->sum_max + 1));
    return (double)rank < type_exact_limit(p->opt.type) ? (double)((i + r) & 1) : 0;
  }
}

static double allreduce_expected(const perf_t *p, size_t i) {
  double acc = allreduce_input(p, 0, i);
  for (int r = 1; r < p->nranks; r++) {
    double v = allreduce_input(p, r, i);
    switch (p->opt.op) {
    case xcclProd: acc *= v; break;
    case xcclMax: acc = v > acc ? v : acc; break;
    case xcclMin: acc = v < acc ? v : acc; break;
    default: acc += v; break;
    }
  }
  if (p->opt.op != xcclAvg) return acc;
  /* The library divides once at the end: integers truncate toward zero,
   * float64 divides in double, the other floating types in float. */
  if (type_is_int(p->opt.type)) return (double)((int64_t)acc / p->nranks);
  if (p->opt.type == xcclFloat64) return acc / p->nranks;
  float q = (float)acc / (float)p->nranks; /* the assignment drops any excess precision */
  return q;
}

static double allreduce_busbw(int nranks) { return 2.0 * (nranks - 1) / nranks; }

static const coll_t collectives[] = {
    {"allreduce", same_count, same_count, allreduce_run, allreduce_input, allreduce_expected,
     allreduce_busbw},
};
#define N_COLLECTIVES (sizeof(collectives) / sizeof(collectives[0]))

/* ---- Helpers ------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die_xccl(const perf_t *p, const char *what, xcclResult_t res) {
  fprintf(stderr, "xccl-perf: rank %d: %s failed: %s: %s\n", p->rank, what, xcclGetErrorString(res),
          xcclGetLastError(p->comm));
  if (p->comm) (void)xcclCommAbort(p->comm);
  exit(1);
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-run -n N xccl-perf COLLECTIVE [options]\n"
          "Measures the bandwidth of an xccl collective; rank 0 prints the results.\n"
          "Collectives:");
  for (size_t i = 0; i < N_COLLECTIVES; i++) fprintf(f, " %s", collectives[i].name);
  fprintf(f,
          "\n\n"
          "  -b SIZE     smallest size in bytes (K, M, G suffixes: powers of 1024); default 8\n"
          "  -e SIZE     largest size in bytes; default 64M\n"
          "  -f FACTOR   multiply the size by this (an integer >= 2) each step; default 2\n"
          "  -n ITERS    timed iterations per size; default 20\n"
          "  -w ITERS    warm-up iterations per size; default 5\n"
          "  -d TYPE     int8 uint8 int32 uint32 int64 uint64 float16|half bfloat16\n"
          "              float32|float float64|double fp8e4m3 fp8e5m2; default float32\n"
          "  -o OP       sum prod max min avg; default sum\n"
          "  -c 0|1      check results; default 1\n"
          "  --inplace   send and receive in the same buffer (default: out of place)\n"
          "  --json      one JSON object per line instead of the table\n"
          "  -h, --help  show this help\n"
          "Sizes are rounded down to a multiple of the type's size.\n");
}

static int parse_size(const char *opt, const char *text, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  unsigned shift = 0;
  if (end != text && *end) {
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
  }
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || (v << shift) >> shift != v) {
    fprintf(stderr, "xccl-perf: %s needs a size in bytes like 8, 1K, 64M or 1G, not '%s'\n", opt, text);
    return -1;
  }
  *out = (size_t)(v << shift);
  return 0;
}

static int parse_int(const char *opt, const char *text, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "xccl-perf: %s needs a whole number from %ld to %ld, not '%s'\n", opt, lo, hi, text);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_options(int argc, char **argv, options_t *o) {
  enum { OPT_INPLACE = 1000, OPT_JSON };
  static const struct option longopts[] = {{"inplace", no_argument, NULL, OPT_INPLACE},
                                           {"json", no_argument, NULL, OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  *o = (options_t){.min_bytes = 8, .max_bytes = 64u << 20, .factor = 2, .iters = 20, .warmup = 5,
                   .type = xcclFloat32, .op = xcclSum, .check = 1};
  int c;
  long v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":b:e:f:n:w:d:o:c:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'b': if (parse_size("-b", optarg, &o->min_bytes)) return -1; break;
    case 'e': if (parse_size("-e", optarg, &o->max_bytes)) return -1; break;
    case 'f': if (parse_int("-f", optarg, 2, 1 << 20, &v)) return -1; o->factor = (size_t)v; break;
    case 'n': if (parse_int("-n", optarg, 1, 1 << 30, &v)) return -1; o->iters = (int)v; break;
    case 'w': if (parse_int("-w", optarg, 0, 1 << 30, &v)) return -1; o->warmup = (int)v; break;
    case 'c': if (parse_int("-c", optarg, 0, 1, &v)) return -1; o->check = (int)v; break;
    case 'd': {
      size_t i = 0;
      while (i < N_TYPE_NAMES && strcmp(type_names[i].name, optarg) != 0) i++;
      if (i == N_TYPE_NAMES) {
        fprintf(stderr, "xccl-perf: unknown type '%s'; known:", optarg);
        for (i = 0; i < N_TYPE_NAMES; i++) fprintf(stderr, " %s", type_names[i].name);
        fprintf(stderr, "\n");
        return -1;
      }
      o->type = type_names[i].type;
      break;
    }
    case 'o': {
      int i = 0;
      while (i < xcclNumOps && strcmp(op_names[i], optarg) != 0) i++;
      if (i == xcclNumOps) {
        fprintf(stderr, "xccl-perf: unknown op '%s'; known: sum prod max min avg\n", optarg);
        return -1;
      }
      o->op = (xcclRedOp_t)i;
      break;
    }
    case OPT_INPLACE: o->inplace = 1; break;
    case OPT_JSON: o->json = 1; break;
    case 'h': usage(stdout); exit(0);
    case ':':
      fprintf(stderr, "xccl-perf: option '%s' needs a value; see xccl-perf --help\n", argv[optind - 1]);
      return -1;
    default:
      fprintf(stderr, "xccl-perf: unknown option '%s'; see xccl-perf --help\n", argv[optind - 1]);
      return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "xccl-perf: unexpected argument '%s'; see xccl-perf --help\n", argv[optind]);
    return -1;
  }
  if (o->max_bytes < o->min_bytes) {
    fprintf(stderr, "xccl-perf: the largest size (-e %zu) is below the smallest (-b %zu)\n", o->max_bytes,
            o->min_bytes);
    return -1;
  }
  return 0;
}

static void *alloc_buffer(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  memset(p, 0, bytes);
  return p;
}

/* Fills elements [0, n) of buf with this rank's input. */
static void fill_input(const perf_t *p, const coll_t *coll, void *buf, size_t n) {
  for (size_t i = 0; i < n; i++) store_value(p->opt.type, buf, i, coll->input(p, p->rank, i));
}

/* Counts the elements of recv that differ (bit for bit) from the expected
 * output; reports the first one. */
static uint64_t check_output(const perf_t *p, const coll_t *coll, const void *recv, size_t n) {
  unsigned char want[16];
  uint64_t wrong = 0;
  for (size_t i = 0; i < n; i++) {
    double e = coll->expected(p, i);
    store_value(p->opt.type, want, 0, e);
    if (memcmp(want, (const unsigned char *)recv + i * p->tsize, p->tsize) == 0) continue;
    if (wrong++ == 0)
      fprintf(stderr, "xccl-perf: rank %d: %s of %zu x %s, op %s: element %zu is %g, expected %g\n",
              p->rank, coll->name, n, type_name(p->opt.type), op_names[p->opt.op], i,
              load_value(p->opt.type, recv, i), load_value(p->opt.type, want, 0));
  }
  return wrong;
}

static void print_header(const perf_t *p, const coll_t *coll) {
  int version = 0;
  (void)xcclGetVersion(&version);
  const options_t *o = &p->opt;
  if (o->json) {
    printf("{\"kind\":\"header\",\"collective\":\"%s\",\"nranks\":%d,\"type\":\"%s\",\"op\":\"%s\","
           "\"inplace\":%s,\"check\":%s,\"iters\":%d,\"warmup\":%d,\"min_bytes\":%zu,"
           "\"max_bytes\":%zu,\"factor\":%zu,\"version\":\"%d.%d.%d\",\"version_code\":%d}\n",
           coll->name, p->nranks, type_name(o->type), op_names[o->op], o->inplace ? "true" : "false",
           o->check ? "true" : "false", o->iters, o->warmup, o->min_bytes, o->max_bytes, o->factor,
           version / 10000, version / 100 % 100, version % 100, version);
  } else {
    printf("# xccl-perf %s: nranks %d, type %s, op %s, %s, check %s, iterations %d, warm-up %d\n",
           coll->name, p->nranks, type_name(o->type), op_names[o->op],
           o->inplace ? "in place" : "out of place", o->check ? "on" : "off", o->iters, o->warmup);
    printf("# xccl version %d.%d.%d (code %d)\n#\n", version / 10000, version / 100 % 100,
           version % 100, version);
    printf("# %12s %14s %9s %6s %12s %10s %10s %8s\n", "size", "count", "type", "redop", "time",
           "algbw", "busbw", "#wrong");
    printf("# %12s %14s %9s %6s %12s %10s %10s\n", "(B)", "(elements)", "", "", "(us)", "(GB/s)",
           "(GB/s)");
  }
  fflush(stdout);
}

static void print_row(const perf_t *p, const coll_t *coll, size_t count, double time_us, double algbw,
                      double busbw, uint64_t wrong) {
  const options_t *o = &p->opt;
  size_t bytes = count * p->tsize;
  char wrong_s[32];
  if (o->json) {
    if (o->check) snprintf(wrong_s, sizeof(wrong_s), "%llu", (unsigned long long)wrong);
    printf("{\"kind\":\"result\",\"collective\":\"%s\",\"size\":%zu,\"count\":%zu,\"type\":\"%s\","
           "\"op\":\"%s\",\"inplace\":%s,\"time_us\":%.3f,\"algbw_gbps\":%.4f,\"busbw_gbps\":%.4f,"
           "\"wrong\":%s}\n",
           coll->name, bytes, count, type_name(o->type), op_names[o->op], o->inplace ? "true" : "false",
           time_us, algbw, busbw, o->check ? wrong_s : "null");
  } else {
    if (o->check) snprintf(wrong_s, sizeof(wrong_s), "%llu", (unsigned long long)wrong);
    printf("  %12zu %14zu %9s %6s %12.2f %10.3f %10.3f %8s\n", bytes, count, type_name(o->type),
           op_names[o->op], time_us, algbw, busbw, o->check ? wrong_s : "N/A");
  }
  fflush(stdout);
}

/* Runs and reports one size; returns the wrong elements over all ranks. */
static uint64_t run_size(const perf_t *p, const coll_t *coll, size_t count, void *sendbuf,
                         void *recvbuf, double *busbw_out) {
  const options_t *o = &p->opt;
  size_t send_n = coll->send_count(count, p->nranks);
  const void *src = o->inplace ? recvbuf : sendbuf;
  if (o->inplace) memcpy(recvbuf, sendbuf, send_n * p->tsize);
  char what[128];
  snprintf(what, sizeof(what), "%s of %zu x %s, op %s", coll->name, count, type_name(o->type),
           op_names[o->op]);
  xcclResult_t res;
  for (int i = 0; i < o->warmup; i++)
    if ((res = coll->run(p, src, recvbuf, count)) != xcclSuccess) die_xccl(p, what, res);
  double t0 = now_s();
  for (int i = 0; i < o->iters; i++)
    if ((res = coll->run(p, src, recvbuf, count)) != xcclSuccess) die_xccl(p, what, res);
  double time_us = (now_s() - t0) * 1e6 / o->iters;
  if ((res = xcclAllReduce(&time_us, &time_us, 1, xcclFloat64, xcclMax, p->comm, NULL)) != xcclSuccess)
    die_xccl(p, "xcclAllReduce of the time (max over ranks)", res);

  uint64_t wrong = 0;
  if (o->check) {
    /* Out of place the timed runs left a correct result; in place they
     * reduced the result again and again, so reduce fresh input once more. */
    if (o->inplace) {
      memcpy(recvbuf, sendbuf, send_n * p->tsize);
      if ((res = coll->run(p, recvbuf, recvbuf, count)) != xcclSuccess) die_xccl(p, what, res);
    }
    wrong = check_output(p, coll, recvbuf, coll->recv_count(count, p->nranks));
    if ((res = xcclAllReduce(&wrong, &wrong, 1, xcclUint64, xcclSum, p->comm, NULL)) != xcclSuccess)
      die_xccl(p, "xcclAllReduce of the wrong-element count", res);
  }
  double bytes = (double)(count * p->tsize);
  double algbw = time_us > 0 ? bytes / (time_us * 1e-6) / 1e9 : 0;
  double busbw = algbw * coll->busbw_factor(p->nranks);
  *busbw_out = busbw;
  if (p->rank == 0) print_row(p, coll, count, time_us, algbw, busbw, wrong);
  return wrong;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const coll_t *coll = NULL;
  for (size_t i = 0; i < N_COLLECTIVES; i++)
    if (strcmp(argv[1], collectives[i].name) == 0) coll = &collectives[i];
  if (!coll) {
    fprintf(stderr, "xccl-perf: unknown collective '%s'; known:", argv[1]);
    for (size_t i = 0; i < N_COLLECTIVES; i++) fprintf(stderr, " %s", collectives[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  perf_t p;
  memset(&p, 0, sizeof(p));
  /* getopt sees the collective's name as the program name. */
  if (parse_options(argc - 1, argv + 1, &p.opt) != 0) return 2;
  p.tsize = xcclTypeSize(p.opt.type);
  if (p.tsize == 0 || p.tsize > 16) {
    fprintf(stderr, "xccl-perf: the library gives size %zu for type %s\n", p.tsize, type_name(p.opt.type));
    return 1;
  }

  xcclResult_t res = xcclCommInitFromEnv(&p.comm);
  if (res != xcclSuccess) {
    fprintf(stderr,
            "xccl-perf: xcclCommInitFromEnv failed: %s: %s\n"
            "xccl-perf: start it with a launcher, e.g. xccl-run -n 2 xccl-perf %s\n",
            xcclGetErrorString(res), xcclGetLastError(NULL), coll->name);
    return 1;
  }
  if ((res = xcclCommUserRank(p.comm, &p.rank)) != xcclSuccess) die_xccl(&p, "xcclCommUserRank", res);
  if ((res = xcclCommCount(p.comm, &p.nranks)) != xcclSuccess) die_xccl(&p, "xcclCommCount", res);
  double per_rank = type_exact_limit(p.opt.type) / p.nranks;
  p.sum_max = per_rank >= 7 ? 7 : (int)per_rank;

  size_t max_count = p.opt.max_bytes / p.tsize;
  size_t send_n = coll->send_count(max_count, p.nranks), recv_n = coll->recv_count(max_count, p.nranks);
  void *sendbuf = alloc_buffer(send_n * p.tsize);
  void *recvbuf = alloc_buffer((recv_n > send_n ? recv_n : send_n) * p.tsize);
  if (!sendbuf || !recvbuf) {
    fprintf(stderr, "xccl-perf: rank %d: cannot allocate 2 x %zu bytes of buffers; try a smaller -e\n",
            p.rank, send_n * p.tsize);
    (void)xcclCommAbort(p.comm);
    return 1;
  }
  fill_input(&p, coll, sendbuf, send_n); /* valid numbers even without -c */

  if (p.rank == 0) print_header(&p, coll);
  uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int nsizes = 0;
  for (size_t size = p.opt.min_bytes; size <= p.opt.max_bytes;) {
    double busbw = 0;
    total_wrong += run_size(&p, coll, size / p.tsize, sendbuf, recvbuf, &busbw);
    busbw_sum += busbw;
    nsizes++;
    if (size == 0) {
      size = 1;
    } else if (size > p.opt.max_bytes / p.opt.factor) {
      break;
    } else {
      size *= p.opt.factor;
    }
  }
  double avg_busbw = nsizes ? busbw_sum / nsizes : 0;
  if (p.rank == 0) {
    char wrong_s[32] = "null";
    if (p.opt.check) snprintf(wrong_s, sizeof(wrong_s), "%llu", (unsigned long long)total_wrong);
    if (p.opt.json)
      printf("{\"kind\":\"summary\",\"collective\":\"%s\",\"sizes\":%d,\"avg_busbw_gbps\":%.4f,"
             "\"wrong\":%s,\"ok\":%s}\n",
             coll->name, nsizes, avg_busbw, wrong_s, total_wrong ? "false" : "true");
    else
      printf("# avg busbw: %.3f GB/s\n", avg_busbw);
    fflush(stdout);
    if (total_wrong)
      fprintf(stderr, "xccl-perf: FAILED: %llu wrong elements in total over all sizes and ranks\n",
              (unsigned long long)total_wrong);
  }
  if ((res = xcclCommDestroy(p.comm)) != xcclSuccess) {
    fprintf(stderr, "xccl-perf: rank %d: xcclCommDestroy failed: %s: %s\n", p.rank,
            xcclGetErrorString(res), xcclGetLastError(NULL));
    return 1;
  }
  free(sendbuf);
  free(recvbuf);
  return total_wrong ? 1 : 0;
}
