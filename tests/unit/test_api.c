/*
 * test_api.c — argument checking of the public API (include/xccl.h), on real
 * one-rank communicators made in this process over loopback.
 *
 * What xccl.h promises and this file checks:
 *  - every refused call returns the documented code and leaves a sentence in
 *    xcclGetLastError() that names the problem;
 *  - output parameters (the new comm, counts, counters, receive buffers) are
 *    written only on success;
 *  - destroyed, aborted, NULL and never-created handles are refused, never
 *    used;
 *  - xcclGetLastError(comm) keeps the last error raised on that comm.
 * xcclCommInitFromEnv reads the configuration, which is read once per
 * process, so each environment scenario runs in a fork()ed child that resets
 * it (config_reset_for_test) after setting its variables. The children run
 * first, before this process has any xccl threads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "xccl.h"

/* A handle value no call may write: a pointer that stays "unchanged". */
#define SENTINEL_COMM ((xcclComm_t)(uintptr_t)0x5e5e5e50)

static int has(const char *text, const char *word) { return text && strstr(text, word) != NULL; }

/* Checks a refused call: its code, and that the thread's last error (cleared
 * just before the call by the caller) is non-empty and mentions word. */
#define EXPECT_ERR(call, code, word)                                                                    \
  do {                                                                                                  \
    err_clear();                                                                                        \
    xcclResult_t r_ = (call);                                                                           \
    const char *m_ = xcclGetLastError(NULL);                                                            \
    CHECK(r_ == (code), "%s returned %d (%s), want %d", #call, (int)r_, xcclGetErrorString(r_), (int)(code)); \
    CHECK(m_ && m_[0] && has(m_, word), "%s: last error '%s' lacks '%s'", #call, m_ ? m_ : "(null)", word); \
  } while (0)

/* ---- Environment scenarios (children) ------------------------------------- */

/* Leaves only the variables a scenario sets: no XCCL_RANK/ROOT/..., and no
 * other launcher's rank or rendezvous variables. */
static void clear_launch_env(void) {
  static const char *vars[] = {"XCCL_RANK", "XCCL_NRANKS", "XCCL_LOCAL_RANK", "XCCL_ROOT", "XCCL_UNIQUE_ID",
                               "XCCL_SECRET", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                               "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                               "PMI_RANK", "PMI_SIZE"};
  for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) unsetenv(vars[k]);
}

/* A loopback port that was free a moment ago. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

/* A one-rank allreduce of 64 int32 must return its input. */
static void check_comm_works(xcclComm_t comm, const char *what) {
  int32_t in[64], out[64];
  for (int k = 0; k < 64; k++) in[k] = k * 1000 - 7, out[k] = -1;
  xcclResult_t r = xcclAllReduce(in, out, 64, xcclInt32, xcclSum, comm, NULL);
  CHECK(r == xcclSuccess, "%s: allreduce -> %s: %s", what, xcclGetErrorString(r), xcclGetLastError(NULL));
  CHECK(memcmp(in, out, sizeof(in)) == 0, "%s: one-rank allreduce changed the data", what);
  int n = -1, rank = -1;
  CHECK(xcclCommCount(comm, &n) == xcclSuccess && n == 1, "%s: count %d", what, n);
  CHECK(xcclCommUserRank(comm, &rank) == xcclSuccess && rank == 0, "%s: rank %d", what, rank);
}

/* XCCL_RANK, XCCL_NRANKS and XCCL_ROOT: rank 0 hosts the root itself. */
static void scenario_env_root(void) {
  int port = free_port();
  CHECK(port > 0, "no free loopback port: %s", strerror(errno));
  char root[64];
  snprintf(root, sizeof(root), "127.0.0.1:%d", port);
  setenv("XCCL_RANK", "0", 1);
  setenv("XCCL_NRANKS", "1", 1);
  setenv("XCCL_ROOT", root, 1);
  setenv("XCCL_SECRET", "test_api secret", 1);
  config_reset_for_test();
  xcclComm_t comm = SENTINEL_COMM;
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  CHECK(r == xcclSuccess, "InitFromEnv with XCCL_ROOT=%s -> %s: %s", root, xcclGetErrorString(r),
        xcclGetLastError(NULL));
  if (r != xcclSuccess) return;
  CHECK(comm != SENTINEL_COMM && comm != NULL, "InitFromEnv succeeded without writing comm");
  check_comm_works(comm, "comm from XCCL_ROOT");
  CHECK(xcclCommDestroy(comm) == xcclSuccess, "destroy: %s", xcclGetLastError(NULL));
}

/* Rank and size but no rendezvous: invalid usage, comm untouched. */
static void scenario_env_no_root(void) {
  setenv("XCCL_RANK", "0", 1);
  setenv("XCCL_NRANKS", "1", 1);
  config_reset_for_test();
  xcclComm_t comm = SENTINEL_COMM;
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidUsage, "no rendezvous address");
  CHECK(comm == SENTINEL_COMM, "failed InitFromEnv wrote comm");
  EXPECT_ERR(xcclCommInitFromEnv(NULL), xcclInvalidArgument, "comm is NULL");
}

/* Inconsistent rank/size variables. */
static void scenario_env_bad_rank(void) {
  xcclComm_t comm = SENTINEL_COMM;
  setenv("XCCL_RANK", "1", 1);
  setenv("XCCL_NRANKS", "1", 1);
  setenv("XCCL_ROOT", "127.0.0.1:1", 1);
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidUsage, "rank 1 from XCCL_RANK/XCCL_NRANKS is not below");
  unsetenv("XCCL_NRANKS");
  setenv("XCCL_RANK", "0", 1);
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidUsage, "set both XCCL_RANK and XCCL_NRANKS");
  /* Nothing at all: the message lists the ways to start. */
  clear_launch_env();
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidUsage, "no rank in the environment");
  CHECK(comm == SENTINEL_COMM, "failed InitFromEnv wrote comm");
}

