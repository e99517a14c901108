/*
 * nccl_prog.c — an NCCL program, written to nccl.h alone, that the tests run
 * on xccl's libnccl.so.2 with host buffers. It is compiled against NVIDIA's
 * nccl.h (and against xccl's own, include/xccl-nccl/nccl.h), and once
 * linked with NVIDIA's libnccl.so.2 and run on xccl's through
 * LD_LIBRARY_PATH.
 *
 *   nccl_prog MODE NRANKS
 *
 * It launches its own ranks as an NCCL job without MPI does: it forks
 * NRANKS children first, then makes the unique id and hands it to each
 * through a pipe. Each child runs MODE as one rank; the parent waits (at
 * most 120 s) and exits 0 when every child did what MODE expects of it.
 */
#include <errno.h>
#include <nccl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef NCCL_PROG_WHICH_LIB
#include <dlfcn.h>
#endif

static int g_rank = -1, g_failed;

#define NCHECK(call)                                                                                     \
  do {                                                                                                   \
    ncclResult_t r_ = (call);                                                                            \
    if (r_ != ncclSuccess) {                                                                             \
      fprintf(stderr, "rank %d: %s:%d: %s -> %d (%s): %s\n", g_rank, __FILE__, __LINE__, #call, (int)r_, \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                                           \
      exit(1);                                                                                           \
    }                                                                                                    \
  } while (0)

#define EXPECT(cond, ...)                                                                        \
  do {                                                                                           \
    if (!(cond)) {                                                                               \
      g_failed++;                                                                                \
      fprintf(stderr, "rank %d: %s:%d: EXPECT(%s) failed: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
    }                                                                                            \
  } while (0)

#define S0 ((cudaStream_t)0)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) abort();
  return p;
}

static ncclComm_t init(int nranks, ncclUniqueId id, int rank) {
  ncclComm_t comm = NULL;
  NCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int n = -1, r = -1;
  NCHECK(ncclCommCount(comm, &n));
  NCHECK(ncclCommUserRank(comm, &r));
  EXPECT(n == nranks && r == rank, "count %d rank %d, expected %d %d", n, r, nranks, rank);
  return comm;
}

/* ---- colls: every collective, several types and ops ---- */

/* Rank r's element i: small integers, exact in every type used. */
static double val(int r, size_t i) { return (double)((r + 1) * (int)(i % 5 + 1)); }

static double expect_reduce(ncclRedOp_t op, int n, size_t i) {
  double acc = val(0, i);
  for (int r = 1; r < n; r++) {
    double v = val(r, i);
    switch (op) {
      case ncclSum:
      case ncclAvg:
        acc += v;
        break;
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = v > acc ? v : acc;
        break;
      case ncclMin:
        acc = v < acc ? v : acc;
        break;
      default:
        break;
    }
  }
  return op == ncclAvg ? acc / n : acc;
}

typedef struct {
  ncclDataType_t t;
  size_t size;
  const char *name;
} type_t;
static const type_t types[] = {{ncclFloat32, 4, "float32"}, {ncclFloat64, 8, "float64"}, {ncclInt32, 4, "int32"},
                               {ncclInt64, 8, "int64"},     {ncclUint8, 1, "uint8"},     {ncclUint64, 8, "uint64"}};

static void put(const type_t *t, void *buf, size_t i, double v) {
  switch (t->t) {
    case ncclFloat32:
      ((float *)buf)[i] = (float)v;
      break;
    case ncclFloat64:
      ((double *)buf)[i] = v;
      break;
    case ncclInt32:
      ((int32_t *)buf)[i] = (int32_t)v;
      break;
    case ncclInt64:
      ((int64_t *)buf)[i] = (int64_t)v;
      break;
    case ncclUint8:
      ((uint8_t *)buf)[i] = (uint8_t)v;
      break;
    case ncclUint64:
      ((uint64_t *)buf)[i] = (uint64_t)v;
      break;
    default:
      abort();
  }
}
static double get(const type_t *t, const void *buf, size_t i) {
  switch (t->t) {
    case ncclFloat32:
      return ((const float *)buf)[i];
    case ncclFloat64:
      return ((const double *)buf)[i];
    case ncclInt32:
      return ((const int32_t *)buf)[i];
    case ncclInt64:
      return (double)((const int64_t *)buf)[i];
    case ncclUint8:
      return ((const uint8_t *)buf)[i];
    case ncclUint64:
      return (double)((const uint64_t *)buf)[i];
    default:
      abort();
  }
}
/* What the type makes of v (exact in a double here): integer avg truncates,
 * narrow integers wrap. */
static double as_type(const type_t *t, double v) {
  if (t->t == ncclFloat32) return (float)v;
  if (t->t == ncclUint8) return (double)(uint8_t)(uint64_t)v;
  if (t->t == ncclInt32) return (double)(int32_t)(uint32_t)(uint64_t)v;
  if (t->t == ncclFloat64) return v;
  return (double)(int64_t)v;
}

static int bad(const type_t *t, double got, double want) {
  double w = as_type(t, want);
  return got != w;
}

static void mode_colls(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  const size_t counts[] = {0, 1, 1000, 70001};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
    const type_t *t = &types[ti];
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
      size_t count = counts[ci];
      char *send = xmalloc(count * t->size * n), *recv = xmalloc(count * t->size * n);
      for (size_t oi = 0; oi < 5; oi++) {
        ncclRedOp_t op = ops[oi];
        /* products of 8 ranks pass 2^24: float32 rounds them in an order-dependent way */
        if (op == ncclProd && t->t == ncclFloat32 && n > 4) continue;
        for (int inplace = 0; inplace < 2; inplace++) {
          for (size_t i = 0; i < count; i++) put(t, send, i, val(rank, i));
          void *out = inplace ? send : recv;
          NCHECK(ncclAllReduce(send, out, count, t->t, op, comm, S0));
          for (size_t i = 0; i < count; i++)
            if (bad(t, get(t, out, i), expect_reduce(op, n, i))) {
              EXPECT(0, "allreduce %s op %d inplace %d count %zu [%zu] = %g, want %g", t->name, (int)op, inplace, count,
                     i, get(t, out, i), as_type(t, expect_reduce(op, n, i)));
              break;
            }
        }
      }
      /* broadcast and reduce from each root */
      for (int root = 0; root < n; root++) {
        for (size_t i = 0; i < count; i++) put(t, send, i, val(rank, i));
        NCHECK(ncclBroadcast(send, recv, count, t->t, root, comm, S0));
        for (size_t i = 0; i < count; i++)
          if (bad(t, get(t, recv, i), val(root, i))) {
            EXPECT(0, "broadcast root %d [%zu]", root, i);
            break;
          }
        NCHECK(ncclBcast(send, count, t->t, root, comm, S0));
        for (size_t i = 0; i < count; i++)
          if (bad(t, get(t, send, i), val(root, i))) {
            EXPECT(0, "bcast root %d [%zu]", root, i);
            break;
          }
        for (size_t i = 0; i < count; i++) put(t, send, i, val(rank, i));
        memset(recv, 0, count * t->size);
        NCHECK(ncclReduce(send, recv, count, t->t, ncclSum, root, comm, S0));
        if (rank == root)
          for (size_t i = 0; i < count; i++)
            if (bad(t, get(t, recv, i), expect_reduce(ncclSum, n, i))) {
              EXPECT(0, "reduce root %d [%zu]", root, i);
              break;
            }
      }
      /* all-gather, reduce-scatter, all-to-all */
      for (size_t i = 0; i < count; i++) put(t, send, i, val(rank, i));
      NCHECK(ncclAllGather(send, recv, count, t->t, comm, S0));
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < count; i++)
          if (bad(t, get(t, recv, r * count + i), val(r, i))) {
            EXPECT(0, "allgather [%d][%zu]", r, i);
            r = n;
            break;
          }
      for (size_t i = 0; i < count * n; i++) put(t, send, i, val(rank, i));
      NCHECK(ncclReduceScatter(send, recv, count, t->t, ncclMax, comm, S0));
      for (size_t i = 0; i < count; i++)
        if (bad(t, get(t, recv, i), expect_reduce(ncclMax, n, rank * count + i))) {
          EXPECT(0, "reducescatter [%zu]", i);
          break;
        }
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++) put(t, send, p * count + i, (double)((rank * 7 + p) % 100));
      NCHECK(ncclAlltoAll(send, recv, count, t->t, comm, S0));
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++)
          if (bad(t, get(t, recv, p * count + i), (double)((p * 7 + rank) % 100))) {
            EXPECT(0, "alltoall [%d]", p);
            p = n;
            break;
          }
      /* gather and scatter at the last root */
      int root = n - 1;
      for (size_t i = 0; i < count; i++) put(t, send, i, val(rank, i));
      NCHECK(ncclGather(send, recv, count, t->t, root, comm, S0));
      if (rank == root)
        for (int r = 0; r < n; r++)
          for (size_t i = 0; i < count; i++)
            if (bad(t, get(t, recv, r * count + i), val(r, i))) {
              EXPECT(0, "gather [%d][%zu]", r, i);
              r = n;
              break;
            }
      for (size_t i = 0; i < count * n; i++) put(t, send, i, (double)(i % 97));
      NCHECK(ncclScatter(send, recv, count, t->t, root, comm, S0));
      for (size_t i = 0; i < count; i++)
        if (bad(t, get(t, recv, i), (double)((rank * count + i) % 97))) {
          EXPECT(0, "scatter [%zu]", i);
          break;
        }
      free(send);
      free(recv);
    }
  }
  NCHECK(ncclCommDestroy(comm));
}

