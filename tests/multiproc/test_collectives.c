/*
 * test_collectives.c — all-gather, reduce-scatter, broadcast (and bcast) and
 * reduce across real processes over real TCP, run under xccl-run.
 *
 * Every rank can generate every rank's input, so each result is checked
 * bit for bit against a reference this program computes itself with plain
 * scalar arithmetic and its own encoders for the narrow float types — no
 * library code (not even fp_convert.h) is involved in the expected values.
 *
 * Inputs to reductions are chosen so that the exact result does not depend
 * on the order in which the ring combines them (small integers for floating
 * sums, powers of two for floating products, wrapping integer arithmetic).
 * Inputs to all-gather and broadcast are arbitrary bit patterns, NaNs
 * included, because those must be copied, never interpreted.
 *
 * Around every buffer lie canaries; out-of-place inputs and any memory the
 * collective must not write are compared with a snapshot taken before the
 * call.
 *
 * usage: test_collectives MODE [COLLECTIVE]   with MODE one of
 *   matrix   every collective x type x op x count {0,1,7,large} x in/out of
 *            place x root, the large count on a subset; COLLECTIVE
 *            (allgather, reducescatter, broadcast, reduce) runs one only
 *   bytes    per-peer byte counters match the ring's traffic formulas
 *   errors   invalid arguments are refused locally and leave the
 *            communicator usable
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_ANONYMOUS under -std=c11 */
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "test_util.h"
#include "xccl.h"
#ifdef __GLIBC__
#include <malloc.h>
#endif

static int nranks, rank;

/* ---- types, and an encoder independent of the library ------------------ */

typedef struct {
  const char *name;
  size_t size;
  int is_float, is_signed;
  int ebits, mbits; /* narrow floats only: exponent and mantissa bits */
} type_info_t;

static const type_info_t types[xcclNumTypes] = {
    [xcclInt8] = {"int8", 1, 0, 1, 0, 0},          [xcclUint8] = {"uint8", 1, 0, 0, 0, 0},
    [xcclInt32] = {"int32", 4, 0, 1, 0, 0},        [xcclUint32] = {"uint32", 4, 0, 0, 0, 0},
    [xcclInt64] = {"int64", 8, 0, 1, 0, 0},        [xcclUint64] = {"uint64", 8, 0, 0, 0, 0},
    [xcclFloat16] = {"float16", 2, 1, 1, 5, 10},   [xcclFloat32] = {"float32", 4, 1, 1, 0, 0},
    [xcclFloat64] = {"float64", 8, 1, 1, 0, 0},    [xcclBfloat16] = {"bfloat16", 2, 1, 1, 8, 7},
    [xcclFloat8e4m3] = {"float8e4m3", 1, 1, 1, 4, 3}, [xcclFloat8e5m2] = {"float8e5m2", 1, 1, 1, 5, 2},
};
static const char *const op_names[xcclNumOps] = {"sum", "prod", "max", "min", "avg"};

static uint64_t type_mask(xcclDataType_t t) {
  return types[t].size == 8 ? ~0ull : (1ull << (8 * types[t].size)) - 1;
}

/*
 * v rounded to nearest-even in a binary format with ebits/mbits (IEEE-style
 * bias, subnormals). Only for values well inside the finite range, which is
 * all the reference ever produces; anything else is a bug in this test.
 */
static uint64_t encode_narrow(double v, int ebits, int mbits) {
  int bias = (1 << (ebits - 1)) - 1;
  uint64_t dbits;
  memcpy(&dbits, &v, sizeof(v));
  uint64_t sign = dbits >> 63;
  double a = sign ? -v : v;
  if (a == 0) return sign << (ebits + mbits);
  int e = 0; /* a = 1.xxx * 2^e, by halving or doubling, which is exact */
  for (double x = a; x >= 2; x /= 2) e++;
  for (double x = a; x < 1; x *= 2) e--;
  if (e < 1 - bias) e = 1 - bias; /* subnormal: the quantum stops shrinking */
  double q = 1;                   /* the quantum 2^(e - mbits) */
  for (int k = e - mbits; k > 0; k--) q *= 2;
  for (int k = e - mbits; k < 0; k++) q /= 2;
  double scaled = a / q; /* exact: q is a power of two */
  uint64_t m = (uint64_t)scaled;
  double frac = scaled - (double)m;
  if (frac > 0.5 || (frac == 0.5 && (m & 1))) m++; /* ties to even */
  if (m >> (mbits + 1)) m >>= 1, e++;              /* rounded up into the next binade: m was 2^(mbits+1) */
  uint64_t field = m >> mbits ? (uint64_t)(e + bias) : 0, top = (1u << ebits) - 1;
  /* The top exponent is inf/NaN, except in e4m3 (OCP "fn"): there only
   * mantissa all-ones is NaN, and 256..448 are finite. */
  int e4m3 = ebits == 4 && mbits == 3;
  if (field > top || (field == top && (!e4m3 || (m & 7) == 7))) {
    fprintf(stderr, "test bug: %g does not fit e%dm%d\n", v, ebits, mbits);
    abort();
  }
  return sign << (ebits + mbits) | field << mbits | (m & ((1ull << mbits) - 1));
}

