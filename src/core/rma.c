/*
 * rma.c — the one-sided calls' data path (rma.h says how a put travels):
 * writing puts into the connections, consuming them into windows, the
 * signals, waiting; and the communicator's progress thread. The calls'
 * checks are in rma_api.c.
 *
 * Who consumes a rank's incoming puts: a thread of the communicator's own,
 * started with the connections at its first window, so that a put never
 * waits on a target busy elsewhere (in a collective, or computing); and
 * the rank's one-sided calls themselves, with no thread hand-off: a waiter
 * drains the connection of the peer it waits for, and every rank that
 * waits (for a signal, or for room to put) also drains whatever its other
 * connections hold. Each connection has one lock per direction: one thread
 * at a time writes a put into it, one consumes it.
 */
#include "rma.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bootstrap.h"
#include "clock.h"
#include "comm.h"
#include "error.h"
#include "log.h"
#include "proxy.h"
#include "reg.h"
#include "slots.h"

#define RMA_MAGIC 0x31414d52u /* "RMA1" */
#define RMA_NO_WINDOW UINT64_MAX /* a signal alone */

/* What starts every put and signal, in its first slot; its data follows.
 * No padding: check covers every byte but its own. */
typedef struct {
  uint32_t magic;
  int32_t sig, ctx;
  uint32_t check;  /* rma_hdr_check: a header whose fields were altered on the way is never opened */
  uint64_t win_id; /* the window's id (reg.h), the same on both ranks */
  uint64_t offset;
  uint64_t bytes;
} rma_hdr_t;
_Static_assert(sizeof(rma_hdr_t) == 40, "rma_hdr_t has padding its check would not cover");

/* How long a peer's failure sentence may be (rma_rx_t.why). */
#define RMA_WHY_MAX 320

/* A receive connection's consumer: the put whose data is still arriving. */
typedef struct {
  pthread_mutex_t lock;
  int open;  /* a header came, left bytes of its data have not */
  char *dst; /* where they go; NULL: dropped (rma_bad said why) */
  uint64_t left;
  int sig, ctx;
  /* The peer's stream could not be read (rma_peer_fail): for good, what
   * arrives from it is released unread and every wait on it fails with why. */
  _Atomic int failed;
  char why[RMA_WHY_MAX];
} rma_rx_t;

struct comm_rma {
  pthread_mutex_t *tx;        /* per peer: one put at a time into its connection */
  rma_rx_t *rx;               /* per peer */
  _Atomic uint64_t *arrived;  /* signals counted, per (peer, ctx, sigIdx): rma_sig */
  _Atomic uint64_t *consumed; /* of which waits consumed */
  _Atomic int bad;            /* a peer's put could not land: the next wait says so */
  _Atomic int bad_claim;      /* the writer of bad_msg claims it first (threads race to report) */
  _Atomic int closing;        /* xcclCommDestroy: what still arrives is dropped unread */
  _Atomic int stop;           /* the progress thread ends */
  int running;                /* it was started (rma_start) and not joined */
  pthread_t thread;
  char bad_msg[ERR_MSG_MAX];
};

static pthread_mutex_t rma_make_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t rma_sig(int peer, int sig, int ctx) {
  return ((size_t)peer * XCCL_RMA_CTXS + (size_t)ctx) * XCCL_RMA_SIGNALS + (size_t)sig;
}

static void rma_free(struct comm_rma *r, int n) {
  if (!r) return;
  for (int p = 0; p < n && r->tx && r->rx; p++) {
    pthread_mutex_destroy(&r->tx[p]);
    pthread_mutex_destroy(&r->rx[p].lock);
  }
  free(r->tx);
  free(r->rx);
  free((void *)r->arrived);
  free((void *)r->consumed);
  free(r);
}

