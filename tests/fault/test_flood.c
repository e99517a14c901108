/*
 * test_flood.c — a job completes, correctly and in time, while its bootstrap
 * ports are flooded with connections, and nothing leaks a file descriptor.
 *
 * The program is its own launcher, like test_fault.c: the parent makes the
 * unique id (so the bootstrap root is a thread of the parent), starts a
 * flooder thread against the root's port, and re-executes itself as 4 ranks.
 * Each rank reports its own bootstrap listener's port on a pipe once it has
 * joined; the flooder adds those ports to its targets. The ranks then run
 * all-reduces and a ring of sends and receives, whose connections are set up
 * through the (flooded) bootstrap listeners.
 *
 * The flood, loopback only: FLOOD_TOTAL connections over about FLOOD_SECONDS,
 * at most FLOOD_OPEN at once, in four kinds taken in turn: idle (held open
 * up to 1.5 s), random bytes, a well-formed hello signed with the wrong key
 * (after reading the challenge, so the MAC check is what refuses it), and
 * connect-then-close (half of them with a reset).
 *
 * Checked: every rank ends with status 0 (its results were right and its own
 * descriptors came back to what they were before init), the job ends within
 * JOB_BOUND_S, the flooder reached the root and every rank, the root logged
 * refusals, and the parent's descriptors come back to the baseline.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"
#include "bootstrap_msg.h"
#include "clock.h"
#include "comm.h"
#include "sock.h"
#include "test_util.h"
#include "xccl.h"

#define NRANKS 4
static int FLOOD_TOTAL = 2000;
/* "idle": every connection opens and then says nothing for 12 s, longer than
 * the ranks' XCCL_TIMEOUT (6 s): the listeners must make room for real peers
 * by dropping the oldest silent ones, or the job fails. */
static int idle_only;
#define FLOOD_OPEN 200
#define FLOOD_SECONDS 5.0
#define FLOOD_HEAD_START_S 1.5 /* the root alone is flooded this long before the ranks start */
static int RANK_PAUSE_MS = 800; /* after init, before the first point-to-point setup */
#define RANK_ITERS 30          /* then all-reduces and exchanges, 50 ms apart: about 2 s */
static const char *RANK_TIMEOUT = "30"; /* XCCL_TIMEOUT of the ranks and the root */
#define JOB_BOUND_S 50.0
#define REPORT_FD_ENV "FLOOD_REPORT_FD" /* not XCCL_*: the library warns of unknown XCCL_ names */

static double now_s(void) { return (double)clock_ns() / 1e9; }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- Descriptors ---- */

typedef struct {
  int n;
  int fd[256];
  char what[256][96];
} fd_list_t;

/* The open descriptors, except the directory being read and any file whose
 * path contains `skip` (the log, which the library opens once and keeps). */
static void fd_snapshot(fd_list_t *l, const char *skip) {
  l->n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && l->n < 256) {
    if (e->d_name[0] == '.') continue;
    int fd = atoi(e->d_name);
    if (fd == dirfd(d)) continue;
    char link[64], target[96] = "";
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, target, sizeof(target) - 1);
    target[k > 0 ? k : 0] = '\0';
    if (skip && *skip && strstr(target, skip)) continue;
    l->fd[l->n] = fd;
    snprintf(l->what[l->n], sizeof(l->what[0]), "%s", target);
    l->n++;
  }
  closedir(d);
}

/* Prints the descriptors of `now` that `base` did not have. Returns how many. */
static int fd_report_new(const char *who, const fd_list_t *base, const fd_list_t *now) {
  int extra = 0;
  for (int i = 0; i < now->n; i++) {
    int old = 0;
    for (int j = 0; j < base->n && !old; j++) old = base->fd[j] == now->fd[i] && strcmp(base->what[j], now->what[i]) == 0;
    if (!old) fprintf(stderr, "%s: descriptor %d (%s) is still open\n", who, now->fd[i], now->what[i]), extra++;
  }
  return extra;
}