static void to_hex(const xcclUniqueId *id, char *out) {
  static const char digits[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)id->internal;
  for (int k = 0; k < XCCL_UNIQUE_ID_BYTES; k++) {
    out[2 * k] = digits[p[k] >> 4];
    out[2 * k + 1] = digits[p[k] & 15];
  }
  out[2 * XCCL_UNIQUE_ID_BYTES] = '\0';
}

/* XCCL_UNIQUE_ID in hex, as xccl-run sets it; and broken variants of it. */
static void scenario_env_unique_id(void) {
  xcclComm_t comm = SENTINEL_COMM;
  char hex[2 * XCCL_UNIQUE_ID_BYTES + 1];
  setenv("XCCL_RANK", "0", 1);
  setenv("XCCL_NRANKS", "1", 1);

  /* Broken ones first (each needs a re-read of the configuration). */
  xcclUniqueId id;
  memset(&id, 0, sizeof(id));
  XCHECK(xcclGetUniqueId(&id));
  to_hex(&id, hex);
  hex[100] = hex[100] == '0' ? '1' : '0';
  setenv("XCCL_UNIQUE_ID", hex, 1);
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidArgument, "checksum");
  hex[100] = 'g';
  setenv("XCCL_UNIQUE_ID", hex, 1);
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidArgument, "non-hex character at position 100");
  to_hex(&id, hex);
  hex[2 * XCCL_UNIQUE_ID_BYTES - 1] = '\0';
  setenv("XCCL_UNIQUE_ID", hex, 1);
  config_reset_for_test();
  EXPECT_ERR(xcclCommInitFromEnv(&comm), xcclInvalidArgument, "255 characters");
  CHECK(comm == SENTINEL_COMM, "failed InitFromEnv wrote comm");

  /* The intact id (upper-case hex is accepted too) makes a working comm. */
  to_hex(&id, hex);
  for (char *c = hex; *c; c++)
    if (*c >= 'a' && *c <= 'f') *c = (char)(*c - 'a' + 'A');
  setenv("XCCL_UNIQUE_ID", hex, 1);
  setenv("XCCL_ROOT", "127.0.0.1:1", 1); /* the id takes precedence */
  config_reset_for_test();
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  CHECK(r == xcclSuccess, "InitFromEnv with XCCL_UNIQUE_ID -> %s: %s", xcclGetErrorString(r),
        xcclGetLastError(NULL));
  if (r != xcclSuccess) return;
  check_comm_works(comm, "comm from XCCL_UNIQUE_ID");
  CHECK(xcclCommDestroy(comm) == xcclSuccess, "destroy: %s", xcclGetLastError(NULL));
}

/* ---- Version and error strings --------------------------------------------- */