/* comm's one-sided state, made by the first call. */
xcclResult_t rma_state(struct xcclComm *comm, struct comm_rma **r_p) {
  struct comm_rma *r = atomic_load_explicit(&comm->rma, memory_order_acquire);
  if (r) return *r_p = r, xcclSuccess;
  int n = comm->nranks;
  size_t nsig = (size_t)n * XCCL_RMA_CTXS * XCCL_RMA_SIGNALS;
  pthread_mutex_lock(&rma_make_lock);
  r = atomic_load(&comm->rma);
  if (!r && (r = calloc(1, sizeof(*r)))) {
    r->tx = calloc((size_t)n, sizeof(*r->tx));
    r->rx = calloc((size_t)n, sizeof(*r->rx));
    r->arrived = calloc(nsig, sizeof(*r->arrived));
    r->consumed = calloc(nsig, sizeof(*r->consumed));
    if (r->tx && r->rx && r->arrived && r->consumed) {
      for (int p = 0; p < n; p++) pthread_mutex_init(&r->tx[p], NULL), pthread_mutex_init(&r->rx[p].lock, NULL);
      atomic_store_explicit(&comm->rma, r, memory_order_release);
    } else {
      free(r->tx), free(r->rx), free((void *)r->arrived), free((void *)r->consumed), free(r);
      r = NULL;
    }
  }
  pthread_mutex_unlock(&rma_make_lock);
  if (!r) return err_set(xcclSystemError, LOG_COLL, "one-sided calls: out of memory for %d peers' signals", n);
  *r_p = r;
  return xcclSuccess;
}

void rma_comm_free(struct xcclComm *comm) {
  rma_free(atomic_exchange(&comm->rma, NULL), comm->nranks);
}

/* ---- Waiting ---- */

typedef struct {
  uint64_t since; /* the last progress */
  unsigned idle;  /* passes without any */
} rma_wait_t;

/* Idle passes polled before the clock is read for the spin (kern_env_t's
 * spin_ns, XCCL_SPIN_US, as the host engine does). */
#define RMA_IDLE_POLLS 64

static void rma_moved(rma_wait_t *w) { w->since = clock_ns(), w->idle = 0; }

/* One idle pass of a wait on f (peer's connection, is_recv: its receive
 * side; NULL: a wait on oneself): stops on abort, a failed connection, a
 * peer process gone or XCCL_TIMEOUT without progress; else spins, yields,
 * then sleeps at most a millisecond. */
static xcclResult_t rma_idle(struct xcclComm *comm, slot_fifo_t *f, int is_recv, int peer, rma_wait_t *w,
                             const char *fn) {
  int aborted = atomic_load(&comm->abort_flag);
  int broken = f && atomic_load_explicit(&f->error, memory_order_acquire);
  uint64_t now = clock_ns();
  int late = now - w->since > (uint64_t)(comm->timeout_s * 1e9);
  int spinning = now - w->since < comm->env.spin_ns;
  /* whether the peer's process is gone costs system calls: asked only
   * before a sleep, at most once a millisecond */
  int gone = !spinning && f && f->shared && !broken && slot_fifo_side_gone(f, is_recv);
  if (aborted || broken || gone || late) {
    char who[128];
    comm_peer_desc(comm, peer, who, sizeof(who));
    char what[200];
    snprintf(what, sizeof(what), is_recv ? "the signals of %s" : "%s to consume this rank's puts", who);
    if (aborted)
      return err_set(xcclRemoteError, LOG_COLL, "%s: the communicator was aborted while waiting for %s", fn, what);
    if (broken)
      return err_set(xcclRemoteError, LOG_COLL, "%s: the connection %s %s failed: %s", fn, is_recv ? "from" : "to",
                     who, f->error_msg);
    if (gone)
      return err_set(xcclRemoteError, LOG_COLL, "%s: %s is gone (its process ended) while this rank waited", fn, who);
    return err_set(xcclTimeout, LOG_COLL, "%s: waited %.0f s (XCCL_TIMEOUT) for %s, with no progress", fn,
                   comm->timeout_s, what);
  }
  uint64_t seen = f ? atomic_load(is_recv ? &f->tail : &f->head) : 0;
  if (++w->idle < RMA_IDLE_POLLS) return xcclSuccess;
  if (f && !f->shared && comm->proxy) {
    if (!proxy_progress(comm->proxy) && !spinning) proxy_wait(comm->proxy, 1000);
  } else if (!f && !spinning) { /* a wait on this rank's own signals: nothing to poll, so nap */
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  } else if (spinning || !f) {
    if (comm->env.yield || !f) sched_yield();
  } else {
    slot_fifo_wait(f, is_recv, seen, 1000);
  }
  return xcclSuccess;
}

