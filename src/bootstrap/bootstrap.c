/*
 * bootstrap.c — the root's admission loop and the ranks' side of it.
 * Message formats and checks live in bootstrap_msg.c, point-to-point
 * messages in bootstrap_p2p.c, the all-gather in bootstrap_allgather.c.
 */
#include "bootstrap.h"
#include "bootstrap_conn.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "encryption.h"
#include "error.h"
#include "log.h"
#include "thread.h"

#define BS_MAX_CANDIDATES 1024
#define BS_FAIL_GRACE_S 5.0 /* ranks wait this much longer than the root */
#define BS_GAVE_UP_LINGER_S 3.0 /* after root_give_up, ranks that come are still told why */

/* ---- The root ---- */

typedef struct {
  int listen_fd;
  sock_addr_t addr;
  bs_id_t id;
  uint64_t deadline;
  bs_conn_t *cands;
  int ncands;
  int nranks; /* learned from the first authentic hello */
  bs_conn_t *ranks;
  bs_hello_t *hellos;
  int joined;
  char gave_up[720]; /* set: a would-be rank said why the job cannot run (root_give_up) */
} bs_root_t;

static void root_refuse(bs_root_t *rt, int k, const char *why, int tell) {
  char s[SOCK_ADDR_STRLEN], from[SOCK_ADDR_STRLEN]; /* two: both strings are arguments of one call */
  bs_conn_t *c = &rt->cands[k];
  unsigned long nth;
  if (sock_refusal_first(&c->from, &nth))
    WARN(BOOTSTRAP, "bootstrap root %s refused a connection from %s: %s (later ones from that host: INFO)",
         sock_addr_str(&rt->addr, s, sizeof(s)), sock_addr_str(&c->from, from, sizeof(from)), why);
  else
    INFO(BOOTSTRAP, "bootstrap root %s refused a connection from %s (#%lu from that host): %s",
         sock_addr_str(&rt->addr, s, sizeof(s)), sock_addr_str(&c->from, from, sizeof(from)), nth, why);
  if (tell) send_fail(c, xcclInvalidUsage, rt->id.secret, c->nonce, why);
  conn_close(c);
  rt->cands[k] = rt->cands[--rt->ncands];
}

/* A candidate that holds the secret says it cannot join (it differs in
 * XCCL_TLS): the job cannot run, so every rank is told now (root_finish)
 * instead of at XCCL_TIMEOUT. */
static void root_give_up(bs_root_t *rt, int k) {
  bs_conn_t *c = &rt->cands[k];
  char s[SOCK_ADDR_STRLEN];
  int n = c->h.len > 4 ? (int)c->h.len - 4 : 0;
  snprintf(rt->gave_up, sizeof(rt->gave_up), "%.*s", n > 600 ? 600 : n, (const char *)c->frame + BS_HDR_BYTES + 4);
  WARN(BOOTSTRAP, "bootstrap root %s: %s", sock_addr_str(&rt->addr, s, sizeof(s)), rt->gave_up);
  conn_close(c);
  rt->cands[k] = rt->cands[--rt->ncands];
  for (int i = 0; i < rt->nranks; i++) {
    if (rt->ranks[i].fd < 0) continue;
    send_fail(&rt->ranks[i], xcclInvalidUsage, rt->id.secret, rt->ranks[i].nonce, rt->gave_up);
    conn_close(&rt->ranks[i]);
  }
  /* Ranks still on their way are told as they say hello (root_admit), for a little while. */
  uint64_t linger = clock_deadline(BS_GAVE_UP_LINGER_S);
  if (linger < rt->deadline) rt->deadline = linger;
}

/* A candidate sent an authentic frame: admit it as a rank, or refuse. */
static void root_admit(bs_root_t *rt, int k) {
  bs_conn_t *c = &rt->cands[k];
  bs_hello_t h;
  char why[400];
  if (c->h.type == BS_FAIL) return root_give_up(rt, k);
  if (rt->gave_up[0]) return root_refuse(rt, k, rt->gave_up, 1);
  if (c->h.type != BS_HELLO) {
    snprintf(why, sizeof(why), "expected a hello, got message type %u", c->h.type);
    return root_refuse(rt, k, why, 1);
  }
  if (bs_hello_decode(c->frame + BS_HDR_BYTES, c->h.len, &h, why, sizeof(why)) != 0)
    return root_refuse(rt, k, why, 1);
  if (h.job != rt->id.job) return root_refuse(rt, k, "the hello is for another job", 1);
  if (rt->nranks == 0) {
    rt->ranks = calloc((size_t)h.nranks, sizeof(*rt->ranks));
    rt->hellos = calloc((size_t)h.nranks, sizeof(*rt->hellos));
    if (!rt->ranks || !rt->hellos) return root_refuse(rt, k, "the root is out of memory", 1);
    for (int i = 0; i < h.nranks; i++) rt->ranks[i].fd = -1;
    rt->nranks = h.nranks;
  }
  if (h.nranks != rt->nranks) {
    snprintf(why, sizeof(why), "rank %d (host %s pid %u) says nranks=%d but the ranks before it said %d", h.rank,
             h.host, h.pid, h.nranks, rt->nranks);
    return root_refuse(rt, k, why, 1);
  }
  if (rt->ranks[h.rank].fd >= 0) {
    snprintf(why, sizeof(why), "rank %d joined twice: host %s pid %u, and earlier host %s pid %u", h.rank, h.host,
             h.pid, rt->hellos[h.rank].host, rt->hellos[h.rank].pid);
    return root_refuse(rt, k, why, 1);
  }
  conn_reset_frame(c);
  rt->ranks[h.rank] = *c;
  rt->hellos[h.rank] = h;
  rt->joined++;
  rt->cands[k] = rt->cands[--rt->ncands];
  INFO(BOOTSTRAP, "bootstrap root: rank %d of %d joined from %s pid %u (%d/%d)", h.rank, h.nranks, h.host, h.pid,
       rt->joined, rt->nranks);
}