/* ---- group: several collectives and a ring of sends in one group ---- */

static void mode_group(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  enum { N = 4096 };
  float *a = xmalloc(N * 4), *b = xmalloc((size_t)N * 4 * n), *s = xmalloc(N * 4), *r = xmalloc(N * 4);
  for (int it = 0; it < 3; it++) {
    for (int i = 0; i < N; i++) a[i] = (float)(rank + i % 3), s[i] = (float)(rank * 1000 + i);
    NCHECK(ncclGroupStart());
    NCHECK(ncclAllReduce(a, a, N, ncclFloat, ncclSum, comm, S0));
    NCHECK(ncclGroupStart()); /* nested */
    NCHECK(ncclAllGather(s, b, N, ncclFloat, comm, S0));
    NCHECK(ncclGroupEnd());
    NCHECK(ncclSend(s, N, ncclFloat, (rank + 1) % n, comm, S0));
    NCHECK(ncclRecv(r, N, ncclFloat, (rank + n - 1) % n, comm, S0));
    NCHECK(ncclGroupEnd());
    int prev = (rank + n - 1) % n;
    for (int i = 0; i < N; i++) {
      float want = (float)(n * (n - 1) / 2 + n * (i % 3));
      if (a[i] != want) {
        EXPECT(0, "grouped allreduce [%d] = %g, want %g", i, a[i], want);
        break;
      }
      if (r[i] != (float)(prev * 1000 + i)) {
        EXPECT(0, "ring recv [%d] = %g", i, r[i]);
        break;
      }
      if (b[(size_t)prev * N + i] != (float)(prev * 1000 + i)) {
        EXPECT(0, "grouped allgather [%d]", i);
        break;
      }
    }
  }
  /* every pair exchanges, all in one group */
  int *out = xmalloc(sizeof(int) * n), *in = xmalloc(sizeof(int) * n);
  for (int p = 0; p < n; p++) out[p] = rank * 100 + p, in[p] = -1;
  NCHECK(ncclGroupStart());
  for (int p = 0; p < n; p++) {
    NCHECK(ncclSend(&out[p], 1, ncclInt32, p, comm, S0));
    NCHECK(ncclRecv(&in[p], 1, ncclInt32, p, comm, S0));
  }
  NCHECK(ncclGroupEnd());
  for (int p = 0; p < n; p++) EXPECT(in[p] == p * 100 + rank, "pairwise from %d: %d", p, in[p]);
  free(a), free(b), free(s), free(r), free(out), free(in);
  NCHECK(ncclCommDestroy(comm));
}