/* v (exact, or already rounded to float where the library divides in float)
 * as the bits of type t. Integers wrap modulo 2^bits. */
static uint64_t encode(double v, xcclDataType_t t) {
  const type_info_t *ti = &types[t];
  if (!ti->is_float) return (uint64_t)(int64_t)v & type_mask(t);
  if (t == xcclFloat64) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
  }
  if (t == xcclFloat32) {
    float f = (float)v;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  return encode_narrow(v, ti->ebits, ti->mbits);
}

static uint64_t get_bits(const void *p, size_t i, size_t es) {
  switch (es) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

static void put_bits(void *p, size_t i, size_t es, uint64_t b) {
  switch (es) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)b; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)b; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)b; break;
    default: ((uint64_t *)p)[i] = b; break;
  }
}

/* ---- inputs ------------------------------------------------------------- */

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static uint64_t hash(int r, size_t i, int t, int salt) {
  return mix((uint64_t)r * 0x9E3779B97F4A7C15ull + (uint64_t)i * 0x632BE59BD9B4E019ull + (uint64_t)t * 1009 +
             (uint64_t)salt);
}

/* Element i of rank r's input to a copy (all-gather, broadcast): any bits. */
static uint64_t copy_input(int r, size_t i, xcclDataType_t t) { return hash(r, i, t, 77) & type_mask(t); }

/* A value in [0, m) from the top bits of h: multiply-shift, much cheaper
 * than a 64-bit modulo in loops over millions of elements. */
static unsigned pick(uint64_t h, unsigned m) { return (unsigned)((h >> 32) * m >> 32); }

/* Floating inputs to a reduction are drawn from a few exact values. */
static double float_choice(xcclDataType_t t, xcclRedOp_t op, unsigned k) {
  if (op == xcclProd) {
    static const double pw[] = {1, 2, 0.5, -1}; /* |product| in [2^-8, 2^8] for 8 ranks */
    return pw[k];
  }
  int span = t == xcclFloat8e5m2 ? 1 : (t == xcclFloat8e4m3 ? 2 : 6);
  return (double)((int)k - span);
}

/* How many choices: |partial sums| <= 8 * span stay exactly representable:
 * 8 in e5m2, 16 in e4m3, 48 elsewhere. */
static unsigned float_choices(xcclDataType_t t, xcclRedOp_t op) {
  if (op == xcclProd) return 4;
  return t == xcclFloat8e5m2 ? 3 : (t == xcclFloat8e4m3 ? 5 : 13);
}

/* Element i of rank r's input to a reduction, as an exact value. */
static double red_input(int r, size_t i, xcclDataType_t t, xcclRedOp_t op) {
  uint64_t h = hash(r, i, t, op);
  if (!types[t].is_float) return (double)pick(h, 2001) - 1000; /* wraps in small types: on purpose */
  return float_choice(t, op, pick(h, float_choices(t, op)));
}

/* The same, encoded as type t: floats through a table of the few choices. */
static uint64_t red_input_bits(int r, size_t i, xcclDataType_t t, xcclRedOp_t op) {
  static uint64_t table[xcclNumTypes][xcclNumOps][13];
  static int filled[xcclNumTypes][xcclNumOps];
  if (!types[t].is_float) return encode(red_input(r, i, t, op), t);
  if (!filled[t][op]) {
    for (unsigned k = 0; k < float_choices(t, op); k++) table[t][op][k] = encode(float_choice(t, op, k), t);
    filled[t][op] = 1;
  }
  return table[t][op][pick(hash(r, i, t, op), float_choices(t, op))];
}

