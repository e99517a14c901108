/*
 * test_allreduce.c — all-reduce across real processes over real TCP, run
 * under xccl-run. Every result is checked against a reference this program
 * computes itself, from every rank's inputs (it can generate them all), with
 * plain scalar arithmetic — not the library's reduction code.
 *
 * Inputs are chosen so that the exact result does not depend on the order of
 * reduction: small integers for floating sums (exact in every type for up to
 * 8 ranks), powers of two for floating products, anything for max/min, and
 * integer arithmetic that wraps (order-independent modulo 2^bits).
 *
 * usage: test_allreduce MODE   with MODE one of
 *   matrix   every type x op x count {0,1,7,1023,1M+3}, in and out of place
 *   large    64 MiB of float32 sum
 *   repeat   100 all-reduces in a loop, sizes varying
 *   line     the line all-reduce's sizes, and 3000 small calls in a row
 *   twocomm  two communicators used at once from two threads
 *   bytes    ring all-reduce sends 2(k-1)/k of the buffer to the next rank
 *   rdbytes, treebytes, rabbytes  the same for recursive doubling, the
 *            double binary tree, Rabenseifner: bytes per peer by formula
 *   hierbytes  the same for the hierarchical all-reduce, on the hosts that
 *            TEST_HIER_HOSTS names (a host label per rank, "0,1,1"; unset:
 *            one host), and its bytes between hosts against 2(H-1)/H B/g
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp_convert.h"
#include "test_util.h"
#include "xccl.h"

static int nranks, rank;

/* Element value of rank r at index i, as a double (before conversion). */
static double input_value(int r, size_t i, xcclDataType_t t, xcclRedOp_t op) {
  unsigned h = (unsigned)(r * 7919 + (int)(i % 1000003) * 31 + (int)t * 3 + (int)op);
  h ^= h >> 7;
  int is_float = t == xcclFloat16 || t == xcclFloat32 || t == xcclFloat64 || t == xcclBfloat16 ||
                 t == xcclFloat8e4m3 || t == xcclFloat8e5m2;
  if (!is_float) return (double)(int)(h % 2001) - 1000; /* wraps in small types: that's the point */
  if (op == xcclProd) {
    static const double pw[] = {1, 2, 0.5, -1};
    return pw[h % 4];
  }
  int span = t == xcclFloat8e5m2 ? 1 : (t == xcclFloat8e4m3 ? 2 : 6);
  return (double)((int)(h % (unsigned)(2 * span + 1)) - span);
}

/* Stores v (a double holding an integer or exact value) as type t at p[i]. */
static void store(void *p, size_t i, xcclDataType_t t, double v) {
  switch (t) {
    case xcclInt8: ((int8_t *)p)[i] = (int8_t)(int64_t)v; break;
    case xcclUint8: ((uint8_t *)p)[i] = (uint8_t)(int64_t)v; break;
    case xcclInt32: ((int32_t *)p)[i] = (int32_t)(int64_t)v; break;
    case xcclUint32: ((uint32_t *)p)[i] = (uint32_t)(int64_t)v; break;
    case xcclInt64: ((int64_t *)p)[i] = (int64_t)v; break;
    case xcclUint64: ((uint64_t *)p)[i] = (uint64_t)(int64_t)v; break;
    case xcclFloat16: ((uint16_t *)p)[i] = fp16_from_float((float)v); break;
    case xcclBfloat16: ((uint16_t *)p)[i] = bf16_from_float((float)v); break;
    case xcclFloat8e4m3: ((uint8_t *)p)[i] = fp8_e4m3_from_float((float)v); break;
    case xcclFloat8e5m2: ((uint8_t *)p)[i] = fp8_e5m2_from_float((float)v); break;
    case xcclFloat32: ((float *)p)[i] = (float)v; break;
    case xcclFloat64: ((double *)p)[i] = v; break;
    default: break;
  }
}

/* Reference for integer types: combine in uint64 (wraps like the narrow type
 * after truncation, since sum and product mod 2^n only need the low bits). */
