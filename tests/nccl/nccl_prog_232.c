/*
 * nccl_prog_232.c — the modes of nccl_prog for what NCCL 2.29 .. 2.32.3
 * added to nccl.h. Not built alone: nccl_prog.c includes it when built as
 * nccl_prog_232 (NCCL_PROG_232, against NVIDIA's 2.32.3 header), so these
 * modes share its launcher and checks.
 */
#include <dirent.h>
#include <stdint.h>

/* ---- param: ncclParam* read xccl's configuration table ---- */

static void mode_param(int n, int rank, ncclUniqueId unused) {
  (void)n, (void)rank, (void)unused;
  /* Before the library's first read of the environment (no call yet). */
  setenv("XCCL_NCHANNELS", "3", 1);
  setenv("NCCL_MAX_NCHANNELS", "5", 1);
  setenv("XCCL_DEBUG_SUBSYS", "INIT,COLL", 1);
  setenv("XCCL_TIMEOUT", "60", 1);
  unsetenv("XCCL_CHUNK_SIZE");
  unsetenv("NCCL_BUFFSIZE");
  int v = 0;
  NCHECK(ncclGetVersion(&v));
  EXPECT(v == NCCL_VERSION_CODE && v == 23203, "ncclGetVersion %d, the header says %d", v, NCCL_VERSION_CODE);

  ncclParamHandle_t h = NULL, h2 = NULL;
  int32_t i32 = 0;
  uint8_t u8 = 0;
  int64_t i64 = 0;
  NCHECK(ncclParamBind(&h, "XCCL_NCHANNELS"));
  NCHECK(ncclParamGetI32(h, &i32));
  NCHECK(ncclParamGetU8(h, &u8));
  NCHECK(ncclParamGetI64(h, &i64));
  EXPECT(i32 == 3 && u8 == 3 && i64 == 3, "XCCL_NCHANNELS read as %d / %u / %lld", i32, u8, (long long)i64);
  NCHECK(ncclParamBind(&h2, "NCHANNELS"));
  EXPECT(h2 == h, "NCHANNELS and XCCL_NCHANNELS bound different handles");
  const char *s = NULL;
  NCHECK(ncclParamGetStr(h, &s));
  EXPECT(s && strcmp(s, "3") == 0, "XCCL_NCHANNELS as text: %s", s ? s : "(null)");

  /* An NCCL name reads the xccl setting it is an alias of. */
  NCHECK(ncclParamBind(&h, "NCCL_MAX_NCHANNELS"));
  NCHECK(ncclParamGetI32(h, &i32));
  EXPECT(i32 == 5, "NCCL_MAX_NCHANNELS read as %d", i32);
  int len = -1;
  NCHECK(ncclParamGetParameter("NCCL_MAX_NCHANNELS", &s, &len));
  EXPECT(s && strcmp(s, "5") == 0 && len == 1, "NCCL_MAX_NCHANNELS by key: %s (%d)", s ? s : "(null)", len);

  /* A size: its default, too large for 8 bits, 8 raw bytes. */
  NCHECK(ncclParamBind(&h, "XCCL_CHUNK_SIZE"));
  uint32_t u32 = 0;
  NCHECK(ncclParamGetU32(h, &u32));
  EXPECT(u32 == 524288, "XCCL_CHUNK_SIZE %u", u32);
  int8_t i8 = 7;
  EXPECT(ncclParamGetI8(h, &i8) == ncclInvalidArgument && i8 == 7, "524288 fit in an int8_t (%d)", i8);
  EXPECT(strstr(ncclGetLastError(NULL), "XCCL_CHUNK_SIZE"), "message: %s", ncclGetLastError(NULL));
  unsigned char raw[16];
  NCHECK(ncclParamGet(h, raw, (int)sizeof(raw), &len));
  memcpy(&i64, raw, sizeof(i64));
  EXPECT(len == 8 && i64 == 524288, "raw XCCL_CHUNK_SIZE: %d bytes, %lld", len, (long long)i64);
  EXPECT(ncclParamGet(h, raw, 4, &len) == ncclInvalidArgument, "8 bytes went into 4");

  /* A string: as text and raw, never as a number. */
  NCHECK(ncclParamBind(&h, "XCCL_DEBUG_SUBSYS"));
  NCHECK(ncclParamGetStr(h, &s));
  EXPECT(s && strcmp(s, "INIT,COLL") == 0, "XCCL_DEBUG_SUBSYS %s", s ? s : "(null)");
  NCHECK(ncclParamGet(h, raw, (int)sizeof(raw), &len));
  EXPECT(len == 10 && memcmp(raw, "INIT,COLL", 10) == 0, "raw XCCL_DEBUG_SUBSYS: %d bytes", len);
  EXPECT(ncclParamGetI32(h, &i32) == ncclInvalidUsage, "a string read as an int32");

  /* A fractional setting with a whole value reads as an integer. */
  NCHECK(ncclParamBind(&h, "XCCL_TIMEOUT"));
  uint16_t u16 = 0;
  NCHECK(ncclParamGetU16(h, &u16));
  EXPECT(u16 == 60, "XCCL_TIMEOUT %u", u16);

  /* Refusals, and what they say. */
  h = NULL;
  EXPECT(ncclParamBind(&h, "NCCL_NO_SUCH_SETTING") == ncclInvalidArgument && h == NULL, "an unknown NCCL key bound");
  EXPECT(ncclParamBind(&h, "XCCL_NCHANNEL") == ncclInvalidArgument, "a misspelt key bound");
  EXPECT(strstr(ncclGetLastError(NULL), "XCCL_NCHANNELS"), "no suggestion: %s", ncclGetLastError(NULL));
  EXPECT(ncclParamBind(&h, NULL) == ncclInvalidArgument, "a NULL key bound");
  EXPECT(ncclParamGetI32((ncclParamHandle_t)(void *)&i32, &i32) == ncclInvalidArgument, "a made-up handle read");
  NCHECK(ncclParamBind(&h, "XCCL_SECRET"));
  EXPECT(ncclParamGetStr(h, &s) == ncclInvalidUsage, "the secret was read back");

  const char **keys = NULL;
  int nkeys = 0, has_x = 0, has_n = 0;
  NCHECK(ncclParamGetAllParameterKeys(&keys, &nkeys));
  for (int k = 0; k < nkeys; k++) {
    has_x |= strcmp(keys[k], "XCCL_NCHANNELS") == 0;
    has_n |= strcmp(keys[k], "NCCL_BUFFSIZE") == 0;
  }
  EXPECT(nkeys > 50 && has_x && has_n, "%d keys, XCCL_NCHANNELS %d, NCCL_BUFFSIZE %d", nkeys, has_x, has_n);
  ncclParamDumpAll();
}

