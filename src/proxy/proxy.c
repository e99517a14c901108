#include "proxy.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"

typedef struct {
  slot_fifo_t *fifo;
  proxy_gpu_t *gpu; /* the connection's GPUDirect state (the caller's) */
  void *net_comm;
  int is_send;
  int peer;
  char peer_desc[96];
  slot_bell_t *bell; /* rung when this connection publishes slots */
  uint64_t posted; /* isend/irecv posted */
  uint64_t done;   /* completed */
  void *reqs[XCCL_STEPS];
  int failed;
  /* GPUDirect RDMA (proxy_gpu_area): the registration of the GPU data
   * area (gpu->area); per slot, whether the posted receive lands
   * there, whether its flush is what reqs[] holds now, and the size that
   * arrived. */
  void *gpu_mh;
  unsigned char gpu_slot[XCCL_STEPS], flushing[XCCL_STEPS];
  size_t got[XCCL_STEPS];
  /* XCCL_TRACE (proxy_set_trace): when each slot's request was posted, and
   * when this connection last completed one (a receive is posted ahead:
   * its event starts at the later of the two). */
  uint64_t post_ns[XCCL_STEPS], last_done_ns;
} proxy_conn_t;

struct proxy {
  const xccl_net_ops_v1_t *net;
  const fault_ctx_t *fault; /* what XCCL_FAULT matches the send connections against */
  proxy_conn_t *conns;
  int nconns, capacity;
  pthread_t thread;
  int started;
  pthread_mutex_t lock;
  pthread_mutex_t progress_lock; /* one thread at a time moves a connection */
  int wake_fd;         /* eventfd: kernels and control calls wake the sleeping thread */
  _Atomic int sleeping;
  int pollable; /* every connection offers fds to poll */
  unsigned char *recv_ready; /* per connection, sized like conns: poll() found it readable */
  _Atomic int active; /* operations in progress */
  _Atomic int has_conns; /* a connection was added: until then (shared memory only) nothing to progress */
  _Atomic int stop;
  _Atomic int shutdown_requested;
  _Atomic int error;
  char error_msg[SLOT_ERROR_MAX + 128];
  void (*_Atomic tick)(void *); /* proxy_set_tick's, after each sleep */
  void *_Atomic tick_arg;
  trace_ring_t *_Atomic trace; /* proxy_set_trace's; NULL: no events, no clock reads */
};

xcclResult_t proxy_create(const xccl_net_ops_v1_t *net, const fault_ctx_t *fault, proxy_t **proxy_p) {
  proxy_t *p = calloc(1, sizeof(*p));
  if (!p) return err_set(xcclSystemError, LOG_PROXY, "out of memory for the proxy");
  p->net = net;
  p->fault = fault;
  p->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->wake_fd < 0) {
    free(p);
    return err_set(xcclSystemError, LOG_PROXY, "eventfd for the proxy failed: %s", strerror(errno));
  }
  net_props_t props;
  p->pollable = net->get_properties(0, &props) == xcclSuccess && props.pollable;
  pthread_mutex_init(&p->lock, NULL);
  pthread_mutex_init(&p->progress_lock, NULL);
  *proxy_p = p;
  return xcclSuccess;
}

static xcclResult_t proxy_add(proxy_t *p, slot_fifo_t *fifo, proxy_gpu_t *gpu, void *net_comm, int is_send,
                              int peer, const char *peer_desc, slot_bell_t *bell) {
  /* Connections may be added while the thread runs (point-to-point peers
   * are connected when first used): the arrays change under the lock. */
  if (p->started) pthread_mutex_lock(&p->progress_lock);
  if (p->nconns == p->capacity) {
    int cap = p->capacity ? 2 * p->capacity : 8;
    proxy_conn_t *c = realloc(p->conns, sizeof(*c) * (size_t)cap);
    if (c) p->conns = c;
    unsigned char *r = c ? realloc(p->recv_ready, (size_t)cap) : NULL;
    if (r) p->recv_ready = r;
    if (!c || !r) {
      if (p->started) pthread_mutex_unlock(&p->progress_lock);
      return err_set(xcclSystemError, LOG_PROXY, "out of memory for proxy connections");
    }
    p->capacity = cap;
  }
  proxy_conn_t *c = &p->conns[p->nconns++];
  memset(c, 0, sizeof(*c));
  c->fifo = fifo;
  c->gpu = gpu;
  c->net_comm = net_comm;
  c->is_send = is_send;
  c->peer = peer;
  snprintf(c->peer_desc, sizeof(c->peer_desc), "%s", peer_desc);
  c->bell = bell;
  if (is_send) net_fault_bind(p->net, net_comm, p->fault);
  atomic_store_explicit(&p->has_conns, 1, memory_order_release);
  if (p->started) pthread_mutex_unlock(&p->progress_lock);
  return xcclSuccess;
}