static void root_accept_new(bs_root_t *rt) {
  for (;;) {
    int fd;
    sock_addr_t from;
    if (sock_accept(rt->listen_fd, &fd, &from) != xcclSuccess || fd < 0) return;
    if (rt->ncands == BS_MAX_CANDIDATES) root_refuse(rt, 0, "too many connections that have not said hello", 0);
    bs_conn_t *c = &rt->cands[rt->ncands++];
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->from = from;
    err_quiet(1);
    xcclResult_t r = conn_accepted(c, rt->id.secret, clock_deadline(1.0));
    err_quiet(0);
    if (r != xcclSuccess) root_refuse(rt, rt->ncands - 1, err_last(), 0);
  }
}

static int root_missing(const void *rt, int i) { return ((const bs_root_t *)rt)->ranks[i].fd < 0; }

static void root_finish(bs_root_t *rt) {
  char s[SOCK_ADDR_STRLEN];
  if (rt->gave_up[0]) {
    for (int k = 0; k < rt->ncands; k++)
      send_fail(&rt->cands[k], xcclInvalidUsage, rt->id.secret, rt->cands[k].nonce, rt->gave_up);
  } else if (rt->nranks > 0 && rt->joined == rt->nranks) {
    /* Each rank gets the addresses of the ranks it first sends to; the
     * all-gather of the addresses (bootstrap_init) brings the rest. */
    uint8_t payload[BS_WELCOME_BYTES(BS_WELCOME_MAX)];
    uint64_t dl = clock_deadline(config_double(CFG_TIMEOUT));
    for (int i = 0; i < rt->nranks; i++) {
      int to[BS_WELCOME_MAX], n = bootstrap_allgather_sends_to(rt->nranks, i, to);
      bs_welcome_encode(payload, rt->nranks, n, to, rt->hellos);
      err_quiet(1);
      send_frame(&rt->ranks[i], BS_WELCOME, payload, (uint32_t)BS_WELCOME_BYTES(n), rt->id.secret,
                 rt->ranks[i].nonce, dl, NULL);
      err_quiet(0);
    }
    INFO(BOOTSTRAP, "bootstrap root %s: all %d ranks joined", sock_addr_str(&rt->addr, s, sizeof(s)), rt->nranks);
  } else {
    char msg[900];
    int n = snprintf(msg, sizeof(msg), "bootstrap: ");
    if (rt->nranks == 0) {
      n += snprintf(msg + n, sizeof(msg) - (size_t)n, "no rank joined");
    } else {
      n += snprintf(msg + n, sizeof(msg) - (size_t)n, "only %d of %d ranks joined; missing ", rt->joined, rt->nranks);
      n += (int)bs_name_missing(msg + n, sizeof(msg) - (size_t)n, 120, rt->nranks, root_missing, rt);
    }
    snprintf(msg + n, sizeof(msg) - (size_t)n, " (root %s, XCCL_TIMEOUT=%g s)", sock_addr_str(&rt->addr, s, sizeof(s)),
             config_double(CFG_TIMEOUT));
    WARN(BOOTSTRAP, "%s", msg);
    for (int i = 0; i < rt->nranks; i++)
      if (rt->ranks[i].fd >= 0) send_fail(&rt->ranks[i], xcclTimeout, rt->id.secret, rt->ranks[i].nonce, msg);
  }
}

/* Roots of this process still running (bootstrap_roots_wait). */
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t roots_cond = PTHREAD_COND_INITIALIZER;
static int roots_running;

static void roots_add(int d) {
  pthread_mutex_lock(&roots_lock);
  roots_running += d;
  pthread_cond_broadcast(&roots_cond);
  pthread_mutex_unlock(&roots_lock);
}