/* ---- suspend: a suspended communicator runs nothing; NCCL_SUSPEND_MEM releases its connections ---- */

static uint64_t mem_stat(ncclComm_t c, ncclCommMemStat_t st) {
  uint64_t v = UINT64_MAX;
  NCHECK(ncclCommMemStats(c, st, &v));
  return v;
}

static void mode_suspend(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  uint64_t susp = mem_stat(comm, ncclStatGpuMemSuspend), pers = mem_stat(comm, ncclStatGpuMemPersist);
  uint64_t total = mem_stat(comm, ncclStatGpuMemTotal);
  EXPECT(n == 1 || susp > 0, "no connection memory on %d ranks", n);
  EXPECT(total == susp + pers, "total %llu != %llu + %llu", (unsigned long long)total, (unsigned long long)susp,
         (unsigned long long)pers);
  EXPECT(mem_stat(comm, ncclStatGpuMemSuspended) == 0, "suspended before ncclCommSuspend");
  EXPECT(ncclCommSuspend(comm, 0x10) == ncclInvalidArgument, "an unknown suspend flag taken");

  NCHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  EXPECT(mem_stat(comm, ncclStatGpuMemSuspended) == 1, "not suspended after ncclCommSuspend");
  EXPECT(mem_stat(comm, ncclStatGpuMemSuspend) == 0 && mem_stat(comm, ncclStatGpuMemTotal) == pers,
         "NCCL_SUSPEND_MEM left %llu bytes of connections", (unsigned long long)mem_stat(comm, ncclStatGpuMemSuspend));
  int x = 1;
  EXPECT(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, S0) == ncclInvalidUsage, "ran while suspended");
  EXPECT(strstr(ncclGetLastError(comm), "suspended"), "message: %s", ncclGetLastError(comm));
  ncclCollConfig_t cc = NCCL_COLLCONFIG_INITIALIZER;
  EXPECT(ncclAllReduceConfig(&x, &x, 1, ncclInt32, ncclSum, comm, S0, &cc) == ncclInvalidUsage,
         "a Config call ran while suspended");
  EXPECT(ncclSend(&x, 1, ncclInt32, 0, comm, S0) == ncclInvalidUsage, "a send ran while suspended");
  EXPECT(ncclCommSuspend(comm, 0) == ncclInvalidUsage, "suspended twice");

  NCHECK(ncclCommResume(comm));
  EXPECT(mem_stat(comm, ncclStatGpuMemSuspended) == 0, "suspended after ncclCommResume");
  EXPECT(ncclCommResume(comm) == ncclInvalidUsage, "resumed twice");
  check_sum_of_ranks(comm, rank + 1, n * (n + 1) / 2, "after resume");
  EXPECT(mem_stat(comm, ncclStatGpuMemSuspend) >= susp, "connection memory shrank across suspend");
  uint64_t v;
  EXPECT(ncclCommMemStats(comm, (ncclCommMemStat_t)9, &v) == ncclInvalidArgument, "stat 9 taken");
  /* Destroyed while suspended: nothing of it is left behind. */
  NCHECK(ncclCommSuspend(comm, 0));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- collconfig: every nccl*Config collective, with and without a config ---- */