static uint64_t ref_int(size_t i, xcclDataType_t t, xcclRedOp_t op, int is_signed, int bits) {
  uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
  int64_t acc_s = 0;
  uint64_t acc = 0;
  for (int r = 0; r < nranks; r++) {
    int64_t v = (int64_t)input_value(r, i, t, op);
    uint64_t u = (uint64_t)v & mask;
    /* sign-extend to compare as the narrow type would */
    int64_t sv = is_signed && bits < 64 && (u >> (bits - 1)) ? (int64_t)(u | ~mask) : (int64_t)u;
    if (r == 0) {
      acc = u, acc_s = sv;
      continue;
    }
    switch (op) {
      case xcclSum: case xcclAvg: acc = (acc + u) & mask; break;
      case xcclProd: acc = (acc * u) & mask; break;
      case xcclMax: if (is_signed ? sv > acc_s : u > acc) acc = u, acc_s = sv; break;
      case xcclMin: if (is_signed ? sv < acc_s : u < acc) acc = u, acc_s = sv; break;
      default: break;
    }
    acc_s = is_signed && bits < 64 && (acc >> (bits - 1)) ? (int64_t)(acc | ~mask) : (int64_t)acc;
  }
  if (op == xcclAvg) {
    if (is_signed) return (uint64_t)(acc_s / nranks) & mask;
    return (acc / (uint64_t)nranks) & mask;
  }
  return acc;
}

static int type_bits(xcclDataType_t t) { return (int)xcclTypeSize(t) * 8; }
static int type_signed(xcclDataType_t t) { return t == xcclInt8 || t == xcclInt32 || t == xcclInt64; }
static int type_float(xcclDataType_t t) { return !(t <= xcclUint64); }

static uint64_t load_bits(const void *p, size_t i, xcclDataType_t t) {
  switch (xcclTypeSize(t)) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
  }
}

/* The expected element i, as stored bits of type t. */
static uint64_t expected_bits(size_t i, xcclDataType_t t, xcclRedOp_t op) {
  if (!type_float(t)) return ref_int(i, t, op, type_signed(t), type_bits(t));
  double acc = 0;
  for (int r = 0; r < nranks; r++) {
    double v = input_value(r, i, t, op);
    if (r == 0) acc = v;
    else if (op == xcclSum || op == xcclAvg) acc += v;
    else if (op == xcclProd) acc *= v;
    else if (op == xcclMax) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  uint64_t out = 0;
  if (op == xcclAvg) {
    if (t == xcclFloat64) acc = acc / nranks;
    else {
      float f = (float)acc / (float)nranks; /* the library divides in float */
      store(&out, 0, t, f);
      return out;
    }
  }
  store(&out, 0, t, acc);
  return out;
}

static const xcclDataType_t all_types[] = {xcclInt8,    xcclUint8,   xcclInt32,      xcclUint32,
                                           xcclInt64,   xcclUint64,  xcclFloat16,    xcclFloat32,
                                           xcclFloat64, xcclBfloat16, xcclFloat8e4m3, xcclFloat8e5m2};

/* One all-reduce, checked element by element. Returns wrong elements. */
static size_t run_one(xcclComm_t comm, size_t count, xcclDataType_t t, xcclRedOp_t op, int inplace) {
  size_t es = xcclTypeSize(t), bytes = count * es;
  char *send = test_buf_alloc(bytes + 64), *recv = test_buf_alloc(bytes + 64);
  for (size_t i = 0; i < count; i++) store(send, i, t, input_value(rank, i, t, op));
  memset(recv, 0xA5, bytes + 64); /* canary past the end stays */
  if (inplace) memcpy(recv, send, bytes);
  XCHECK(xcclAllReduce(inplace ? recv : send, recv, count, t, op, comm, NULL));
  size_t wrong = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t got = load_bits(recv, i, t), want = expected_bits(i, t, op);
    if (got != want && wrong++ < 3)
      fprintf(stderr, "rank %d: type %d op %d count %zu %s: element %zu is 0x%llx, expected 0x%llx\n", rank, t, op,
              count, inplace ? "in place" : "out of place", i, (unsigned long long)got, (unsigned long long)want);
  }
  int past = -1; /* the first changed byte of the canary, if any */
  for (int k = 0; k < 64 && past < 0; k++)
    if ((unsigned char)recv[bytes + k] != 0xA5) past = k;
  CHECK(past < 0, "wrote past the end of recvbuff (byte %d of the canary)", past);
  CHECK(wrong == 0, "%zu wrong elements (type %d op %d count %zu)", wrong, t, op, count);
  test_buf_free(send);
  test_buf_free(recv);
  return wrong;
}