xcclResult_t proxy_add_send(proxy_t *p, slot_fifo_t *fifo, proxy_gpu_t *gpu, void *net_comm, int peer,
                            const char *peer_desc, slot_bell_t *bell) {
  return proxy_add(p, fifo, gpu, net_comm, 1, peer, peer_desc, bell);
}

xcclResult_t proxy_add_recv(proxy_t *p, slot_fifo_t *fifo, proxy_gpu_t *gpu, void *net_comm, int peer,
                            const char *peer_desc, slot_bell_t *bell) {
  return proxy_add(p, fifo, gpu, net_comm, 0, peer, peer_desc, bell);
}

/* A transport call failed: the fifo is marked failed so that a kernel that
 * waits on it stops with this reason, and the connection itself is shut so
 * that the peer learns at once instead of waiting out XCCL_TIMEOUT (a send
 * that failed here leaves the peer waiting for data that will not come).
 * Nothing else is torn down: a peer that finished its part of an operation
 * and closed is normal, and the other connections may still carry data that
 * peers need. Only a failed operation or an abort shuts everything down
 * (proxy_shutdown_connections). */
static void proxy_fail(proxy_t *p, proxy_conn_t *c, xcclResult_t res) {
  char msg[SLOT_ERROR_MAX];
  snprintf(msg, sizeof(msg), "%s %s: %s", c->is_send ? "sending to" : "receiving from", c->peer_desc, err_last());
  INFO(PROXY, "%s", msg);
  c->failed = 1;
  slot_fifo_fail(c->fifo, res, msg);
  p->net->shutdown(c->net_comm);
  int expected = 0;
  if (atomic_compare_exchange_strong(&p->error, &expected, (int)res)) {
    pthread_mutex_lock(&p->lock);
    snprintf(p->error_msg, sizeof(p->error_msg), "%s", msg);
    pthread_mutex_unlock(&p->lock);
  }
  slot_bell_ring(c->bell);
}

/* Where the data of message `step` of c's fifo is: its slot, or the GPU
 * data area when its size says so (SLOT_SIZE_GPU, set only once the area
 * is registered). */
static char *proxy_send_data(const proxy_conn_t *c, uint64_t step) {
  slot_fifo_t *f = c->fifo;
  if (!(slot_fifo_hdr(f, step)->size & SLOT_SIZE_GPU)) return slot_fifo_slot(f, step);
  return slot_fifo_area_data(f, c->gpu->area, step);
}

/* Slot s of c (its step c->done) completed with size bytes: its event. */
static void conn_traced(trace_ring_t *tr, proxy_conn_t *c, int s, trace_kind_t kind, size_t size) {
  uint64_t now = clock_ns(), from = c->post_ns[s] > c->last_done_ns ? c->post_ns[s] : c->last_done_ns;
  c->last_done_ns = now;
  if (!from) from = now; /* posted before tracing began (a receive at connect): when is unknown */
  trace_ring_add(tr, kind, from, now, c->peer, -1, c->done, 0, size, kind == TRACE_NET_RECV);
}