/* With XCCL_TRACE=DIR: this rank's trace file names, "-r<rank>.json", in *n_p. */
static char **trace_files(const char *dir, int rank, int *n_p) {
  char suffix[32], **out = NULL;
  int n = 0;
  snprintf(suffix, sizeof(suffix), "-r%d.json", rank);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    if (strncmp(e->d_name, "xccl-trace-", 11) != 0 || len < sl || strcmp(e->d_name + len - sl, suffix) != 0) continue;
    out = realloc(out, sizeof(*out) * (size_t)(n + 1));
    out[n] = xmalloc(strlen(dir) + len + 2);
    sprintf(out[n++], "%s/%s", dir, e->d_name);
  }
  if (d) closedir(d);
  *n_p = n;
  return out;
}

/* In this rank's trace: the calls (into *calls_p) and how many carry tag want. */
static int trace_tags(const char *dir, int rank, unsigned long long want, int *calls_p) {
  int n = 0, hits = 0, calls = 0;
  char **files = trace_files(dir, rank, &n);
  for (int f = 0; f < n; f++) {
    FILE *fp = fopen(files[f], "rb");
    static char text[1 << 20];
    size_t len = fp ? fread(text, 1, sizeof(text) - 1, fp) : 0;
    if (fp) fclose(fp);
    text[len] = 0;
    for (char *p = text; (p = strstr(p, "\"tag\"")); p += 5) {
      char *q = p + 5;
      while (*q == ':' || *q == ' ') q++;
      hits += strtoull(q, NULL, 10) == want;
    }
    for (char *p = text; (p = strstr(p, "\"datatype\"")); p += 10) calls++;
    free(files[f]);
  }
  free(files);
  *calls_p = calls;
  return hits;
}

static void trace_clear(const char *dir, int rank) {
  int n = 0;
  char **files = trace_files(dir, rank, &n);
  for (int f = 0; f < n; f++) unlink(files[f]), free(files[f]);
  free(files);
}

static void fill_int(int *b, size_t count, int v) {
  for (size_t i = 0; i < count; i++) b[i] = v + (int)i;
}

