/*
 * xccl-perf — bandwidth of xccl collectives, in the manner of nccl-tests.
 *
 *   xccl-run -n 4 xccl-perf allreduce -b 8 -e 64M -f 2 [options]
 *
 * Collectives: allreduce, allgather, reducescatter, broadcast, reduce, gather,
 * scatter, alltoall, sendrecv. As in nccl-tests the size is the whole buffer
 * of each call: for allgather and gather the output (each rank sends
 * size / nranks; gather's output is the root's), for reducescatter and
 * scatter the input (each rank receives size / nranks; scatter's input is the
 * root's), for alltoall each rank's buffer (size / nranks to every peer), for
 * sendrecv what each rank sends to rank + 1 and receives from rank - 1 (one
 * group of xcclSend and xcclRecv), for the others the one buffer; counts are
 * rounded down so that they divide evenly.
 *
 * Each rank joins with xcclCommInitFromEnv. For every size it runs warm-up
 * iterations, then times the measured ones; the reported time is the maximum
 * over ranks of each rank's average per iteration. algbw = size / time and
 * busbw = algbw * the collective's bus factor (nccl-tests': 2(n-1)/n for
 * allreduce, (n-1)/n for allgather, reducescatter, gather, scatter and
 * alltoall, 1 for broadcast, reduce and sendrecv), both in GB/s (1e9 bytes).
 * With -c 1 each size is run once more into an output filled with values that
 * are all wrong, and the output is compared, bit for bit, with values computed
 * here from inputs chosen so that every type reduces them exactly (for reduce
 * and gather only the root's output is checked). alltoall and sendrecv have
 * no in-place form: --inplace is refused for them.
 *
 * With --device the buffers are in GPU memory (CUDA device XCCL_LOCAL_RANK
 * modulo the devices, as xccl-run numbers a host's ranks) and every call
 * goes on one stream; the timed loop ends when the stream has drained, so
 * the time is the device's, as in nccl-tests.
 *
 * Uses only the public API. New collectives go into the `collectives` table.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "perf_algo.h"
#include "perf_check.h"
#include "perf_device.h"
#include "perf_options.h"
#include "perf_plot.h"
#include "xccl.h"

/* ---- Context ------------------------------------------------------------ */


typedef struct {
  options_t opt;
  xcclComm_t comm;
  int rank, nranks;
  size_t tsize;
  int sum_max; /* sum/avg inputs are 0..sum_max; 0: the 0/1 fallback */
  void *stream;   /* --device: the stream every call goes on; NULL otherwise */
  void *host_out; /* --device with -c 1: the output, copied back to check it */
  xcclComm_t tuned; /* the launcher's communicator, whose tuner picks (comm is an --algo one's) */
  perf_plot_t *plot; /* --plot: rank 0's rows (rows NULL elsewhere and without it) */
  const char *algo; /* --algo: the algorithm comm runs; NULL without --algo */
} perf_t;

/* ---- Collectives -------------------------------------------------------- */

enum {
  COLL_REDUCES = 1,       /* -o applies */
  COLL_ROOTED = 2,        /* -r applies */
  COLL_ROOT_ONLY = 4,     /* only the root's output is defined (and checked) */
  COLL_PER_RANK = 8,      /* the count is rounded down to a multiple of nranks */
  COLL_NO_INPLACE = 16,   /* --inplace is refused */
  COLL_SEND_ROOT_ONLY = 32, /* only the root reads its input (in place, only it copies it in) */
};

/*
 * `count` is the number of elements of the size argument: the output of
 * allgather and gather, the input of reducescatter and scatter, the buffer of
 * the others. In place, the smaller of the two buffers is block `rank` of the
 * larger one (gather's and scatter's in-place rule names block `root`, which
 * is the same block on the root, the one rank where both buffers are used).
 */
typedef struct {
  const char *name;
  int flags;
  /* Elements in the send and receive buffers for `count`. */
  size_t (*send_count)(size_t count, int nranks);
  size_t (*recv_count)(size_t count, int nranks);
  xcclResult_t (*run)(const perf_t *p, const void *send, void *recv, size_t count);
  /* Element i of a rank's input, and of this rank's expected output. */
  double (*input)(const perf_t *p, int rank, size_t i);
  double (*expected)(const perf_t *p, size_t count, size_t i);
  double (*busbw_factor)(int nranks);
} coll_t;