static void test_version_errors(void) {
  int v = -1;
  CHECK(xcclGetVersion(&v) == xcclSuccess && v == XCCL_VERSION_CODE, "version %d, want %d", v, XCCL_VERSION_CODE);
  CHECK(XCCL_VERSION_CODE == XCCL_MAJOR * 10000 + XCCL_MINOR * 100 + XCCL_PATCH, "version encoding");
  EXPECT_ERR(xcclGetVersion(NULL), xcclInvalidArgument, "version is NULL");

  /* One distinct, non-empty string per code; anything else still a string. */
  const char *s[xcclNumResults + 1];
  for (int c = 0; c <= xcclNumResults; c++) {
    s[c] = xcclGetErrorString((xcclResult_t)c);
    CHECK(s[c] && s[c][0], "no string for code %d", c);
  }
  for (int a = 0; a < xcclNumResults; a++)
    for (int b = a + 1; b <= xcclNumResults; b++)
      CHECK(!s[a] || !s[b] || strcmp(s[a], s[b]) != 0, "codes %d and %d share '%s'", a, b, s[a]);
  const int odd[] = {-1, 1000, INT32_MAX};
  for (size_t k = 0; k < sizeof(odd) / sizeof(odd[0]); k++) {
    const char *o = xcclGetErrorString((xcclResult_t)odd[k]);
    CHECK(o && o[0], "no string for out-of-range code %d", odd[k]);
    for (int c = 0; o && c < xcclNumResults; c++)
      CHECK(strcmp(o, s[c]) != 0, "out-of-range code %d reads as code %d", odd[k], c);
  }
  CHECK(has(xcclGetErrorString(xcclTimeout), "XCCL_TIMEOUT"), "timeout string names the variable");
}

/* ---- xcclCommInitRank arguments ---------------------------------------------- */

static void test_init_rank_args(const xcclUniqueId *id) {
  xcclComm_t comm = SENTINEL_COMM;
  EXPECT_ERR(xcclGetUniqueId(NULL), xcclInvalidArgument, "uniqueId is NULL");
  EXPECT_ERR(xcclCommInitRank(NULL, 1, *id, 0), xcclInvalidArgument, "comm is NULL");
  EXPECT_ERR(xcclCommInitRank(&comm, 0, *id, 0), xcclInvalidArgument, "nranks=0");
  EXPECT_ERR(xcclCommInitRank(&comm, -1, *id, 0), xcclInvalidArgument, "nranks=-1");
  EXPECT_ERR(xcclCommInitRank(&comm, (1 << 20) + 1, *id, 0), xcclInvalidArgument, "nranks=1048577");
  EXPECT_ERR(xcclCommInitRank(&comm, 1, *id, -1), xcclInvalidArgument, "rank -1 is not in 0..0");
  EXPECT_ERR(xcclCommInitRank(&comm, 1, *id, 1), xcclInvalidArgument, "rank 1 is not in 0..0");
  EXPECT_ERR(xcclCommInitRank(&comm, 4, *id, 4), xcclInvalidArgument, "rank 4 is not in 0..3");
  /* Any flipped byte of the id: here one in the middle and one in the
   * checksum itself. */
  xcclUniqueId bad = *id;
  bad.internal[50] ^= 0x04;
  EXPECT_ERR(xcclCommInitRank(&comm, 1, bad, 0), xcclInvalidArgument, "corrupted (checksum mismatch)");
  bad = *id;
  bad.internal[XCCL_UNIQUE_ID_BYTES - 1] ^= 0x40;
  EXPECT_ERR(xcclCommInitRank(&comm, 1, bad, 0), xcclInvalidArgument, "checksum");
  memset(&bad, 0, sizeof(bad));
  EXPECT_ERR(xcclCommInitRank(&comm, 1, bad, 0), xcclInvalidArgument, "not made by xcclGetUniqueId");
  CHECK(comm == SENTINEL_COMM, "a refused xcclCommInitRank wrote *comm (%p)", (void *)comm);
}

/* ---- Queries ------------------------------------------------------------------ */

static void test_queries(xcclComm_t comm) {
  int n = -5, r = -5;
  CHECK(xcclCommCount(comm, &n) == xcclSuccess && n == 1, "count %d", n);
  CHECK(xcclCommUserRank(comm, &r) == xcclSuccess && r == 0, "rank %d", r);
  EXPECT_ERR(xcclCommCount(comm, NULL), xcclInvalidArgument, "count is NULL");
  EXPECT_ERR(xcclCommUserRank(comm, NULL), xcclInvalidArgument, "rank is NULL");

  xcclPeerCounters_t pc = {12345, 67890};
  CHECK(xcclCommGetPeerCounters(comm, 0, &pc) == xcclSuccess, "counters of peer 0: %s", xcclGetLastError(NULL));
  CHECK(pc.bytesSent == 0 && pc.bytesRecv == 0, "a one-rank comm moved bytes: %llu/%llu",
        (unsigned long long)pc.bytesSent, (unsigned long long)pc.bytesRecv);
  pc = (xcclPeerCounters_t){12345, 67890};
  EXPECT_ERR(xcclCommGetPeerCounters(comm, 1, &pc), xcclInvalidArgument, "peer 1 is not in 0..0");
  EXPECT_ERR(xcclCommGetPeerCounters(comm, -1, &pc), xcclInvalidArgument, "peer -1 is not in 0..0");
  CHECK(pc.bytesSent == 12345 && pc.bytesRecv == 67890, "refused GetPeerCounters wrote its output");
  EXPECT_ERR(xcclCommGetPeerCounters(comm, 0, NULL), xcclInvalidArgument, "counters is NULL");

  xcclResult_t async = xcclInternalError;
  CHECK(xcclCommGetAsyncError(comm, &async) == xcclSuccess && async == xcclSuccess, "async error %d", (int)async);
  EXPECT_ERR(xcclCommGetAsyncError(comm, NULL), xcclInvalidArgument, "asyncError is NULL");
}