/* ---- A rank ---- */

static int rank_main(int rank) {
  char logskip[64];
  snprintf(logskip, sizeof(logskip), "xccl-flood-log");
  fd_list_t before, after;
  fd_snapshot(&before, logskip);
  int report_fd = atoi(getenv(REPORT_FD_ENV) ? getenv(REPORT_FD_ENV) : "-1");
  xcclComm_t comm;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess)
    return fprintf(stderr, "rank %d: init under flood failed: %s\n", rank, xcclGetLastError(NULL)), 1;
  /* Tell the flooder where this rank's bootstrap listens (it is loopback). */
  char line[32];
  int len = snprintf(line, sizeof(line), "%d %u\n", rank, sock_addr_port(bootstrap_addr(comm->bs, rank)));
  if (report_fd < 0 || write(report_fd, line, (size_t)len) != len) fprintf(stderr, "rank %d: cannot report\n", rank);
  if (report_fd >= 0) {
    close(report_fd);
    for (int i = 0; i < before.n; i++) /* inherited, not opened by xccl: out of the comparison */
      if (before.fd[i] == report_fd) before.fd[i] = before.fd[--before.n], memcpy(before.what[i], before.what[before.n], 96);
  }
  /* Let the flood fill this rank's listener's backlog before the first
   * point-to-point setup serves it, then keep working through the flood. */
  sleep_ms(RANK_PAUSE_MS);

  int bad = 0;
  size_t count = 1u << 16;
  float *buf = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
  for (int it = 0; it < RANK_ITERS && !bad; it++) {
    for (size_t i = 0; i < count; i++) buf[i] = (float)(rank + 1) * (float)(it + 1) + (float)(i % 7);
    if (xcclAllReduce(buf, out, count, xcclFloat32, xcclSum, comm, NULL) != xcclSuccess) {
      bad = fprintf(stderr, "rank %d: all-reduce %d failed: %s\n", rank, it, xcclGetLastError(comm));
      break;
    }
    float ranks_sum = (float)(NRANKS * (NRANKS + 1) / 2);
    for (size_t i = 0; i < count && !bad; i++) {
      float want = ranks_sum * (float)(it + 1) + (float)NRANKS * (float)(i % 7);
      if (out[i] != want) bad = fprintf(stderr, "rank %d: all-reduce %d: [%zu] = %g, want %g\n", rank, it, i, out[i], want);
    }
    /* An exchange with the rank across the ring (not a ring neighbour): its
     * connection is set up through the bootstrap listeners, the first time. */
    int peer = (rank + NRANKS / 2) % NRANKS, prev = peer;
    for (size_t i = 0; i < 1024; i++) buf[i] = (float)(rank * 1000 + it) + (float)i;
    xcclResult_t r = xcclGroupStart();
    if (r == xcclSuccess) r = xcclSend(buf, 1024, xcclFloat32, peer, comm, NULL);
    if (r == xcclSuccess) r = xcclRecv(out, 1024, xcclFloat32, peer, comm, NULL);
    xcclResult_t r2 = xcclGroupEnd();
    sleep_ms(50);
    if (r != xcclSuccess || r2 != xcclSuccess) {
      bad = fprintf(stderr, "rank %d: send/recv %d failed: %s\n", rank, it, xcclGetLastError(comm));
      break;
    }
    for (size_t i = 0; i < 1024 && !bad; i++)
      if (out[i] != (float)(prev * 1000 + it) + (float)i)
        bad = fprintf(stderr, "rank %d: received [%zu] = %g from rank %d\n", rank, i, out[i], prev);
  }
  free(buf);
  free(out);
  if (xcclCommDestroy(comm) != xcclSuccess) bad = fprintf(stderr, "rank %d: destroy failed\n", rank);
  fd_snapshot(&after, logskip);
  if (fd_report_new("rank", &before, &after) || after.n != before.n) bad = 1;
  if (!bad) printf("rank %d: results right, descriptors back to %d\n", rank, before.n);
  return bad ? 1 : 0;
}

