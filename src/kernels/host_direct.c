/* host_direct.c — collectives that read peers' buffers in place (host_direct.h). */
#include "host_direct.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "kern_recv.h"
#include "reduce.h"

enum {
  A_POST_SEND,
  A_POST_RECV,
  A_SELF,       /* own input to own output, where they differ */
  A_REDUCE,     /* own block of every rank's input into own output */
  A_TOKEN_SEND, /* all-reduce: own block reduced */
  A_TOKEN_RECV,
  A_GATHER,    /* the peer's block into own output */
  A_DONE_SEND, /* finished with the peers' buffers */
  A_DONE_RECV,
};

/* Bytes a gather copies per step: large enough that the call costs nothing,
 * small enough that other work items of a group get their turn. */
#define DIRECT_COPY_STEP ((size_t)4 << 20)

static direct_item_t *to_direct(kern_item_t *it) {
  return (direct_item_t *)((char *)it - offsetof(direct_item_t, base));
}

/* len bytes between local and address `remote` of process pid, whole:
 * process_vm_writev when writing, else process_vm_readv. 0, or an errno. */
static int direct_rw(int pid, void *local, uint64_t remote, size_t len, int writing) {
  while (len > 0) {
    struct iovec l = {local, len}, r = {(void *)(uintptr_t)remote, len};
    ssize_t n = writing ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EFAULT;
    local = (char *)local + n, remote += (uint64_t)n, len -= (size_t)n;
  }
  return 0;
}

int host_direct_read(int pid, void *local, uint64_t remote, size_t len) {
  return direct_rw(pid, local, remote, len, 0);
}

int host_direct_write(int pid, const void *local, uint64_t remote, size_t len) {
  return direct_rw(pid, (void *)(uintptr_t)local, remote, len, 1);
}

/* Block b of k over count elements: first element and length. */
static void block_of(size_t count, int k, int b, size_t *first, size_t *len) {
  size_t base = count / (size_t)k, rem = count % (size_t)k, ub = (size_t)b;
  *first = ub * base + (ub < rem ? ub : rem);
  *len = base + (ub < rem ? 1 : 0);
}

static void direct_plan(direct_item_t *d) {
  const direct_args_t *a = d->args;
  int k = a->nranks, me = a->rank, n = 0;
#define ACT(kd, pr) (d->act[n].kind = (kd), d->act[n].peer = (pr), n++)
#define EACH_PEER(kd) \
  for (int i = 1; i < k; i++) ACT(kd, (me + i) % k)
  EACH_PEER(A_POST_SEND);
  EACH_PEER(A_POST_RECV);
  switch (a->coll) {
    case COLL_ALLREDUCE:
      ACT(A_REDUCE, me);
      EACH_PEER(A_TOKEN_SEND);
      EACH_PEER(A_TOKEN_RECV);
      EACH_PEER(A_GATHER);
      break;
    case COLL_REDUCESCATTER:
      ACT(A_REDUCE, me);
      break;
    case COLL_ALLGATHER:
      ACT(A_SELF, me);
      EACH_PEER(A_GATHER);
      break;
    default: /* broadcast */
      if (me == a->root)
        ACT(A_SELF, me);
      else
        ACT(A_GATHER, a->root);
  }
  EACH_PEER(A_DONE_SEND);
  EACH_PEER(A_DONE_RECV);
#undef EACH_PEER
#undef ACT
  d->nact = n;
}

/* A read of a peer's memory failed: the peer is gone, or the kernel refused. */
static int access_failed(direct_item_t *d, int peer, int err, int writing, kern_failure_t *fail) {
  d->base.peer = peer;
  fail->kind = KERN_FAIL_CONN;
  fail->conn_result = err == ESRCH ? xcclRemoteError : xcclSystemError;
  snprintf(fail->msg, sizeof(fail->msg), "%s rank %d's buffer (pid %d) with process_vm_%s failed: %s%s",
           writing ? "writing" : "reading", peer, (int)d->args->posts[peer].pid, writing ? "writev" : "readv",
           strerror(err), err == ESRCH ? " (the process is gone)" : "");
  return -1;
}

static int read_failed(direct_item_t *d, int peer, int err, kern_failure_t *fail) {
  return access_failed(d, peer, err, 0, fail);
}

/* Push (host_direct.h): every rank's two buffers lie in xcclMemAlloc
 * memory, as every rank's posts say alike. */
static int direct_can_push(const direct_args_t *a) {
  if (a->coll != COLL_ALLREDUCE) return 0;
  for (int p = 0; p < a->nranks; p++) {
    const direct_post_t *post = p == a->rank ? a->mine : &a->posts[p];
    if (post->fd[DIRECT_SEND] < 0 || post->fd[DIRECT_RECV] < 0) return 0;
  }
  return 1;
}

/* Push: the piece [off, off + bytes) of this rank's output, reduced, into
 * every peer's output at the same place. */