/* The expected reduction over all ranks of element i, as bits of type t. */
static uint64_t red_expected(size_t i, xcclDataType_t t, xcclRedOp_t op) {
  if (!types[t].is_float) {
    uint64_t mask = type_mask(t), acc = 0;
    int sg = types[t].is_signed;
    for (int r = 0; r < nranks; r++) {
      uint64_t u = red_input_bits(r, i, t, op);
      /* Signed types order by their sign-extended values, unsigned as is. */
      int64_t su = sg && (u & ~(mask >> 1)) ? (int64_t)(u | ~mask) : (int64_t)u;
      int64_t sa = sg && (acc & ~(mask >> 1)) ? (int64_t)(acc | ~mask) : (int64_t)acc;
      int greater = sg ? su > sa : u > acc, less = sg ? su < sa : u < acc;
      if (r == 0) acc = u;
      else if (op == xcclSum || op == xcclAvg) acc = (acc + u) & mask;
      else if (op == xcclProd) acc = (acc * u) & mask;
      else if (op == xcclMax) acc = greater ? u : acc;
      else if (op == xcclMin) acc = less ? u : acc;
    }
    if (op != xcclAvg) return acc;
    if (sg) {
      int64_t s = (acc & ~(mask >> 1)) ? (int64_t)(acc | ~mask) : (int64_t)acc;
      return (uint64_t)(s / nranks) & mask; /* C division truncates toward zero, like the spec */
    }
    return acc / (uint64_t)nranks;
  }
  double acc = 0;
  for (int r = 0; r < nranks; r++) {
    double v = red_input(r, i, t, op);
    if (r == 0) acc = v;
    else if (op == xcclSum || op == xcclAvg) acc += v;
    else if (op == xcclProd) acc *= v;
    else if (op == xcclMax) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  if (op == xcclAvg) /* the spec: float64 divides in double, every other float type in float */
    acc = t == xcclFloat64 ? acc / nranks : (double)((float)acc / (float)nranks);
  return encode(acc, t);
}

/* ---- buffers with canaries ---------------------------------------------- */

#define GUARD 64
#define CANARY 0xA5
#define JUNK 0x5A /* what output memory holds before the call */

typedef struct {
  unsigned char *raw;
  size_t bytes;
  int noaccess; /* mapped PROT_NONE: any access by the library faults */
} region_t;

static void *region_new(region_t *g, size_t bytes, int fill) {
  g->bytes = bytes;
  g->noaccess = 0;
  g->raw = test_buf_alloc(bytes + 2 * GUARD);
  if (!g->raw) abort();
  memset(g->raw, CANARY, GUARD);
  memset(g->raw + GUARD, fill, bytes);
  memset(g->raw + GUARD + bytes, CANARY, GUARD);
  return g->raw + GUARD;
}

/* Memory that must be neither read nor written: touching it kills the rank,
 * which xccl-run reports, so "not read" is tested and not merely assumed. */
static void *region_noaccess(region_t *g, size_t bytes) {
  g->bytes = bytes ? bytes : 1;
  g->noaccess = 1;
  void *p = mmap(NULL, g->bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) abort();
  g->raw = p;
  return p;
}

static void *region_ptr(const region_t *g) { return !g->raw || g->noaccess ? g->raw : g->raw + GUARD; }

static int region_guards_ok(const region_t *g) {
  if (!g->raw || g->noaccess) return 1;
  for (size_t k = 0; k < GUARD; k++)
    if (g->raw[k] != CANARY || g->raw[GUARD + g->bytes + k] != CANARY) return 0;
  return 1;
}

static void region_free(region_t *g) {
  if (!g->raw) return;
  if (g->noaccess) munmap(g->raw, g->bytes);
  else test_buf_free(g->raw);
  g->raw = NULL;
}

/* ---- one checked collective --------------------------------------------- */

typedef enum { C_ALLGATHER, C_REDUCESCATTER, C_BROADCAST, C_REDUCE } coll_t;
static const char *const coll_names[] = {"allgather", "reducescatter", "broadcast", "reduce"};

/* How the "other" buffer of a non-root is passed (broadcast's sendbuff,
 * reduce's recvbuff, out of place only): real memory that must stay as it
 * was, NULL, or PROT_NONE memory. BCAST: the in-place broadcast goes through
 * xcclBcast. For count 0 on the one-buffer collectives, NULL means both. */
typedef enum { V_PLAIN, V_NULL, V_NOACCESS, V_BCAST } variant_t;

typedef struct {
  coll_t coll;
  xcclDataType_t t;
  xcclRedOp_t op;
  size_t count; /* sendcount, recvcount, or count, as the API names it */
  int inplace, root;
  variant_t variant;
} case_t;

static void describe(const case_t *c, char *buf, size_t len) {
  int n = snprintf(buf, len, "rank %d/%d: %s %s", rank, nranks, coll_names[c->coll], types[c->t].name);
  if (c->coll == C_REDUCESCATTER || c->coll == C_REDUCE) n += snprintf(buf + n, len - (size_t)n, " %s", op_names[c->op]);
  n += snprintf(buf + n, len - (size_t)n, " count %zu %s", c->count, c->inplace ? "in place" : "out of place");
  if (c->coll >= C_BROADCAST) n += snprintf(buf + n, len - (size_t)n, " root %d", c->root);
  static const char *const vn[] = {"", " (NULL where allowed)", " (PROT_NONE on non-roots)", " (xcclBcast)"};
  snprintf(buf + n, len - (size_t)n, "%s", vn[c->variant]);
}

/* What element i of this rank's output should hold. */
static uint64_t want_output(const case_t *c, size_t i) {
  switch (c->coll) {
    case C_ALLGATHER: return copy_input((int)(i / c->count), i % c->count, c->t);
    case C_REDUCESCATTER: return red_expected((size_t)rank * c->count + i, c->t, c->op);
    case C_BROADCAST: return copy_input(c->root, i, c->t);
    default: return red_expected(i, c->t, c->op);
  }
}

/* This rank's input element i (i over the whole sendbuff). Non-roots of a
 * broadcast still get a distinct pattern: if it leaked into the output the
 * comparison would catch it. */
static uint64_t my_input(const case_t *c, size_t i) {
  if (c->coll == C_ALLGATHER || c->coll == C_BROADCAST) return copy_input(rank, i, c->t);
  return red_input_bits(rank, i, c->t, c->op);
}

/* Compares n output elements with want_output; prints the first few. */
static size_t check_output(const case_t *c, const char *desc, const void *out, size_t n) {
  size_t es = types[c->t].size, wrong = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = get_bits(out, i, es), want = want_output(c, i);
    if (got != want && wrong++ < 3)
      fprintf(stderr, "%s: element %zu is 0x%llx, expected 0x%llx\n", desc, i, (unsigned long long)got,
              (unsigned long long)want);
  }
  CHECK(wrong == 0, "%s: %zu of %zu elements wrong", desc, wrong, n);
  return wrong;
}