/* ---- The flooder (a thread of the parent) ---- */

enum { K_IDLE, K_RANDOM, K_FORGED, K_CLOSE, K_COUNT };

typedef struct {
  int fd, kind, target, connected, sent;
  double close_at;
  uint8_t in[BS_HDR_BYTES + BS_NONCE_BYTES + BS_MAC_BYTES];
  size_t got;
} flood_conn_t;

typedef struct {
  sock_addr_t targets[1 + NRANKS];
  int ntargets;
  int report_fd; /* ranks' "rank port" lines */
  /* results */
  int started, refused, connected[1 + NRANKS], by_kind[K_COUNT], forged_sent;
  double seconds;
} flood_t;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 16);
}

static void flood_read_reports(flood_t *f, char *pending, size_t *plen) {
  ssize_t n = read(f->report_fd, pending + *plen, 255 - *plen);
  if (n <= 0) return;
  *plen += (size_t)n;
  pending[*plen] = '\0';
  char *nl;
  while ((nl = strchr(pending, '\n')) != NULL) {
    int rank = -1;
    unsigned port = 0;
    if (sscanf(pending, "%d %u", &rank, &port) == 2 && rank >= 0 && rank < NRANKS && port > 0 &&
        f->ntargets < 1 + NRANKS) {
      sock_addr_t a = f->targets[0]; /* the same loopback address as the root, that rank's port */
      sock_addr_set_port(&a, (uint16_t)port);
      f->targets[f->ntargets++] = a;
    }
    size_t used = (size_t)(nl - pending) + 1;
    memmove(pending, nl + 1, *plen - used + 1);
    *plen -= used;
  }
}

static void flood_open(flood_t *f, flood_conn_t *c, double now) {
  memset(c, 0, sizeof(*c));
  c->kind = idle_only ? K_IDLE : f->started % K_COUNT;
  c->target = (f->started / K_COUNT) % f->ntargets;
  f->started++;
  f->by_kind[c->kind]++;
  const sock_addr_t *a = &f->targets[c->target];
  c->fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return;
  if (connect(c->fd, &a->sa, sock_addr_len(a)) != 0 && errno != EINPROGRESS) {
    f->refused++;
    close(c->fd);
    c->fd = -1;
    return;
  }
  double hold = c->kind == K_IDLE ? (idle_only ? 12.0 : 0.2 + (rnd() % 1300) / 1000.0)
                : c->kind == K_CLOSE ? 0.0
                                     : 0.1 + (rnd() % 400) / 1000.0;
  c->close_at = now + hold;
}

static void flood_close(flood_conn_t *c) {
  if (c->fd < 0) return;
  if (c->kind == K_CLOSE && (rnd() & 1)) { /* a reset instead of a FIN */
    struct linger lg = {1, 0};
    setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  }
  close(c->fd);
  c->fd = -1;
}