/* ---- xcclAllReduce ----------------------------------------------------------- */

/* With one rank every type and op is the identity, bit for bit, both out of
 * place and in place (random bytes include NaNs and denormals). */
static void test_allreduce_ok(xcclComm_t comm) {
  enum { N = 1000 };
  float in[N], out[N], orig[N];
  for (int k = 0; k < N; k++) in[k] = (float)k * 0.5f - 3.25f, out[k] = -999.0f;
  memcpy(orig, in, sizeof(in));
  CHECK(xcclAllReduce(in, out, N, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess, "float sum: %s",
        xcclGetLastError(comm));
  CHECK(memcmp(out, orig, sizeof(out)) == 0, "out-of-place sum of one rank is not the input");
  CHECK(memcmp(in, orig, sizeof(in)) == 0, "sendbuff was modified");
  CHECK(xcclAllReduce(in, in, N, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess, "in place: %s",
        xcclGetLastError(comm));
  CHECK(memcmp(in, orig, sizeof(in)) == 0, "in-place sum of one rank is not the input");

  static uint64_t raw[2][257], copy[257]; /* 8-byte aligned for every type */
  unsigned seed = 12345;
  for (int t = 0; t < xcclNumTypes; t++) {
    for (int op = 0; op < xcclNumOps; op++) {
      for (size_t k = 0; k < 257; k++) {
        seed = seed * 1103515245u + 12345u;
        raw[0][k] = (uint64_t)seed << 32 | (seed >> 7);
        raw[1][k] = ~raw[0][k];
      }
      memcpy(copy, raw[0], sizeof(copy));
      size_t cnt = sizeof(raw[0]) / xcclTypeSize((xcclDataType_t)t);
      xcclResult_t r = xcclAllReduce(raw[0], raw[1], cnt, (xcclDataType_t)t, (xcclRedOp_t)op, comm, NULL);
      CHECK(r == xcclSuccess && memcmp(raw[1], copy, sizeof(copy)) == 0, "type %d op %d out of place: %s", t, op,
            xcclGetLastError(comm));
      r = xcclAllReduce(raw[0], raw[0], cnt, (xcclDataType_t)t, (xcclRedOp_t)op, comm, NULL);
      CHECK(r == xcclSuccess && memcmp(raw[0], copy, sizeof(copy)) == 0, "type %d op %d in place: %s", t, op,
            xcclGetLastError(comm));
    }
  }

  /* count 0 is a no-op, whatever the pointers. */
  CHECK(xcclAllReduce(NULL, NULL, 0, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess, "count 0, NULL: %s",
        xcclGetLastError(comm));
  memcpy(out, orig, sizeof(out));
  CHECK(xcclAllReduce(NULL, out, 0, xcclFloat64, xcclMax, comm, NULL) == xcclSuccess &&
            memcmp(out, orig, sizeof(out)) == 0,
        "count 0 touched recvbuff");
  /* Adjacent but not overlapping buffers are fine. */
  float adj[16];
  for (int k = 0; k < 16; k++) adj[k] = (float)k;
  CHECK(xcclAllReduce(adj, adj + 8, 8, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess && adj[8] == 0.0f &&
            adj[15] == 7.0f,
        "adjacent buffers: %s", xcclGetLastError(comm));
}

/* A refused allreduce: code, message in the thread and in the comm, and the
 * bytes at `watch` unchanged. */
static void expect_ar_bad(const char *what, const void *sb, void *rb, size_t count, int type, int op,
                          xcclComm_t comm, void *stream, const char *word, const void *watch, size_t wlen) {
  unsigned char before[512];
  if (wlen > sizeof(before)) wlen = sizeof(before);
  if (watch) memcpy(before, watch, wlen);
  err_clear();
  xcclResult_t r = xcclAllReduce(sb, rb, count, (xcclDataType_t)type, (xcclRedOp_t)op, comm, stream);
  CHECK(r == xcclInvalidArgument, "%s: returned %d (%s)", what, (int)r, xcclGetErrorString(r));
  CHECK(has(xcclGetLastError(NULL), word), "%s: last error '%s' lacks '%s'", what, xcclGetLastError(NULL), word);
  CHECK(has(xcclGetLastError(comm), word), "%s: comm's last error '%s' lacks '%s'", what, xcclGetLastError(comm),
        word);
  if (watch) CHECK(memcmp(before, watch, wlen) == 0, "%s: buffer changed by a refused call", what);
}

static void test_allreduce_bad(xcclComm_t comm) {
  static _Alignas(16) float send[64], recv[64]; /* so that +1 float is not 8-aligned */
  for (int k = 0; k < 64; k++) send[k] = (float)k + 1.0f;
  memset(recv, 0xA5, sizeof(recv));
  expect_ar_bad("NULL sendbuff", NULL, recv, 10, xcclFloat32, xcclSum, comm, NULL, "sendbuff is NULL", recv,
                sizeof(recv));
  expect_ar_bad("NULL recvbuff", send, NULL, 10, xcclFloat32, xcclSum, comm, NULL, "recvbuff is NULL", send,
                sizeof(send));
  expect_ar_bad("datatype NumTypes", send, recv, 10, xcclNumTypes, xcclSum, comm, NULL, "unknown datatype 12", recv,
                sizeof(recv));
  expect_ar_bad("datatype -1", send, recv, 10, -1, xcclSum, comm, NULL, "unknown datatype -1", recv, sizeof(recv));
  expect_ar_bad("op NumOps", send, recv, 10, xcclFloat32, xcclNumOps, comm, NULL, "unknown reduction op 5", recv,
                sizeof(recv));
  expect_ar_bad("op -1", send, recv, 10, xcclFloat32, -1, comm, NULL, "unknown reduction op -1", recv, sizeof(recv));
  expect_ar_bad("count SIZE_MAX/2", send, recv, SIZE_MAX / 2, xcclFloat32, xcclSum, comm, NULL, "overflows", recv,
                sizeof(recv));
  expect_ar_bad("count just past the limit", send, recv, (SIZE_MAX / 2) / 4 + 1, xcclFloat32, xcclSum, comm, NULL,
                "overflows", recv, sizeof(recv));
  expect_ar_bad("count SIZE_MAX int8", send, recv, SIZE_MAX, xcclInt8, xcclSum, comm, NULL, "overflows", recv,
                sizeof(recv));
  expect_ar_bad("misaligned sendbuff", (const char *)send + 1, recv, 8, xcclFloat32, xcclSum, comm, NULL,
                "sendbuff", recv, sizeof(recv));
  expect_ar_bad("misaligned recvbuff", send, (char *)recv + 2, 8, xcclFloat32, xcclSum, comm, NULL, "not aligned",
                recv, sizeof(recv));
  expect_ar_bad("misaligned float64", send + 1, recv, 4, xcclFloat64, xcclSum, comm, NULL, "8-byte", recv,
                sizeof(recv));
  /* Partial overlap either way round; the shared buffer must not change. */
  expect_ar_bad("recv overlaps send", recv, recv + 4, 8, xcclFloat32, xcclSum, comm, NULL, "overlap", recv,
                sizeof(recv));
  expect_ar_bad("send overlaps recv", recv + 7, recv, 8, xcclFloat32, xcclSum, comm, NULL, "overlap", recv,
                sizeof(recv));
  expect_ar_bad("stream given", send, recv, 8, xcclFloat32, xcclSum, comm, (void *)0x1000, "stream 0x1000 given", recv,
                sizeof(recv));

  /* Argument errors do not poison the communicator. */
  xcclResult_t async = xcclInternalError;
  CHECK(xcclCommGetAsyncError(comm, &async) == xcclSuccess && async == xcclSuccess,
        "argument errors left an async error %d", (int)async);
  CHECK(xcclAllReduce(send, recv, 64, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess &&
            memcmp(send, recv, sizeof(send)) == 0,
        "allreduce after refused calls: %s", xcclGetLastError(comm));
}

/* xcclGetLastError(comm) is per communicator; xcclGetLastError(NULL) per
 * thread. */
static void test_last_error(xcclComm_t comm, xcclComm_t comm2) {
  CHECK(xcclGetLastError(comm2) && xcclGetLastError(comm2)[0] == '\0', "fresh comm has error '%s'",
        xcclGetLastError(comm2));
  float buf[4] = {1, 2, 3, 4};
  CHECK(xcclAllReduce(buf, buf, 4, xcclFloat32, (xcclRedOp_t)77, comm, NULL) == xcclInvalidArgument, "op 77");
  CHECK(xcclAllReduce(buf, buf, 4, (xcclDataType_t)99, xcclSum, comm2, NULL) == xcclInvalidArgument, "type 99");
  CHECK(xcclGetVersion(NULL) == xcclInvalidArgument, "GetVersion(NULL)");
  CHECK(has(xcclGetLastError(comm), "unknown reduction op 77"), "comm's error '%s'", xcclGetLastError(comm));
  CHECK(has(xcclGetLastError(comm2), "unknown datatype 99"), "comm2's error '%s'", xcclGetLastError(comm2));
  CHECK(has(xcclGetLastError(NULL), "xcclGetVersion"), "thread's error '%s'", xcclGetLastError(NULL));
  /* A later success does not erase the comm's last error. */
  CHECK(xcclAllReduce(buf, buf, 4, xcclFloat32, xcclSum, comm, NULL) == xcclSuccess, "allreduce");
  CHECK(has(xcclGetLastError(comm), "unknown reduction op 77"), "success cleared comm's error: '%s'",
        xcclGetLastError(comm));
}

/* ---- xcclCommShrink arguments (one rank; test_shrink runs several) ------------- */

static void test_shrink_args(xcclComm_t comm) {
  xcclComm_t nc = SENTINEL_COMM;
  int ex[2] = {0, 0};
  EXPECT_ERR(xcclCommShrink(comm, ex, 0, NULL), xcclInvalidArgument, "newcomm is NULL");
  EXPECT_ERR(xcclCommShrink(comm, ex, -1, &nc), xcclInvalidArgument, "excludeCount=-1 is not in 0..0");
  EXPECT_ERR(xcclCommShrink(comm, ex, 1, &nc), xcclInvalidArgument, "excludeCount=1 is not in 0..0");
  CHECK(has(xcclGetLastError(comm), "excludeCount=1"), "comm's last error '%s'", xcclGetLastError(comm));
  CHECK(xcclGroupStart() == xcclSuccess, "group start");
  EXPECT_ERR(xcclCommShrink(comm, NULL, 0, &nc), xcclInvalidUsage, "xcclGroupStart");
  CHECK(xcclGroupEnd() == xcclSuccess, "group end: %s", xcclGetLastError(NULL));
  CHECK(nc == SENTINEL_COMM, "a refused xcclCommShrink wrote *newcomm (%p)", (void *)nc);
  check_comm_works(comm, "comm after refused shrinks");
  /* Nothing excluded (the list may then be NULL): a second communicator of
   * the same rank, independent of the first. */
  xcclResult_t r = xcclCommShrink(comm, NULL, 0, &nc);
  CHECK(r == xcclSuccess, "shrink excluding nobody -> %s: %s", xcclGetErrorString(r), xcclGetLastError(NULL));
  if (r != xcclSuccess) return;
  CHECK(nc != SENTINEL_COMM && nc != NULL && nc != comm, "shrink gave handle %p", (void *)nc);
  check_comm_works(nc, "comm made by xcclCommShrink");
  CHECK(xcclCommDestroy(nc) == xcclSuccess, "destroy the shrunk comm: %s", xcclGetLastError(NULL));
  check_comm_works(comm, "comm after its shrunk copy was destroyed");
}

/* ---- Configs and xcclCommSplit arguments (one rank; test_lifecycle runs several) ---- */

static void test_config_args(const xcclUniqueId *id) {
  xcclComm_t comm = SENTINEL_COMM;
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  cfg.magic = 0xdeadbeef;
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 0, &cfg), xcclInvalidArgument, "config->magic");
  cfg = (xcclConfig_t)XCCL_CONFIG_INITIALIZER;
  cfg.size = sizeof(cfg) - 8;
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 0, &cfg), xcclInvalidArgument, "config->size");
  cfg = (xcclConfig_t)XCCL_CONFIG_INITIALIZER;
  cfg.version = 1;
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 0, &cfg), xcclInvalidArgument, "config->version");
  cfg = (xcclConfig_t)XCCL_CONFIG_INITIALIZER;
  cfg.blocking = 7;
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 0, &cfg), xcclInvalidArgument, "config->blocking");
  cfg = (xcclConfig_t)XCCL_CONFIG_INITIALIZER;
  cfg.timeoutSeconds = 1e12;
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 0, &cfg), xcclInvalidArgument, "config->timeoutSeconds");
  EXPECT_ERR(xcclCommInitRankConfig(&comm, 1, *id, 3, NULL), xcclInvalidArgument, "xcclCommInitRankConfig: rank 3");
  CHECK(comm == SENTINEL_COMM, "a refused xcclCommInitRankConfig wrote *comm (%p)", (void *)comm);
  int devs[2] = {0, 0};
  xcclComm_t all[2] = {SENTINEL_COMM, SENTINEL_COMM};
  EXPECT_ERR(xcclCommInitAll(all, 2, devs), xcclInvalidArgument, "both device 0");
  devs[1] = -3;
  EXPECT_ERR(xcclCommInitAll(all, 2, devs), xcclInvalidArgument, "devlist[1] = -3");
  EXPECT_ERR(xcclCommInitAll(all, 0, NULL), xcclInvalidArgument, "ndev=0");
  EXPECT_ERR(xcclCommInitAll(NULL, 2, NULL), xcclInvalidArgument, "comms is NULL");
  CHECK(all[0] == SENTINEL_COMM && all[1] == SENTINEL_COMM, "a refused xcclCommInitAll wrote comms");
}