/* One pass over a send connection; returns 1 if anything moved. */
static int proxy_progress_send(proxy_t *p, proxy_conn_t *c) {
  slot_fifo_t *f = c->fifo;
  int moved = 0;
  trace_ring_t *tr = atomic_load_explicit(&p->trace, memory_order_relaxed);
  uint64_t tail = atomic_load_explicit(&f->tail, memory_order_acquire);
  while (c->posted < tail && c->posted < c->done + XCCL_STEPS) {
    int s = (int)(c->posted % XCCL_STEPS);
    void *req = NULL;
    int gpu = (slot_fifo_hdr(f, (uint64_t)s)->size & SLOT_SIZE_GPU) != 0;
    xcclResult_t res = p->net->isend(c->net_comm, proxy_send_data(c, (uint64_t)s), slot_fifo_size(f, (uint64_t)s),
                                     gpu ? c->gpu_mh : NULL, &req);
    if (res != xcclSuccess) return proxy_fail(p, c, res), 1;
    if (!req) break;
    c->reqs[s] = req;
    if (tr) c->post_ns[s] = clock_ns();
    c->posted++;
    moved = 1;
  }
  while (c->done < c->posted) {
    int s = (int)(c->done % XCCL_STEPS), done = 0;
    size_t size = 0;
    xcclResult_t res = p->net->test(c->reqs[s], &done, &size);
    if (res != xcclSuccess) return proxy_fail(p, c, res), 1;
    if (!done) break;
    if (tr) conn_traced(tr, c, s, TRACE_NET_SEND, size);
    slot_fifo_release(f, c->done++);
    moved = 1;
  }
  return moved;
}

/* test = 0: only post receives into freed slots (no system call); they are
 * tested when their fds are readable. A receive into GPU memory is flushed
 * (iflush) before it is published, so the kernel that reads it sees all of
 * it. */
static int proxy_progress_recv(proxy_t *p, proxy_conn_t *c, int test) {
  slot_fifo_t *f = c->fifo;
  int moved = 0;
  trace_ring_t *tr = atomic_load_explicit(&p->trace, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&f->head, memory_order_acquire);
  while (c->posted < head + XCCL_STEPS) {
    int s = (int)(c->posted % XCCL_STEPS);
    void *req = NULL;
    int gpu = c->gpu_mh && c->posted >= atomic_load_explicit(&c->gpu->rx_from, memory_order_acquire) &&
              c->posted < atomic_load_explicit(&c->gpu->rx_until, memory_order_acquire);
    xcclResult_t res = p->net->irecv(c->net_comm, gpu ? slot_fifo_area_data(f, c->gpu->area, (uint64_t)s)
                                                      : slot_fifo_slot(f, (uint64_t)s),
                                     slot_fifo_wire_max(f), gpu ? c->gpu_mh : NULL, &req);
    if (res != xcclSuccess) return proxy_fail(p, c, res), 1;
    if (!req) break;
    c->reqs[s] = req;
    c->gpu_slot[s] = (unsigned char)gpu;
    c->flushing[s] = 0;
    if (tr) c->post_ns[s] = clock_ns();
    c->posted++;
    moved = 1;
  }
  while (test && c->done < c->posted) {
    int s = (int)(c->done % XCCL_STEPS), done = 0;
    size_t size = 0;
    xcclResult_t res = p->net->test(c->reqs[s], &done, &size);
    if (res != xcclSuccess) return proxy_fail(p, c, res), 1;
    if (!done) break;
    moved = 1;
    if (c->gpu_slot[s] && !c->flushing[s]) {
      void *flush = NULL;
      res = p->net->iflush(c->net_comm, slot_fifo_area_data(f, c->gpu->area, (uint64_t)s), size, c->gpu_mh,
                           &flush);
      if (res != xcclSuccess) return proxy_fail(p, c, res), 1;
      c->got[s] = size;
      if (flush) { /* published once the flush is done too */
        c->reqs[s] = flush;
        c->flushing[s] = 1;
        continue;
      }
    }
    if (c->flushing[s]) size = c->got[s];
    c->flushing[s] = 0;
    if (tr) conn_traced(tr, c, s, TRACE_NET_RECV, size);
    slot_fifo_publish(f, c->done++, size | (c->gpu_slot[s] ? SLOT_SIZE_GPU : 0));
  }
  return moved;
}