/* The connection is writable or readable: do what its kind does. */
static void flood_step(flood_t *f, flood_conn_t *c, short revents) {
  if (!c->connected && (revents & (POLLOUT | POLLERR | POLLHUP))) {
    int err = 0;
    socklen_t el = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
    if (err) {
      f->refused++;
      return flood_close(c);
    }
    c->connected = 1;
    f->connected[c->target]++;
    if (c->kind == K_CLOSE) return flood_close(c);
    if (c->kind == K_RANDOM) {
      uint8_t junk[512];
      size_t n = 1 + rnd() % sizeof(junk);
      for (size_t i = 0; i < n; i++) junk[i] = (uint8_t)rnd();
      if (rnd() % 3 == 0) memcpy(junk, "XCBS", 4); /* the right magic, garbage after it */
      ssize_t w = send(c->fd, junk, n, MSG_NOSIGNAL);
      (void)w;
    }
  }
  if (c->connected && (revents & POLLIN)) {
    ssize_t n = recv(c->fd, c->in + c->got, sizeof(c->in) - c->got, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return flood_close(c); /* the listener hung up on us */
    if (n > 0) c->got += (size_t)n;
    if (c->got == sizeof(c->in)) {
      if (c->kind == K_FORGED && !c->sent) {
        /* A hello that parses and is for a plausible rank, signed with a wrong key. */
        uint8_t key[BS_SECRET_BYTES];
        for (int i = 0; i < BS_SECRET_BYTES; i++) key[i] = (uint8_t)rnd();
        bs_hello_t h = {.job = rnd(), .rank = (int)(rnd() % NRANKS), .nranks = NRANKS, .addr = f->targets[0],
                        .pid = rnd()};
        snprintf(h.host, sizeof(h.host), "flood-%u", rnd() % 1000);
        uint8_t hello[BS_HELLO_BYTES], frame[BS_HDR_BYTES + BS_HELLO_BYTES + BS_MAC_BYTES];
        bs_hello_encode(&h, hello);
        bs_frame_build(frame, (rnd() & 1) ? BS_HELLO : BS_P2P, hello, BS_HELLO_BYTES, key, c->in + BS_HDR_BYTES);
        if (send(c->fd, frame, sizeof(frame), MSG_NOSIGNAL) == (ssize_t)sizeof(frame)) f->forged_sent++;
        c->sent = 1;
      }
      c->got = 0; /* anything more (a FAIL frame) is read and dropped */
    }
  }
}

static void *flood_main(void *arg) {
  flood_t *f = arg;
  static flood_conn_t conns[FLOOD_OPEN];
  struct pollfd pf[FLOOD_OPEN];
  int idx[FLOOD_OPEN];
  char pending[256];
  size_t plen = 0;
  for (int i = 0; i < FLOOD_OPEN; i++) conns[i].fd = -1;
  double t0 = now_s(), rate = FLOOD_TOTAL / FLOOD_SECONDS;
  int open = 0;
  while (f->started < FLOOD_TOTAL || open > 0) {
    double now = now_s();
    if (now - t0 > FLOOD_SECONDS + (idle_only ? 20.0 : 5.0)) break; /* a bound on the flooder itself */
    flood_read_reports(f, pending, &plen);
    for (int i = 0; i < FLOOD_OPEN && f->started < FLOOD_TOTAL && f->started < (now - t0) * rate; i++)
      if (conns[i].fd < 0) flood_open(f, &conns[i], now);
    int np = 0;
    open = 0;
    for (int i = 0; i < FLOOD_OPEN; i++) {
      flood_conn_t *c = &conns[i];
      if (c->fd < 0) continue;
      if (now >= c->close_at && (c->connected || now >= c->close_at + 0.5)) {
        flood_close(c);
        continue;
      }
      open++;
      pf[np] = (struct pollfd){.fd = c->fd, .events = (short)(c->connected ? POLLIN : POLLOUT)};
      idx[np++] = i;
    }
    if (poll(pf, (nfds_t)np, 5) <= 0) continue;
    for (int k = 0; k < np; k++)
      if (pf[k].revents) flood_step(f, &conns[idx[k]], pf[k].revents);
  }
  for (int i = 0; i < FLOOD_OPEN; i++) flood_close(&conns[i]);
  f->seconds = now_s() - t0;
  return NULL;
}

/* ---- The parent ---- */

extern char **environ;

/* An environment for a rank, built before fork (the child only execs): the
 * parent's, less the variables set here, which are the entries from
 * *inherited_p on (allocated). */
static char **rank_env(int rank, const char *idhex, int report_fd, const char *logpath, size_t *inherited_p) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 8, sizeof(char *));
  size_t k = 0;
  static const char *ours[] = {"XCCL_RANK=", "XCCL_NRANKS=", "XCCL_UNIQUE_ID=", "XCCL_TIMEOUT=", "XCCL_DEBUG_FILE=",
                               REPORT_FD_ENV "="};
  for (size_t i = 0; i < n; i++) {
    int mine = 0;
    for (size_t j = 0; j < sizeof(ours) / sizeof(ours[0]) && !mine; j++)
      mine = strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
    if (!mine) env[k++] = environ[i];
  }
  *inherited_p = k;
  char *v;
  if (asprintf(&v, "XCCL_RANK=%d", rank) > 0) env[k++] = v;
  if (asprintf(&v, "XCCL_NRANKS=%d", NRANKS) > 0) env[k++] = v;
  if (asprintf(&v, "XCCL_UNIQUE_ID=%s", idhex) > 0) env[k++] = v;
  if (asprintf(&v, "XCCL_TIMEOUT=%s", RANK_TIMEOUT) > 0) env[k++] = v;
  if (asprintf(&v, "XCCL_DEBUG_FILE=%s.rank%d", logpath, rank) > 0) env[k++] = v;
  if (asprintf(&v, REPORT_FD_ENV "=%d", report_fd) > 0) env[k++] = v;
  env[k] = NULL;
  return env;
}