static void mode_collconfig(int n, int rank, ncclUniqueId id) {
  const char *trace = getenv("XCCL_TRACE");
  if (trace) trace_clear(trace, rank);
  ncclComm_t comm = init(n, id, rank);
  enum { C = 8 };
  int *send = xmalloc(sizeof(int) * C * n), *recv = xmalloc(sizeof(int) * C * n);
  ncclConfigExt_t ext2 = {NULL, {4242, 2}, {.i = 9}}, ext1 = {&ext2, {4242, 1}, {.s = "vendor"}};
  ncclCollConfig_t cc = NCCL_COLLCONFIG_INITIALIZER;
  cc.userProfilerTag = 0x1234;
  cc.maxCTAs = 2;
  cc.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
  cc.ext = &ext1;
  for (int pass = 0; pass < 2; pass++) {
    const ncclCollConfig_t *cfg = pass ? &cc : NULL;
    int sum_r = n * (n - 1) / 2;
    fill_int(send, C, rank);
    NCHECK(ncclAllReduceConfig(send, recv, C, ncclInt32, ncclSum, comm, S0, cfg));
    for (int i = 0; i < C; i++) EXPECT(recv[i] == sum_r + n * i, "allreduce[%d] %d (pass %d)", i, recv[i], pass);
    fill_int(send, C, rank == n - 1 ? 100 : -1);
    NCHECK(ncclBroadcastConfig(send, recv, C, ncclInt32, n - 1, comm, S0, cfg));
    for (int i = 0; i < C; i++) EXPECT(recv[i] == 100 + i, "broadcast[%d] %d", i, recv[i]);
    fill_int(send, C, rank);
    memset(recv, 0, sizeof(int) * C);
    NCHECK(ncclReduceConfig(send, recv, C, ncclInt32, ncclMax, 0, comm, S0, cfg));
    for (int i = 0; rank == 0 && i < C; i++) EXPECT(recv[i] == n - 1 + i, "reduce[%d] %d", i, recv[i]);
    fill_int(send, C, 10 * rank);
    NCHECK(ncclAllGatherConfig(send, recv, C, ncclInt32, comm, S0, cfg));
    for (int r = 0; r < n; r++)
      for (int i = 0; i < C; i++) EXPECT(recv[r * C + i] == 10 * r + i, "allgather[%d][%d]", r, i);
    for (int r = 0; r < n; r++) fill_int(send + r * C, C, r);
    NCHECK(ncclReduceScatterConfig(send, recv, C, ncclInt32, ncclSum, comm, S0, cfg));
    for (int i = 0; i < C; i++) EXPECT(recv[i] == n * (rank + i), "reducescatter[%d] %d", i, recv[i]);
    for (int r = 0; r < n; r++) fill_int(send + r * C, C, 1000 * rank + 10 * r);
    NCHECK(ncclAlltoAllConfig(send, recv, C, ncclInt32, comm, S0, cfg));
    for (int r = 0; r < n; r++)
      for (int i = 0; i < C; i++) EXPECT(recv[r * C + i] == 1000 * r + 10 * rank + i, "alltoall[%d][%d]", r, i);
    fill_int(send, C, 7 * rank);
    NCHECK(ncclGatherConfig(send, recv, C, ncclInt32, 0, comm, S0, cfg));
    for (int r = 0; rank == 0 && r < n; r++)
      for (int i = 0; i < C; i++) EXPECT(recv[r * C + i] == 7 * r + i, "gather[%d][%d]", r, i);
    for (int r = 0; r < n; r++) fill_int(send + r * C, C, 3 * r);
    NCHECK(ncclScatterConfig(send, recv, C, ncclInt32, 0, comm, S0, cfg));
    for (int i = 0; i < C; i++) EXPECT(recv[i] == 3 * rank + i, "scatter[%d] %d", i, recv[i]);
  }
  /* A forced algorithm selection xccl cannot honour per call is refused on
   * every rank; unforced, the call runs. */
  cc.algSelection = "ring";
  EXPECT(ncclAllReduceConfig(send, recv, C, ncclInt32, ncclSum, comm, S0, &cc) == ncclInvalidUsage,
         "a forced algSelection taken");
  EXPECT(strstr(ncclGetLastError(comm), "XCCL_ALGO"), "message: %s", ncclGetLastError(comm));
  cc.forceAlgSelection = 0;
  fill_int(send, C, rank);
  NCHECK(ncclAllReduceConfig(send, recv, C, ncclInt32, ncclSum, comm, S0, &cc));
  EXPECT(recv[0] == n * (n - 1) / 2, "unforced allreduce %d", recv[0]);
  ncclCollConfig_t bad = NCCL_COLLCONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT(ncclAllReduceConfig(send, recv, C, ncclInt32, ncclSum, comm, S0, &bad) == ncclInvalidArgument,
         "a config with no magic taken");
  check_sum_of_ranks(comm, 1, n, "after the refusals");
  free(send);
  free(recv);
  NCHECK(ncclCommDestroy(comm));
  /* The tag reached the trace: the 8 calls of the second pass and the
   * unforced one, at least (gather and scatter are a send or receive per
   * peer, each its own event); the first pass's calls carry none. */
  if (trace) {
    int calls = 0, hits = trace_tags(trace, rank, 0x1234, &calls);
    EXPECT(hits >= 9 && calls > hits, "%d of %d calls in %s's trace carry tag 0x1234, expected 9 or more and not all",
           hits, calls, trace);
  }
}