/* ---- split: colors, keys, NOCOLOR, a split of a split ---- */

static void check_sum_of_ranks(ncclComm_t c, int contribution, int want, const char *what) {
  int v = contribution;
  NCHECK(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c, S0));
  EXPECT(v == want, "%s: sum %d, want %d", what, v, want);
}

static void mode_split(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  /* parity colors, keys reversing the order */
  ncclComm_t half = NULL;
  NCHECK(ncclCommSplit(comm, rank % 2, -rank, &half, NULL));
  EXPECT(half != NULL, "split returned NULL for a color");
  int size = -1, me = -1, want_size = 0, want_me = 0, want_sum = 0;
  for (int r = 0; r < n; r++)
    if (r % 2 == rank % 2) want_size++, want_sum += r, want_me += r > rank;
  NCHECK(ncclCommCount(half, &size));
  NCHECK(ncclCommUserRank(half, &me));
  EXPECT(size == want_size && me == want_me, "parity split: size %d rank %d, want %d %d", size, me, want_size, want_me);
  check_sum_of_ranks(half, rank, want_sum, "parity split");
  /* a split of the split: one color, keys as they are */
  ncclComm_t again = NULL;
  NCHECK(ncclCommSplit(half, 0, 0, &again, NULL));
  NCHECK(ncclCommCount(again, &size));
  EXPECT(size == want_size, "split of split: size %d, want %d", size, want_size);
  check_sum_of_ranks(again, rank, want_sum, "split of split");
  NCHECK(ncclCommDestroy(again));
  NCHECK(ncclCommDestroy(half));
  /* rank 0 in no communicator, the others in one */
  ncclComm_t rest = (ncclComm_t)(uintptr_t)1;
  NCHECK(ncclCommSplit(comm, rank == 0 ? NCCL_SPLIT_NOCOLOR : 7, rank, &rest, NULL));
  if (rank == 0) {
    EXPECT(rest == NULL, "NOCOLOR gave a communicator");
  } else {
    NCHECK(ncclCommCount(rest, &size));
    EXPECT(size == n - 1, "split without rank 0: size %d", size);
    check_sum_of_ranks(rest, rank, n * (n - 1) / 2, "split without rank 0");
    NCHECK(ncclCommDestroy(rest));
  }
  /* every rank its own color */
  ncclComm_t self = NULL;
  NCHECK(ncclCommSplit(comm, rank, 0, &self, NULL));
  NCHECK(ncclCommCount(self, &size));
  EXPECT(size == 1, "own color: size %d", size);
  NCHECK(ncclCommDestroy(self));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- nonblocking: init and split with blocking = 0, polled ---- */

static int wait_ready(ncclComm_t c, const char *what) {
  ncclResult_t state = ncclInProgress;
  int polls = 0;
  double deadline = now_s() + 60;
  while (state == ncclInProgress && now_s() < deadline) {
    NCHECK(ncclCommGetAsyncError(c, &state));
    if (state == ncclInProgress) polls++, usleep(1000);
  }
  EXPECT(state == ncclSuccess, "%s: state %d (%s): %s", what, (int)state, ncclGetErrorString(state),
         ncclGetLastError(c));
  return polls;
}

static void mode_nonblocking(int n, int rank, ncclUniqueId id) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  int from_env = getenv("NCCL_COMM_BLOCKING") != NULL; /* then blocking stays unset: the variable decides */
  if (!from_env) config.blocking = 0;
  config.commName = "nonblocking-test";
  config.minCTAs = 4; /* no meaning in xccl: an INFO line, not an error */
  ncclComm_t comm = NULL;
  ncclResult_t r = ncclCommInitRankConfig(&comm, n, id, rank, &config);
  EXPECT(r == ncclInProgress || (r == ncclSuccess && !from_env), "non-blocking init returned %d: %s", (int)r,
         ncclGetLastError(NULL));
  EXPECT(comm != NULL, "non-blocking init gave no handle");
  int polls = wait_ready(comm, "non-blocking init");
  if (rank == 0) printf("non-blocking init: ready after %d polls\n", polls);
  check_sum_of_ranks(comm, rank, n * (n - 1) / 2, "non-blocking comm");
  ncclComm_t sub = NULL;
  r = ncclCommSplit(comm, 0, rank, &sub, &config);
  EXPECT(r == ncclInProgress || r == ncclSuccess, "non-blocking split returned %d", (int)r);
  wait_ready(sub, "non-blocking split");
  check_sum_of_ranks(sub, 1, n, "non-blocking split");
  NCHECK(ncclCommDestroy(sub));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- commid: every rank makes the id itself, from NCCL_COMM_ID ---- */

static void mode_commid(int n, int rank, ncclUniqueId unused) {
  (void)unused;
  ncclUniqueId mine;
  NCHECK(ncclGetUniqueId(&mine));
  ncclComm_t comm = init(n, mine, rank);
  check_sum_of_ranks(comm, rank, n * (n - 1) / 2, "NCCL_COMM_ID");
  NCHECK(ncclCommDestroy(comm));
}

/* ---- abort: rank 0 aborts while the others wait in an all-reduce ---- */

static void mode_abort(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, 1, n, "before abort");
  if (rank == 0) {
    usleep(300 * 1000);
    NCHECK(ncclCommAbort(comm));
    return;
  }
  double t0 = now_s();
  int v = 1;
  ncclResult_t r = ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm, S0);
  double dt = now_s() - t0;
  EXPECT(r != ncclSuccess, "the all-reduce without rank 0 succeeded");
  EXPECT(dt < 20, "it took %.1f s to see rank 0's abort", dt);
  const char *msg = ncclGetLastError(comm);
  EXPECT(msg && *msg, "no message for the failure");
  if (rank == 1) printf("after rank 0's abort, %.2f s: %s: %s\n", dt, ncclGetErrorString(r), msg);
  ncclResult_t state = ncclSuccess;
  NCHECK(ncclCommGetAsyncError(comm, &state));
  EXPECT(state != ncclSuccess && state != ncclInProgress, "async error after the failure: %d", (int)state);
  NCHECK(ncclCommAbort(comm));
}

