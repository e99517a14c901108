/*
 * test_net_conformance.c — the contract of net.h, checked over one transport.
 *
 * The transport is the one net_get() picks: XCCL_NET names it (socket when
 * unset on a host without verbs devices). Every case runs in two fresh
 * processes, a receiver (listen + accept) and a sender (connect), so that a
 * transport is initialised after fork() and a crash or a hang stays inside
 * the case. The parent hands nothing to the transport itself: it passes the
 * listen handle from the receiver to the sender over a pipe, and kills both
 * when the case outlives its deadline (a hang is a failure, never a wait).
 *
 *   handshake     connect()/accept() complete, retried until a deadline
 *   sizes         0, 1, odd, page +- 1, and above the largest chunk, each
 *                 checked byte by byte and with the bytes after the posted
 *                 buffer left alone
 *   ordered       2000 messages of mixed sizes, up to NET_MAX_REQUESTS in
 *                 flight on each side, matched in posting order
 *   bigger_recv   a receive larger than the message reports the real size
 *                 (buffers registered with reg_mr, one posted off its start)
 *   smaller_recv  a receive smaller than the message fails on the receiver
 *   inflight      NET_MAX_REQUESTS receives posted at once; one more is
 *                 refused with a NULL request, never an error
 *   close_sender  a sender that closes after its messages: they all arrive,
 *                 then the next receive fails with xcclRemoteError
 *   close_big     the same with messages larger than the kernel's buffers
 *                 (over sockets, sliced over several streams), every
 *                 receive posted at once as the proxy posts them: the last
 *                 message's slices still arrive after another stream has
 *                 seen the close, and the message completes
 *   kill_sender   a sender killed mid-transfer: xcclRemoteError, no hang
 *   kill_receiver a receiver killed: the sender's next sends fail with
 *                 xcclRemoteError, no hang
 *   flush         receives into a buffer registered with reg_mr, each followed
 *                 by iflush (tested to completion when it gives a request),
 *                 two flushes in flight at once, then the data checked; an
 *                 iflush of 0 bytes gives a NULL request (nothing to do)
 *   bad_rkey      (ib) the receiver advertises a wrong remote key: the
 *                 sender's completion fails with xcclRemoteError and the
 *                 verbs status text ("remote access error")
 *
 * Usage: test_net_conformance [case ...]   (default: every case)
 * Prints "case NAME: PASS|FAIL|SKIP (why)" per case; exit 0, 1, or 77 when
 * the chosen transport cannot start here.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "net.h"
#include "test_util.h"

#define CASE_TIMEOUT_S 90.0 /* the parent's limit for one case, both processes */
#define WAIT_S 40.0         /* one connect, accept, post or completion */
#define FAIL_WAIT_S 30.0    /* a failure that must be reported */

/* Cases that do not apply to a transport: data, not #ifdefs. */
static const struct {
  const char *transport, *cases;
} net_excludes[] = {
    {"socket", "bad_rkey"},
};

/* Transports whose iflush has work to do for registered memory (the others
 * may answer every iflush with a NULL request). */
static const char *const net_flush_posts[] = {"ib"};

typedef struct {
  const xccl_net_ops_v1_t *ops;
  void *comm;
  int to_peer, from_peer; /* token pipes between the two roles */
  net_props_t props;
} role_t;

typedef void role_fn(role_t *r);

/* ---- small helpers, used inside the roles ---- */

static void fail_exit(const char *what, xcclResult_t res) {
  fprintf(stderr, "[%d] %s: %s: %s\n", (int)getpid(), what, xcclGetErrorString(res), err_last());
  exit(1);
}

static void token_send(role_t *r, char c) {
  if (write(r->to_peer, &c, 1) != 1 && errno != EPIPE) fprintf(stderr, "token write: %s\n", strerror(errno));
}