static size_t same_count(size_t count, int nranks) {
  (void)nranks;
  return count;
}

static size_t rank_count(size_t count, int nranks) { return count / (size_t)nranks; }

static xcclResult_t allreduce_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclAllReduce(send, recv, count, p->opt.type, p->opt.op, p->comm, p->stream);
}

static xcclResult_t allgather_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclAllGather(send, recv, rank_count(count, p->nranks), p->opt.type, p->comm, p->stream);
}

static xcclResult_t reducescatter_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclReduceScatter(send, recv, rank_count(count, p->nranks), p->opt.type, p->opt.op, p->comm, p->stream);
}

static xcclResult_t broadcast_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclBroadcast(send, recv, count, p->opt.type, p->opt.root, p->comm, p->stream);
}

static xcclResult_t reduce_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclReduce(send, recv, count, p->opt.type, p->opt.op, p->opt.root, p->comm, p->stream);
}

static xcclResult_t gather_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclGather(send, recv, rank_count(count, p->nranks), p->opt.type, p->opt.root, p->comm, p->stream);
}

static xcclResult_t scatter_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclScatter(send, recv, rank_count(count, p->nranks), p->opt.type, p->opt.root, p->comm, p->stream);
}

static xcclResult_t alltoall_run(const perf_t *p, const void *send, void *recv, size_t count) {
  return xcclAllToAll(send, recv, rank_count(count, p->nranks), p->opt.type, p->comm, p->stream);
}

/* count elements to rank + 1 and from rank - 1, in one group. */
static xcclResult_t sendrecv_run(const perf_t *p, const void *send, void *recv, size_t count) {
  int next = (p->rank + 1) % p->nranks, prev = (p->rank + p->nranks - 1) % p->nranks;
  xcclResult_t res = xcclGroupStart();
  if (res != xcclSuccess) return res;
  res = xcclSend(send, count, p->opt.type, next, p->comm, p->stream);
  if (res == xcclSuccess) res = xcclRecv(recv, count, p->opt.type, prev, p->comm, p->stream);
  xcclResult_t end = xcclGroupEnd(); /* always closes the group */
  return res != xcclSuccess ? res : end;
}

/*
 * Inputs of the reductions are small integers chosen so that every partial
 * result of every reduction order is exact in the type:
 *  sum, avg: 0..m per rank with m * nranks within the type's exact integers
 *            (m <= 7); where even m = 1 does not fit (e.g. fp8 e5m2 beyond 8
 *            ranks), 0/1 on the first `limit` ranks and 0 elsewhere;
 *  prod:     1, and 2 on at most one rank per element (products 1 or 2);
 *  max, min: 0..7, shifted to -3..4 for signed types.
 */
static double reduce_input(const perf_t *p, int rank, size_t i) {
  size_t r = (size_t)rank;
  switch (p->opt.op) {
  case xcclProd: return (i + r) % (size_t)(p->nranks + 1) == 0 ? 2 : 1;
  case xcclMax:
  case xcclMin: {
    double v = (double)((i + 3 * r) % 8);
    return perf_type_is_unsigned(p->opt.type) ? v : v - 3;
  }
  default:
    if (p->sum_max > 0) return (double)((i + 3 * r) % (size_t)(p->sum_max + 1));
    return (double)rank < perf_type_exact_limit(p->opt.type) ? (double)((i + r) & 1) : 0;
  }
}