static void mode_matrix(xcclComm_t comm) {
  const size_t counts[] = {0, 1, 7, 1023, (1u << 20) + 3};
  for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
    for (size_t ti = 0; ti < sizeof(all_types) / sizeof(all_types[0]); ti++)
      for (int op = 0; op < xcclNumOps; op++)
        for (int inplace = 0; inplace < 2; inplace++) {
          /* On many ranks the 1M case runs every type x op once, out of place only. */
          if (counts[ci] > 4096 && nranks > 4 && inplace) continue;
          run_one(comm, counts[ci], all_types[ti], (xcclRedOp_t)op, inplace);
        }
}

/* The line all-reduce (host_line.h): every type x op x count that fits its
 * 12 bytes, in and out of place; then 3000 in a row whose inputs change
 * every call, so that a message read from the wrong half of a line shows,
 * every 97th followed by a larger one that another algorithm runs. With
 * TEST_EXPECT_ALGO set, the tuner must pick that algorithm for 8 bytes. */
static void mode_line(xcclComm_t comm) {
  const char *want = getenv("TEST_EXPECT_ALGO"), *got = "?";
  if (want) {
    XCHECK(xcclCommGetAlgorithm(comm, "allreduce", 2, xcclFloat32, &got));
    CHECK(strcmp(got, want) == 0, "the tuner picks %s for an 8-byte all-reduce on %d ranks, expected %s", got, nranks,
          want);
  }
  for (size_t ti = 0; ti < sizeof(all_types) / sizeof(all_types[0]); ti++)
    for (size_t count = 1; count * xcclTypeSize(all_types[ti]) <= 12; count++)
      for (int op = 0; op < xcclNumOps; op++)
        for (int inplace = 0; inplace < 2; inplace++) run_one(comm, count, all_types[ti], (xcclRedOp_t)op, inplace);
  size_t wrong = 0;
  for (int it = 0; it < 3000; it++) {
    int32_t in[3], out[3];
    for (int k = 0; k < 3; k++) in[k] = rank * 1000 + it * 7 + k;
    XCHECK(xcclAllReduce(in, out, 3, xcclInt32, xcclSum, comm, NULL));
    for (int k = 0; k < 3; k++) {
      int32_t expect = 1000 * nranks * (nranks - 1) / 2 + nranks * (it * 7 + k);
      if (out[k] != expect && wrong++ < 3)
        fprintf(stderr, "rank %d: call %d element %d is %d, expected %d\n", rank, it, k, out[k], expect);
    }
    if (it % 97 == 0) run_one(comm, 1000, xcclFloat32, xcclSum, 0);
  }
  CHECK(wrong == 0, "%zu wrong elements in 3000 all-reduces of 3 int32", wrong);
  /* The peer counters count what goes through the lines: 8 bytes to every
   * peer per call, and as much from it, give or take the call a peer may
   * already have started (or not) when this rank reads its counters. */
  xcclPeerCounters_t before[64], after[64];
  float x[2] = {1, 2}, y[2];
  const int calls = 100;
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  for (int c = 0; c < calls; c++) XCHECK(xcclAllReduce(x, y, 2, xcclFloat32, xcclSum, comm, NULL));
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  for (int p = 0; p < nranks && want; p++) { /* line picked: nothing else moved */
    uint64_t sent = after[p].bytesSent - before[p].bytesSent, recvd = after[p].bytesRecv - before[p].bytesRecv;
    uint64_t each = p == rank ? 0 : 8;
    CHECK(sent == each * calls && recvd + each >= sent && recvd <= sent + each,
          "rank %d: %llu bytes counted to rank %d and %llu from it for %d 8-byte line all-reduces, expected %llu", rank,
          (unsigned long long)sent, p, (unsigned long long)recvd, calls, (unsigned long long)(each * calls));
  }
  if (rank == 0) printf("line: %d ranks, picked for 8 bytes: %s; 3000 calls in a row right\n", nranks, got);
}

static void mode_repeat(xcclComm_t comm) {
  for (int it = 0; it < 100; it++) {
    size_t count = (size_t)(it * 977 % 20000) + 1;
    run_one(comm, count, all_types[it % 12], (xcclRedOp_t)(it % xcclNumOps), it % 2);
  }
}

typedef struct {
  xcclComm_t comm;
  int salt;
} worker_t;