/* ---- kill: the last rank dies of SIGKILL between two all-reduces ---- */

static void mode_kill(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, 1, n, "before the kill");
  if (rank == n - 1) raise(SIGKILL);
  enum { N = 1 << 20 };
  float *buf = xmalloc(N * 4);
  double t0 = now_s();
  ncclResult_t r = ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, S0);
  double dt = now_s() - t0;
  EXPECT(r != ncclSuccess, "the all-reduce with a dead rank succeeded");
  EXPECT(dt < 30, "%.1f s to see the dead rank", dt);
  const char *msg = ncclGetLastError(comm);
  EXPECT(msg && strstr(msg, "rank"), "the message names no rank: %s", msg ? msg : "(null)");
  if (rank == 0) printf("dead rank seen after %.2f s: %s: %s\n", dt, ncclGetErrorString(r), msg);
  free(buf);
  NCHECK(ncclCommAbort(comm));
}

/* ---- premulsum ---- */

static void mode_premulsum(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  enum { N = 1000 };
  float f[N], scalar = (float)rank + 1.5f;
  ncclRedOp_t op;
  NCHECK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT((int)op >= (int)ncclNumOps, "PreMulSum op %d is a built-in value", (int)op);
  scalar = 1000; /* read once at create: this must not change the result */
  for (int i = 0; i < N; i++) f[i] = (float)(i % 4);
  NCHECK(ncclAllReduce(f, f, N, ncclFloat32, op, comm, S0));
  double ssum = 0;
  for (int r = 0; r < n; r++) ssum += r + 1.5;
  for (int i = 0; i < N; i++)
    if (f[i] != (float)(ssum * (i % 4))) {
      EXPECT(0, "premulsum float [%d] = %g, want %g", i, f[i], ssum * (i % 4));
      break;
    }
  NCHECK(ncclRedOpDestroy(op, comm));
  EXPECT(ncclAllReduce(f, f, N, ncclFloat32, op, comm, S0) == ncclInvalidArgument, "a destroyed op was taken");
  /* int64 with the scalar read at each call (ncclScalarDevice: host memory here) */
  int64_t k = rank + 2, v[N], out[N];
  NCHECK(ncclRedOpCreatePreMulSum(&op, &k, ncclInt64, ncclScalarDevice, comm));
  for (int i = 0; i < N; i++) v[i] = i;
  k = rank + 3; /* read when the call starts */
  NCHECK(ncclReduceScatter(v, out, N / n, ncclInt64, op, comm, S0));
  int64_t ksum = 0;
  for (int r = 0; r < n; r++) ksum += r + 3;
  for (int i = 0; i < N / n; i++)
    if (out[i] != ksum * (rank * (N / n) + i)) {
      EXPECT(0, "premulsum int64 reduce-scatter [%d]", i);
      break;
    }
  EXPECT(ncclAllReduce(f, f, N, ncclFloat32, op, comm, S0) == ncclInvalidArgument, "the op was taken for another type");
  NCHECK(ncclRedOpDestroy(op, comm));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- initall: one process, four ranks, one thread ---- */

static void mode_initall(int n, int rank, ncclUniqueId id) {
  (void)rank, (void)id;
  enum { M = 4 };
  ncclComm_t comms[M];
  NCHECK(ncclCommInitAll(comms, M, NULL));
  int v[M];
  for (int round = 0; round < 2; round++) {
    NCHECK(ncclGroupStart());
    for (int i = 0; i < M; i++) {
      v[i] = i + 1;
      NCHECK(ncclAllReduce(&v[i], &v[i], 1, ncclInt32, ncclSum, comms[i], S0));
    }
    NCHECK(ncclGroupEnd());
    for (int i = 0; i < M; i++) EXPECT(v[i] == M * (M + 1) / 2, "initall comm %d: %d", i, v[i]);
  }
  for (int i = 0; i < M; i++) NCHECK(ncclCommDestroy(comms[i]));
  /* the same by hand: ranks' inits in a group, from one thread */
  ncclUniqueId uid;
  NCHECK(ncclGetUniqueId(&uid));
  NCHECK(ncclGroupStart());
  for (int i = 0; i < n; i++) NCHECK(ncclCommInitRank(&comms[i], n, uid, i));
  NCHECK(ncclGroupEnd());
  NCHECK(ncclGroupStart());
  for (int i = 0; i < n; i++) {
    v[i] = 10 * i;
    NCHECK(ncclAllReduce(&v[i], &v[i], 1, ncclInt32, ncclMax, comms[i], S0));
  }
  NCHECK(ncclGroupEnd());
  for (int i = 0; i < n; i++) EXPECT(v[i] == 10 * (n - 1), "init in a group, comm %d: %d", i, v[i]);
  for (int i = 0; i < n; i++) NCHECK(ncclCommDestroy(comms[i]));
}

/* ---- mem: ncclMemAlloc, registration, windows ---- */

static void mode_mem(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  enum { N = 1 << 16 };
  float *buf = NULL;
  NCHECK(ncclMemAlloc((void **)&buf, N * 4));
  EXPECT(buf != NULL && ((uintptr_t)buf & 4095) == 0, "ncclMemAlloc gave %p", (void *)buf);
  void *handle = NULL;
  NCHECK(ncclCommRegister(comm, buf, N * 4, &handle));
  for (int i = 0; i < N; i++) buf[i] = (float)rank;
  NCHECK(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, S0));
  for (int i = 0; i < N; i++)
    if (buf[i] != (float)(n * (n - 1) / 2)) {
      EXPECT(0, "registered all-reduce [%d] = %g", i, buf[i]);
      break;
    }
  NCHECK(ncclCommDeregister(comm, handle));
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf, N * 4, &win, NCCL_WIN_COLL_SYMMETRIC));
  for (int i = 0; i < N; i++) buf[i] = 1;
  NCHECK(ncclAllReduce(buf, buf, N, ncclFloat, ncclSum, comm, S0));
  EXPECT(buf[N - 1] == (float)n, "window all-reduce: %g", buf[N - 1]);
  NCHECK(ncclCommWindowDeregister(comm, win));
  NCHECK(ncclMemFree(buf));
  EXPECT(ncclMemFree(&n) == ncclInvalidArgument, "ncclMemFree took a pointer it did not make");
  NCHECK(ncclCommDestroy(comm));
}

