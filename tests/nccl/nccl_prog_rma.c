/*
 * nccl_prog_rma.c — nccl_prog's modes for NCCL 2.29's one-sided calls
 * (ncclPutSignal, ncclSignal, ncclWaitSignal), built against NVIDIA's
 * 2.32.3 header with nccl_prog_232.c, which includes it.
 *
 *   rma         puts of 4 B to 9 MiB into the right neighbour's window
 *               (9 MiB: more than a connection's buffers, so ranks that
 *               put to each other must consume while they put), checked
 *               bit for bit; several signals and contexts; many puts, one
 *               wait; descriptors that add up; signals alone; to oneself.
 *   rma_last    a put just before ncclCommDestroy still lands.
 *   rma_busy    puts larger than the connection to ranks in a collective.
 *   rma_gone    a rank that exits: the others' waits stop, naming it.
 *   rma_errors  every refusal (ncclInvalidArgument, nothing changed), and
 *               a wait for a signal nobody sends (XCCL_TIMEOUT, naming
 *               the peer).
 */

/* The byte rank `from` puts at i of a round of `salt`. */
static unsigned char rma_byte(int from, int salt, size_t i) {
  return (unsigned char)(i * 131u + (size_t)from * 17u + (size_t)salt * 7u + (i >> 12));
}

static void rma_fill(unsigned char *b, size_t n, int from, int salt) {
  for (size_t i = 0; i < n; i++) b[i] = rma_byte(from, salt, i);
}

/* Whether n bytes at b are what `from` put in round salt; says where not. */
static int rma_same(const unsigned char *b, size_t n, int from, int salt, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != rma_byte(from, salt, i)) {
      EXPECT(0, "%s: byte %zu of %zu is 0x%02x, rank %d put 0x%02x", what, i, n, b[i], from, rma_byte(from, salt, i));
      return 0;
    }
  return 1;
}

static ncclWaitSignalDesc_t rma_desc(int opCnt, int peer, int sig, int ctx) {
  ncclWaitSignalDesc_t d = {opCnt, peer, sig, ctx};
  return d;
}

#define RMA_WIN (16u << 20)