static void *worker(void *arg) {
  worker_t *w = arg;
  for (int it = 0; it < 20; it++) run_one(w->comm, 5000 + (size_t)(w->salt * 131 + it), xcclFloat32, xcclSum, 0);
  return NULL;
}

static void mode_twocomm(xcclComm_t comm) {
  /* Rank 0 makes a second id; the first communicator carries it to everyone. */
  xcclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (rank == 0) XCHECK(xcclGetUniqueId(&id));
  XCHECK(xcclAllReduce(&id, &id, sizeof(id), xcclUint8, xcclSum, comm, NULL));
  xcclComm_t second;
  XCHECK(xcclCommInitRank(&second, nranks, id, rank));
  worker_t a = {comm, 1}, b = {second, 2};
  pthread_t ta, tb;
  pthread_create(&ta, NULL, worker, &a);
  pthread_create(&tb, NULL, worker, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  XCHECK(xcclCommDestroy(second));
}

static void mode_bytes(xcclComm_t comm) {
  int nch = 2; /* the test sets XCCL_NCHANNELS=2 */
  size_t count = (size_t)nranks * (size_t)nch * 65536, bytes = count * 4;
  xcclPeerCounters_t before[64], after[64];
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  /* Receives count from zero (the communicator is fresh): the previous rank
   * may have sent its first slots before this rank read `before`. */
  for (int p = 0; p < nranks; p++) {
    CHECK(before[p].bytesSent == 0, "a fresh communicator had sent %llu bytes", (unsigned long long)before[p].bytesSent);
    before[p].bytesRecv = 0;
  }
  run_one(comm, count, xcclFloat32, xcclSum, 0);
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  /* The ring's order is the library's choice (hosts one after another, by
   * NUMA domain inside one): the ranks it sent to and received from must be
   * exactly one each. */
  int next = -1, prev = -1, nsent = 0, nrecv = 0;
  for (int p = 0; p < nranks; p++) {
    if (after[p].bytesSent != before[p].bytesSent) next = p, nsent++;
    if (after[p].bytesRecv != before[p].bytesRecv) prev = p, nrecv++;
  }
  CHECK(nsent == 1 && nrecv == 1 && next != rank && prev != rank,
        "sent to %d ranks and received from %d (the last %d and %d); a ring has one next and one previous rank", nsent,
        nrecv, next, prev);
  if (next < 0 || prev < 0) return;
  uint64_t want = (uint64_t)bytes * 2 * (uint64_t)(nranks - 1) / (uint64_t)nranks;
  uint64_t sent = after[next].bytesSent - before[next].bytesSent;
  uint64_t got = after[prev].bytesRecv - before[prev].bytesRecv;
  CHECK(sent == want, "sent %llu bytes to rank %d, expected 2(k-1)/k x %zu = %llu", (unsigned long long)sent, next,
        bytes, (unsigned long long)want);
  CHECK(got == want, "received %llu bytes from rank %d, expected %llu", (unsigned long long)got, prev,
        (unsigned long long)want);
  if (rank == 0) printf("bytes: %d ranks, %zu-byte buffer: each rank sent %llu = 2(k-1)/k of it\n", nranks, bytes,
                        (unsigned long long)sent);
}

/* One float32 sum all-reduce of count, then the bytes this rank sent to
 * each peer (xcclCommGetPeerCounters) checked against want[peer]; returns
 * what it sent in all. */
static uint64_t check_sent(xcclComm_t comm, size_t count, const uint64_t *want) {
  xcclPeerCounters_t before[64], after[64];
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &before[p]));
  run_one(comm, count, xcclFloat32, xcclSum, 0);
  for (int p = 0; p < nranks; p++) XCHECK(xcclCommGetPeerCounters(comm, p, &after[p]));
  uint64_t total = 0;
  for (int p = 0; p < nranks; p++) {
    uint64_t sent = after[p].bytesSent - before[p].bytesSent;
    total += sent;
    CHECK(sent == want[p], "sent %llu bytes to rank %d, expected %llu", (unsigned long long)sent, p,
          (unsigned long long)want[p]);
  }
  return total;
}

/* Recursive doubling (run with XCCL_ALGO=allreduce:rd): with p2 the largest
 * power of two <= k, rank r >= p2 sends the buffer once (to r - p2); rank
 * r < k - p2 sends it log2(p2) + 1 times (once back to r + p2); the others
 * log2(p2) times, each time to a different partner r ^ 2^s. */