/* bytes [from, to) of p must equal the snapshot. */
static void check_unchanged(const char *desc, const char *what, const unsigned char *p, const unsigned char *snap,
                            size_t from, size_t to) {
  size_t k = from;
  while (k < to && p[k] == snap[k]) k++;
  CHECK(k == to, "%s: %s changed at byte %zu (0x%02x, was 0x%02x)", desc, what, k, k < to ? p[k] : 0,
        k < to ? snap[k] : 0);
}

static void call_or_die(xcclResult_t res, const char *desc, xcclComm_t comm) {
  if (res == xcclSuccess) return;
  /* A failed collective leaves the communicator failed: nothing after it can
   * be trusted, so stop here with the case that did it. */
  fprintf(stderr, "%s: returned %s: %s\n", desc, xcclGetErrorString(res), xcclGetLastError(comm));
  exit(1);
}

static void run_case(xcclComm_t comm, const case_t *c) {
  char desc[200];
  describe(c, desc, sizeof(desc));
  size_t es = types[c->t].size, k = (size_t)nranks, n = c->count;
  int is_root = c->coll < C_BROADCAST || rank == c->root;
  /* Elements of sendbuff and recvbuff as the API defines them. */
  size_t send_n = c->coll == C_REDUCESCATTER ? k * n : n, recv_n = c->coll == C_ALLGATHER ? k * n : n;
  region_t sg = {0}, rg = {0};
  unsigned char *send = NULL, *recv = NULL;
  int null_both = n == 0 && c->variant == V_NULL;

  if (null_both) {
    /* count 0 is a no-op: no buffer is needed on any rank */
  } else if (c->inplace) {
    /* One region: the larger of the two, with the other inside it as xccl.h says. */
    size_t big = send_n > recv_n ? send_n : recv_n;
    unsigned char *base = region_new(&sg, big * es, JUNK);
    size_t own = (size_t)rank * n * es;
    send = c->coll == C_ALLGATHER ? base + own : base;
    recv = c->coll == C_REDUCESCATTER ? base + own : base;
    /* Broadcast non-roots keep JUNK: their input is never read. */
    if (c->coll != C_BROADCAST || is_root)
      for (size_t i = 0; i < (c->coll == C_ALLGATHER ? n : send_n); i++) put_bits(send, i, es, my_input(c, i));
  } else {
    /* A non-root's unused buffer (broadcast's sendbuff, reduce's recvbuff)
     * comes as the variant says; every other buffer is real memory. */
    int nonroot_send = c->coll == C_BROADCAST && !is_root, nonroot_recv = c->coll == C_REDUCE && !is_root;
    if (nonroot_send && c->variant == V_NULL) send = NULL;
    else if (nonroot_send && c->variant == V_NOACCESS) send = region_noaccess(&sg, send_n * es);
    else {
      send = region_new(&sg, send_n * es, JUNK);
      for (size_t i = 0; i < send_n; i++) put_bits(send, i, es, my_input(c, i));
    }
    if (nonroot_recv && c->variant == V_NULL) recv = NULL;
    else if (nonroot_recv && c->variant == V_NOACCESS) recv = region_noaccess(&rg, recv_n * es);
    else recv = region_new(&rg, recv_n * es, JUNK);
  }

  /* Snapshots of everything readable, to see what the call changed. */
  unsigned char *snap_s = NULL, *snap_r = NULL;
  if (sg.raw && !sg.noaccess) snap_s = malloc(sg.bytes + 1), memcpy(snap_s, region_ptr(&sg), sg.bytes);
  if (rg.raw && !rg.noaccess) snap_r = malloc(rg.bytes + 1), memcpy(snap_r, region_ptr(&rg), rg.bytes);

  xcclResult_t res;
  switch (c->coll) {
    case C_ALLGATHER: res = xcclAllGather(send, recv, n, c->t, comm, NULL); break;
    case C_REDUCESCATTER: res = xcclReduceScatter(send, recv, n, c->t, c->op, comm, NULL); break;
    case C_BROADCAST:
      res = c->variant == V_BCAST ? xcclBcast(recv, n, c->t, c->root, comm, NULL)
                                  : xcclBroadcast(send, recv, n, c->t, c->root, comm, NULL);
      break;
    default: res = xcclReduce(send, recv, n, c->t, c->op, c->root, comm, NULL); break;
  }
  call_or_die(res, desc, comm);

  CHECK(region_guards_ok(&sg) && region_guards_ok(&rg), "%s: a canary around a buffer was overwritten", desc);
  unsigned char *base = region_ptr(&sg);
  if (c->inplace && !null_both) {
    size_t own = (size_t)rank * n * es;
    if (is_root || c->coll == C_BROADCAST) check_output(c, desc, recv, recv_n);
    if (c->coll == C_REDUCESCATTER) { /* sendbuff is const: only recvbuff may change */
      check_unchanged(desc, "sendbuff before recvbuff", base, snap_s, 0, own);
      check_unchanged(desc, "sendbuff after recvbuff", base, snap_s, own + n * es, sg.bytes);
    }
    if (c->coll == C_REDUCE && !is_root) /* recvbuff is written on the root only */
      check_unchanged(desc, "the buffer of a non-root", base, snap_s, 0, sg.bytes);
  } else if (!null_both) {
    if (snap_s) check_unchanged(desc, "sendbuff", region_ptr(&sg), snap_s, 0, sg.bytes);
    if (is_root || c->coll == C_BROADCAST) check_output(c, desc, recv, recv_n);
    else if (snap_r) check_unchanged(desc, "recvbuff of a non-root", region_ptr(&rg), snap_r, 0, rg.bytes);
  }
  free(snap_s);
  free(snap_r);
  region_free(&sg);
  region_free(&rg);
}