static void mode_rma(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  int right = (rank + 1) % n, left = (rank + n - 1) % n;
  unsigned char *win_buf = NULL, *src = xmalloc(9u << 20);
  win_buf = aligned_alloc(4096, RMA_WIN); /* host memory: ncclMemAlloc's is the GPU's where CUDA runs */
  EXPECT(win_buf, "out of memory");
  if (!win_buf) exit(1);
  memset(win_buf, 0, RMA_WIN);
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, win_buf, RMA_WIN, &win, NCCL_WIN_DEFAULT));

  /* Sizes from one element to more than the connection holds, each round
   * at its own offset so that a fast neighbour's next round never lands
   * where this rank still checks. */
  static const size_t sizes[] = {4, 8000, 3u << 20, 9u << 20};
  size_t off = 0;
  for (int s = 0; s < 4; s++) {
    size_t bytes = sizes[s];
    rma_fill(src, bytes, rank, s);
    NCHECK(ncclPutSignal(src, bytes, ncclUint8, right, win, off, 0, 0, 0, comm, S0));
    ncclWaitSignalDesc_t d = rma_desc(1, left, 0, 0);
    NCHECK(ncclWaitSignal(1, &d, comm, S0));
    char what[64];
    snprintf(what, sizeof(what), "put of %zu bytes", bytes);
    rma_same(win_buf + off, bytes, left, s, what);
    off += (bytes + 63) & ~(size_t)63;
  }
  check_sum_of_ranks(comm, 1, n, "after the sizes"); /* every rank's window is read: the next rounds may reuse it */

  /* Three signals and contexts, waited for in another order, with types. */
  int32_t a[3] = {rank, rank * 10, -rank};
  double b = rank + 0.5;
  NCHECK(ncclPutSignal(a, 3, ncclInt32, right, win, 0, 1, 0, 0, comm, S0));
  NCHECK(ncclPutSignal(&b, 1, ncclFloat64, right, win, 64, 2, 3, 0, comm, S0));
  NCHECK(ncclSignal(right, 31, 1, 0, comm, S0));
  ncclWaitSignalDesc_t ds[3] = {rma_desc(1, left, 31, 1), rma_desc(1, left, 2, 3), rma_desc(1, left, 1, 0)};
  NCHECK(ncclWaitSignal(3, ds, comm, S0));
  int32_t ga[3];
  double gb;
  memcpy(ga, win_buf, sizeof(ga));
  memcpy(&gb, win_buf + 64, sizeof(gb));
  EXPECT(ga[0] == left && ga[1] == left * 10 && ga[2] == -left && gb == left + 0.5,
         "signals and contexts: got %d %d %d %g from rank %d", ga[0], ga[1], ga[2], gb, left);

  /* Many puts, one wait counting them; then descriptors that add up. */
  enum { MANY = 50, PIECE = 1024 };
  for (int i = 0; i < MANY; i++) {
    rma_fill(src, PIECE, rank, 100 + i);
    NCHECK(ncclPutSignal(src, PIECE / 4, ncclFloat32, right, win, 4096 + (size_t)i * PIECE, 7, 2, 0, comm, S0));
  }
  ncclWaitSignalDesc_t dm = rma_desc(MANY, left, 7, 2);
  NCHECK(ncclWaitSignal(1, &dm, comm, S0));
  for (int i = 0; i < MANY; i++) rma_same(win_buf + 4096 + (size_t)i * PIECE, PIECE, left, 100 + i, "many puts");
  for (int i = 0; i < MANY; i++) NCHECK(ncclSignal(right, 8, 0, 0, comm, S0));
  ncclWaitSignalDesc_t dd[2] = {rma_desc(20, left, 8, 0), rma_desc(MANY - 20, left, 8, 0)};
  NCHECK(ncclWaitSignal(2, dd, comm, S0));
  NCHECK(ncclWaitSignal(0, NULL, comm, S0));
  ncclWaitSignalDesc_t none = rma_desc(0, left, 8, 0); /* all consumed: nothing to wait for */
  NCHECK(ncclWaitSignal(1, &none, comm, S0));

  /* Signals alone from every rank to every other; then to oneself. */
  ncclWaitSignalDesc_t *all = xmalloc(sizeof(*all) * (size_t)n);
  for (int p = 0; p < n; p++) {
    if (p != rank) NCHECK(ncclSignal(p, 9, 0, 0, comm, S0));
    all[p] = rma_desc(p == rank ? 0 : 1, p, 9, 0);
  }
  NCHECK(ncclWaitSignal(n, all, comm, S0));
  free(all);
  check_sum_of_ranks(comm, 1, n, "after the signals"); /* nobody puts into this window any more */
  rma_fill(src, 256, rank, 77);
  NCHECK(ncclPutSignal(src, 256, ncclInt8, rank, win, RMA_WIN - 256, 3, 0, 0, comm, S0));
  ncclWaitSignalDesc_t self = rma_desc(1, rank, 3, 0);
  NCHECK(ncclWaitSignal(1, &self, comm, S0));
  rma_same(win_buf + RMA_WIN - 256, 256, rank, 77, "put to oneself");

  check_sum_of_ranks(comm, 1, n, "after the one-sided calls");
  /* NCCL_SUSPEND_MEM with one-sided connections: a put sent just before it lands
   * (suspend consumes what is on its way), and after resume the connections are
   * made again. */
  if (n > 1) {
    rma_fill(src, 4096, rank, 91);
    NCHECK(ncclPutSignal(src, 4096, ncclInt8, right, win, 0, 5, 1, 0, comm, S0));
    NCHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
    uint64_t held = 1;
    NCHECK(ncclCommMemStats(comm, ncclStatGpuMemSuspend, &held));
    EXPECT(held == 0, "%llu bytes of connections held while suspended", (unsigned long long)held);
    NCHECK(ncclCommResume(comm));
    ncclWaitSignalDesc_t before = rma_desc(1, left, 5, 1);
    NCHECK(ncclWaitSignal(1, &before, comm, S0));
    rma_same(win_buf, 4096, left, 91, "a put sent just before NCCL_SUSPEND_MEM");
    check_sum_of_ranks(comm, 1, n, "between the puts around the suspend");
    rma_fill(src, 4096, rank, 92);
    NCHECK(ncclPutSignal(src, 4096, ncclInt8, right, win, 4096, 6, 1, 0, comm, S0));
    ncclWaitSignalDesc_t after = rma_desc(1, left, 6, 1);
    NCHECK(ncclWaitSignal(1, &after, comm, S0));
    rma_same(win_buf + 4096, 4096, left, 92, "a put after resume");
    check_sum_of_ranks(comm, 1, n, "after a suspend and resume");
  }
  NCHECK(ncclCommWindowDeregister(comm, win));
  free(win_buf);
  free(src);
  NCHECK(ncclCommDestroy(comm));
}