/* The connection whose GPUDirect state gpu is (caller holds progress_lock,
 * or the thread has not started). */
static proxy_conn_t *conn_of(proxy_t *p, const proxy_gpu_t *gpu) {
  for (int i = 0; gpu && i < p->nconns; i++)
    if (p->conns[i].gpu == gpu) return &p->conns[i];
  return NULL;
}

xcclResult_t proxy_gpu_area(proxy_t *p, proxy_gpu_t *gpu, void *area, size_t bytes) {
  pthread_mutex_lock(&p->progress_lock);
  proxy_conn_t *c = conn_of(p, gpu);
  xcclResult_t res = xcclSuccess;
  void *mh = NULL;
  if (!c)
    res = err_set(xcclInternalError, LOG_PROXY, "proxy: no connection for the GPU memory given");
  else if (c->gpu_mh)
    res = err_set(xcclInternalError, LOG_PROXY, "proxy: the connection with %s has GPU memory already", c->peer_desc);
  else if ((res = p->net->reg_mr(c->net_comm, area, bytes, NET_PTR_CUDA, &mh)) == xcclSuccess) {
    c->gpu_mh = mh;
    gpu->area = area;
  }
  pthread_mutex_unlock(&p->progress_lock);
  return res;
}

void proxy_gpu_area_drop(proxy_t *p, proxy_gpu_t *gpu) {
  pthread_mutex_lock(&p->progress_lock);
  proxy_conn_t *c = conn_of(p, gpu);
  if (c && c->gpu_mh) {
    /* The communicator is going: the connection moves nothing more (a pass
     * would otherwise still post from or into the area). */
    c->failed = 1;
    p->net->dereg_mr(c->net_comm, c->gpu_mh);
    c->gpu_mh = NULL;
    gpu->area = NULL;
  }
  pthread_mutex_unlock(&p->progress_lock);
}

/* Breaks every connection and fails every fifo still open, so that a kernel
 * waiting on any channel stops now, with the first error as the reason. */
static void proxy_do_shutdown(proxy_t *p) {
  char msg[SLOT_ERROR_MAX];
  int err = atomic_load(&p->error);
  pthread_mutex_lock(&p->lock);
  if (err)
    snprintf(msg, sizeof(msg), "connection shut down after an earlier failure: %s", p->error_msg);
  else
    snprintf(msg, sizeof(msg), "connection shut down: the communicator was aborted or an operation failed");
  pthread_mutex_unlock(&p->lock);
  pthread_mutex_lock(&p->progress_lock);
  for (int i = 0; i < p->nconns; i++) {
    proxy_conn_t *c = &p->conns[i];
    p->net->shutdown(c->net_comm);
    if (!c->failed) slot_fifo_fail(c->fifo, err ? err : xcclRemoteError, msg);
    c->failed = 1;
    slot_bell_ring(c->bell);
  }
  pthread_mutex_unlock(&p->progress_lock);
}

/* Fills pfd (after `n` entries already there) with the fds of connections
 * that have transfers pending. Returns the new count, or -1 when some
 * connection has work but no fd to wait on. Caller holds progress_lock. */
static int proxy_collect_fds(proxy_t *p, struct pollfd *pfd, int *owner, int n, int max) {
  for (int i = 0; i < p->nconns; i++) {
    proxy_conn_t *c = &p->conns[i];
    if (c->failed || c->done == c->posted) continue;
    int fds[16];
    int k = p->net->poll_fds(c->net_comm, fds, 16);
    if (k == 0) return -1;
    for (int j = 0; j < k && n < max; j++) {
      if (owner) owner[n] = i;
      pfd[n++] = (struct pollfd){.fd = fds[j], .events = c->is_send ? POLLOUT : POLLIN};
    }
  }
  return n;
}

/* Sleeps until a transport fd is ready, or a control call or a kernel wakes
 * the thread. While an operation is active the host kernel waits on the fds
 * itself (proxy_wait), so the thread only listens to its eventfd then. */