static void test_split_args(xcclComm_t comm) {
  xcclComm_t nc = SENTINEL_COMM;
  xcclConfig_t cfg = XCCL_CONFIG_INITIALIZER;
  EXPECT_ERR(xcclCommSplit(comm, -2, 0, &nc, NULL), xcclInvalidArgument, "color -2");
  EXPECT_ERR(xcclCommSplit(comm, 0, 0, NULL, NULL), xcclInvalidArgument, "newcomm is NULL");
  cfg.magic = 1;
  EXPECT_ERR(xcclCommSplit(comm, 0, 0, &nc, &cfg), xcclInvalidArgument, "config->magic");
  CHECK(xcclGroupStart() == xcclSuccess, "group start");
  EXPECT_ERR(xcclCommSplit(comm, 0, 0, &nc, NULL), xcclInvalidUsage, "xcclGroupStart");
  CHECK(xcclGroupEnd() == xcclSuccess, "group end: %s", xcclGetLastError(NULL));
  CHECK(nc == SENTINEL_COMM, "a refused xcclCommSplit wrote *newcomm (%p)", (void *)nc);
  EXPECT_ERR(xcclCommRevoke(comm, 1), xcclInvalidArgument, "flags is 1");
  int dev = 5;
  CHECK(xcclCommCuDevice(comm, &dev) == xcclSuccess && dev >= -1, "xcclCommCuDevice: %d", dev);
  EXPECT_ERR(xcclCommCuDevice(comm, NULL), xcclInvalidArgument, "device is NULL");
  XCHECK(xcclCommSplit(comm, XCCL_SPLIT_NOCOLOR, 0, &nc, NULL));
  CHECK(nc == NULL, "NOCOLOR gave %p", (void *)nc);
  XCHECK(xcclCommSplit(comm, 3, 0, &nc, NULL));
  CHECK(nc != NULL && nc != comm, "split of one rank gave %p", (void *)nc);
  if (nc) {
    check_comm_works(nc, "comm made by xcclCommSplit");
    CHECK(xcclCommDestroy(nc) == xcclSuccess, "destroy the split comm: %s", xcclGetLastError(NULL));
  }
  check_comm_works(comm, "comm after its split was destroyed");
}