/* A put just before ncclCommDestroy: rank 0 puts 3 MiB (the connection's
 * slots take it whole, so the call returns before the network has moved
 * it) and destroys at once; rank 1 must still get all of it. */
static void mode_rma_last(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  const char *e = getenv("RMA_LAST_BYTES"); /* the test sets it below the connection's slots (XCCL_RMA_CHUNK_SIZE) */
  size_t bytes = e ? strtoull(e, NULL, 0) : 3u << 20;
  unsigned char *buf = xmalloc(bytes);
  memset(buf, 0, bytes);
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf, bytes, &win, NCCL_WIN_DEFAULT));
  if (rank == 0) {
    rma_fill(buf, bytes, 0, 5);
    for (int p = 1; p < n; p++) NCHECK(ncclPutSignal(buf, bytes, ncclUint8, p, win, 0, 0, 0, 0, comm, S0));
  } else {
    ncclWaitSignalDesc_t d = rma_desc(1, 0, 0, 0);
    NCHECK(ncclWaitSignal(1, &d, comm, S0));
    rma_same(buf, bytes, 0, 5, "the put before destroy");
  }
  NCHECK(ncclCommDestroy(comm)); /* the window goes with the communicator */
  free(buf);
}

/* Puts larger than the connection's slots to a rank that is busy in a
 * collective: the target's progress thread consumes them, so the put
 * returns and the origin reaches the collective its target waits in. */
static void mode_rma_busy(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  int right = (rank + 1) % n, left = (rank + n - 1) % n;
  size_t bytes = 6u << 20;
  unsigned char *win_buf = xmalloc(bytes), *src = xmalloc(bytes);
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, win_buf, bytes, &win, NCCL_WIN_DEFAULT));
  rma_fill(src, bytes, rank, 9);
  if (rank % 2 == 0) NCHECK(ncclPutSignal(src, bytes, ncclUint8, right, win, 0, 0, 0, 0, comm, S0));
  check_sum_of_ranks(comm, 1, n, "the collective the targets wait in");
  if (rank % 2 == 1) NCHECK(ncclPutSignal(src, bytes, ncclUint8, right, win, 0, 0, 0, 0, comm, S0));
  ncclWaitSignalDesc_t d = rma_desc(1, left, 0, 0);
  NCHECK(ncclWaitSignal(1, &d, comm, S0));
  rma_same(win_buf, bytes, left, 9, "a put to a rank in a collective");
  check_sum_of_ranks(comm, 1, n, "after the puts");
  NCHECK(ncclCommWindowDeregister(comm, win));
  free(win_buf), free(src);
  NCHECK(ncclCommDestroy(comm));
}

/* The last rank leaves without a word after the window; the others wait
 * for its signal and must hear of it long before XCCL_TIMEOUT (60 s in
 * these tests), in a sentence naming it. */