int bootstrap_roots_wait(double timeout_s) {
  uint64_t deadline = clock_deadline(timeout_s);
  pthread_mutex_lock(&roots_lock);
  while (roots_running > 0 && !clock_expired(deadline)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ms = clock_ms_left(deadline, 100);
    ts.tv_nsec += ms * 1000000L;
    ts.tv_sec += ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&roots_cond, &roots_lock, &ts);
  }
  int left = roots_running;
  pthread_mutex_unlock(&roots_lock);
  return left;
}

static void *root_main(void *arg) {
  bs_root_t *rt = arg;
  struct pollfd *pfds = calloc(BS_MAX_CANDIDATES + 1, sizeof(*pfds));
  while (pfds && !(rt->nranks > 0 && rt->joined == rt->nranks) && !clock_expired(rt->deadline)) {
    pfds[0] = (struct pollfd){.fd = rt->listen_fd, .events = POLLIN};
    for (int k = 0; k < rt->ncands; k++)
      pfds[k + 1] = (struct pollfd){.fd = rt->cands[k].fd, .events = conn_events(&rt->cands[k], POLLIN)};
    int n = poll(pfds, (nfds_t)rt->ncands + 1, clock_ms_left(rt->deadline, 200));
    if (n <= 0) continue;
    int ncands = rt->ncands;
    /* Candidates first (indices are stable until one is removed; go backwards). */
    for (int k = ncands - 1; k >= 0; k--) {
      if (!(pfds[k + 1].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR))) continue;
      char why[512];
      int ready;
      if (conn_read(&rt->cands[k], rt->id.secret, rt->cands[k].nonce, &ready, why, sizeof(why)) != 0)
        root_refuse(rt, k, why, 0);
      else if (ready)
        root_admit(rt, k);
    }
    if (pfds[0].revents & POLLIN) root_accept_new(rt);
  }
  root_finish(rt);
  for (int k = 0; k < rt->ncands; k++) conn_close(&rt->cands[k]);
  for (int i = 0; i < rt->nranks; i++) conn_close(&rt->ranks[i]);
  sock_close(&rt->listen_fd);
  free(pfds);
  free(rt->cands);
  free(rt->ranks);
  free(rt->hellos);
  free(rt);
  roots_add(-1);
  return NULL;
}

xcclResult_t bootstrap_root_start(bs_id_t *id, double timeout_s) {
  encryption_freeze();
  bs_root_t *rt = calloc(1, sizeof(*rt));
  if (!rt) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the bootstrap root");
  rt->cands = calloc(BS_MAX_CANDIDATES, sizeof(*rt->cands));
  rt->id = *id;
  rt->addr = id->root;
  rt->deadline = clock_deadline(timeout_s);
  xcclResult_t r = rt->cands ? sock_listen(&rt->addr, &rt->listen_fd)
                             : err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the bootstrap root");
  if (r != xcclSuccess) {
    free(rt->cands);
    free(rt);
    return err_prefix(r, "bootstrap root");
  }
  id->root = rt->addr;
  roots_add(1);
  int rc = thread_start_detached(root_main, rt);
  if (rc != 0) {
    roots_add(-1);
    close(rt->listen_fd);
    free(rt->cands);
    free(rt);
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot start the bootstrap root thread: %s", strerror(rc));
  }
  char s[SOCK_ADDR_STRLEN];
  INFO(BOOTSTRAP, "bootstrap root listening on %s", sock_addr_str(&rt->addr, s, sizeof(s)));
  return xcclSuccess;
}

/* ---- A rank ---- */



const sock_addr_t *bootstrap_addr(const bootstrap_t *bs, int rank) { return &bs->addrs[rank]; }

int bootstrap_derive_key(const bootstrap_t *bs, const char *label, uint8_t key[32]) {
  return bs_derive_key(bs->id.secret, label, key);
}

void bootstrap_close(bootstrap_t *bs) {
  if (!bs) return;
  bootstrap_p2p_close(bs);
  sock_close(&bs->listen_fd);
  free(bs->addrs);
  free(bs);
}