/* ---- The target's side ---- */

static void rma_bad(struct comm_rma *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rma_bad(struct comm_rma *r, const char *fmt, ...) {
  int unclaimed = 0;
  if (!atomic_compare_exchange_strong(&r->bad_claim, &unclaimed, 1)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->bad_msg, sizeof(r->bad_msg), fmt, ap);
  va_end(ap);
  WARN(COLL, "%s", r->bad_msg);
  atomic_store(&r->bad, 1);
}

/* The header's check word: the CRC32C of its 40 bytes with check 0 (FNV-1a
 * where xccl was built without CRC32C), so that a bit flipped on the way in
 * a length, an offset, a window id or a signal index is caught before the
 * header is believed, with or without XCCL_CHECKSUM. */
static uint32_t rma_hdr_check(const rma_hdr_t *h) {
  rma_hdr_t c = *h;
  c.check = 0;
  if (slot_checksum_available()) return slot_crc32c(&c, sizeof(c));
  uint32_t v = 2166136261u;
  for (size_t i = 0; i < sizeof(c); i++) v = (v ^ ((const unsigned char *)&c)[i]) * 16777619u;
  return v;
}

/* Peer's stream cannot be read any more (a corrupt or inconsistent message:
 * where the next put starts is unknown): for good, nothing more of it is
 * written anywhere and every wait on peer fails with the sentence. Under
 * x->lock. */
static void rma_peer_fail(struct xcclComm *comm, rma_rx_t *x, int peer, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void rma_peer_fail(struct xcclComm *comm, rma_rx_t *x, int peer, const char *fmt, ...) {
  x->open = 0, x->dst = NULL, x->left = 0;
  if (atomic_load(&x->failed)) return;
  char what[RMA_WHY_MAX - 120];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  snprintf(x->why, sizeof(x->why),
           "rank %d: a one-sided message from rank %d %s; nothing of it was written, and the one-sided calls from "
           "rank %d to this rank fail from now on",
           comm->rank, peer, what, peer);
  WARN(COLL, "%s", x->why);
  atomic_store_explicit(&x->failed, 1, memory_order_release);
}

/* What is wrong with header h that opens a message of n data bytes in
 * slots of slot_size, written into why; 0 when nothing is. Checked before
 * any field is used. */
static int rma_hdr_bad(const rma_hdr_t *h, size_t n, size_t slot_size, char *why, size_t len) {
  if (h->magic != RMA_MAGIC)
    return snprintf(why, len, "has no header where a put should start (magic 0x%08x): the stream is out of step",
                    h->magic), 1;
  if (h->check != rma_hdr_check(h))
    return snprintf(why, len, "has a corrupt header (its check word 0x%08x, computed 0x%08x)", h->check,
                    rma_hdr_check(h)), 1;
  if (h->sig < 0 || h->sig >= XCCL_RMA_SIGNALS || h->ctx < 0 || h->ctx >= XCCL_RMA_CTXS)
    return snprintf(why, len, "names signal %d, context %d, out of range (%d signals, %d contexts)", h->sig, h->ctx,
                    XCCL_RMA_SIGNALS, XCCL_RMA_CTXS), 1;
  if (h->win_id == RMA_NO_WINDOW && h->bytes)
    return snprintf(why, len, "is a signal that says it carries %llu bytes", (unsigned long long)h->bytes), 1;
  size_t room = slot_size - sizeof(*h);
  uint64_t first = sizeof(*h) + (h->bytes < room ? h->bytes : room);
  if (n != first)
    return snprintf(why, len, "says %llu bytes follow its header, but its first slot holds %zu bytes (%llu expected)",
                    (unsigned long long)h->bytes, n, (unsigned long long)first), 1;
  return 0;
}

/* The checked header of a put from peer: opens it on x; 0, leaving x as it
 * was, when its window is still being registered here (the peer's
 * registration returned first): the message waits in its slot until it is.
 * A window deregistered here drops the data (a race of the program's,
 * rma_bad); a range outside the window fails peer (rma_peer_fail). */
static int rma_open(struct xcclComm *comm, struct comm_rma *r, rma_rx_t *x, int peer, const rma_hdr_t *h) {
  void *buff = NULL;
  size_t size = 0;
  int closing = atomic_load(&r->closing);
  int known = h->win_id == RMA_NO_WINDOW || closing ? 1 : reg_window_by_id(comm, h->win_id, &buff, &size);
  if (known < 0) return 0;
  if (known && h->win_id != RMA_NO_WINDOW && !closing && (h->offset > size || h->bytes > size - h->offset)) {
    rma_peer_fail(comm, x, peer, "puts %llu bytes at offset %llu of window %llu, which holds %zu bytes here",
                  (unsigned long long)h->bytes, (unsigned long long)h->offset, (unsigned long long)h->win_id, size);
    return 1;
  }
  x->open = 1, x->left = h->bytes, x->dst = NULL;
  x->sig = h->sig, x->ctx = h->ctx;
  if (h->win_id == RMA_NO_WINDOW || closing) return 1; /* a signal alone, or dropped at destroy */
  if (known)
    x->dst = (char *)buff + h->offset;
  else
    rma_bad(r, "rank %d: rank %d put %llu bytes into window %llu, which this rank deregistered: dropped",
            comm->rank, peer, (unsigned long long)h->bytes, (unsigned long long)h->win_id);
  return 1;
}

/* Message `step` of peer's stream (ready): a put's header, checked before
 * anything in it is used, or the next part of the open put's data, whose
 * size must be what the header said. 0 when it must wait in its slot
 * (rma_open). Anything wrong fails peer for good (rma_peer_fail). */
static int rma_take(struct xcclComm *comm, struct comm_rma *r, rma_rx_t *x, int peer, slot_fifo_t *f,
                    uint64_t step) {
  if (atomic_load_explicit(&x->failed, memory_order_relaxed)) return 1; /* released unread */
  size_t size = slot_fifo_size(f, step);
  size_t n = f->checksum && size >= SLOT_CRC_BYTES ? size - SLOT_CRC_BYTES : size;
  const char *p = slot_fifo_slot(f, step);
  uint64_t got, carried;
  if (f->checksum && slot_fifo_check(f, step, n, &got, &carried) != SLOT_MSG_OK)
    return rma_peer_fail(comm, x, peer, "failed its CRC32C (XCCL_CHECKSUM)"), 1;
  if (!x->open) {
    rma_hdr_t h;
    char why[200];
    if (n < sizeof(h))
      return rma_peer_fail(comm, x, peer, "is %zu bytes, too short for a put's %zu-byte header", n, sizeof(h)), 1;
    memcpy(&h, p, sizeof(h));
    if (rma_hdr_bad(&h, n, f->slot_size, why, sizeof(why))) return rma_peer_fail(comm, x, peer, "%s", why), 1;
    if (!rma_open(comm, r, x, peer, &h)) return 0; /* its window is not registered here yet */
    if (!x->open) return 1;                         /* failed in rma_open */
    p += sizeof(h), n -= sizeof(h);
  } else if (n != (f->slot_size < x->left ? f->slot_size : x->left)) {
    return rma_peer_fail(comm, x, peer, "holds %zu bytes of a put that has %llu bytes left in slots of %zu", n,
                         (unsigned long long)x->left, f->slot_size), 1;
  }
  if (x->dst && n) memcpy(x->dst, p, n);
  if (x->dst) x->dst += n;
  x->left -= n;
  if (x->left == 0) {
    x->open = 0;
    atomic_fetch_add_explicit(&r->arrived[rma_sig(peer, x->sig, x->ctx)], 1, memory_order_release);
  }
  return 1;
}

/* Consumes what peer's connection holds now, writing each put into its
 * window and then counting its signal; 1 if anything moved. With block 0
 * it gives way to a thread already consuming it. */
static int rma_drain(struct xcclComm *comm, struct comm_rma *r, int peer, int block) {
  comm_p2p_t *c = &comm->p2p_recv[COMM_P2P_RMA][peer];
  rma_rx_t *x = &r->rx[peer];
  if (!atomic_load_explicit(&c->ready, memory_order_acquire)) return 0;
  if (block) pthread_mutex_lock(&x->lock);
  else if (pthread_mutex_trylock(&x->lock)) return 0;
  slot_fifo_t *f = c->fifo;
  int moved = 0;
  while (slot_fifo_ready(f, c->step) && rma_take(comm, r, x, peer, f, c->step)) {
    slot_fifo_release(f, c->step);
    c->step++;
    moved = 1;
  }
  pthread_mutex_unlock(&x->lock);
  if (moved && !f->shared && comm->proxy) proxy_progress(comm->proxy); /* an irecv on the freed slots */
  return moved;
}

/* Every peer's connection, giving way where another thread consumes. */
static int rma_drain_all(struct xcclComm *comm, struct comm_rma *r) {
  int moved = 0;
  for (int i = 1; i < comm->nranks; i++) moved |= rma_drain(comm, r, (comm->rank + i) % comm->nranks, 0);
  return moved;
}

/* ---- The origin's side ---- */

/* Writes a put (h, then h->bytes of data) into peer's connection. */
static xcclResult_t rma_send(struct xcclComm *comm, struct comm_rma *r, int peer, const rma_hdr_t *h,
                             const char *data, const char *fn) {
  comm_p2p_t *c = &comm->p2p_send[COMM_P2P_RMA][peer];
  if (!atomic_load_explicit(&c->ready, memory_order_acquire))
    return err_set(xcclInternalError, LOG_COLL, "%s: no one-sided connection to rank %d although its ranks are "
                   "connected for them", fn, peer);
  slot_fifo_t *f = c->fifo;
  if (f->slot_size <= sizeof(*h))
    return err_set(xcclInvalidUsage, LOG_COLL, "%s: slots of %zu bytes cannot hold a put's %zu-byte header", fn,
                   f->slot_size, sizeof(*h));
  pthread_mutex_lock(&r->tx[peer]);
  proxy_t *proxy = f->shared ? NULL : comm->proxy;
  if (proxy) proxy_op_begin(proxy);
  uint64_t left = h->bytes, first_step = c->step;
  int first = 1;
  rma_wait_t w;
  rma_moved(&w);
  xcclResult_t res = xcclSuccess;
  while (res == xcclSuccess && (first || left)) {
    if (!slot_fifo_room(f, c->step)) {
      if (rma_drain_all(comm, r)) rma_moved(&w); /* a peer putting to this rank may wait on it */
      else res = rma_idle(comm, f, 0, peer, &w, fn);
      continue;
    }
    char *slot = slot_fifo_slot(f, c->step);
    size_t n = 0;
    if (first) memcpy(slot, h, sizeof(*h)), n = sizeof(*h);
    size_t k = f->slot_size - n < left ? f->slot_size - n : (size_t)left;
    if (k) memcpy(slot + n, data, k), data += k, left -= k, n += k;
    slot_fifo_send(f, c->step, n, &comm->fault);
    c->step++;
    first = 0;
    if (proxy) proxy_progress(proxy);
    rma_moved(&w);
  }
  if (proxy) proxy_op_end(proxy);
  if (res != xcclSuccess && c->step != first_step) /* half a put in the stream: the connection is out of step */
    comm_fail(comm, res, err_last());
  pthread_mutex_unlock(&r->tx[peer]);
  return res;
}

/* Waits until the network has taken every put this rank wrote into its
 * slots (a put returns before that), consuming what arrives meanwhile so
 * that peers doing the same are not held; stops at the first peer whose
 * wait fails (rma_idle: abort, a failed connection, XCCL_TIMEOUT without
 * progress; said at WARN). Shared-memory puts are in the peer's memory
 * already. */
static xcclResult_t rma_sent_taken(struct xcclComm *comm, struct comm_rma *r, const char *fn) {
  xcclResult_t res = xcclSuccess;
  for (int i = 1; i < comm->nranks && res == xcclSuccess; i++) {
    int peer = (comm->rank + i) % comm->nranks;
    comm_p2p_t *c = &comm->p2p_send[COMM_P2P_RMA][peer];
    if (!atomic_load(&c->ready) || c->fifo->shared) continue;
    pthread_mutex_lock(&r->tx[peer]);
    rma_wait_t w;
    rma_moved(&w);
    while (res == xcclSuccess && !slot_fifo_taken(c->fifo, c->step)) {
      if (rma_drain_all(comm, r)) rma_moved(&w);
      else res = rma_idle(comm, c->fifo, 0, peer, &w, fn);
    }
    pthread_mutex_unlock(&r->tx[peer]);
  }
  return res;
}

/* Destroy, before the proxy stops: the network takes this rank's puts
 * (rma_sent_taken), and what still arrives is dropped unread; never once
 * aborted or failed. A failure is only said: the others would wait as long. */
void rma_comm_flush(struct xcclComm *comm) {
  struct comm_rma *r = atomic_load(&comm->rma);
  if (!r || !comm->proxy || comm->failed) return;
  atomic_store(&r->closing, 1);
  (void)rma_sent_taken(comm, r, "xcclCommDestroy");
}

/* A put or a signal (win NULL) once checked: to oneself a copy. */
xcclResult_t rma_issue(struct xcclComm *comm, int peer, const struct xcclWindow *win, uint64_t win_id,
                              size_t offset, const void *data, size_t bytes, int sig, int ctx, const char *fn) {
  struct comm_rma *r;
  TRY(rma_state(comm, &r));
  if (peer == comm->rank) {
    void *buff;
    if (win && bytes) {
      TRY(reg_window_buff(comm, win, &buff));
      memmove((char *)buff + offset, data, bytes);
    }
    atomic_fetch_add_explicit(&r->arrived[rma_sig(peer, sig, ctx)], 1, memory_order_release);
    return xcclSuccess;
  }
  rma_hdr_t h = {.magic = RMA_MAGIC, .sig = sig, .ctx = ctx, .win_id = win ? win_id : RMA_NO_WINDOW,
                 .offset = offset, .bytes = win ? bytes : 0};
  h.check = rma_hdr_check(&h);
  return rma_send(comm, r, peer, &h, data, fn);
}

/* Fewer than need signals at s are unconsumed. */
static int rma_short(struct comm_rma *r, size_t s, uint64_t need) {
  return atomic_load_explicit(&r->arrived[s], memory_order_acquire) -
             atomic_load_explicit(&r->consumed[s], memory_order_relaxed) <
         need;
}

/* The signals descriptors 0..i want of d[i]'s (peer, sigIdx, ctx). */
static uint64_t wait_need(const xcclWaitSignalDesc_t *d, int i) {
  uint64_t need = 0;
  for (int j = 0; j <= i; j++)
    if (d[j].peer == d[i].peer && d[j].sigIdx == d[i].sigIdx && d[j].ctx == d[i].ctx) need += (uint64_t)d[j].opCnt;
  return need;
}

/* xcclRemoteError with its sentence once peer's stream failed
 * (rma_peer_fail): no signal from it counts any more. */
static xcclResult_t rma_peer_check(struct xcclComm *comm, struct comm_rma *r, int peer, const char *fn) {
  if (peer == comm->rank || !atomic_load_explicit(&r->rx[peer].failed, memory_order_acquire)) return xcclSuccess;
  return err_set(xcclRemoteError, LOG_COLL, "%s: %s", fn, r->rx[peer].why);
}

xcclResult_t rma_wait(struct xcclComm *comm, int nd, const xcclWaitSignalDesc_t *d, const char *fn) {
  struct comm_rma *r;
  if (nd == 0) return xcclSuccess;
  TRY(rma_state(comm, &r));
  xcclResult_t res = xcclSuccess;
  for (int i = 0; i < nd && res == xcclSuccess; i++) {
    int peer = d[i].peer;
    size_t s = rma_sig(peer, d[i].sigIdx, d[i].ctx);
    uint64_t need = wait_need(d, i);
    slot_fifo_t *f = peer == comm->rank ? NULL : comm->p2p_recv[COMM_P2P_RMA][peer].fifo;
    rma_wait_t w;
    rma_moved(&w);
    res = rma_peer_check(comm, r, peer, fn);
    while (res == xcclSuccess && rma_short(r, s, need)) {
      int moved = peer != comm->rank && rma_drain(comm, r, peer, 1);
      moved |= rma_drain_all(comm, r); /* others may wait for room in this rank's connections */
      if ((res = rma_peer_check(comm, r, peer, fn)) != xcclSuccess) break;
      if (moved) rma_moved(&w);
      /* the progress thread may have counted the last one while this
       * thread waited for the lock: look again before any verdict */
      else if (rma_short(r, s, need)) res = rma_idle(comm, f, 1, peer, &w, fn);
      if (res != xcclSuccess && res != xcclTimeout && peer != comm->rank) {
        /* a closed connection may still hold, or the thread still be
         * counting, what was sent before it closed: once more, holding
         * the lock (the thread's pass ends first) */
        rma_drain(comm, r, peer, 1);
        if (!rma_short(r, s, need)) res = xcclSuccess;
      }
    }
  }
  if (res == xcclSuccess && atomic_load(&r->bad)) { /* said once: the next wait goes on */
    res = err_set(xcclRemoteError, LOG_COLL, "%s: %s", fn, r->bad_msg);
    atomic_store(&r->bad, 0);
    atomic_store(&r->bad_claim, 0); /* the message is read: the next failure may write it */
  }
  for (int i = 0; i < nd && res == xcclSuccess; i++)
    atomic_fetch_add_explicit(&r->consumed[rma_sig(d[i].peer, d[i].sigIdx, d[i].ctx)], (uint64_t)d[i].opCnt,
                              memory_order_relaxed);
  return res;
}

/* ---- The progress thread ---- */

/* Drains every connection while the communicator lives: polls, spins for
 * XCCL_SPIN_US after the last message, then sleeps a millisecond at a time. */
static void *rma_progress_main(void *arg) {
  struct xcclComm *comm = arg;
  struct comm_rma *r = atomic_load(&comm->rma);
  unsigned idle = 0;
  uint64_t since = clock_ns();
  while (!atomic_load_explicit(&r->stop, memory_order_acquire)) {
    if (rma_drain_all(comm, r)) {
      idle = 0, since = clock_ns();
      continue;
    }
    if (++idle < RMA_IDLE_POLLS) continue;
    if (clock_ns() - since < comm->env.spin_ns) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

xcclResult_t rma_start(struct xcclComm *comm) {
  struct comm_rma *r;
  TRY(rma_state(comm, &r));
  pthread_mutex_lock(&rma_make_lock);
  int e = r->running ? 0 : pthread_create(&r->thread, NULL, rma_progress_main, comm);
  if (!e) r->running = 1;
  pthread_mutex_unlock(&rma_make_lock);
  if (e)
    return err_set(xcclSystemError, LOG_INIT, "one-sided calls: cannot start the progress thread: %s", strerror(e));
  return xcclSuccess;
}

void rma_comm_stop(struct xcclComm *comm) {
  struct comm_rma *r = atomic_load(&comm->rma);
  if (!r || !r->running) return;
  atomic_store_explicit(&r->stop, 1, memory_order_release);
  pthread_join(r->thread, NULL);
  r->running = 0;
  atomic_store(&r->stop, 0); /* a later rma_start's thread runs */
}

/* A window deregistered here: a put still open into [buff, buff + size)
 * drops the rest of its data (its header found the window; its remaining
 * slots must not be written into memory the program may free now). */
void rma_window_gone(struct xcclComm *comm, const void *buff, size_t size) {
  struct comm_rma *r = atomic_load(&comm->rma);
  if (!r) return;
  const char *lo = buff, *hi = lo + size;
  for (int p = 0; p < comm->nranks; p++) {
    rma_rx_t *x = &r->rx[p];
    pthread_mutex_lock(&x->lock);
    if (x->open && x->dst && x->dst >= lo && x->dst < hi) {
      x->dst = NULL;
      rma_bad(r, "a put from rank %d was still arriving when its window (%p) was deregistered here: the rest of its "
                 "data was dropped",
              p, buff);
    }
    pthread_mutex_unlock(&x->lock);
  }
}


/* XCCL_SUSPEND_MEM, once every rank is in it (suspend_agree): this rank's
 * puts taken by the network, then, from an exchange of how many slots each
 * rank sent each peer, every put sent here consumed into its window, so
 * that nothing is lost when the connections go. Bounded by XCCL_TIMEOUT
 * without progress per wait. */
xcclResult_t rma_comm_quiesce(struct xcclComm *comm) {
  struct comm_rma *r = atomic_load(&comm->rma);
  int n = comm->nranks, me = comm->rank;
  if (!r || n < 2 || !atomic_load(&comm->rma_connected)) return xcclSuccess;
  xcclResult_t res = rma_sent_taken(comm, r, "xcclCommSuspend");
  uint64_t *sent = res == xcclSuccess ? calloc((size_t)n * (size_t)n, sizeof(*sent)) : NULL;
  if (res == xcclSuccess && !sent)
    res = err_set(xcclSystemError, LOG_INIT, "xcclCommSuspend: out of memory for %d ranks' counts", n);
  if (res == xcclSuccess) {
    for (int p = 0; p < n; p++) {
      comm_p2p_t *c = &comm->p2p_send[COMM_P2P_RMA][p];
      if (p == me || !atomic_load(&c->ready)) continue;
      pthread_mutex_lock(&r->tx[p]);
      sent[(size_t)me * (size_t)n + (size_t)p] = c->step;
      pthread_mutex_unlock(&r->tx[p]);
    }
    res = bootstrap_allgather(comm->bs, sent, (size_t)n * sizeof(*sent));
  }
  for (int i = 1; i < n && res == xcclSuccess; i++) {
    int peer = (me + i) % n;
    comm_p2p_t *c = &comm->p2p_recv[COMM_P2P_RMA][peer];
    uint64_t want = sent[(size_t)peer * (size_t)n + (size_t)me], got;
    rma_wait_t w;
    rma_moved(&w);
    for (;;) {
      pthread_mutex_lock(&r->rx[peer].lock);
      got = atomic_load(&c->ready) ? c->step : want;
      pthread_mutex_unlock(&r->rx[peer].lock);
      if (got >= want) break;
      if (rma_drain_all(comm, r)) rma_moved(&w);
      else if ((res = rma_idle(comm, c->fifo, 1, peer, &w, "xcclCommSuspend")) != xcclSuccess) break;
    }
  }
  free(sent);
  return res;
}

/* Resume: the connections are new (their steps at 0), so no put is open. */
void rma_comm_reset(struct xcclComm *comm) {
  struct comm_rma *r = atomic_load(&comm->rma);
  if (!r) return;
  for (int p = 0; p < comm->nranks; p++) {
    pthread_mutex_lock(&r->rx[p].lock);
    r->rx[p].open = 0, r->rx[p].left = 0, r->rx[p].dst = NULL;
    pthread_mutex_unlock(&r->rx[p].lock);
  }
}