/* Element i of the reduction over all ranks of reduce_input. */
static double reduction(const perf_t *p, size_t i) {
  double acc = reduce_input(p, 0, i);
  for (int r = 1; r < p->nranks; r++) {
    double v = reduce_input(p, r, i);
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
  if (perf_type_is_int(p->opt.type)) return (double)((int64_t)acc / p->nranks);
  if (p->opt.type == xcclFloat64) return acc / p->nranks;
  float q = (float)acc / (float)p->nranks; /* the assignment drops any excess precision */
  return q;
}

static double reduction_expected(const perf_t *p, size_t count, size_t i) {
  (void)count;
  return reduction(p, i);
}

static double reducescatter_expected(const perf_t *p, size_t count, size_t i) {
  return reduction(p, (size_t)p->rank * rank_count(count, p->nranks) + i);
}

/*
 * Inputs of the collectives that only move data: integers exact in the type,
 * -L..L (0..L for unsigned types, L at most 100000), in a sequence that
 * differs between neighbouring elements and between ranks, so that an
 * element taken from the wrong place or from the wrong rank shows.
 */
static double move_input(const perf_t *p, int rank, size_t i) {
  double lim = perf_type_exact_limit(p->opt.type);
  size_t l = lim < 100000 ? (size_t)lim : 100000;
  int uns = perf_type_is_unsigned(p->opt.type);
  size_t u = (i + (size_t)rank * 37) % (uns ? l + 1 : 2 * l + 1);
  return uns ? (double)u : (double)u - (double)l;
}

static double allgather_expected(const perf_t *p, size_t count, size_t i) {
  size_t sendcount = rank_count(count, p->nranks);
  return move_input(p, (int)(i / sendcount), i % sendcount);
}

static double broadcast_expected(const perf_t *p, size_t count, size_t i) {
  (void)count;
  return move_input(p, p->opt.root, i);
}

/*
 * Inputs of gather, scatter, alltoall and sendrecv: like move_input's, but
 * scrambled over (rank, element) without a period, so that a block taken
 * from the wrong rank or the wrong offset shows at every block size.
 */
static double scrambled_input(const perf_t *p, int rank, size_t i) {
  return perf_scrambled_value(p->opt.type, rank, i);
}

/* The root's output: block r is rank r's input. */
static double gather_expected(const perf_t *p, size_t count, size_t i) {
  size_t sendcount = rank_count(count, p->nranks);
  return scrambled_input(p, (int)(i / sendcount), i % sendcount);
}

/* Block `rank` of the root's input. */
static double scatter_expected(const perf_t *p, size_t count, size_t i) {
  size_t recvcount = rank_count(count, p->nranks);
  return scrambled_input(p, p->opt.root, (size_t)p->rank * recvcount + i);
}

/* Block q is block `rank` of rank q's input. */
static double alltoall_expected(const perf_t *p, size_t count, size_t i) {
  size_t block = rank_count(count, p->nranks);
  return scrambled_input(p, (int)(i / block), (size_t)p->rank * block + i % block);
}

/* Rank - 1's input. */
static double sendrecv_expected(const perf_t *p, size_t count, size_t i) {
  (void)count;
  return scrambled_input(p, (p->rank + p->nranks - 1) % p->nranks, i);
}

static double allreduce_busbw(int nranks) { return 2.0 * (nranks - 1) / nranks; }
static double gather_busbw(int nranks) { return (double)(nranks - 1) / nranks; }
/* 1: broadcast, reduce, sendrecv. */
static double unit_busbw(int nranks) {
  (void)nranks;
  return 1.0;
}

static const coll_t collectives[] = {
    {"allreduce", COLL_REDUCES, same_count, same_count, allreduce_run, reduce_input, reduction_expected,
     allreduce_busbw},
    {"allgather", COLL_PER_RANK, rank_count, same_count, allgather_run, move_input, allgather_expected,
     gather_busbw},
    {"reducescatter", COLL_REDUCES | COLL_PER_RANK, same_count, rank_count, reducescatter_run, reduce_input,
     reducescatter_expected, gather_busbw},
    {"broadcast", COLL_ROOTED, same_count, same_count, broadcast_run, move_input, broadcast_expected,
     unit_busbw},
    {"reduce", COLL_REDUCES | COLL_ROOTED | COLL_ROOT_ONLY, same_count, same_count, reduce_run, reduce_input,
     reduction_expected, unit_busbw},
    {"gather", COLL_ROOTED | COLL_ROOT_ONLY | COLL_PER_RANK, rank_count, same_count, gather_run,
     scrambled_input, gather_expected, gather_busbw},
    {"scatter", COLL_ROOTED | COLL_PER_RANK | COLL_SEND_ROOT_ONLY, same_count, rank_count, scatter_run,
     scrambled_input, scatter_expected, gather_busbw},
    {"alltoall", COLL_PER_RANK | COLL_NO_INPLACE, same_count, same_count, alltoall_run, scrambled_input,
     alltoall_expected, gather_busbw},
    {"sendrecv", COLL_NO_INPLACE, same_count, same_count, sendrecv_run, scrambled_input, sendrecv_expected,
     unit_busbw},
};
#define N_COLLECTIVES (sizeof(collectives) / sizeof(collectives[0]))

/* "allreduce allgather ...", for the help. */
static const char *collective_names(void) {
  static char names[256];
  size_t n = 0;
  for (size_t i = 0; i < N_COLLECTIVES && n < sizeof(names); i++)
    n += (size_t)snprintf(names + n, sizeof(names) - n, " %s", collectives[i].name);
  return names;
}

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

/* --device: waits for the stream, then for the errors the device work met. */
static void drain(const perf_t *p, const char *what) {
  if (!p->opt.device) return;
  char why[256];
  if (perf_dev_sync(why, sizeof(why)) != 0) {
    fprintf(stderr, "xccl-perf: rank %d: %s: %s\n", p->rank, what, why);
    (void)xcclCommAbort(p->comm);
    exit(1);
  }
  xcclResult_t async = xcclSuccess, res = xcclCommGetAsyncError(p->comm, &async);
  if (res != xcclSuccess || async != xcclSuccess) die_xccl(p, what, res != xcclSuccess ? res : async);
}

/* Copies bytes between the benchmark's buffers (device or host memory). */
static void copy_bytes(const perf_t *p, void *dst, const void *src, size_t bytes) {
  if (!p->opt.device) {
    memcpy(dst, src, bytes);
  } else if (perf_dev_copy(dst, src, bytes) != 0) {
    fprintf(stderr, "xccl-perf: rank %d: copying %zu bytes to or from the GPU failed\n", p->rank, bytes);
    (void)xcclCommAbort(p->comm);
    exit(1);
  }
}

/* The op and root as printed: "none" and -1 where they do not apply. */
static const char *op_label(const perf_t *p, const coll_t *coll) {
  return (coll->flags & COLL_REDUCES) ? perf_op_names[p->opt.op] : "none";
}

static int root_label(const perf_t *p, const coll_t *coll) {
  return (coll->flags & COLL_ROOTED) ? p->opt.root : -1;
}

/* "allreduce of 256 x float32, op sum", with ", root R" where it applies. */
static void describe(const perf_t *p, const coll_t *coll, size_t count, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s of %zu x %s", coll->name, count, perf_type_name(p->opt.type));
  if (n > 0 && (size_t)n < len && (coll->flags & COLL_REDUCES))
    n += snprintf(buf + n, len - (size_t)n, ", op %s", perf_op_names[p->opt.op]);
  if (n > 0 && (size_t)n < len && (coll->flags & COLL_ROOTED))
    snprintf(buf + n, len - (size_t)n, ", root %d", p->opt.root);
}

/* Elements for a size in bytes, rounded down to divide evenly. */
/* The count the tuner is asked about for a call of count elements (the
 * schedule's: the smaller of what a rank sends and receives). */
static size_t sched_count(const perf_t *p, const coll_t *coll, size_t count) {
  size_t send = coll->send_count(count, p->nranks), recv = coll->recv_count(count, p->nranks);
  return send < recv ? send : recv;
}

static size_t size_count(const perf_t *p, const coll_t *coll, size_t bytes) {
  size_t count = bytes / p->tsize;
  if (coll->flags & COLL_PER_RANK) count -= count % (size_t)p->nranks;
  return count;
}

static void *alloc_buffer(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
  memset(p, 0, bytes);
  return p;
}

/* Fills elements [0, n) of buf with this rank's input. */
static void fill_input(const perf_t *p, const coll_t *coll, void *buf, size_t n) {
  for (size_t i = 0; i < n; i++) perf_store_value(p->opt.type, buf, i, coll->input(p, p->rank, i));
}

/* Whether this rank's output is defined, and so checked. */
static int rank_checks(const perf_t *p, const coll_t *coll) {
  return !(coll->flags & COLL_ROOT_ONLY) || p->rank == p->opt.root;
}

/* Writes the n expected output elements into want, and into recv their
 * bitwise complements, which differ from them in every byte. */
static void prepare_check(const perf_t *p, const coll_t *coll, size_t count, void *want, void *recv,
                          size_t n) {
  for (size_t i = 0; i < n; i++) perf_store_value(p->opt.type, want, i, coll->expected(p, count, i));
  const unsigned char *w = want;
  unsigned char *r = recv;
  for (size_t b = 0; b < n * p->tsize; b++) r[b] = (unsigned char)~w[b];
}

/* Counts the elements of recv that differ (bit for bit) from want; reports
 * the first one. */
static uint64_t check_output(const perf_t *p, const coll_t *coll, size_t count, const void *want,
                             const void *recv, size_t n) {
  if (memcmp(want, recv, n * p->tsize) == 0) return 0;
  uint64_t wrong = 0;
  char what[160];
  describe(p, coll, count, what, sizeof(what));
  for (size_t i = 0; i < n; i++) {
    size_t off = i * p->tsize;
    if (memcmp((const unsigned char *)want + off, (const unsigned char *)recv + off, p->tsize) == 0)
      continue;
    if (wrong++ == 0)
      fprintf(stderr, "xccl-perf: rank %d: %s: output element %zu of %zu is %g, expected %g\n", p->rank,
              what, i, n, perf_load_value(p->opt.type, recv, i), perf_load_value(p->opt.type, want, i));
  }
  return wrong;
}

/* One --json line: obj compact, its keys in the order they were packed, then
 * a newline; nothing where out or obj (json_pack's failure) is NULL. Times and
 * bandwidths keep 6 significant digits, so small sizes on many ranks are not
 * rounded to 0. */
static void json_line(FILE *out, const json_t *obj) {
  if (out && obj && json_dumpf(obj, out, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6)) == 0)
    fputc('\n', out);
}