/* ---- MODE matrix -------------------------------------------------------- */

static const xcclDataType_t all_types[] = {xcclInt8,    xcclUint8,    xcclInt32,      xcclUint32,
                                           xcclInt64,   xcclUint64,   xcclFloat16,    xcclFloat32,
                                           xcclFloat64, xcclBfloat16, xcclFloat8e4m3, xcclFloat8e5m2};
#define NTYPES (sizeof(all_types) / sizeof(all_types[0]))
/* The large count is what spreads over both channels and, for 4-byte types,
 * over two loops of 512 KiB chunks; being odd, it splits unevenly and ends
 * in a partial chunk. It runs on one type of each family only: every type
 * would repeat the same schedule at three times the cost. */
static const xcclDataType_t large_types[] = {xcclInt32, xcclFloat32, xcclBfloat16, xcclFloat8e4m3};
#define NLARGE (sizeof(large_types) / sizeof(large_types[0]))
/* Reductions at the large count: each of those types twice, each op at least
 * once, and avg (whose final division is a step of its own) on an integer
 * and a narrow float type. */
static const struct {
  xcclDataType_t t;
  xcclRedOp_t op;
} large_reds[] = {{xcclInt32, xcclSum},     {xcclInt32, xcclAvg},      {xcclFloat32, xcclProd},
                  {xcclFloat32, xcclMin},   {xcclBfloat16, xcclMax},   {xcclBfloat16, xcclAvg},
                  {xcclFloat8e4m3, xcclSum}, {xcclFloat8e4m3, xcclProd}};
#define NLARGE_REDS (sizeof(large_reds) / sizeof(large_reds[0]))
static const size_t small_counts[] = {0, 1, 7};
static const size_t large_count = 300001;

/* Non-roots' unused buffer: NULL for the first type, PROT_NONE for the
 * second, real memory (checked unchanged) for the rest. */
static variant_t nonroot_variant(size_t ti) { return ti == 0 ? V_NULL : ti == 1 ? V_NOACCESS : V_PLAIN; }

static void matrix_allgather(xcclComm_t comm) {
  for (size_t ci = 0; ci < 3; ci++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int ip = 0; ip < 2; ip++) {
        /* count 0 with NULL buffers once: a no-op needs no memory */
        variant_t v = small_counts[ci] == 0 && ti == 0 && !ip ? V_NULL : V_PLAIN;
        run_case(comm, &(case_t){C_ALLGATHER, all_types[ti], xcclSum, small_counts[ci], ip, 0, v});
      }
  for (size_t ti = 0; ti < NLARGE; ti++)
    for (int ip = 0; ip < 2; ip++)
      run_case(comm, &(case_t){C_ALLGATHER, large_types[ti], xcclSum, large_count, ip, 0, V_PLAIN});
}

static void matrix_reducescatter(xcclComm_t comm) {
  for (size_t ci = 0; ci < 3; ci++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int op = 0; op < xcclNumOps; op++)
        for (int ip = 0; ip < 2; ip++) {
          variant_t v = small_counts[ci] == 0 && ti == 0 && op == 0 && !ip ? V_NULL : V_PLAIN;
          run_case(comm, &(case_t){C_REDUCESCATTER, all_types[ti], (xcclRedOp_t)op, small_counts[ci], ip, 0, v});
        }
  for (size_t j = 0; j < NLARGE_REDS; j++) /* alternating in and out of place */
    run_case(comm, &(case_t){C_REDUCESCATTER, large_reds[j].t, large_reds[j].op, large_count, (int)j & 1, 0, V_PLAIN});
}