static int direct_push_piece(direct_item_t *d, const char *acc, size_t off, size_t bytes, kern_failure_t *fail) {
  const direct_args_t *a = d->args;
  for (int i = 1; i < a->nranks; i++) {
    int p = (a->rank + i) % a->nranks;
    if (a->mapped_out[p]) {
      memcpy(a->mapped_out[p] + off, acc, bytes);
    } else {
      int err = host_direct_write(a->posts[p].pid, acc, a->posts[p].addr[DIRECT_RECV] + off, bytes);
      if (err) return access_failed(d, p, err, 1, fail);
    }
  }
  return 1;
}

/* Where the bytes [off, off + len) of peer's buffer `which` are, here: in
 * place when it is mapped, else read into tmp (len <= DIRECT_PIECE). NULL
 * with fail filled when the read fails. */
static const char *peer_bytes(direct_item_t *d, int peer, int which, size_t off, size_t len, kern_failure_t *fail) {
  direct_args_t *a = d->args;
  if (a->mapped[peer][which]) return a->mapped[peer][which] + off;
  int err = host_direct_read(a->posts[peer].pid, a->tmp, a->posts[peer].addr[which] + off, len);
  if (err) return read_failed(d, peer, err, fail), NULL;
  return a->tmp;
}

/* One piece of this rank's block: every rank's input reduced into the output. */
static int direct_reduce_piece(direct_item_t *d, kern_failure_t *fail) {
  const direct_args_t *a = d->args;
  size_t esize = xcclTypeSize(a->type), first, len, in_first;
  int k = a->nranks, me = a->rank;
  char *out;
  if (a->coll == COLL_ALLREDUCE) {
    block_of(a->count, k, me, &first, &len);
    in_first = first;
    out = (char *)a->recvbuff + first * esize;
  } else { /* reduce-scatter: block me of the inputs, the whole output */
    first = 0, len = a->count, in_first = (size_t)me * a->count;
    out = a->recvbuff;
  }
  size_t total = len * esize;
  if (d->done >= total) return 1;
  size_t bytes = total - d->done < DIRECT_PIECE ? total - d->done : DIRECT_PIECE, n = bytes / esize;
  size_t off = in_first * esize + d->done;
  char *acc = out + d->done;
  const char *mine = (const char *)a->sendbuff + off;
  for (int i = 1; i < k; i++) {
    int p = (me + i) % k;
    const char *src = peer_bytes(d, p, DIRECT_SEND, off, bytes, fail);
    if (!src) return -1;
    kern_reduce(acc, i == 1 ? mine : acc, src, n, a->type, a->op);
  }
  if (a->op == xcclAvg) kern_divide(acc, acc, n, a->type, k);
  if (a->push && direct_push_piece(d, acc, first * esize + d->done, bytes, fail) < 0) return -1;
  d->done += bytes;
  return d->done >= total;
}

/* Part of a gather: peer's block (or whole buffer) into this rank's output. */
static int direct_gather_part(direct_item_t *d, int peer, kern_failure_t *fail) {
  direct_args_t *a = d->args;
  size_t esize = xcclTypeSize(a->type), first = 0, len = a->count;
  int which = DIRECT_SEND;
  if (a->coll == COLL_ALLREDUCE) block_of(a->count, a->nranks, peer, &first, &len), which = DIRECT_RECV;
  size_t src_off = first * esize, total = len * esize;
  char *dst = (char *)a->recvbuff + (a->coll == COLL_ALLGATHER ? (size_t)peer * a->count * esize : src_off);
  if (a->coll == COLL_ALLGATHER) src_off = 0;
  if (d->done >= total) return 1;
  size_t bytes = total - d->done < DIRECT_COPY_STEP ? total - d->done : DIRECT_COPY_STEP;
  if (a->mapped[peer][which]) {
    memcpy(dst + d->done, a->mapped[peer][which] + src_off + d->done, bytes);
  } else {
    int err =
        host_direct_read(a->posts[peer].pid, dst + d->done, a->posts[peer].addr[which] + src_off + d->done, bytes);
    if (err) return read_failed(d, peer, err, fail);
  }
  d->done += bytes;
  return d->done >= total;
}

static void direct_self(const direct_args_t *a) {
  size_t esize = xcclTypeSize(a->type);
  char *dst = (char *)a->recvbuff + (a->coll == COLL_ALLGATHER ? (size_t)a->rank * a->count * esize : 0);
  if (dst != a->sendbuff && a->count) memmove(dst, a->sendbuff, a->count * esize);
}

static int direct_send(direct_item_t *d, int peer, const void *msg, size_t bytes) {
  direct_args_t *a = d->args;
  slot_fifo_t *f = a->send_fifo[peer];
  uint64_t *step = a->send_step[peer];
  if (!slot_fifo_room(f, *step)) return 0;
  memcpy(slot_fifo_slot(f, *step), msg, bytes);
  slot_fifo_send(f, (*step)++, bytes, d->base.env->fault);
  return 1;
}