/* ---- simulate: ncclGroupSimulateEnd estimates and runs nothing ---- */

static void mode_simulate(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  enum { N = 1 << 20 };
  float *a = xmalloc(N * 4), *b = xmalloc(N * 4);
  for (int i = 0; i < N; i++) a[i] = 1, b[i] = -1;
  float t_small = 0, t_big = 0;
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  NCHECK(ncclGroupStart());
  NCHECK(ncclAllReduce(a, b, 16, ncclFloat, ncclSum, comm, S0));
  NCHECK(ncclGroupSimulateEnd(&info));
  t_small = info.estimatedTime;
  info = (ncclSimInfo_t)NCCL_SIM_INFO_INITIALIZER;
  NCHECK(ncclGroupStart());
  NCHECK(ncclAllReduce(a, b, N, ncclFloat, ncclSum, comm, S0));
  NCHECK(ncclGroupSimulateEnd(&info));
  t_big = info.estimatedTime;
  EXPECT(t_small > 0 && t_big > t_small, "estimates %g us (16 floats), %g us (1 Mi floats)", t_small, t_big);
  EXPECT(b[0] == -1 && b[N - 1] == -1, "a simulated group ran");
  if (rank == 0) printf("estimated all-reduce on %d ranks: %.1f us (64 B), %.1f us (4 MiB)\n", n, t_small, t_big);
  NCHECK(ncclAllReduce(a, b, N, ncclFloat, ncclSum, comm, S0));
  EXPECT(b[N - 1] == (float)n, "all-reduce after the simulation: %g", b[N - 1]);
  free(a), free(b);
  NCHECK(ncclCommDestroy(comm));
}