static void mode_rma_gone(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  unsigned char *buf = xmalloc(4096);
  ncclWindow_t win = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf, 4096, &win, NCCL_WIN_DEFAULT));
  if (rank == n - 1) _exit(0); /* no destroy: as if it crashed */
  char who[32];
  snprintf(who, sizeof(who), "rank %d", n - 1);
  ncclWaitSignalDesc_t d = rma_desc(1, n - 1, 0, 0);
  double t0 = now_s();
  ncclResult_t r = ncclWaitSignal(1, &d, comm, S0);
  EXPECT(r == ncclRemoteError, "waiting for a rank that left: %d", (int)r);
  EXPECT(strstr(ncclGetLastError(comm), who), "message \"%s\" does not name %s", ncclGetLastError(comm), who);
  EXPECT(now_s() - t0 < 30, "heard of it after %.1f s", now_s() - t0);
  NCHECK(ncclCommAbort(comm));
  free(buf);
}

/* call is refused with want, its message holding `says`. */
#define RMA_REFUSED(call, want, says)                                                                    \
  do {                                                                                                   \
    ncclResult_t r_ = (call);                                                                            \
    EXPECT(r_ == (want), "%s returned %d, not %d", #call, (int)r_, (int)(want));                         \
    EXPECT(strstr(ncclGetLastError(comm), says), "%s: message \"%s\" does not say \"%s\"", #call,        \
           ncclGetLastError(comm), says);                                                                \
  } while (0)

static void mode_rma_errors(int n, int rank, ncclUniqueId id) {
  ncclComm_t comm = init(n, id, rank);
  int right = (rank + 1) % n, left = (rank + n - 1) % n;
  static int32_t v[5 * 1024]; /* more than any window here: a put that is not refused reads no further */
  /* Before any window: the ranks are not connected for one-sided calls. */
  RMA_REFUSED(ncclSignal(right, 0, 0, 0, comm, S0), ncclInvalidUsage, "no window");

  /* Each rank's window its own size: (rank + 1) pages. */
  size_t mine = (size_t)(rank + 1) * 4096, rights = (size_t)(right + 1) * 4096;
  unsigned char *buf = xmalloc(mine);
  memset(buf, 0, mine);
  ncclWindow_t win = NULL, gone = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf, mine, &win, NCCL_WIN_DEFAULT));
  unsigned char *buf2 = xmalloc(4096);
  NCHECK(ncclCommWindowRegister(comm, buf2, 4096, &gone, NCCL_WIN_DEFAULT));
  NCHECK(ncclCommWindowDeregister(comm, gone));

  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, n, win, 0, 0, 0, 0, comm, S0), ncclInvalidArgument, "peer");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, -1, win, 0, 0, 0, 0, comm, S0), ncclInvalidArgument, "peer");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, NULL, 0, 0, 0, 0, comm, S0), ncclInvalidArgument,
              "peerWin is NULL");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, gone, 0, 0, 0, 0, comm, S0), ncclInvalidArgument,
              "not a window of this communicator");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, (ncclWindow_t)(void *)v, 0, 0, 0, 0, comm, S0),
              ncclInvalidArgument, "not a window");
  /* The peer's size counts, not this rank's. */
  RMA_REFUSED(ncclPutSignal(v, rights / 4 + 1, ncclInt32, right, win, 0, 0, 0, 0, comm, S0), ncclInvalidArgument,
              "pass the end");
  RMA_REFUSED(ncclPutSignal(v, 2, ncclInt32, right, win, rights - 4, 0, 0, 0, comm, S0), ncclInvalidArgument,
              "pass the end");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, win, (size_t)-1, 0, 0, 0, comm, S0), ncclInvalidArgument,
              "pass the end");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, win, 0, -1, 0, 0, comm, S0), ncclInvalidArgument, "sigIdx");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, win, 0, 32, 0, 0, comm, S0), ncclInvalidArgument, "sigIdx");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, win, 0, 0, 4, 0, comm, S0), ncclInvalidArgument, "ctx");
  RMA_REFUSED(ncclPutSignal(v, 1, ncclInt32, right, win, 0, 0, 0, 1, comm, S0), ncclInvalidArgument, "flags");
  RMA_REFUSED(ncclPutSignal(NULL, 1, ncclInt32, right, win, 0, 0, 0, 0, comm, S0), ncclInvalidArgument, "NULL");
  RMA_REFUSED(ncclSignal(n, 0, 0, 0, comm, S0), ncclInvalidArgument, "peer");
  RMA_REFUSED(ncclSignal(right, 0, -2, 0, comm, S0), ncclInvalidArgument, "ctx");
  ncclWaitSignalDesc_t d = rma_desc(1, left, 0, 0);
  RMA_REFUSED(ncclWaitSignal(-1, &d, comm, S0), ncclInvalidArgument, "nDesc");
  RMA_REFUSED(ncclWaitSignal(1, NULL, comm, S0), ncclInvalidArgument, "NULL");
  ncclWaitSignalDesc_t bad[4] = {rma_desc(1, n, 0, 0), rma_desc(1, left, 40, 0), rma_desc(1, left, 0, 9),
                                 rma_desc(-1, left, 0, 0)};
  const char *says[4] = {"peer", "sigIdx", "ctx", "opCnt"};
  for (int i = 0; i < 4; i++) {
    ncclWaitSignalDesc_t two[2] = {d, bad[i]}; /* the good one is not consumed either */
    RMA_REFUSED(ncclWaitSignal(2, two, comm, S0), ncclInvalidArgument, says[i]);
  }

  /* Nothing was sent: a wait for a signal that never comes stops at
   * XCCL_TIMEOUT (the test sets it short) and names the peer. */
  char left_is[32];
  snprintf(left_is, sizeof(left_is), "rank %d", left);
  RMA_REFUSED(ncclWaitSignal(1, &d, comm, S0), ncclRemoteError, left_is);

  /* The communicator still works: one good round, checked, once every
   * rank's wait has timed out (a put now would answer a slower one's). */
  check_sum_of_ranks(comm, 1, n, "after the timeouts");
  for (int i = 0; i < 4; i++) v[i] = rank * 4 + i;
  NCHECK(ncclPutSignal(v, 4, ncclInt32, right, win, 16, 0, 0, 0, comm, S0));
  NCHECK(ncclWaitSignal(1, &d, comm, S0));
  int32_t got[4];
  memcpy(got, buf + 16, sizeof(got));
  EXPECT(got[0] == left * 4 && got[3] == left * 4 + 3, "after the refusals: got %d .. %d from rank %d", got[0],
         got[3], left);
  check_sum_of_ranks(comm, 1, n, "after the refusals");

  /* A put into a window its target deregistered meanwhile: dropped, and
   * the wait that counts its signal says so, once. Odd ranks put to even
   * ones (n is even), which deregistered their side of the window. */
  ncclWindow_t w2 = NULL;
  NCHECK(ncclCommWindowRegister(comm, buf2, 4096, &w2, NCCL_WIN_DEFAULT));
  ncclWaitSignalDesc_t d1 = rma_desc(1, left, 1, 0);
  if (rank % 2 == 0) {
    NCHECK(ncclCommWindowDeregister(comm, w2));
    check_sum_of_ranks(comm, 1, n, "deregistered");
    RMA_REFUSED(ncclWaitSignal(1, &d1, comm, S0), ncclRemoteError, "deregistered");
    NCHECK(ncclWaitSignal(1, &d1, comm, S0)); /* the signal after it: said once, then fine */
  } else {
    check_sum_of_ranks(comm, 1, n, "deregistered");
    NCHECK(ncclPutSignal(v, 4, ncclInt32, right, w2, 0, 1, 0, 0, comm, S0));
    NCHECK(ncclSignal(right, 1, 0, 0, comm, S0));
    NCHECK(ncclCommWindowDeregister(comm, w2));
  }
  check_sum_of_ranks(comm, 1, n, "after the dropped put");
  NCHECK(ncclCommWindowDeregister(comm, win));
  free(buf);
  free(buf2);
  NCHECK(ncclCommDestroy(comm));
}

#define NCCL_PROG_RMA_MODES                                                                   \
  {"rma", mode_rma, 0}, {"rma_errors", mode_rma_errors, 0}, {"rma_last", mode_rma_last, 0}, \
      {"rma_gone", mode_rma_gone, 0}, {"rma_busy", mode_rma_busy, 0},