/* 1: received (into out, when set), 0: not yet, -1: not what was expected. */
static int direct_recv(direct_item_t *d, int peer, void *out, size_t bytes, kern_failure_t *fail) {
  direct_args_t *a = d->args;
  slot_fifo_t *f = a->recv_fifo[peer];
  uint64_t *step = a->recv_step[peer];
  if (!slot_fifo_ready(f, *step)) return 0;
  if (!kern_recv_check(f, *step, bytes, fail)) return d->base.peer = peer, -1;
  uint64_t seq;
  memcpy(&seq, slot_fifo_slot(f, *step), sizeof(seq)); /* every message starts with the operation's seq */
  if (out) memcpy(out, slot_fifo_slot(f, *step), bytes);
  slot_fifo_release(f, (*step)++);
  if (seq != a->seq) { /* the peer is in another operation: the callers differ */
    d->base.peer = peer;
    fail->got_bytes = fail->want_bytes = bytes;
    return -1;
  }
  return 1;
}

static int direct_step(kern_item_t *it, kern_failure_t *fail) {
  direct_item_t *d = to_direct(it);
  direct_args_t *a = d->args;
  int kind = d->act[it->action].kind, peer = d->act[it->action].peer, rc = 1;
  switch (kind) {
    case A_POST_SEND:
      rc = direct_send(d, peer, a->mine, sizeof(*a->mine));
      break;
    case A_POST_RECV:
      rc = direct_recv(d, peer, &a->posts[peer], sizeof(a->posts[peer]), fail);
      if (rc == 1)
        for (int w = 0; w < 2; w++) {
          int writable = 0;
          char *m = a->zero_copy && a->map_peer ? a->map_peer(a->map_ctx, peer, &a->posts[peer], w, &writable) : NULL;
          a->mapped[peer][w] = m;
          if (w == DIRECT_RECV) a->mapped_out[peer] = writable ? m : NULL;
        }
      break;
    case A_SELF:
      direct_self(a);
      break;
    case A_REDUCE:
      if (d->done == 0) a->push = direct_can_push(a); /* every post is in */
      rc = direct_reduce_piece(d, fail);
      break;
    case A_GATHER:
      rc = direct_gather_part(d, peer, fail);
      break;
    case A_TOKEN_SEND:
    case A_DONE_SEND:
      rc = direct_send(d, peer, &a->seq, sizeof(a->seq));
      break;
    default: /* A_TOKEN_RECV, A_DONE_RECV */
      rc = direct_recv(d, peer, NULL, sizeof(a->seq), fail);
  }
  if (rc < 0) return -1;
  if (rc == 0) {
    /* A reduce or gather that did a part returned 0 through `done`: */
    if (kind == A_REDUCE || kind == A_GATHER) return 1;
    return 0;
  }
  d->done = 0;
  if (kind == A_REDUCE && a->push) /* every block is in place: no "reduced" messages, no gathers */
    while (it->action + 1 < d->nact && d->act[it->action + 1].kind != A_DONE_SEND) it->action++;
  if (++it->action == d->nact) it->finished = 1;
  return 1;
}

static int is_send(int kind) { return kind == A_POST_SEND || kind == A_TOKEN_SEND || kind == A_DONE_SEND; }

static slot_fifo_t *direct_waiting(kern_item_t *it, uint64_t *step_p, int *is_recv_p) {
  direct_item_t *d = to_direct(it);
  const direct_args_t *a = d->args;
  *is_recv_p = 0;
  if (it->finished) { /* draining: the first peer whose last message the transport has not taken */
    for (int p = 0; p < a->nranks; p++) {
      if (p == a->rank) continue;
      if (atomic_load_explicit(&a->send_fifo[p]->head, memory_order_acquire) < *a->send_step[p]) {
        it->peer = p;
        *step_p = atomic_load(&a->send_fifo[p]->head);
        return a->send_fifo[p];
      }
    }
    return NULL;
  }
  int kind = d->act[it->action].kind, peer = d->act[it->action].peer;
  it->peer = peer;
  if (is_send(kind)) {
    *step_p = *a->send_step[peer];
    return a->send_fifo[peer];
  }
  if (kind == A_POST_RECV || kind == A_TOKEN_RECV || kind == A_DONE_RECV) {
    *is_recv_p = 1;
    *step_p = *a->recv_step[peer];
    return a->recv_fifo[peer];
  }
  return NULL;
}

static int direct_drained(kern_item_t *it) {
  const direct_args_t *a = to_direct(it)->args;
  for (int p = 0; p < a->nranks; p++)
    if (p != a->rank && !slot_fifo_taken(a->send_fifo[p], *a->send_step[p])) return 0;
  return 1;
}

static const kern_item_ops_t direct_ops = {.step = direct_step, .waiting = direct_waiting, .drained = direct_drained};

void host_direct_item(direct_item_t *it, direct_args_t *a, const kern_env_t *env, kern_lane_t lane) {
  memset(it, 0, sizeof(*it));
  it->args = a;
  kern_item_init(&it->base, &direct_ops, env, lane);
  direct_plan(it);
  it->base.finished = a->count == 0;
}