/* ---- Dead, NULL and unknown handles ------------------------------------------ */

/* Every handle-taking call on `comm` is refused with a message containing
 * word, and writes no output. */
static void expect_handle_refused(xcclComm_t comm, const char *what, const char *word) {
  float s[8] = {1, 2, 3, 4, 5, 6, 7, 8}, r[8];
  memset(r, 0x3C, sizeof(r));
  unsigned char rcopy[sizeof(r)];
  memcpy(rcopy, r, sizeof(r));
  int n = -7;
  xcclResult_t async = xcclInternalError;
  xcclPeerCounters_t pc = {11, 22};
  EXPECT_ERR(xcclAllReduce(s, r, 8, xcclFloat32, xcclSum, comm, NULL), xcclInvalidArgument, word);
  CHECK(memcmp(r, rcopy, sizeof(r)) == 0, "%s: allreduce wrote recvbuff", what);
  EXPECT_ERR(xcclCommCount(comm, &n), xcclInvalidArgument, word);
  EXPECT_ERR(xcclCommUserRank(comm, &n), xcclInvalidArgument, word);
  CHECK(n == -7, "%s: count/rank written (%d)", what, n);
  EXPECT_ERR(xcclCommGetAsyncError(comm, &async), xcclInvalidArgument, word);
  CHECK(async == xcclInternalError, "%s: async error written", what);
  EXPECT_ERR(xcclCommGetPeerCounters(comm, 0, &pc), xcclInvalidArgument, word);
  CHECK(pc.bytesSent == 11 && pc.bytesRecv == 22, "%s: counters written", what);
  xcclComm_t nc = SENTINEL_COMM;
  EXPECT_ERR(xcclCommShrink(comm, NULL, 0, &nc), xcclInvalidArgument, word);
  CHECK(nc == SENTINEL_COMM, "%s: shrink wrote newcomm", what);
  EXPECT_ERR(xcclCommDestroy(comm), xcclInvalidArgument, word);
  EXPECT_ERR(xcclCommAbort(comm), xcclInvalidArgument, word);
}