static void matrix_broadcast(xcclComm_t comm) {
  for (size_t ci = 0; ci < 3; ci++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int ip = 0; ip < 2; ip++)
        for (int root = 0; root < nranks; root++) {
          /* In place alternates between xcclBroadcast(buf, buf) and xcclBcast(buf). */
          variant_t v = ip ? (ti & 1 ? V_BCAST : V_PLAIN) : nonroot_variant(ti);
          run_case(comm, &(case_t){C_BROADCAST, all_types[ti], xcclSum, small_counts[ci], ip, root, v});
        }
  int roots[2] = {0, nranks - 1};
  for (size_t ti = 0; ti < NLARGE; ti++)
    for (int ip = 0; ip < 2; ip++)
      for (int ri = 0; ri < (nranks > 1 ? 2 : 1); ri++)
        run_case(comm, &(case_t){C_BROADCAST, large_types[ti], xcclSum, large_count, ip, roots[ri],
                                 ip ? (ri ? V_BCAST : V_PLAIN) : (ri ? V_NOACCESS : V_PLAIN)});
}

static void matrix_reduce(xcclComm_t comm) {
  for (size_t ci = 0; ci < 3; ci++)
    for (size_t ti = 0; ti < NTYPES; ti++)
      for (int op = 0; op < xcclNumOps; op++)
        for (int ip = 0; ip < 2; ip++)
          for (int root = 0; root < nranks; root++)
            run_case(comm, &(case_t){C_REDUCE, all_types[ti], (xcclRedOp_t)op, small_counts[ci], ip, root,
                                     ip ? V_PLAIN : nonroot_variant(ti)});
  /* Root and in place cycle through {0, nranks-1} x {in, out of place}. */
  for (size_t j = 0; j < NLARGE_REDS; j++)
    run_case(comm, &(case_t){C_REDUCE, large_reds[j].t, large_reds[j].op, large_count, (int)(j >> 1) & 1,
                             j & 1 ? nranks - 1 : 0, j % 3 == 0 ? V_NULL : V_PLAIN});
}

static void mode_matrix(xcclComm_t comm, const char *which) {
  if (!which || strcmp(which, "allgather") == 0) matrix_allgather(comm);
  if (!which || strcmp(which, "reducescatter") == 0) matrix_reducescatter(comm);
  if (!which || strcmp(which, "broadcast") == 0) matrix_broadcast(comm);
  if (!which || strcmp(which, "reduce") == 0) matrix_reduce(comm);
}

/* ---- MODE bytes --------------------------------------------------------- */

typedef struct {
  xcclPeerCounters_t c[256];
} counters_t;

static void read_counters(xcclComm_t comm, counters_t *s) {
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &s->c[p]));
}

/*
 * Runs the case (checked as in matrix) and compares what this rank sent to
 * the next rank with want_sent. Sends are exact per call: a call returns
 * only when the transport has taken its last slot. Receives are not: the
 * previous rank may finish a call early and run into the next one, and this
 * rank's proxy takes that data into free slots while this rank is still in
 * the earlier call. So receives add up to want_recv_total and are compared
 * at the end, when every byte this rank needed has arrived and no rank has
 * anything more to send.
 */
static uint64_t want_recv_total;

static void bytes_case(xcclComm_t comm, const case_t *c, uint64_t want_sent, uint64_t want_recv) {
  counters_t before, after;
  char desc[200];
  describe(c, desc, sizeof(desc));
  read_counters(comm, &before);
  run_case(comm, c);
  read_counters(comm, &after);
  int next = (rank + 1) % nranks;
  uint64_t sent = after.c[next].bytesSent - before.c[next].bytesSent;
  CHECK(sent == want_sent, "%s: sent %llu bytes to rank %d, expected %llu", desc, (unsigned long long)sent, next,
        (unsigned long long)want_sent);
  want_recv_total += want_recv;
}