/* Hello to the root, then wait for the list of addresses. */
static xcclResult_t rank_join_root(bootstrap_t *bs, const sock_addr_t *my_addr, uint64_t deadline) {
  char s[SOCK_ADDR_STRLEN], peer[128];
  snprintf(peer, sizeof(peer), "the root at %s", sock_addr_str(&bs->id.root, s, sizeof(s)));
  bs_conn_t root = {.fd = -1};
  xcclResult_t res;
  TRY_GOTO(sock_connect_retry(&bs->id.root, &root.fd, deadline, (const volatile int *)bs->abort_flag), fail);
  conn_connected(&root, &bs->id.root);
  TRY_GOTO(conn_read_frame(&root, bs->id.secret, NULL, BS_CHALLENGE, deadline, bs->abort_flag, peer), fail);
  if (root.h.len != BS_NONCE_BYTES) {
    res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s sent a malformed challenge", peer);
    goto fail;
  }
  memcpy(root.nonce, root.frame + BS_HDR_BYTES, BS_NONCE_BYTES);
  conn_reset_frame(&root);
  bs_hello_t h = {.job = bs->id.job, .rank = bs->rank, .nranks = bs->nranks, .addr = *my_addr, .pid = (uint32_t)getpid()};
  gethostname(h.host, sizeof(h.host) - 1);
  uint8_t hello[BS_HELLO_BYTES];
  bs_hello_encode(&h, hello);
  TRY_GOTO(send_frame(&root, BS_HELLO, hello, BS_HELLO_BYTES, bs->id.secret, root.nonce, deadline, bs->abort_flag),
           fail);
  /* The root gives up at its own deadline and says who is missing; wait a
   * little longer than it so that its message, not ours, is what users see. */
  uint64_t welcome_deadline = deadline + (uint64_t)(BS_FAIL_GRACE_S * 1e9);
  TRY_GOTO(conn_read_frame(&root, bs->id.secret, root.nonce, BS_WELCOME, welcome_deadline, bs->abort_flag, peer), fail);
  const uint8_t *pl = root.frame + BS_HDR_BYTES;
  char why[256];
  int n = bs_welcome_check(pl, root.h.len, bs->nranks, why, sizeof(why));
  if (n < 0) {
    res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s sent a bad welcome: %s", peer, why);
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    int r = 0;
    sock_addr_t a;
    if (bs_welcome_entry(pl, i, bs->nranks, &r, &a, why, sizeof(why)) != 0) {
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s sent a bad address: %s", peer, why);
      goto fail;
    }
    bs->addrs[r] = a;
  }
  conn_close(&root);
  return xcclSuccess;
fail:
  conn_close(&root);
  return res;
}

/* Every rank's address, by an all-gather over the partners the welcome
 * named. */
static xcclResult_t gather_addrs(bootstrap_t *bs) {
  if (bs->nranks == 1) return xcclSuccess;
  uint8_t *all = malloc((size_t)bs->nranks * BS_ADDR_BYTES);
  if (!all) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for %d bootstrap addresses", bs->nranks);
  bs_addr_encode(&bs->addrs[bs->rank], all + (size_t)bs->rank * BS_ADDR_BYTES);
  xcclResult_t res = bootstrap_allgather(bs, all, BS_ADDR_BYTES);
  for (int r = 0; r < bs->nranks && res == xcclSuccess; r++) {
    char why[256];
    if (bs_addr_decode(all + (size_t)r * BS_ADDR_BYTES, &bs->addrs[r], why, sizeof(why)) != 0)
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: the all-gather of addresses brought a bad one for "
                    "rank %d: %s", r, why);
  }
  free(all);
  if (res != xcclSuccess) err_prefix(res, "bootstrap: gathering every rank's address");
  return res;
}

xcclResult_t bootstrap_init(const bs_id_t *id, int rank, int nranks, double timeout_s, const _Atomic int *abort_flag,
                            bootstrap_t **bs_p) {
  encryption_freeze();
  bootstrap_t *bs = calloc(1, sizeof(*bs));
  if (!bs) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the bootstrap");
  bs->rank = rank;
  bs->nranks = nranks;
  bs->id = *id;
  bs->listen_fd = -1;
  bs->deadline_s_ns = (uint64_t)(timeout_s * 1e9);
  bs->abort_flag = abort_flag;
  bs->addrs = calloc((size_t)nranks, sizeof(*bs->addrs));
  uint64_t deadline = clock_deadline(timeout_s);
  int listen_fd = -1;
  sock_addr_t my_addr;
  char ifname[64];
  xcclResult_t res;
  if (!bs->addrs) {
    res = err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for %d bootstrap addresses", nranks);
    goto fail;
  }
  TRY_GOTO(sock_pick_interface(&my_addr, ifname, sizeof(ifname)), fail);
  TRY_GOTO(sock_listen(&my_addr, &listen_fd), fail);
  /* Listening before the hello: once the root has answered, any rank may
   * send to this one, and the connection waits in the kernel's backlog until
   * this rank serves its listener (bootstrap_p2p.c). */
  TRY_GOTO(rank_join_root(bs, &my_addr, deadline), fail);
  bs->listen_fd = listen_fd; /* kept for point-to-point messages and the all-gather */
  listen_fd = -1;
  bs->addrs[rank] = my_addr;
  TRY_GOTO(gather_addrs(bs), fail);
  *bs_p = bs;
  return xcclSuccess;
fail:
  sock_close(&listen_fd);
  bootstrap_close(bs);
  return res;
}