static void test_dead_handles(xcclComm_t comm, xcclComm_t comm2) {
  CHECK(xcclCommDestroy(comm) == xcclSuccess, "destroy: %s", xcclGetLastError(NULL));
  expect_handle_refused(comm, "destroyed comm", "was destroyed; it cannot be used again");
  /* The other communicator is unaffected. */
  check_comm_works(comm2, "comm2 after destroying comm");
  CHECK(xcclCommAbort(comm2) == xcclSuccess, "abort: %s", xcclGetLastError(NULL));
  expect_handle_refused(comm2, "aborted comm", "was aborted; it cannot be used again");
  /* ...and the destroyed one is still remembered as destroyed. */
  EXPECT_ERR(xcclCommCount(comm, &(int){0}), xcclInvalidArgument, "destroyed");
  expect_handle_refused(NULL, "NULL comm", "comm is NULL");
  /* A pointer that never was a communicator is refused without being read. */
  static char not_a_comm[64];
  expect_handle_refused((xcclComm_t)(void *)not_a_comm, "never-created comm", "is not a live communicator");
  /* Asking a dead handle for the last error returns this thread's error
   * and does not replace it. */
  CHECK(xcclGetVersion(NULL) == xcclInvalidArgument, "xcclGetVersion(NULL) accepted");
  CHECK(strstr(xcclGetLastError(comm), "xcclGetVersion") != NULL, "last error via a dead handle: %s",
        xcclGetLastError(comm));
  CHECK(strstr(xcclGetLastError(NULL), "xcclGetVersion") != NULL, "thread's last error was replaced: %s",
        xcclGetLastError(NULL));
  /* A new communicator never takes a dead one's address, so the stale
   * handle stays refused. */
  xcclUniqueId id3;
  xcclComm_t comm3 = SENTINEL_COMM;
  XCHECK(xcclGetUniqueId(&id3));
  XCHECK(xcclCommInitRank(&comm3, 1, id3, 0));
  CHECK(comm3 != comm && comm3 != comm2, "a new communicator reuses a dead handle's address %p", (void *)comm3);
  EXPECT_ERR(xcclCommCount(comm, &(int){0}), xcclInvalidArgument, "destroyed");
  CHECK(xcclCommDestroy(comm3) == xcclSuccess, "destroy comm3: %s", xcclGetLastError(NULL));
}