static void proxy_sleep(proxy_t *p, int shut) {
  enum { MAX_FDS = 256 };
  struct pollfd pfd[MAX_FDS];
  pfd[0] = (struct pollfd){.fd = p->wake_fd, .events = POLLIN};
  int n = 1, active = atomic_load(&p->active) > 0;
  if (!shut && !active) {
    pthread_mutex_lock(&p->progress_lock); /* the fds come from connection state */
    n = proxy_collect_fds(p, pfd, NULL, 1, MAX_FDS);
    pthread_mutex_unlock(&p->progress_lock);
  }
  int no_fds = n < 0;
  if (no_fds) { /* a transport without fds (ib today): nap briefly instead */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    n = 1;
  }
  /* Without fds nothing but the wake fd would end the poll: keep it short, or
   * a peer's data could sit untouched for a second. */
  poll(pfd, (nfds_t)n, no_fds ? 1 : active ? 100 : 1000);
  uint64_t drain;
  if (read(p->wake_fd, &drain, sizeof(drain)) < 0 && errno != EAGAIN) { /* nothing to do */
  }
}

enum { TEST_NONE, TEST_ALL, TEST_READY };

/* One pass over every connection. Receives are tested (a system call each)
 * all, none, or where p->recv_ready says. Returns 1 if anything moved. */
static int proxy_pass_locked(proxy_t *p, int test) {
  int moved = 0;
  err_quiet(1); /* the kernel that meets a failure reports it, with context */
  for (int i = 0; i < p->nconns; i++) {
    proxy_conn_t *c = &p->conns[i];
    if (c->failed) continue;
    int t = test == TEST_ALL || (test == TEST_READY && p->recv_ready[i]);
    int m = c->is_send ? proxy_progress_send(p, c) : proxy_progress_recv(p, c, t);
    if (m) {
      moved = 1;
      slot_bell_ring(c->bell);
    }
  }
  err_quiet(0);
  return moved;
}

static int proxy_pass(proxy_t *p) {
  pthread_mutex_lock(&p->progress_lock);
  int moved = proxy_pass_locked(p, TEST_ALL);
  pthread_mutex_unlock(&p->progress_lock);
  return moved;
}

static void *proxy_main(void *arg) {
  proxy_t *p = arg;
  const int spin = (int)config_int(CFG_SPIN_COUNT);
  int idle = 0, shut = 0;
  while (!atomic_load(&p->stop)) {
    if (!shut && atomic_load(&p->shutdown_requested)) {
      proxy_do_shutdown(p);
      shut = 1;
    }
    if (!shut && atomic_load(&p->active) == 0 && proxy_pass(p)) {
      idle = 0;
      continue;
    }
    /* An idle pass costs the proxy a system call per stream, and the cores
     * may be shared with the ranks it serves: with pollable transports it
     * goes to poll() at once, which returns at once if anything is ready. */
    if (++idle < spin && !p->pollable) continue;
    /* Announce the sleep, then look once more: a kernel that published
     * before it saw `sleeping` is caught here, one after it writes wake_fd. */
    atomic_store(&p->sleeping, 1);
    atomic_thread_fence(memory_order_seq_cst);
    if (!shut && !atomic_load(&p->stop) && atomic_load(&p->active) == 0 && proxy_pass(p)) {
      atomic_store(&p->sleeping, 0);
      idle = 0;
      continue;
    }
    if (!atomic_load(&p->stop)) proxy_sleep(p, shut);
    atomic_store(&p->sleeping, 0);
    void (*tick)(void *) = atomic_load_explicit(&p->tick, memory_order_acquire);
    if (tick) tick(atomic_load_explicit(&p->tick_arg, memory_order_relaxed));
    idle = 0;
  }
  return NULL;
}

xcclResult_t proxy_start(proxy_t *p) {
  int rc = pthread_create(&p->thread, NULL, proxy_main, p);
  if (rc != 0) return err_set(xcclSystemError, LOG_PROXY, "cannot start the proxy thread: %s", strerror(rc));
  p->started = 1;
  return xcclSuccess;
}