static void mode_rdbytes(xcclComm_t comm) {
  size_t count = 3000, bytes = count * 4; /* one slot */
  int p2 = 1, steps = 0;
  while (p2 * 2 <= nranks) p2 *= 2, steps++;
  uint64_t want[64] = {0};
  for (int p = 0; p < nranks; p++) {
    if (rank >= p2) want[p] = p == rank - p2 ? bytes : 0;
    else if (p == rank + p2) want[p] = bytes;
    else if (p < p2 && p != rank && ((p ^ rank) & ((p ^ rank) - 1)) == 0) want[p] = bytes; /* a partner r ^ 2^s */
  }
  check_sent(comm, count, want);
  if (rank == 0) printf("rdbytes: %d ranks: rank 0 sent the %zu-byte buffer to %d partners\n", nranks, bytes,
                        steps + (nranks > p2));
}

/* The double binary tree (run with XCCL_ALGO=allreduce:tree): each tree
 * carries half the buffer, rank r at u = r + 1 in tree 0 and u = (r + 1) mod
 * k + 1 in tree 1; a rank sends its half once to its parent and once to
 * each child, in each tree, and nothing to anyone else. */
static void mode_treebytes(xcclComm_t comm) {
  size_t count = 6000, half = 3000 * 4; /* two halves of one slot each */
  int parent[65] = {0};
  test_inorder_parents(1, nranks, 0, parent);
  uint64_t want[64] = {0};
  for (int t = 0; t < 2; t++) {
    int me = (rank + t) % nranks + 1; /* my u in tree t */
    for (int q = 0; q < nranks; q++) {
      int u = (q + t) % nranks + 1;
      if (parent[me] == u || parent[u] == me) want[q] += half;
    }
  }
  uint64_t total = check_sent(comm, count, want);
  if (rank == 0) printf("treebytes: %d ranks: rank 0 sent %llu bytes of a %zu-byte buffer\n", nranks,
                        (unsigned long long)total, count * 4);
}

/* Rabenseifner (run with XCCL_ALGO=allreduce:rab), p2 the largest power of
 * two <= k and r = k - p2: rank 2i+1 (i < r) sends its whole buffer to rank
 * 2i and nothing else; rank 2i sends it the whole result back. The p2
 * others, numbered n (2i -> i, q >= 2r -> q - r), send their partner n ^ h
 * (h = p2/2, p2/4, ..., 1) h blocks of B/p2 in the reduce-scatter and h again
 * in the all-gather: 2h B/p2 per partner, 2(p2-1)/p2 B in all. */
static void mode_rabbytes(xcclComm_t comm) {
  int p2 = 1;
  while (p2 * 2 <= nranks) p2 *= 2;
  int r = nranks - p2;
  size_t count = (size_t)p2 * 3 * 65536, bytes = count * 4; /* p2 blocks of 768 KiB: several slots each */
  uint64_t want[64] = {0};
  if (rank < 2 * r && rank % 2) {
    want[rank - 1] = bytes;
  } else {
    int n = rank < 2 * r ? rank / 2 : rank - r;
    if (rank < 2 * r) want[rank + 1] = bytes;
    for (int h = p2 / 2; h >= 1; h /= 2) {
      int m = n ^ h, q = m < r ? 2 * m : m + r;
      want[q] += 2 * (uint64_t)h * (bytes / (size_t)p2);
    }
  }
  uint64_t total = check_sent(comm, count, want);
  if (rank == 0) printf("rabbytes: %d ranks: rank 0 sent %llu bytes of a %zu-byte buffer\n", nranks,
                        (unsigned long long)total, bytes);
}

/* The hierarchical all-reduce (run with XCCL_ALGO=allreduce:hier), hosts
 * numbered by their lowest rank, G = the most ranks on a host, shard s of
 * B/G owned on a host of g ranks by its local rank s % g: a rank sends each
 * shard it does not own to its owner, each shard it owns to every other rank
 * of its host, and 2(H-1)/H of each shard it owns to the owner on the next
 * host (its ring). Counts are 2H slots per shard, so the ring's blocks are
 * whole slots and its bytes exact. With XCCL_HIER_INTER=tree, between hosts
 * each shard s climbs and comes down the in-order tree over the hosts,
 * host h at u = (h - s) mod H + 1 (test_inorder_parents): an owner sends the
 * whole shard to its parent and to each child, nothing to other hosts. */