/* ---- shrink, revoke, finalize ---- */

static void mode_shrink(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, 1, n, "before shrink");
  int excl = n - 1;
  if (rank == excl) {
    NCHECK(ncclCommDestroy(comm));
    return;
  }
  ncclComm_t small = NULL;
  NCHECK(ncclCommShrink(comm, &excl, 1, &small, NULL, NCCL_SHRINK_DEFAULT));
  check_sum_of_ranks(small, rank, (n - 1) * (n - 2) / 2, "shrunk");
  /* with NCCL_SHRINK_ABORT: the parent is revoked first */
  ncclComm_t smaller = NULL;
  int excl2 = 0;
  if (n > 2 && rank != 0) {
    NCHECK(ncclCommShrink(small, &excl2, 1, &smaller, NULL, NCCL_SHRINK_ABORT));
    check_sum_of_ranks(smaller, 1, n - 2, "shrunk with NCCL_SHRINK_ABORT");
    NCHECK(ncclCommDestroy(smaller));
  }
  EXPECT(ncclCommShrink(comm, &excl, 1, &smaller, NULL, 0x10) == ncclInvalidArgument, "unknown shrink flags taken");
  EXPECT(strstr(ncclGetLastError(comm), "shrinkFlags"), "the comm's last error: %s", ncclGetLastError(comm));
  NCHECK(ncclCommDestroy(small));
  NCHECK(ncclCommDestroy(comm));
}

static void mode_revoke(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, 1, n, "before revoke");
  EXPECT(ncclCommRevoke(comm, 1) == ncclInvalidArgument, "revoke flags 1 taken");
  NCHECK(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT));
  ncclResult_t state = ncclInProgress;
  NCHECK(ncclCommGetAsyncError(comm, &state));
  EXPECT(state == ncclSuccess, "after revoke the state is %d", (int)state);
  int v = 1;
  EXPECT(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm, S0) == ncclInvalidUsage, "an op on a revoked comm ran");
  /* a revoked comm still splits */
  ncclComm_t again = NULL;
  NCHECK(ncclCommSplit(comm, 0, rank, &again, NULL));
  check_sum_of_ranks(again, 1, n, "split of a revoked comm");
  NCHECK(ncclCommDestroy(again));
  NCHECK(ncclCommDestroy(comm));
}

static void mode_finalize(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, 1, n, "before finalize");
  NCHECK(ncclCommFinalize(comm));
  int v = 1;
  EXPECT(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm, S0) == ncclInvalidUsage, "an op after finalize ran");
  NCHECK(ncclCommDestroy(comm));
}

/* ---- errors: refusals and what they say ---- */

static void mode_errors(int n, int rank, ncclUniqueId id) {
  int v = 0;
  NCHECK(ncclGetVersion(&v));
  /* The library may serve a newer NCCL than the header the program was built with. */
  EXPECT(v >= NCCL_VERSION_CODE, "ncclGetVersion %d, older than the header's %d", v, NCCL_VERSION_CODE);
  for (int r = 0; r < (int)ncclNumResults; r++)
    EXPECT(ncclGetErrorString((ncclResult_t)r) && *ncclGetErrorString((ncclResult_t)r), "no string for %d", r);
  ncclConfig_t bad_cfg = NCCL_CONFIG_INITIALIZER;
  bad_cfg.magic = 0;
  ncclComm_t comm = NULL;
  EXPECT(ncclCommInitRankConfig(&comm, n, id, rank, &bad_cfg) == ncclInvalidArgument, "a config with no magic taken");
  EXPECT(strstr(ncclGetLastError(NULL), "NCCL_CONFIG_INITIALIZER"), "message: %s", ncclGetLastError(NULL));
  EXPECT(comm == NULL, "a refused init wrote the handle");
  comm = init(n, id, rank);
  float f = 0;
  EXPECT(ncclAllReduce(&f, &f, 1, (ncclDataType_t)99, ncclSum, comm, S0) == ncclInvalidArgument, "type 99 taken");
  EXPECT(*ncclGetLastError(comm), "no message for type 99");
  EXPECT(ncclAllReduce(&f, &f, 1, ncclFloat, (ncclRedOp_t)77, comm, S0) == ncclInvalidArgument, "op 77 taken");
  EXPECT(ncclAllReduce(&f, &f, 1, ncclFloat, ncclSum, NULL, S0) == ncclInvalidArgument, "a NULL comm taken");
  EXPECT(ncclBroadcast(&f, &f, 1, ncclFloat, n, comm, S0) == ncclInvalidArgument, "root %d taken", n);
  EXPECT(ncclCommSplit(comm, -5, 0, &comm, NULL) == ncclInvalidArgument, "color -5 taken");
  EXPECT(ncclGroupSimulateEnd(NULL) == ncclInvalidArgument, "NULL sim info taken");
  int dev = -2;
  NCHECK(ncclCommCuDevice(comm, &dev));
  EXPECT(dev >= -1, "device %d", dev);
  check_sum_of_ranks(comm, 1, n, "after the refusals");
  NCHECK(ncclCommDestroy(comm));
}