/* ---- grow: NCCL's way, the id on the rank that made it only ---- */

static void grow_id_path(char *path, size_t len) {
  snprintf(path, len, "/tmp/nccl_prog_grow.%d", (int)getppid());
}

static void mode_grow(int n, int rank, ncclUniqueId id) {
  if (n < 2) {
    fprintf(stderr, "grow needs 2 ranks or more\n");
    exit(2);
  }
  char path[96], tmp[128];
  grow_id_path(path, sizeof(path));
  ncclUniqueId gid;
  ncclComm_t comm = NULL, grown = NULL;
  if (rank < n - 1) { /* the first n-1 ranks make a communicator, then grow it */
    comm = init(n - 1, id, rank);
    if (rank == 0) {
      NCHECK(ncclCommGetUniqueId(comm, &gid));
      snprintf(tmp, sizeof(tmp), "%s.tmp", path);
      FILE *f = fopen(tmp, "wb");
      if (!f || fwrite(&gid, sizeof(gid), 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
        perror("grow id file");
        exit(1);
      }
    }
    NCHECK(ncclCommGrow(comm, n, rank == 0 ? &gid : NULL, -1, &grown, NULL));
  } else { /* the newcomer, with the id rank 0 made */
    double deadline = now_s() + 60;
    FILE *f = NULL;
    while (!(f = fopen(path, "rb")) && now_s() < deadline) usleep(10000);
    if (!f || fread(&gid, sizeof(gid), 1, f) != 1) {
      fprintf(stderr, "rank %d: no grow id in %s\n", rank, path);
      exit(1);
    }
    fclose(f);
    NCHECK(ncclCommGrow(NULL, n, &gid, rank, &grown, NULL));
  }
  int cnt = -1, me = -1;
  NCHECK(ncclCommCount(grown, &cnt));
  NCHECK(ncclCommUserRank(grown, &me));
  EXPECT(cnt == n && me == rank, "grown: %d ranks, rank %d (expected %d, %d)", cnt, me, n, rank);
  check_sum_of_ranks(grown, rank, n * (n - 1) / 2, "on the grown communicator");
  if (rank == 0) unlink(path);
  NCHECK(ncclCommDestroy(grown));
  if (comm) NCHECK(ncclCommDestroy(comm));
}

/* ---- window: the user pointer back; what xccl does not serve ---- */
/* (The one-sided calls on windows: nccl_prog_rma.c.) */

static void mode_window(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  void *buf = NULL;
  size_t size = 2 * NCCL_WIN_REQUIRED_ALIGNMENT;
  NCHECK(ncclMemAlloc(&buf, size));
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf, size, &win, NCCL_WIN_COLL_SYMMETRIC));
  void *back = NULL;
  NCHECK(ncclWinGetUserPtr(comm, win, &back));
  EXPECT(back == buf, "ncclWinGetUserPtr %p, registered %p", back, buf);
  back = &back;
  EXPECT(ncclWinGetUserPtr(comm, (ncclWindow_t)(void *)&size, &back) == ncclInvalidArgument && back == &back,
         "a made-up window answered");

  /* Encryption: fixed once a communicator exists; a short key is refused first. */
  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  EXPECT(ncclSetEncryption(&enc) == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "before"),
         "encryption changed after init: %s", ncclGetLastError(NULL));
  enc.mode = NCCL_ENCRYPTION_MODE_PSK;
  enc.psk = "0123456789abcdef";
  EXPECT(ncclSetEncryption(&enc) == ncclInvalidArgument, "a 16-byte pre-shared key taken");
  EXPECT(ncclSetEncryption(NULL) == ncclInvalidArgument, "a NULL encryption config taken");

  NCHECK(ncclCommWindowDeregister(comm, win));
  back = NULL;
  EXPECT(ncclWinGetUserPtr(comm, win, &back) == ncclInvalidArgument, "a deregistered window answered");
  check_sum_of_ranks(comm, 1, n, "after the window");
  NCHECK(ncclMemFree(buf));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- encryption: ncclSetEncryption(PSK) before the id, then collectives over TLS ---- */