void proxy_set_tick(proxy_t *p, void (*fn)(void *arg), void *arg) {
  atomic_store_explicit(&p->tick_arg, arg, memory_order_relaxed);
  atomic_store_explicit(&p->tick, fn, memory_order_release);
}

void proxy_set_trace(proxy_t *p, trace_ring_t *ring) { atomic_store_explicit(&p->trace, ring, memory_order_release); }

static void proxy_wake(proxy_t *p) {
  uint64_t one = 1;
  if (write(p->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN) { /* the counter is full: it is awake */
  }
}

/* Progress on the calling thread, if the proxy thread is not at it. */
static int proxy_progress_some(proxy_t *p, int test) {
  int moved = 0;
  if (!atomic_load(&p->shutdown_requested) && pthread_mutex_trylock(&p->progress_lock) == 0) {
    moved = proxy_pass_locked(p, test);
    pthread_mutex_unlock(&p->progress_lock);
  }
  return moved;
}

/* The thread is not woken here: while an operation is active the kernel
 * drives the transfers itself, and waking the thread would only cost a
 * context switch per step. Receives are left to proxy_wait, which tests
 * those whose fds poll() found readable: testing them all after every step
 * costs a failed recv() per connection. */
int proxy_progress(void *proxy) {
  proxy_t *p = proxy;
  /* Every connection in shared memory: called after each step, so no lock. */
  if (!atomic_load_explicit(&p->has_conns, memory_order_acquire)) return 0;
  return proxy_progress_some(p, TEST_NONE);
}

int proxy_wait(void *proxy, int timeout_us) {
  proxy_t *p = proxy;
  enum { MAX_FDS = 256 };
  struct pollfd pfd[MAX_FDS];
  int owner[MAX_FDS];
  pthread_mutex_lock(&p->progress_lock); /* the fds come from connection state */
  int n = proxy_collect_fds(p, pfd, owner, 0, MAX_FDS);
  pthread_mutex_unlock(&p->progress_lock);
  if (n < 0) { /* a transport without fds: nap, then test everything */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    return proxy_progress_some(p, TEST_ALL);
  }
  if (n > 0) {
    poll(pfd, (nfds_t)n, (timeout_us + 999) / 1000);
  } else { /* nothing on the network: the caller waits on something else; look again soon */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  int moved = 0;
  if (!atomic_load(&p->shutdown_requested) && pthread_mutex_trylock(&p->progress_lock) == 0) {
    /* Connections are only ever appended, so the owners' indices still hold. */
    if (p->nconns) memset(p->recv_ready, 0, (size_t)p->nconns); /* none: shared memory only */
    for (int k = 0; k < n; k++)
      if (pfd[k].revents) p->recv_ready[owner[k]] = 1;
    moved = proxy_pass_locked(p, TEST_READY);
    pthread_mutex_unlock(&p->progress_lock);
  }
  return moved;
}

/* No wake-up: the host kernel moves the data itself while the operation
 * runs; a thread that sleeps in poll() on the connections sees `active`
 * when it wakes and leaves them to the kernel. */
void proxy_op_begin(proxy_t *p) { atomic_fetch_add(&p->active, 1); }

void proxy_op_end(proxy_t *p) { atomic_fetch_sub(&p->active, 1); }

void proxy_shutdown_connections(proxy_t *p) {
  atomic_store(&p->shutdown_requested, 1);
  proxy_wake(p);
}

void proxy_destroy(proxy_t *p) {
  if (!p) return;
  if (p->started) {
    atomic_store(&p->stop, 1);
    proxy_wake(p);
    pthread_join(p->thread, NULL);
  }
  for (int i = 0; i < p->nconns; i++) {
    proxy_conn_t *c = &p->conns[i];
    (c->is_send ? p->net->close_send : p->net->close_recv)(c->net_comm);
  }
  free(p->conns);
  free(p->recv_ready);
  pthread_mutex_destroy(&p->lock);
  pthread_mutex_destroy(&p->progress_lock);
  close(p->wake_fd);
  free(p);
}