#ifdef NCCL_PROG_CUDA
/* ---- device: the same calls on cudaMalloc buffers and a stream (GPU) ---- */

#define CUCHECK(call)                                                                                           \
  do {                                                                                                          \
    cudaError_t e_ = (call);                                                                                    \
    if (e_ != cudaSuccess) {                                                                                    \
      fprintf(stderr, "rank %d: %s:%d: %s -> %s\n", g_rank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(1);                                                                                                  \
    }                                                                                                           \
  } while (0)

static void mode_device(int n, int rank, ncclUniqueId id) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    printf("rank %d: skipped: no CUDA device\n", rank);
    exit(77);
  }
  CUCHECK(cudaSetDevice(rank % ndev));
  ncclComm_t comm = init(n, id, rank);
  cudaStream_t st;
  CUCHECK(cudaStreamCreate(&st));
  enum { N = 1 << 20 };
  float *h = xmalloc((size_t)N * 4 * n), *d_send, *d_recv;
  CUCHECK(cudaMalloc((void **)&d_send, (size_t)N * 4 * n));
  CUCHECK(cudaMalloc((void **)&d_recv, (size_t)N * 4 * n));
  for (int i = 0; i < N; i++) h[i] = (float)(rank + i % 3);
  CUCHECK(cudaMemcpy(d_send, h, N * 4, cudaMemcpyHostToDevice));
  NCHECK(ncclAllReduce(d_send, d_recv, N, ncclFloat, ncclSum, comm, st));
  NCHECK(ncclAllGather(d_send, d_recv, N, ncclFloat, comm, st));
  CUCHECK(cudaStreamSynchronize(st));
  CUCHECK(cudaMemcpy(h, d_recv, (size_t)N * 4 * n, cudaMemcpyDeviceToHost));
  for (int r = 0; r < n; r++)
    if (h[(size_t)r * N + 5] != (float)(r + 5 % 3)) {
      EXPECT(0, "device allgather from %d: %g", r, h[(size_t)r * N + 5]);
      break;
    }
  NCHECK(ncclAllReduce(d_send, d_recv, N, ncclFloat, ncclSum, comm, st));
  CUCHECK(cudaStreamSynchronize(st));
  CUCHECK(cudaMemcpy(h, d_recv, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; i++)
    if (h[i] != (float)(n * (n - 1) / 2 + n * (i % 3))) {
      EXPECT(0, "device allreduce [%d] = %g", i, h[i]);
      break;
    }
  /* a ring of sends in a group, then memory from ncclMemAlloc */
  NCHECK(ncclGroupStart());
  NCHECK(ncclSend(d_send, N, ncclFloat, (rank + 1) % n, comm, st));
  NCHECK(ncclRecv(d_recv, N, ncclFloat, (rank + n - 1) % n, comm, st));
  NCHECK(ncclGroupEnd());
  CUCHECK(cudaStreamSynchronize(st));
  CUCHECK(cudaMemcpy(h, d_recv, 4, cudaMemcpyDeviceToHost));
  EXPECT(h[0] == (float)((rank + n - 1) % n), "device ring recv: %g", h[0]);
  float *m = NULL;
  NCHECK(ncclMemAlloc((void **)&m, N * 4));
  CUCHECK(cudaMemcpy(m, d_send, N * 4, cudaMemcpyDeviceToDevice));
  NCHECK(ncclAllReduce(m, m, N, ncclFloat, ncclMax, comm, st));
  CUCHECK(cudaStreamSynchronize(st));
  CUCHECK(cudaMemcpy(h, m, 4, cudaMemcpyDeviceToHost));
  EXPECT(h[0] == (float)(n - 1), "allreduce on ncclMemAlloc memory: %g", h[0]);
  NCHECK(ncclMemFree(m));
  CUCHECK(cudaFree(d_send));
  CUCHECK(cudaFree(d_recv));
  CUCHECK(cudaStreamDestroy(st));
  free(h);
  NCHECK(ncclCommDestroy(comm));
}
#endif