static void mode_encryption(int n, int rank, ncclUniqueId unused) {
  (void)unused;
  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  enc.mode = NCCL_ENCRYPTION_MODE_PSK;
  enc.psk = "too short";
  EXPECT(ncclSetEncryption(&enc) == ncclInvalidArgument, "a 9-byte pre-shared key taken");
  enc.psk = "nccl_prog's pre-shared key, 32 bytes or more";
  NCHECK(ncclSetEncryption(&enc));
  ncclUniqueId id; /* every rank makes it, from NCCL_COMM_ID */
  NCHECK(ncclGetUniqueId(&id));
  ncclComm_t comm = init(n, id, rank);
  check_sum_of_ranks(comm, rank, n * (n - 1) / 2, "over TLS with the program's key");
  EXPECT(ncclSetEncryption(&enc) == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "before"),
         "the key changed after init: %s", ncclGetLastError(NULL));
  NCHECK(ncclCommDestroy(comm));
}

/* ---- wrongpsk: rank 1 holds another key: every rank's init fails, none hangs ---- */

static void mode_wrongpsk(int n, int rank, ncclUniqueId unused) {
  (void)unused;
  ncclEncryptionConfig_t enc = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
  enc.mode = NCCL_ENCRYPTION_MODE_PSK;
  enc.psk = rank == 1 ? "another job's pre-shared key, 32 bytes or more"
                      : "nccl_prog's pre-shared key, 32 bytes or more";
  NCHECK(ncclSetEncryption(&enc));
  ncclUniqueId id;
  NCHECK(ncclGetUniqueId(&id));
  ncclComm_t comm = NULL;
  double t0 = now_s();
  ncclResult_t res = ncclCommInitRank(&comm, n, id, rank);
  double took = now_s() - t0;
  const char *msg = ncclGetLastError(NULL);
  EXPECT(res != ncclSuccess, "rank %d joined though rank 1 holds another key", rank);
  /* Rank 1 is refused by the root's handshake at once (the cause it gives depends on whether the
   * root's alert or its close arrives first); the others wait for it until XCCL_TIMEOUT. */
  EXPECT(rank == 1 ? strstr(msg, "TLS handshake with bootstrap peer") != NULL : strstr(msg, "missing rank 1") != NULL,
         "rank %d: the message says neither: %s", rank, msg);
  EXPECT(took < (rank == 1 ? 2.0 : 15.0), "rank %d: init took %.1f s to fail", rank, took);
  printf("rank %d: refused in %.1f s: %s\n", rank, took, msg);
  if (res == ncclSuccess) ncclCommDestroy(comm);
}

#include "nccl_prog_rma.c"

#define NCCL_PROG_232_MODES                                                                        \
  {"param", mode_param, 1}, {"suspend", mode_suspend, 0}, {"collconfig", mode_collconfig, 0},    \
      {"grow", mode_grow, 0}, {"window", mode_window, 0}, {"encryption", mode_encryption, 0},        \
      {"wrongpsk", mode_wrongpsk, 0}, NCCL_PROG_RMA_MODES