int main(void) {
  setenv("XCCL_SOCKET_IFNAME", "lo", 1);
  setenv("XCCL_TIMEOUT", "30", 0); /* bound any hang well under the test timeout */
  setenv("XCCL_DEBUG", "NONE", 0); /* expected errors would each log a WARN */

  test_run_in_child("XCCL_ROOT", clear_launch_env, scenario_env_root);
  test_run_in_child("no rendezvous", clear_launch_env, scenario_env_no_root);
  test_run_in_child("bad rank", clear_launch_env, scenario_env_bad_rank);
  test_run_in_child("XCCL_UNIQUE_ID", clear_launch_env, scenario_env_unique_id);

  test_version_errors();
  xcclUniqueId id, id2;
  XCHECK(xcclGetUniqueId(&id));
  test_init_rank_args(&id);
  test_config_args(&id);
  xcclComm_t comm = SENTINEL_COMM, comm2 = SENTINEL_COMM;
  XCHECK(xcclCommInitRank(&comm, 1, id, 0));
  /* Both exist before either is freed, so comm2 cannot reuse comm's address. */
  XCHECK(xcclGetUniqueId(&id2));
  XCHECK(xcclCommInitRank(&comm2, 1, id2, 0));
  CHECK(comm != SENTINEL_COMM && comm2 != SENTINEL_COMM && comm != comm2, "handles %p %p", (void *)comm,
        (void *)comm2);

  test_queries(comm);
  test_allreduce_ok(comm);
  test_allreduce_bad(comm);
  test_last_error(comm, comm2);
  test_shrink_args(comm);
  test_split_args(comm);
  test_dead_handles(comm, comm2);
  return test_finish("test_api");
}