static void mode_bytes(xcclComm_t comm) {
  /* The test sets XCCL_NCHANNELS=2, and every size here is at least 2 x
   * 128 KiB per rank block so that both channels carry data, and divides
   * evenly by ranks and channels. */
  const uint64_t k = (uint64_t)nranks, block = 2 * 65536; /* float32 elements: 512 KiB */
  const uint64_t bb = block * 4;
  if (nranks > 256) test_skip("more ranks than this test counts");
  counters_t start, end;
  read_counters(comm, &start);
  /* all-gather: k-1 of the k blocks of the output go to the next rank */
  bytes_case(comm, &(case_t){C_ALLGATHER, xcclFloat32, xcclSum, block, 0, 0, V_PLAIN}, (k - 1) * bb, (k - 1) * bb);
  bytes_case(comm, &(case_t){C_ALLGATHER, xcclFloat32, xcclSum, block, 1, 0, V_PLAIN}, (k - 1) * bb, (k - 1) * bb);
  /* reduce-scatter: k-1 of the k blocks of the input */
  bytes_case(comm, &(case_t){C_REDUCESCATTER, xcclFloat32, xcclSum, block, 0, 0, V_PLAIN}, (k - 1) * bb,
             (k - 1) * bb);
  bytes_case(comm, &(case_t){C_REDUCESCATTER, xcclFloat32, xcclSum, block, 1, 0, V_PLAIN}, (k - 1) * bb,
             (k - 1) * bb);
  /* Broadcast is a chain from the root: everyone but its end (root-1) sends
   * the whole buffer, everyone but the root receives it. Reduce is the chain
   * towards the root: everyone but the root sends, everyone but its start
   * (root+1) receives. */
  uint64_t whole = k * bb;
  for (int root = 0; root < nranks; root++) {
    int last = (root + nranks - 1) % nranks, first = (root + 1) % nranks;
    bytes_case(comm, &(case_t){C_BROADCAST, xcclFloat32, xcclSum, k * block, root & 1, root, V_PLAIN},
               rank == last ? 0 : whole, rank == root ? 0 : whole);
    bytes_case(comm, &(case_t){C_REDUCE, xcclFloat32, xcclSum, k * block, root & 1, root, V_PLAIN},
               rank == root ? 0 : whole, rank == first ? 0 : whole);
  }
  read_counters(comm, &end);
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  /* From zero, not from start: the communicator is fresh, and the previous
   * rank may have sent its first slots before this rank read start. */
  CHECK(start.c[next].bytesSent == 0, "a fresh communicator had sent %llu bytes",
        (unsigned long long)start.c[next].bytesSent);
  uint64_t got = end.c[prev].bytesRecv;
  CHECK(got == want_recv_total, "received %llu bytes from rank %d in all, expected %llu", (unsigned long long)got,
        prev, (unsigned long long)want_recv_total);
  for (int p = 0; p < nranks; p++) {
    if (p == next || p == prev) continue;
    CHECK(end.c[p].bytesSent == start.c[p].bytesSent && end.c[p].bytesRecv == start.c[p].bytesRecv,
          "traffic with rank %d, which is not a ring neighbour", p);
  }
  if (rank == 0)
    printf("bytes: %d ranks, %llu-byte blocks: traffic per rank matches the ring formulas\n", nranks,
           (unsigned long long)bb);
}

/* ---- MODE errors -------------------------------------------------------- */

/* True when msg holds the decimal v as a whole number ("root 3", not "13"). */
static int has_number(const char *msg, int v) {
  char num[16];
  snprintf(num, sizeof(num), "%d", v);
  for (const char *p = strstr(msg, num); p; p = strstr(p + 1, num)) {
    char before = p > msg ? p[-1] : ' ', after = p[strlen(num)];
    if (!(before >= '0' && before <= '9') && before != '-' && !(after >= '0' && after <= '9')) return 1;
  }
  return 0;
}

/* The call must be refused with xcclInvalidArgument and a message. */
static void expect_invalid(xcclComm_t comm, xcclResult_t res, const char *what) {
  const char *msg = xcclGetLastError(comm);
  CHECK(res == xcclInvalidArgument, "rank %d: %s returned %s, expected xcclInvalidArgument", rank, what,
        xcclGetErrorString(res));
  CHECK(msg[0] != '\0', "rank %d: %s: no error message", rank, what);
}

static void expect_bad_root(xcclComm_t comm, xcclResult_t res, const char *what, int root) {
  expect_invalid(comm, res, what);
  const char *msg = xcclGetLastError(comm);
  CHECK(strstr(msg, "root") && has_number(msg, root), "rank %d: %s: message does not name root %d: \"%s\"", rank,
        what, root, msg);
}

/* An overlap that is not the in-place layout: the message should say so. */
static void expect_overlap(xcclComm_t comm, xcclResult_t res, const char *what) {
  expect_invalid(comm, res, what);
  const char *msg = xcclGetLastError(comm);
  CHECK(strstr(msg, "overlap") || strstr(msg, "in place"), "rank %d: %s: message does not mention the overlap: \"%s\"",
        rank, what, msg);
}