/* Waits for the peer's token; returns 0 when the peer is gone instead. */
static int token_wait(role_t *r) {
  char c;
  ssize_t n;
  while ((n = read(r->from_peer, &c, 1)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

static unsigned char pattern(uint64_t msg, size_t i) { return (unsigned char)(msg * 131 + i * 7 + (i >> 9)); }

static void fill(unsigned char *p, size_t n, uint64_t msg) {
  for (size_t i = 0; i < n; i++) p[i] = pattern(msg, i);
}

/* Index of the first wrong byte, or n when all are right. */
static size_t verify(const unsigned char *p, size_t n, uint64_t msg) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != pattern(msg, i)) return i;
  return n;
}

/* Posts until the transport takes the request; a NULL request means retry. */
static void *post(role_t *r, int is_send, void *data, size_t size) {
  uint64_t deadline = clock_deadline(WAIT_S);
  for (;;) {
    void *req = NULL;
    xcclResult_t res = is_send ? r->ops->isend(r->comm, data, size, NULL, &req)
                               : r->ops->irecv(r->comm, data, size, NULL, &req);
    if (res != xcclSuccess) fail_exit(is_send ? "isend" : "irecv", res);
    if (req) return req;
    if (clock_expired(deadline)) {
      fprintf(stderr, "[%d] %s of %zu bytes: no resources for %.0f s\n", (int)getpid(), is_send ? "isend" : "irecv",
              size, WAIT_S);
      exit(1);
    }
  }
}


/* Tests until done or an error and returns the result; a request that
 * neither completes nor fails within `seconds` is a hang: exit 1. */
static xcclResult_t wait_req(role_t *r, void *req, size_t *size_p, double seconds) {
  uint64_t deadline = clock_deadline(seconds);
  for (;;) {
    int done = 0;
    size_t size = 0;
    xcclResult_t res = r->ops->test(req, &done, &size);
    if (res != xcclSuccess) return res;
    if (done) {
      if (size_p) *size_p = size;
      return xcclSuccess;
    }
    if (clock_expired(deadline)) {
      fprintf(stderr, "[%d] a request neither completed nor failed in %.0f s\n", (int)getpid(), seconds);
      exit(1);
    }
  }
}

static void wait_ok(role_t *r, void *req, size_t *size_p) {
  xcclResult_t res = wait_req(r, req, size_p, WAIT_S);
  if (res != xcclSuccess) fail_exit("test", res);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

/* ---- the cases: one function per role ---- */

static void nothing(role_t *r) {}

static const size_t sizes[] = {0,     1,     2,     7,     63,    64,          65,
                               4095,  4096,  4097,  65535, 65536, 65537,       (1u << 20) + 3,
                               (9u << 20) + 5 /* above any chunk a transport cuts messages into */};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define GUARD 64

static void sizes_send(role_t *r) {
  for (size_t k = 0; k < NSIZES; k++) {
    size_t n = sizes[k] < r->props.max_msg ? sizes[k] : r->props.max_msg;
    unsigned char *buf = xmalloc(n);
    fill(buf, n, k);
    wait_ok(r, post(r, 1, buf, n), NULL);
    free(buf);
  }
  token_wait(r); /* the receiver has checked everything */
}

static void sizes_recv(role_t *r) {
  /* Buffers stay allocated while the comm lives: a transport may keep them
   * registered (net.h: a NULL mhandle). */
  unsigned char *bufs[NSIZES];
  for (size_t k = 0; k < NSIZES; k++) {
    size_t n = sizes[k] < r->props.max_msg ? sizes[k] : r->props.max_msg, got = 12345;
    bufs[k] = xmalloc(n + GUARD);
    memset(bufs[k], 0xee, n + GUARD);
    wait_ok(r, post(r, 0, bufs[k], n), &got);
    CHECK(got == n, "message %zu: received size %zu, sent %zu", k, got, n);
    size_t bad = verify(bufs[k], n, k);
    CHECK(bad == n, "message %zu (%zu bytes): byte %zu differs", k, n, bad);
    size_t g = 0;
    while (g < GUARD && bufs[k][n + g] == 0xee) g++;
    CHECK(g == GUARD, "message %zu (%zu bytes): the transport wrote past the posted buffer", k, n);
  }
  for (size_t k = 0; k < NSIZES; k++) free(bufs[k]);
  token_send(r, 'k');
}

#define ORDERED_N 2000
#define ORDERED_MAX 20000

static size_t ordered_size(uint64_t i) {
  uint64_t x = i * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return i % 17 == 0 ? 0 : (size_t)(x % ORDERED_MAX);
}

/* Keeps up to NET_MAX_REQUESTS requests in flight; completions are taken in
 * posting order, which is the order the contract promises. */
static void ordered_role(role_t *r, int is_send) {
  enum { W = NET_MAX_REQUESTS };
  unsigned char *bufs[W];
  void *reqs[W];
  for (int i = 0; i < W; i++) bufs[i] = xmalloc(ORDERED_MAX);
  uint64_t posted = 0, done = 0, deadline = clock_deadline(WAIT_S * 2);
  while (done < ORDERED_N) {
    int moved = 0;
    if (posted < ORDERED_N && posted - done < W) {
      int s = (int)(posted % W);
      size_t n = is_send ? ordered_size(posted) : ORDERED_MAX;
      if (is_send) fill(bufs[s], n, posted);
      void *req = NULL;
      xcclResult_t res = is_send ? r->ops->isend(r->comm, bufs[s], n, NULL, &req)
                                 : r->ops->irecv(r->comm, bufs[s], n, NULL, &req);
      if (res != xcclSuccess) fail_exit("post", res);
      if (req) {
        reqs[s] = req;
        posted++;
        moved = 1;
      }
    }
    if (done < posted) {
      int s = (int)(done % W), fin = 0;
      size_t got = 0;
      xcclResult_t res = r->ops->test(reqs[s], &fin, &got);
      if (res != xcclSuccess) fail_exit("test", res);
      if (fin) {
        if (!is_send) {
          size_t want = ordered_size(done);
          CHECK(got == want, "message %llu: size %zu, sent %zu", (unsigned long long)done, got, want);
          size_t bad = verify(bufs[s], got < want ? got : want, done);
          CHECK(bad == (got < want ? got : want), "message %llu: byte %zu differs (out of order?)",
                (unsigned long long)done, bad);
        }
        done++;
        moved = 1;
      }
    }
    if (moved) deadline = clock_deadline(WAIT_S);
    if (clock_expired(deadline)) {
      fprintf(stderr, "ordered: stuck at %llu posted, %llu done\n", (unsigned long long)posted,
              (unsigned long long)done);
      exit(1);
    }
  }
  if (is_send) token_wait(r);
  else token_send(r, 'k');
  for (int i = 0; i < W; i++) free(bufs[i]);
}

static void ordered_send(role_t *r) { ordered_role(r, 1); }
static void ordered_recv(role_t *r) { ordered_role(r, 0); }

/* Posts with an mhandle from reg_mr (both sides), then deregisters. */
static void *post_mr(role_t *r, int is_send, void *data, size_t size, void *mh) {
  uint64_t deadline = clock_deadline(WAIT_S);
  for (;;) {
    void *req = NULL;
    xcclResult_t res = is_send ? r->ops->isend(r->comm, data, size, mh, &req) : r->ops->irecv(r->comm, data, size, mh, &req);
    if (res != xcclSuccess) fail_exit(is_send ? "isend" : "irecv", res);
    if (req) return req;
    if (clock_expired(deadline)) fail_exit("post (no resources)", xcclInternalError);
  }
}

static void *reg(role_t *r, void *data, size_t size) {
  void *mh = NULL;
  xcclResult_t res = r->ops->reg_mr(r->comm, data, size, NET_PTR_HOST, &mh);
  if (res != xcclSuccess) fail_exit("reg_mr", res);
  return mh;
}

static void bigger_send(role_t *r) {
  size_t n = 100000;
  unsigned char *buf = xmalloc(n);
  fill(buf, 1000, 1);
  void *mh = reg(r, buf, n);
  wait_ok(r, post_mr(r, 1, buf, 1000, mh), NULL);
  wait_ok(r, post_mr(r, 1, buf, 0, mh), NULL);
  fill(buf, n, 4);
  wait_ok(r, post_mr(r, 1, buf, n, mh), NULL);
  token_wait(r);
  CHECK(r->ops->dereg_mr(r->comm, mh) == xcclSuccess, "dereg_mr");
  free(buf);
}

static void bigger_recv(role_t *r) {
  size_t cap = 1u << 20, got = 0;
  unsigned char *buf = xmalloc(cap);
  void *mh = reg(r, buf, cap);
  wait_ok(r, post_mr(r, 0, buf, cap, mh), &got);
  CHECK(got == 1000, "a 1000-byte message into a %zu-byte receive reported %zu bytes", cap, got);
  CHECK(verify(buf, 1000, 1) == 1000, "the 1000 bytes differ");
  got = 77;
  wait_ok(r, post_mr(r, 0, buf, cap, mh), &got);
  CHECK(got == 0, "an empty message into a %zu-byte receive reported %zu bytes", cap, got);
  wait_ok(r, post_mr(r, 0, buf + 1, cap - 1, mh), &got); /* inside the registration, not at its start */
  CHECK(got == 100000 && verify(buf + 1, got, 4) == got, "a registered 100000-byte message is wrong (size %zu)", got);
  CHECK(r->ops->dereg_mr(r->comm, mh) == xcclSuccess, "dereg_mr");
  free(buf);
  token_send(r, 'k');
}

static const size_t flush_sizes[] = {1, 3, 4096, 65537, 1u << 20};
#define NFLUSH (sizeof(flush_sizes) / sizeof(flush_sizes[0]))

static void flush_send(role_t *r) {
  unsigned char *buf = xmalloc(1u << 20);
  for (size_t k = 0; k < NFLUSH; k++) {
    fill(buf, flush_sizes[k], 10 + k);
    wait_ok(r, post(r, 1, buf, flush_sizes[k]), NULL);
  }
  token_wait(r);
  free(buf);
}

/* iflush as the proxy calls it after a receive into GPU memory; NULL = the
 * transport has nothing to do. */
static void *flush_post(role_t *r, void *data, size_t size, void *mh) {
  void *req = NULL;
  xcclResult_t res = r->ops->iflush(r->comm, data, size, mh, &req);
  if (res != xcclSuccess) fail_exit("iflush", res);
  return req;
}

static void flush_recv(role_t *r) {
  size_t cap = 1u << 20;
  unsigned char *buf = xmalloc(cap);
  void *mh = reg(r, buf, cap);
  for (size_t k = 0; k < NFLUSH; k++) {
    size_t got = 0;
    memset(buf, 0xee, cap);
    wait_ok(r, post_mr(r, 0, buf, cap, mh), &got);
    CHECK(got == flush_sizes[k], "message %zu: received size %zu, sent %zu", k, got, flush_sizes[k]);
    void *req = flush_post(r, buf, got, mh);
    if (req) wait_ok(r, req, NULL);
    size_t bad = verify(buf, got, 10 + k);
    CHECK(bad == got, "message %zu (%zu bytes): byte %zu differs after the flush", k, got, bad);
  }
  /* Two flushes in flight (parts of the last message), completed in order. */
  void *a = flush_post(r, buf, 100, mh), *b = flush_post(r, buf + 4096, 8192, mh);
  if (a) wait_ok(r, a, NULL);
  if (b) wait_ok(r, b, NULL);
  int must_post = 0;
  for (size_t i = 0; i < sizeof(net_flush_posts) / sizeof(net_flush_posts[0]); i++)
    must_post |= strcasecmp(net_flush_posts[i], r->ops->name) == 0;
  CHECK(!must_post || (a && b), "%s: iflush of registered memory gave no request", r->ops->name);
  printf("flush: %s's iflush %s\n", r->ops->name, a && b ? "posted work, completed by test" : "had nothing to do");
  CHECK(flush_post(r, buf, 0, mh) == NULL, "iflush of 0 bytes gave a request (nothing to flush)");
  CHECK(r->ops->dereg_mr(r->comm, mh) == xcclSuccess, "dereg_mr");
  free(buf);
  token_send(r, 'k');
}

static void smaller_send(role_t *r) {
  static unsigned char buf[1000];
  fill(buf, sizeof(buf), 2);
  void *req = post(r, 1, buf, sizeof(buf));
  /* Completing or failing are both fine for the sender; hanging is not. */
  xcclResult_t res = wait_req(r, req, NULL, WAIT_S);
  printf("smaller_recv: the sender's request %s%s%s\n", res == xcclSuccess ? "completed" : "failed: ",
         res == xcclSuccess ? "" : xcclGetErrorString(res), res == xcclSuccess ? "" : "");
  token_wait(r);
}

static void smaller_recv(role_t *r) {
  static unsigned char buf[100 + GUARD];
  memset(buf, 0xee, sizeof(buf));
  void *req = post(r, 0, buf, 100);
  xcclResult_t res = wait_req(r, req, NULL, FAIL_WAIT_S);
  CHECK(res != xcclSuccess, "a 1000-byte message into a 100-byte receive succeeded");
  if (res != xcclSuccess) printf("smaller_recv: receiver error as expected: %s: %s\n", xcclGetErrorString(res), err_last());
  size_t g = 0;
  while (g < GUARD && buf[100 + g] == 0xee) g++;
  CHECK(g == GUARD, "the transport wrote past the 100-byte receive");
  token_send(r, 'k');
}

static void inflight_send(role_t *r) {
  enum { N = NET_MAX_REQUESTS + 1 };
  static unsigned char bufs[N][256];
  void *reqs[N];
  for (int i = 0; i < NET_MAX_REQUESTS; i++) {
    fill(bufs[i], sizeof(bufs[i]), (uint64_t)i);
    reqs[i] = post(r, 1, bufs[i], sizeof(bufs[i]));
  }
  for (int i = 0; i < NET_MAX_REQUESTS; i++) wait_ok(r, reqs[i], NULL);
  fill(bufs[N - 1], sizeof(bufs[N - 1]), N - 1);
  wait_ok(r, post(r, 1, bufs[N - 1], sizeof(bufs[N - 1])), NULL);
  token_wait(r);
}

static void inflight_recv(role_t *r) {
  enum { N = NET_MAX_REQUESTS + 1 };
  static unsigned char bufs[N][256];
  void *reqs[N];
  for (int i = 0; i < NET_MAX_REQUESTS; i++) reqs[i] = post(r, 0, bufs[i], sizeof(bufs[i]));
  void *extra = NULL;
  xcclResult_t res = r->ops->irecv(r->comm, bufs[N - 1], sizeof(bufs[N - 1]), NULL, &extra);
  CHECK(res == xcclSuccess, "irecv number %d returned an error instead of a NULL request", NET_MAX_REQUESTS + 1);
  CHECK(extra == NULL, "irecv number %d was accepted with %d in flight", NET_MAX_REQUESTS + 1, NET_MAX_REQUESTS);
  for (int i = 0; i < NET_MAX_REQUESTS; i++) {
    size_t got = 0;
    wait_ok(r, reqs[i], &got);
    CHECK(got == sizeof(bufs[i]) && verify(bufs[i], got, (uint64_t)i) == got, "in-flight message %d is wrong", i);
  }
  if (!extra) extra = post(r, 0, bufs[N - 1], sizeof(bufs[N - 1]));
  size_t got = 0;
  wait_ok(r, extra, &got);
  CHECK(got == sizeof(bufs[N - 1]) && verify(bufs[N - 1], got, N - 1) == got, "the message after the window is wrong");
  token_send(r, 'k');
}

static unsigned char close_bufs[4][4096];

static void close_send_role(role_t *r) {
  for (int i = 0; i < 3; i++) {
    fill(close_bufs[i], sizeof(close_bufs[i]), (uint64_t)i);
    wait_ok(r, post(r, 1, close_bufs[i], sizeof(close_bufs[i])), NULL);
  }
  r->ops->close_send(r->comm);
  r->comm = NULL;
  token_wait(r);
}

/* Receives `good` messages, then expects the next receive to fail with
 * xcclRemoteError in time. */
static void recv_then_failure(role_t *r, int good, size_t last_size, const char *why) {
  for (int i = 0; i < good; i++) {
    size_t got = 0;
    wait_ok(r, post(r, 0, close_bufs[i], sizeof(close_bufs[i])), &got);
    CHECK(got == sizeof(close_bufs[i]) && verify(close_bufs[i], got, (uint64_t)i) == got,
          "%s: message %d before the close is wrong", why, i);
  }
  /* Then receives until the failure shows: messages that were complete when
   * the peer went may still arrive first. */
  unsigned char *big = xmalloc(last_size);
  uint64_t deadline = clock_deadline(FAIL_WAIT_S);
  xcclResult_t res = xcclSuccess;
  for (int k = 0; res == xcclSuccess && k < 1000 && !clock_expired(deadline); k++) {
    void *req = NULL;
    do { /* a failed comm may refuse the post itself: that is the error too */
      res = r->ops->irecv(r->comm, big, last_size, NULL, &req);
    } while (res == xcclSuccess && !req && !clock_expired(deadline));
    if (res == xcclSuccess && req) res = wait_req(r, req, NULL, FAIL_WAIT_S);
  }
  CHECK(res == xcclRemoteError, "%s: the receive after it returned %s, not xcclRemoteError", why,
        xcclGetErrorString(res));
  printf("%s: receiver saw: %s\n", why, err_last());
  token_send(r, 'k');
  free(big);
}

static void close_recv_role(role_t *r) { recv_then_failure(r, 3, 4096, "close_sender"); }

/* close_big: three messages of 32 MiB, more than the kernel buffers both
 * ends hold, and the close right after the last send completes, while the
 * receiver (every receive posted at once, and one more) still reads. */
#define BIG_N 3
#define BIG_BYTES (32u << 20)

static void close_big_send(role_t *r) {
  unsigned char *b = xmalloc(BIG_BYTES);
  for (int i = 0; i < BIG_N; i++) {
    fill(b, BIG_BYTES, (uint64_t)i);
    wait_ok(r, post(r, 1, b, BIG_BYTES), NULL);
  }
  r->ops->close_send(r->comm);
  r->comm = NULL;
  token_wait(r);
  free(b);
}

static void close_big_recv(role_t *r) {
  unsigned char *b = xmalloc((size_t)(BIG_N + 1) * BIG_BYTES);
  void *req[BIG_N + 1];
  for (int i = 0; i <= BIG_N; i++) req[i] = post(r, 0, b + (size_t)i * BIG_BYTES, BIG_BYTES);
  for (int i = 0; i < BIG_N; i++) {
    size_t got = 0;
    xcclResult_t res = wait_req(r, req[i], &got, WAIT_S);
    CHECK(res == xcclSuccess, "close_big: message %d, sent in full before the close, failed: %s", i, err_last());
    if (res != xcclSuccess) break;
    size_t bad = verify(b + (size_t)i * BIG_BYTES, got, (uint64_t)i);
    CHECK(got == BIG_BYTES && bad == got, "close_big: message %d: %zu bytes, first wrong byte %zu", i, got, bad);
  }
  xcclResult_t res = wait_req(r, req[BIG_N], NULL, FAIL_WAIT_S);
  CHECK(res == xcclRemoteError, "close_big: the receive after the close returned %s, not xcclRemoteError",
        xcclGetErrorString(res));
  token_send(r, 'k');
  free(b);
}

static void kill_send_role(role_t *r) {
  fill(close_bufs[0], sizeof(close_bufs[0]), 0);
  wait_ok(r, post(r, 1, close_bufs[0], sizeof(close_bufs[0])), NULL);
  size_t n = 16u << 20;
  unsigned char *big = xmalloc(n);
  memset(big, 1, n);
  for (;;) { /* dies while a send is under way (not complete) */
    void *req = post(r, 1, big, n);
    int done = 0;
    for (int i = 0; i < 20 && !done; i++)
      if (r->ops->test(req, &done, NULL) != xcclSuccess) break;
    if (!done) break;
  }
  fflush(stdout);
  raise(SIGKILL);
}

static void kill_recv_role(role_t *r) { recv_then_failure(r, 1, 16u << 20, "kill_sender"); }

static void victim_recv_role(role_t *r) {
  size_t got = 0;
  wait_ok(r, post(r, 0, close_bufs[0], sizeof(close_bufs[0])), &got);
  fflush(stdout);
  raise(SIGKILL);
}

static void survivor_send_role(role_t *r) {
  fill(close_bufs[0], sizeof(close_bufs[0]), 0);
  wait_ok(r, post(r, 1, close_bufs[0], sizeof(close_bufs[0])), NULL);
  size_t n = 1u << 20;
  unsigned char *big = xmalloc(n);
  memset(big, 2, n);
  /* Until an error: a stream transport may take the first megabytes into
   * its buffers before it learns that the peer is gone. */
  uint64_t deadline = clock_deadline(FAIL_WAIT_S);
  xcclResult_t res = xcclSuccess;
  while (res == xcclSuccess && !clock_expired(deadline)) {
    void *req = NULL;
    res = r->ops->isend(r->comm, big, n, NULL, &req);
    if (res == xcclSuccess && req) res = wait_req(r, req, NULL, FAIL_WAIT_S);
  }
  CHECK(res == xcclRemoteError, "kill_receiver: sending to a dead receiver returned %s, not xcclRemoteError",
        xcclGetErrorString(res));
  printf("kill_receiver: sender saw: %s\n", err_last());
  free(big);
}

static void badkey_prepare(void) {
  setenv("XCCL_IB_FAULT_RKEY", "1", 1);
  config_reset_for_test();
}

static void badkey_send(role_t *r) {
  static unsigned char buf[8192];
  fill(buf, sizeof(buf), 3);
  void *req = NULL;
  uint64_t deadline = clock_deadline(WAIT_S);
  xcclResult_t res;
  do {
    res = r->ops->isend(r->comm, buf, sizeof(buf), NULL, &req);
  } while (res == xcclSuccess && !req && !clock_expired(deadline));
  if (res == xcclSuccess && req) res = wait_req(r, req, NULL, FAIL_WAIT_S);
  const char *msg = err_last();
  CHECK(res == xcclRemoteError, "a write with a wrong remote key returned %s", xcclGetErrorString(res));
  CHECK(strstr(msg, "remote access error") != NULL, "the error does not carry the verbs status: %s", msg);
  printf("bad_rkey: sender saw: %s\n", msg);
  token_send(r, 'k');
}

static void badkey_recv(role_t *r) {
  static unsigned char buf[8192];
  void *req = post(r, 0, buf, sizeof(buf));
  /* The receive must end too, by an error (the QP breaks, or the sender
   * leaves after its failure), never by delivering bytes that were not sent. */
  xcclResult_t res = wait_req(r, req, NULL, FAIL_WAIT_S);
  CHECK(res != xcclSuccess, "a receive advertised with a wrong key completed");
  printf("bad_rkey: receiver saw: %s\n", res == xcclSuccess ? "success" : err_last());
  token_wait(r);
}

typedef struct {
  const char *name;
  role_fn *recv, *send;
  void (*recv_prepare)(void);
  int recv_dies, send_dies; /* that role ends by SIGKILL on purpose */
} net_case_t;

static const net_case_t cases[] = {
    {"handshake", nothing, nothing, NULL, 0, 0},
    {"sizes", sizes_recv, sizes_send, NULL, 0, 0},
    {"ordered", ordered_recv, ordered_send, NULL, 0, 0},
    {"bigger_recv", bigger_recv, bigger_send, NULL, 0, 0},
    {"flush", flush_recv, flush_send, NULL, 0, 0},
    {"smaller_recv", smaller_recv, smaller_send, NULL, 0, 0},
    {"inflight", inflight_recv, inflight_send, NULL, 0, 0},
    {"close_sender", close_recv_role, close_send_role, NULL, 0, 0},
    {"close_big", close_big_recv, close_big_send, NULL, 0, 0},
    {"kill_sender", kill_recv_role, kill_send_role, NULL, 0, 1},
    {"kill_receiver", victim_recv_role, survivor_send_role, NULL, 1, 0},
    {"bad_rkey", badkey_recv, badkey_send, badkey_prepare, 0, 0},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- the processes ---- */

static const xccl_net_ops_v1_t *role_start(role_t *r) {
  const xccl_net_ops_v1_t *ops = NULL;
  xcclResult_t res = net_get(&ops);
  if (res != xcclSuccess) fail_exit("net_get", res);
  r->ops = ops;
  res = ops->get_properties(0, &r->props);
  if (res != xcclSuccess) fail_exit("get_properties", res);
  return ops;
}

static void run_receiver(const net_case_t *c, int handle_fd, int to_peer, int from_peer) {
  role_t r = {.to_peer = to_peer, .from_peer = from_peer};
  if (c->recv_prepare) c->recv_prepare();
  const xccl_net_ops_v1_t *ops = role_start(&r);
  net_handle_t h;
  void *lc = NULL;
  xcclResult_t res = ops->listen(0, &h, &lc);
  if (res != xcclSuccess) fail_exit("listen", res);
  if (write(handle_fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) exit(1);
  close(handle_fd);
  uint64_t deadline = clock_deadline(WAIT_S);
  while (!r.comm) {
    res = ops->accept(lc, &r.comm);
    if (res != xcclSuccess) fail_exit("accept", res);
    if (!r.comm && clock_expired(deadline)) {
      fprintf(stderr, "accept: no connection in %.0f s\n", WAIT_S);
      exit(1);
    }
  }
  ops->close_listen(lc);
  c->recv(&r);
  if (r.comm) ops->close_recv(r.comm);
}

static void run_sender(const net_case_t *c, int handle_fd, int to_peer, int from_peer) {
  role_t r = {.to_peer = to_peer, .from_peer = from_peer};
  net_handle_t h;
  if (read(handle_fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) exit(1); /* receiver failed before listening */
  close(handle_fd);
  const xccl_net_ops_v1_t *ops = role_start(&r);
  uint64_t deadline = clock_deadline(WAIT_S);
  while (!r.comm) {
    xcclResult_t res = ops->connect(0, &h, &r.comm);
    if (res != xcclSuccess) fail_exit("connect", res);
    if (!r.comm && clock_expired(deadline)) {
      ops->connect_abandon(&h);
      fprintf(stderr, "connect: not connected in %.0f s\n", WAIT_S);
      exit(1);
    }
  }
  c->send(&r);
  if (r.comm) ops->close_send(r.comm);
}

static int excluded(const char *transport, const char *name) {
  for (size_t i = 0; i < sizeof(net_excludes) / sizeof(net_excludes[0]); i++) {
    if (strcasecmp(net_excludes[i].transport, transport) != 0) continue;
    const char *p = strstr(net_excludes[i].cases, name);
    size_t n = strlen(name);
    if (p && (p[n] == 0 || p[n] == ',') && (p == net_excludes[i].cases || p[-1] == ',')) return 1;
  }
  return 0;
}

/* How a role ended: 0 as it should, else 1 (message printed). */
static int judge(const char *cname, const char *role, int status, int dies) {
  if (dies && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status))
    fprintf(stderr, "case %s: the %s exited with %d\n", cname, role, WEXITSTATUS(status));
  else
    fprintf(stderr, "case %s: the %s was killed by signal %d%s\n", cname, role, WTERMSIG(status),
            WTERMSIG(status) == SIGKILL ? " (the case deadline)" : "");
  return 1;
}

/* Both roles in their own processes; the parent only watches the clock. */
static int run_case(const net_case_t *c) {
  int hp[2], rs[2], sr[2];
  if (pipe(hp) || pipe(rs) || pipe(sr)) return fprintf(stderr, "pipe: %s\n", strerror(errno)), 1;
  fflush(stdout);
  fflush(stderr);
  pid_t rpid = fork();
  if (rpid == 0) {
    close(hp[0]), close(rs[0]), close(sr[1]);
    run_receiver(c, hp[1], rs[1], sr[0]);
    exit(test_failures ? 1 : 0); /* exit, not _exit: coverage counters are written at exit */
  }
  pid_t spid = fork();
  if (spid == 0) {
    close(hp[1]), close(rs[1]), close(sr[0]);
    run_sender(c, hp[0], sr[1], rs[0]);
    exit(test_failures ? 1 : 0); /* exit, not _exit: coverage counters are written at exit */
  }
  close(hp[0]), close(hp[1]), close(rs[0]), close(rs[1]), close(sr[0]), close(sr[1]);
  if (rpid < 0 || spid < 0) return fprintf(stderr, "fork: %s\n", strerror(errno)), 1;
  int rstatus = -1, sstatus = -1, left = 2;
  uint64_t deadline = clock_deadline(CASE_TIMEOUT_S);
  while (left > 0) {
    int status;
    pid_t w = waitpid(-1, &status, WNOHANG);
    if (w == rpid) rstatus = status, left--;
    else if (w == spid) sstatus = status, left--;
    if (w > 0) continue;
    if (clock_expired(deadline)) {
      fprintf(stderr, "case %s: still running after %.0f s: killed (a hang)\n", c->name, CASE_TIMEOUT_S);
      if (rstatus == -1) kill(rpid, SIGKILL);
      if (sstatus == -1) kill(spid, SIGKILL);
      deadline = UINT64_MAX;
    }
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return judge(c->name, "receiver", rstatus, c->recv_dies) | judge(c->name, "sender", sstatus, c->send_dies);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN); /* a token for a peer that died is not a crash */
  const char *want = config_str(CFG_NET);
  /* Which transport net_get() gives, found in a child so that this process
   * never initialises one (the cases fork after this). */
  char tname[64] = "";
  int np[2];
  if (pipe(np)) return perror("pipe"), 1;
  pid_t pid = fork();
  if (pid == 0) {
    const xccl_net_ops_v1_t *ops = NULL;
    xcclResult_t res = net_get(&ops);
    if (res == xcclSuccess) {
      if (write(np[1], ops->name, strlen(ops->name)) < 0) _exit(1);
      _exit(0);
    }
    fprintf(stderr, "%s\n", err_last());
    _exit(2);
  }
  close(np[1]);
  ssize_t n = read(np[0], tname, sizeof(tname) - 1);
  close(np[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (n <= 0) {
    char why[160];
    snprintf(why, sizeof(why), "network transport '%s' cannot start here (see the message above)", *want ? want : "default");
    test_skip(why);
  }
  tname[n] = 0;
  printf("net conformance over transport '%s'\n", tname);
  int failed = 0, ran = 0;
  for (size_t i = 0; i < NCASES; i++) {
    int chosen = argc <= 1;
    for (int a = 1; a < argc; a++) chosen |= strcmp(argv[a], cases[i].name) == 0;
    if (!chosen) continue;
    if (excluded(tname, cases[i].name)) {
      printf("case %s: SKIP (does not apply to %s)\n", cases[i].name, tname);
      continue;
    }
    uint64_t t0 = clock_ns();
    int bad = run_case(&cases[i]);
    ran++;
    failed += bad;
    test_checks++;
    printf("case %s: %s (%.2f s)\n", cases[i].name, bad ? "FAIL" : "PASS", (double)(clock_ns() - t0) / 1e9);
    fflush(stdout);
  }
  if (ran == 0) test_skip("no case selected");
  test_failures += failed;
  return test_finish("net_conformance");
}