#ifdef NCCL_PROG_232
#include "nccl_prog_232.c"
#else
#define NCCL_PROG_232_MODES
#endif

typedef void (*mode_fn)(int n, int rank, ncclUniqueId id);
static const struct {
  const char *name;
  mode_fn fn;
  int single; /* runs in one process, not per rank */
} modes[] = {
    {"colls", mode_colls, 0},
    {"group", mode_group, 0},
    {"split", mode_split, 0},
    {"nonblocking", mode_nonblocking, 0},
    {"abort", mode_abort, 0},
    {"kill", mode_kill, 0},
    {"premulsum", mode_premulsum, 0},
    {"initall", mode_initall, 1},
    {"mem", mode_mem, 0},
    {"simulate", mode_simulate, 0},
    {"shrink", mode_shrink, 0},
    {"revoke", mode_revoke, 0},
    {"finalize", mode_finalize, 0},
    {"errors", mode_errors, 0},
    {"commid", mode_commid, 0},
    NCCL_PROG_232_MODES
#ifdef NCCL_PROG_CUDA
    {"device", mode_device, 0},
#endif
};

static int run_rank(mode_fn fn, int n, int rank, int fd) {
  g_rank = rank;
  ncclUniqueId id;
  size_t got = 0;
  while (got < sizeof(id)) {
    ssize_t k = read(fd, (char *)&id + got, sizeof(id) - got);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      fprintf(stderr, "rank %d: no unique id from the parent\n", rank);
      return 1;
    }
    got += (size_t)k;
  }
  close(fd);
  fn(n, rank, id);
  return g_failed ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: nccl_prog MODE NRANKS\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int m = -1;
  for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
    if (strcmp(argv[1], modes[i].name) == 0) m = (int)i;
  if (m < 0 || n < 1 || n > 64) {
    fprintf(stderr, "nccl_prog: unknown mode %s or bad rank count %s\n", argv[1], argv[2]);
    return 2;
  }
#ifdef NCCL_PROG_WHICH_LIB
  Dl_info info;
  if (dladdr((void *)ncclAllReduce, &info) && info.dli_fname) printf("ncclAllReduce comes from %s\n", info.dli_fname);
  fflush(stdout);
#endif
  if (modes[m].single) {
    g_rank = 0;
    ncclUniqueId none;
    memset(&none, 0, sizeof(none));
    modes[m].fn(n, 0, none);
    printf("nccl_prog %s: %s\n", argv[1], g_failed ? "FAILED" : "OK");
    return g_failed ? 1 : 0;
  }
  int is_kill = strcmp(argv[1], "kill") == 0;
  pid_t *pids = xmalloc(sizeof(pid_t) * n);
  int *fds = xmalloc(sizeof(int) * n);
  fflush(stdout);
  for (int r = 0; r < n; r++) {
    int p[2];
    if (pipe(p) != 0) return perror("pipe"), 1;
    pids[r] = fork();
    if (pids[r] < 0) return perror("fork"), 1;
    if (pids[r] == 0) {
      close(p[1]);
      for (int q = 0; q < r; q++) close(fds[q]);
      int rc = run_rank(modes[m].fn, n, r, p[0]);
      fflush(stdout);
      _exit(rc);
    }
    close(p[0]);
    fds[r] = p[1];
  }
  /* Children exist before any thread of ours: now the id (and the
   * bootstrap root's thread in this process, which stays up while they
   * init). */
  ncclUniqueId id;
  ncclResult_t res = ncclGetUniqueId(&id);
  if (res != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId: %s: %s\n", ncclGetErrorString(res), ncclGetLastError(NULL));
    for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
  }
  for (int r = 0; r < n; r++) {
    if (res == ncclSuccess && write(fds[r], &id, sizeof(id)) != (ssize_t)sizeof(id)) perror("write");
    close(fds[r]);
  }
  int failed = res != ncclSuccess, left = n, skipped = 0;
  double deadline = now_s() + 120;
  while (left > 0) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p == 0) {
      if (now_s() > deadline) {
        fprintf(stderr, "nccl_prog %s: ranks still running after 120 s: killing them\n", argv[1]);
        for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
        failed = 1;
        deadline = now_s() + 1e9;
      }
      usleep(10000);
      continue;
    }
    if (p < 0) break;
    left--;
    int r = 0;
    while (r < n && pids[r] != p) r++;
    int want_kill = is_kill && r == n - 1;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
      skipped++;
      continue;
    }
    int ok = want_kill ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL : WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok) {
      failed = 1;
      if (WIFSIGNALED(st))
        fprintf(stderr, "nccl_prog %s: rank %d died of signal %d\n", argv[1], r, WTERMSIG(st));
      else
        fprintf(stderr, "nccl_prog %s: rank %d exited with %d\n", argv[1], r, WEXITSTATUS(st));
    }
  }
  free(pids);
  free(fds);
  if (skipped == n && !failed) return 77;
  printf("nccl_prog %s on %d ranks: %s\n", argv[1], n, failed || skipped ? "FAILED" : "OK");
  return failed || skipped;
}