static void mode_errors(xcclComm_t comm) {
  const size_t n = 8, k = (size_t)nranks;
  char what[120];
  /* After every refusal a checked collective of the same kind must work:
   * the refusal happened before any communication, so the ranks are still
   * in step and the communicator is not marked failed. */
  const case_t ok_bcast = {C_BROADCAST, xcclFloat32, xcclSum, 7, 0, nranks - 1, V_PLAIN};
  const case_t ok_reduce = {C_REDUCE, xcclInt32, xcclSum, 7, 0, nranks - 1, V_PLAIN};
  const case_t ok_gather = {C_ALLGATHER, xcclFloat32, xcclSum, 7, 1, 0, V_PLAIN};
  const case_t ok_scatter = {C_REDUCESCATTER, xcclInt64, xcclMax, 7, 1, 0, V_PLAIN};
  float *buf = calloc((k + 2) * n, sizeof(float)), *other = calloc((k + 2) * n, sizeof(float));

  /* Roots outside [0, nranks): every rank refuses. */
  const int bad_roots[2] = {-1, nranks};
  for (int i = 0; i < 2; i++) {
    int root = bad_roots[i];
    snprintf(what, sizeof(what), "broadcast root %d", root);
    expect_bad_root(comm, xcclBroadcast(buf, other, n, xcclFloat32, root, comm, NULL), what, root);
    run_case(comm, &ok_bcast);
    snprintf(what, sizeof(what), "bcast root %d", root);
    expect_bad_root(comm, xcclBcast(buf, n, xcclFloat32, root, comm, NULL), what, root);
    run_case(comm, &ok_bcast);
    snprintf(what, sizeof(what), "reduce root %d", root);
    expect_bad_root(comm, xcclReduce(buf, other, n, xcclFloat32, xcclSum, root, comm, NULL), what, root);
    run_case(comm, &ok_reduce);
  }

  /* Overlaps that are not the in-place layout, wrong on every rank: one
   * element past this rank's block, exactly the next rank's block, and one
   * element before the start of the other buffer. Buffers stay aligned. */
  float *region = buf + n; /* room for one element before and n after */
  float *bad_send[3] = {region + (size_t)rank * n + 1, region + (size_t)((rank + 1) % nranks) * n, region - 1};
  for (int i = 0; i < 3; i++) {
    if (i == 1 && nranks == 1) continue; /* the next rank is this rank: that is in place */
    snprintf(what, sizeof(what), "allgather with sendbuff = recvbuff %+td elements", bad_send[i] - region);
    expect_overlap(comm, xcclAllGather(bad_send[i], region, n, xcclFloat32, comm, NULL), what);
    run_case(comm, &ok_gather);
    snprintf(what, sizeof(what), "reducescatter with recvbuff = sendbuff %+td elements", bad_send[i] - region);
    expect_overlap(comm, xcclReduceScatter(region, bad_send[i], n, xcclFloat32, xcclSum, comm, NULL), what);
    run_case(comm, &ok_scatter);
  }

  /* A NULL buffer where the root needs one. Non-roots may pass NULL there
   * and would go ahead, so only the root makes the call; it must be refused
   * locally, or the next collective would find the ranks out of step. */
  int root = nranks - 1;
  if (rank == root) {
    expect_invalid(comm, xcclReduce(buf, NULL, n, xcclFloat32, xcclSum, root, comm, NULL), "reduce NULL recvbuff on the root");
    expect_invalid(comm, xcclBroadcast(NULL, buf, n, xcclFloat32, root, comm, NULL), "broadcast NULL sendbuff on the root");
  }
  run_case(comm, &ok_reduce);
  run_case(comm, &ok_bcast);
  /* xcclBcast(NULL) lacks the buffer everywhere: every rank refuses. */
  expect_invalid(comm, xcclBcast(NULL, n, xcclFloat32, 0, comm, NULL), "bcast NULL buffer");
  run_case(comm, &ok_bcast);

  /* And count 0 with NULL everywhere is no error at all. */
  XCHECK(xcclReduce(NULL, NULL, 0, xcclFloat32, xcclSum, root, comm, NULL));
  XCHECK(xcclBroadcast(NULL, NULL, 0, xcclFloat32, root, comm, NULL));
  XCHECK(xcclAllGather(NULL, NULL, 0, xcclFloat32, comm, NULL));
  XCHECK(xcclReduceScatter(NULL, NULL, 0, xcclFloat32, xcclSum, comm, NULL));
  run_case(comm, &ok_gather);
  run_case(comm, &ok_scatter);
  free(buf);
  free(other);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "matrix";
#ifdef __GLIBC__
  /* Keep freed buffers in the heap for the next case: otherwise every large
   * buffer is a fresh mmap, faulted in page by page, and with 8 ranks on 2
   * cores that doubled the CPU time of the matrix. */
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  if (strcmp(mode, "matrix") == 0) mode_matrix(comm, argc > 2 ? argv[2] : NULL);
  else if (strcmp(mode, "bytes") == 0) mode_bytes(comm);
  else if (strcmp(mode, "errors") == 0) mode_errors(comm);
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  xcclResult_t async;
  XCHECK(xcclCommGetAsyncError(comm, &async));
  CHECK(async == xcclSuccess, "async error %d after the run", async);
  XCHECK(xcclCommDestroy(comm));
  char name[64];
  snprintf(name, sizeof(name), "collectives %s rank %d/%d", mode, rank, nranks);
  return test_finish(name);
}