/* The root of a rooted collective, else JSON's null. */
static json_t *json_root(const perf_t *p, const coll_t *coll) {
  return coll->flags & COLL_ROOTED ? json_integer(p->opt.root) : json_null();
}

static void print_header(const perf_t *p, const coll_t *coll) {
  int version = 0;
  (void)xcclGetVersion(&version);
  const options_t *o = &p->opt;
  if (o->json) {
    char version_s[32];
    snprintf(version_s, sizeof(version_s), "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
    json_t *h = json_pack("{s:s, s:s, s:i, s:s, s:s, s:o, s:b, s:b, s:b, s:i, s:i, s:I, s:I, s:I, s:b, s:s, s:i}",
                          "kind", "header", "collective", coll->name, "nranks", p->nranks, "type",
                          perf_type_name(o->type), "op", op_label(p, coll), "root", json_root(p, coll), "inplace",
                          o->inplace, "check", o->check, "latency", o->latency, "iters", o->iters, "warmup", o->warmup,
                          "min_bytes", (json_int_t)o->min_bytes, "max_bytes", (json_int_t)o->max_bytes, "factor",
                          (json_int_t)o->factor, "device", o->device, "version", version_s, "version_code", version);
    json_line(stdout, h);
    json_decref(h);
  } else {
    printf("# xccl-perf %s: nranks %d, type %s", coll->name, p->nranks, perf_type_name(o->type));
    if (coll->flags & COLL_REDUCES) printf(", op %s", perf_op_names[o->op]);
    if (coll->flags & COLL_ROOTED) printf(", root %d", o->root);
    printf(", %s, check %s, iterations %d, warm-up %d\n", o->inplace ? "in place" : "out of place",
           o->check ? "on" : "off", o->iters, o->warmup);
    if (o->device) printf("# device buffers on %s, one stream per rank\n", perf_dev_name());
    if (o->latency)
      printf("# latency mode: time is the average of %d calls per size, in microseconds\n", o->iters);
    printf("# xccl version %d.%d.%d (code %d)\n#\n", version / 10000, version / 100 % 100,
           version % 100, version);
    if (o->algos) printf("# algo: the algorithm of the row; tuner: * where it is the one the tuner picks\n");
    printf("# %12s %14s %9s %6s %5s %12s %10s %10s %8s%s\n", "size", "count", "type", "redop", "root",
           "time", "algbw", "busbw", "#wrong", o->algos ? "     algo tuner" : "");
    printf("# %12s %14s %9s %6s %5s %12s %10s %10s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
           "(GB/s)");
  }
  fflush(stdout);
}

static void print_row(const perf_t *p, const coll_t *coll, size_t count, double time_us, double algbw,
                      double busbw, uint64_t wrong) {
  const options_t *o = &p->opt;
  size_t bytes = count * p->tsize;
  /* The tuner's pick for this call, on the launcher's communicator. */
  size_t sched = sched_count(p, coll, count);
  int has_algos = perf_algo_has(coll->name);
  const char *pick = has_algos ? perf_algo_chosen(p->tuned, coll->name, sched, o->type) : NULL;
  const char *algo = p->algo ? p->algo : pick;
  char wrong_s[32];
  if (o->check) snprintf(wrong_s, sizeof(wrong_s), "%llu", (unsigned long long)wrong);
  if (o->json || p->plot->rows) { /* the JSON row: --json's line, and what --plot draws from */
    json_t *row = json_pack("{s:s, s:s, s:I, s:I, s:s, s:s, s:o, s:b, s:f, s:f, s:f, s:o, s:s?, s:b}", "kind", "result",
                            "collective", coll->name, "size", (json_int_t)bytes, "count", (json_int_t)count, "type",
                            perf_type_name(o->type), "op", op_label(p, coll), "root", json_root(p, coll), "inplace",
                            o->inplace, "time_us", time_us, "algbw_gbps", algbw, "busbw_gbps", busbw, "wrong",
                            o->check ? json_integer((json_int_t)wrong) : json_null(), "algo", algo, "chosen",
                            algo && pick && strcmp(algo, pick) == 0);
    json_line(o->json ? stdout : NULL, row);
    json_line(p->plot->rows, row);
    json_decref(row);
  }
  if (!o->json) {
    printf("  %12zu %14zu %9s %6s %5d %12.2f %10.3f %10.3f %8s", bytes, count, perf_type_name(o->type),
           op_label(p, coll), root_label(p, coll), time_us, algbw, busbw, o->check ? wrong_s : "N/A");
    if (p->algo) printf(" %8s %5s", p->algo, pick && strcmp(p->algo, pick) == 0 ? "*" : "");
    printf("\n");
  }
  fflush(stdout);
}

/* Runs and reports one size of `count` elements (see coll_t); returns the
 * wrong elements over all ranks. want has room for the receive count. */
static uint64_t run_size(const perf_t *p, const coll_t *coll, size_t count, void *sendbuf, void *recvbuf,
                         void *want, double *busbw_out) {
  const options_t *o = &p->opt;
  size_t send_n = coll->send_count(count, p->nranks), recv_n = coll->recv_count(count, p->nranks);
  unsigned char *src = sendbuf, *dst = recvbuf;
  /* In place, whether this rank's input is read and so copied into place
   * (scatter reads the root's only: elsewhere the copy would land on the
   * output). */
  int copy_in = o->inplace && (!(coll->flags & COLL_SEND_ROOT_ONLY) || p->rank == o->root);
  if (o->inplace) { /* one buffer, recvbuf; the smaller part is block `rank` of it */
    size_t r = (size_t)p->rank;
    src = (unsigned char *)recvbuf + (send_n < recv_n ? r * send_n * p->tsize : 0);
    dst = (unsigned char *)recvbuf + (recv_n < send_n ? r * recv_n * p->tsize : 0);
  }
  if (copy_in) copy_bytes(p, src, sendbuf, send_n * p->tsize);
  char what[160];
  describe(p, coll, count, what, sizeof(what));
  xcclResult_t res;
  for (int i = 0; i < o->warmup; i++)
    if ((res = coll->run(p, src, dst, count)) != xcclSuccess) die_xccl(p, what, res);
  drain(p, what);
  double t0 = now_s();
  for (int i = 0; i < o->iters; i++)
    if ((res = coll->run(p, src, dst, count)) != xcclSuccess) die_xccl(p, what, res);
  drain(p, what);
  double time_us = (now_s() - t0) * 1e6 / o->iters;
  if ((res = xcclAllReduce(&time_us, &time_us, 1, xcclFloat64, xcclMax, p->comm, NULL)) != xcclSuccess)
    die_xccl(p, "xcclAllReduce of the time (max over ranks)", res);

  uint64_t wrong = 0;
  if (o->check) {
    /* One more run, on fresh input (in place the timed runs overwrote it),
     * into an output that starts out wrong everywhere. In place the input is
     * copied after the output is spoiled: where they overlap, it wins. */
    int checks = rank_checks(p, coll);
    void *out = o->device ? p->host_out : dst; /* where the output is checked */
    if (checks) prepare_check(p, coll, count, want, out, recv_n);
    if (checks && o->device) copy_bytes(p, dst, out, recv_n * p->tsize);
    if (copy_in) copy_bytes(p, src, sendbuf, send_n * p->tsize);
    if ((res = coll->run(p, src, dst, count)) != xcclSuccess) die_xccl(p, what, res);
    drain(p, what);
    if (checks && o->device) copy_bytes(p, out, dst, recv_n * p->tsize);
    if (checks) wrong = check_output(p, coll, count, want, out, recv_n);
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
    perf_usage(argc < 2 ? stderr : stdout, collective_names());
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
  if (perf_parse_options(argc - 1, argv + 1, collective_names(), &p.opt) != 0) return 2;
  p.tsize = xcclTypeSize(p.opt.type);
  if (p.tsize == 0 || p.tsize > 16) {
    fprintf(stderr, "xccl-perf: the library gives size %zu for type %s\n", p.tsize,
            perf_type_name(p.opt.type));
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
  if ((coll->flags & COLL_ROOTED) && p.opt.root >= p.nranks) {
    /* Every rank sees the same arguments, so every rank stops here. */
    if (p.rank == 0)
      fprintf(stderr, "xccl-perf: the root (-r %d) must be a rank, 0 to %d\n", p.opt.root, p.nranks - 1);
    (void)xcclCommDestroy(p.comm);
    return 2;
  }
  if ((coll->flags & COLL_NO_INPLACE) && p.opt.inplace) {
    if (p.rank == 0)
      fprintf(stderr, "xccl-perf: %s has no in-place form (%s); run it without --inplace\n", coll->name,
              strcmp(coll->name, "alltoall") == 0 ? "the library refuses overlapping send and receive buffers"
                                                  : "a rank would receive into the buffer it sends from");
    (void)xcclCommDestroy(p.comm);
    return 2;
  }
  p.tuned = p.comm;
  perf_algo_t algos[PERF_MAX_ALGOS];
  int nalgos = p.opt.algos ? perf_algo_open(p.comm, p.rank, coll->name, p.opt.algos, algos) : 0;
  if (nalgos < 0) {
    (void)xcclCommDestroy(p.comm);
    return 2;
  }
  double per_rank = perf_type_exact_limit(p.opt.type) / p.nranks;
  p.sum_max = per_rank >= 7 ? 7 : (int)per_rank;

  size_t max_count = size_count(&p, coll, p.opt.max_bytes);
  size_t send_n = coll->send_count(max_count, p.nranks), recv_n = coll->recv_count(max_count, p.nranks);
  size_t buf_n = recv_n > send_n ? recv_n : send_n;
  if (p.opt.device) {
    char why[256];
    int64_t lr = config_int(CFG_LOCAL_RANK); /* xccl-run's numbering of this host's ranks; -1 unset */
    if (perf_dev_open(lr > 0 ? (int)lr : 0, why, sizeof(why)) != 0) {
      fprintf(stderr, "xccl-perf: rank %d: --device: %s\n", p.rank, why);
      (void)xcclCommAbort(p.comm);
      return 1;
    }
    p.stream = perf_dev_stream();
  }
  void *input = alloc_buffer(send_n * p.tsize); /* this rank's input, in host memory */
  if (input) fill_input(&p, coll, input, send_n); /* valid numbers even without -c */
  void *sendbuf = p.opt.device ? perf_dev_alloc(send_n * p.tsize) : input;
  void *recvbuf = p.opt.device ? perf_dev_alloc(buf_n * p.tsize) : alloc_buffer(buf_n * p.tsize);
  xcclWindow_t wins[2] = {NULL, NULL};
  if (p.opt.memalloc && recvbuf && input) {
    free(recvbuf);
    if (perf_mem_windows(p.comm, p.rank, input, send_n * p.tsize, buf_n * p.tsize, &sendbuf, &recvbuf, wins)) {
      (void)xcclCommAbort(p.comm);
      return 1;
    }
  }
  void *want = p.opt.check ? alloc_buffer(recv_n * p.tsize) : NULL;
  p.host_out = p.opt.device && p.opt.check ? alloc_buffer(recv_n * p.tsize) : NULL;
  if (!input || !sendbuf || !recvbuf || (p.opt.check && !want) || (p.opt.device && p.opt.check && !p.host_out)) {
    fprintf(stderr, "xccl-perf: rank %d: cannot allocate %zu + %zu%s bytes of %s buffers; try a smaller -e\n",
            p.rank, send_n * p.tsize, buf_n * p.tsize, p.opt.check ? " (+ the same again to check)" : "",
            p.opt.device ? "GPU" : "host");
    (void)xcclCommAbort(p.comm);
    return 1;
  }
  if (p.opt.device) copy_bytes(&p, sendbuf, input, send_n * p.tsize);

  perf_plot_t plot = {0};
  p.plot = &plot;
  if (p.rank == 0 && p.opt.plot && perf_plot_open(&plot, p.opt.plot) != 0) {
    (void)xcclCommAbort(p.comm);
    return 1;
  }
  if (p.rank == 0) print_header(&p, coll);
  uint64_t total_wrong = 0;
  double busbw_sum = 0;
  int nsizes = 0;
  for (size_t size = p.opt.min_bytes; size <= p.opt.max_bytes;) {
    double busbw = 0;
    /* --algo: each algorithm in turn on this size, each on its communicator. */
    for (int a = 0; a < (nalgos ? nalgos : 1); a++) {
      if (nalgos) p.comm = algos[a].comm, p.algo = algos[a].name;
      /* An algorithm that cannot take this size (line past its bytes) runs
       * what the tuner picks instead: no row under its name. */
      if (nalgos &&
          strcmp(perf_algo_chosen(p.comm, coll->name, sched_count(&p, coll, size_count(&p, coll, size)), p.opt.type),
                 p.algo) != 0)
        continue;
      total_wrong += run_size(&p, coll, size_count(&p, coll, size), sendbuf, recvbuf, want, &busbw);
      busbw_sum += busbw;
      nsizes++;
    }
    p.comm = p.tuned;
    if (size == 0) {
      size = 1;
    } else if (size > p.opt.max_bytes / p.opt.factor) {
      break;
    } else {
      size *= p.opt.factor;
    }
  }
  double avg_busbw = nsizes ? busbw_sum / nsizes : 0;
  int plot_failed = 0;
  if (p.rank == 0) {
    if (p.opt.json) {
      json_t *sum = json_pack("{s:s, s:s, s:i, s:f, s:o, s:b}", "kind", "summary", "collective", coll->name, "sizes",
                              nsizes, "avg_busbw_gbps", avg_busbw, "wrong",
                              p.opt.check ? json_integer((json_int_t)total_wrong) : json_null(), "ok", !total_wrong);
      json_line(stdout, sum);
      json_decref(sum);
    } else {
      printf("# avg busbw: %.3f GB/s\n", avg_busbw);
    }
    fflush(stdout);
    if (total_wrong)
      fprintf(stderr, "xccl-perf: FAILED: %llu wrong elements in total over all sizes and ranks\n",
              (unsigned long long)total_wrong);
    char title[160];
    snprintf(title, sizeof(title), "xccl-perf %s, %d ranks, %s%s%s", coll->name, p.nranks,
             perf_type_name(p.opt.type), coll->flags & COLL_REDUCES ? " " : "",
             coll->flags & COLL_REDUCES ? op_label(&p, coll) : "");
    if (perf_plot_draw(&plot, title) != 0) plot_failed = 1;
  }
  perf_mem_deregister(p.comm, wins);
  perf_algo_close(algos, nalgos);
  if ((res = xcclCommDestroy(p.comm)) != xcclSuccess) {
    fprintf(stderr, "xccl-perf: rank %d: xcclCommDestroy failed: %s: %s\n", p.rank,
            xcclGetErrorString(res), xcclGetLastError(NULL));
    return 1;
  }
  if (p.opt.device) {
    perf_dev_free(sendbuf);
    perf_dev_free(recvbuf);
  } else if (p.opt.memalloc) {
    perf_mem_free(sendbuf, recvbuf);
  } else {
    free(recvbuf);
  }
  free(input);
  free(want);
  free(p.host_out);
  return total_wrong || plot_failed ? 1 : 0;
}