static int count_in_file(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[2048];
  int n = 0;
  while (f && fgets(line, sizeof(line), f))
    if (strstr(line, needle)) n++;
  if (f) fclose(f);
  return n;
}

int main(int argc, char **argv) {
  if (argc > 3 && strcmp(argv[3], "idle") == 0) RANK_PAUSE_MS = 2500;
  if (argc > 2 && strcmp(argv[1], "--rank") == 0) return rank_main(atoi(argv[2]));
  if (argc > 1 && strcmp(argv[1], "idle") == 0) idle_only = 1, FLOOD_TOTAL = 400, RANK_PAUSE_MS = 2500, RANK_TIMEOUT = "6";
  signal(SIGPIPE, SIG_IGN);

  char logpath[] = "/tmp/xccl-flood-log-XXXXXX";
  int logfd = mkstemp(logpath);
  CHECK(logfd >= 0, "mkstemp: %s", strerror(errno));
  close(logfd);
  setenv("XCCL_DEBUG_FILE", logpath, 1); /* the root, in this process, logs its refusals there */
  setenv("XCCL_TIMEOUT", RANK_TIMEOUT, 1);
  fd_list_t base, end;
  fd_snapshot(&base, "xccl-flood-log");

  xcclUniqueId id;
  XCHECK(xcclGetUniqueId(&id));
  char idhex[2 * XCCL_UNIQUE_ID_BYTES + 1];
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) sprintf(idhex + 2 * i, "%02x", (unsigned char)id.internal[i]);
  bs_id_t bid;
  char why[256];
  CHECK(bs_id_decode(&id, &bid, why, sizeof(why)) == 0, "decode our own id: %s", why);
  char s[SOCK_ADDR_STRLEN];
  sock_addr_str(&bid.root, s, sizeof(s));
  CHECK(strncmp(s, "127.", 4) == 0 || strncmp(s, "[::1]", 5) == 0, "the root is not on loopback (%s): not flooding it", s);

  int pipefd[2];
  CHECK(pipe(pipefd) == 0, "pipe: %s", strerror(errno));
  fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
  fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);

  static flood_t f;
  f.targets[0] = bid.root;
  f.ntargets = 1;
  f.report_fd = pipefd[0];
  pthread_t flooder;
  CHECK(pthread_create(&flooder, NULL, flood_main, &f) == 0, "start the flooder");
  sleep_ms((int)(FLOOD_HEAD_START_S * 1000));

  double t0 = now_s();
  pid_t pids[NRANKS];
  char *self = realpath("/proc/self/exe", NULL);
  for (int r = 0; r < NRANKS; r++) {
    char rs[16];
    snprintf(rs, sizeof(rs), "%d", r);
    size_t nowned;
    char **env = rank_env(r, idhex, pipefd[1], logpath, &nowned);
    pids[r] = fork();
    if (pids[r] == 0) {
      char *args[] = {self, "--rank", rs, idle_only ? "idle" : NULL, NULL};
      execve(self, args, env);
      _exit(127);
    }
    for (char **e = env + nowned; *e; e++) free(*e);
    free(env);
  }
  close(pipefd[1]);

  int done = 0, status[NRANKS];
  while (done < NRANKS && now_s() - t0 < JOB_BOUND_S) {
    for (int r = 0; r < NRANKS; r++) {
      if (pids[r] <= 0) continue;
      if (waitpid(pids[r], &status[r], WNOHANG) == pids[r]) pids[r] = -pids[r], done++;
    }
    sleep_ms(20);
  }
  double dt = now_s() - t0;
  for (int r = 0; r < NRANKS; r++)
    if (pids[r] > 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status[r], 0);
      CHECK(0, "rank %d did not finish within %.0f s under the flood", r, JOB_BOUND_S);
    } else {
      CHECK(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0, "rank %d ended with status 0x%x", r, status[r]);
    }
  pthread_join(flooder, NULL);
  close(pipefd[0]);
  printf("job of %d ranks took %.1f s; flood: %d connections in %.1f s (idle %d, random %d, forged %d with %d "
         "frames sent, connect-close %d), %d refused\n",
         NRANKS, dt, f.started, f.seconds, f.by_kind[K_IDLE], f.by_kind[K_RANDOM], f.by_kind[K_FORGED], f.forged_sent,
         f.by_kind[K_CLOSE], f.refused);
  CHECK(f.started == FLOOD_TOTAL, "the flooder made only %d connections", f.started);
  CHECK(f.connected[0] > 0, "no flood connection reached the root");
  CHECK(f.ntargets == 1 + NRANKS, "only %d of %d ranks reported their bootstrap port", f.ntargets - 1, NRANKS);
  for (int t = 1; t < f.ntargets; t++)
    printf("rank listener %d: %d flood connections accepted by the kernel\n", t - 1, f.connected[t]);
  for (int t = 1; t < f.ntargets; t++) CHECK(f.connected[t] > 0, "no flood connection reached rank listener %d", t - 1);

  /* The root thread ends once every rank joined; give it a moment to close up. */
  int extra = 0;
  for (int i = 0; i < 100; i++) {
    fd_snapshot(&end, "xccl-flood-log");
    if (end.n == base.n) break;
    sleep_ms(20);
  }
  extra = fd_report_new("parent", &base, &end);
  CHECK(extra == 0 && end.n == base.n, "the parent has %d descriptors, %d before the job", end.n, base.n);

  /* Refused for what they sent, or dropped for sending nothing. */
  int root_refused = count_in_file(logpath, "refused a connection") + count_in_file(logpath, "dropped a connection");
  printf("the root logged %d refusals\n", root_refused);
  /* The root holds up to 1024 connections that have not said hello: silent
   * ones alone never make it refuse (the job's completing is the test). */
  CHECK(idle_only || root_refused > 0, "the root logged no refusal (log %s)", logpath);
  int rank_refused = 0;
  for (int r = 0; r < NRANKS; r++) {
    char p[96];
    snprintf(p, sizeof(p), "%s.rank%d", logpath, r);
    int n = count_in_file(p, "refused a connection") + count_in_file(p, "dropped a connection");
    printf("rank %d logged %d refusals\n", r, n);
    rank_refused += n;
    unlink(p);
  }
  CHECK(rank_refused > 0, "no rank logged a refusal: the flood never reached a served rank listener");
  unlink(logpath);
  free(self);
  return test_finish("fault flood");
}