static void mode_hierbytes(xcclComm_t comm) {
  int host[64] = {0}, local[64] = {0}, size[64] = {0}, nhosts = 0, G = 0;
  const char *env = getenv("TEST_HIER_HOSTS");
  int label[64] = {0};
  for (int r = 0; r < nranks; r++) {
    label[r] = 0;
    if (env && *env) {
      label[r] = atoi(env);
      env = strchr(env, ',');
      env = env ? env + 1 : "";
    }
    host[r] = -1;
    for (int q = 0; q < r && host[r] < 0; q++)
      if (label[q] == label[r]) host[r] = host[q];
    if (host[r] < 0) host[r] = nhosts++;
    local[r] = size[host[r]]++;
    if (size[host[r]] > G) G = size[host[r]];
  }
  int H = nhosts, h = host[rank], g = size[h];
  size_t shard = (size_t)2 * (size_t)H * 16384, count = shard * (size_t)G, sb = shard * 4;
  static int owner[64][64]; /* [host][shard] */
  for (int r = 0; r < nranks; r++)
    for (int s = 0; s < G; s++)
      if (s % size[host[r]] == local[r]) owner[host[r]][s] = r;
  const char *inter = getenv("XCCL_HIER_INTER");
  int tree = inter && strcmp(inter, "tree") == 0, parent[65] = {0};
  test_inorder_parents(1, H, 0, parent);
  uint64_t want[64] = {0}, cross = 0, owned = 0, edges = 0;
  for (int s = 0; s < G; s++) {
    if (owner[h][s] != rank) {
      want[owner[h][s]] += sb;
      continue;
    }
    owned++;
    for (int q = 0; q < nranks; q++)
      if (host[q] == h && q != rank) want[q] += sb;
    if (H > 1 && tree) {
      int me = (h - s % H + H) % H + 1;
      for (int u = 1; u <= H; u++)
        if (parent[me] == u || parent[u] == me) {
          want[owner[(u - 1 + s) % H][s]] += sb;
          cross += sb, edges++;
        }
    } else if (H > 1) {
      uint64_t ring = 2 * (uint64_t)(H - 1) * sb / (uint64_t)H;
      want[owner[(h + 1) % H][s]] += ring;
      cross += ring;
    }
  }
  /* Per peer, so what crosses hosts is checked too: 2(H-1)/H of B/G per
   * owned shard (2(H-1)/H B/g when the hosts are even), or B/G per tree
   * edge of an owned shard, nothing else. */
  check_sent(comm, count, want);
  uint64_t expect = tree ? edges * sb : owned * 2 * (uint64_t)(H - 1) * (count * 4 / (uint64_t)G) / (uint64_t)H;
  CHECK(cross == (H > 1 ? expect : 0), "formula mismatch");
  printf("hierbytes: rank %d on host %d of %d (%d of its ranks, %llu shards of %d, %s): %llu bytes of %zu to other "
         "hosts, 2(H-1)/H B/g = %.0f\n",
         rank, h, H, g, (unsigned long long)owned, G, tree ? "tree" : "ring", (unsigned long long)cross, count * 4,
         H > 1 ? 2.0 * (H - 1) / H * (double)(count * 4) / g : 0.0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "matrix";
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  if (strcmp(mode, "matrix") == 0) mode_matrix(comm);
  else if (strcmp(mode, "large") == 0) run_one(comm, 16u << 20, xcclFloat32, xcclSum, 0);
  else if (strcmp(mode, "repeat") == 0) mode_repeat(comm);
  else if (strcmp(mode, "line") == 0)
    mode_line(comm);
  else if (strcmp(mode, "twocomm") == 0) mode_twocomm(comm);
  else if (strcmp(mode, "bytes") == 0) mode_bytes(comm);
  else if (strcmp(mode, "rdbytes") == 0) mode_rdbytes(comm);
  else if (strcmp(mode, "treebytes") == 0) mode_treebytes(comm);
  else if (strcmp(mode, "rabbytes") == 0) mode_rabbytes(comm);
  else if (strcmp(mode, "hierbytes") == 0) mode_hierbytes(comm);
  else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  test_comm_end(comm);
  char name[64];
  snprintf(name, sizeof(name), "allreduce %s rank %d/%d", mode, rank, nranks);
  return test_finish(name);
}
