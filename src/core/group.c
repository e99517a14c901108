/*
 * group.c — xcclGroupStart/xcclGroupEnd and the launch of a group's
 * operations on the host engine (group.h).
 */
#include "connect.h"
#include "group.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "fault.h"
#include "log.h"
#include "reduce.h"
#include "tuning.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h"
#endif


static _Thread_local int group_depth;
static _Thread_local group_op_t *group_ops;
static _Thread_local int group_nops, group_cap;

int coll_has_op(const coll_args_t *a) {
  return a->coll == COLL_ALLREDUCE || a->coll == COLL_REDUCESCATTER || a->coll == COLL_REDUCE;
}
int coll_has_root(const coll_args_t *a) { return a->coll == COLL_BROADCAST || a->coll == COLL_REDUCE; }

/* A collective on one rank: a copy at launch, no work items (queued only
 * inside a group; outside, enqueue.c copies at once). */
static int op_local(const group_op_t *op) { return op->kind == GROUP_COLL && op->comm->nranks == 1; }

void group_op_describe(const group_op_t *op, char *buf, size_t len) {
  const coll_args_t *a = &op->coll;
  int n = snprintf(buf, len, "%s #%llu (count %zu %s", a->name, (unsigned long long)op->seq, a->count,
                   kern_type_name(a->type));
  if (op->kind == GROUP_COLL && coll_has_op(a)) n += snprintf(buf + n, len - (size_t)n, " %s", kern_op_name(a->op));
  if (op->kind == GROUP_COLL && coll_has_root(a)) n += snprintf(buf + n, len - (size_t)n, " root %d", a->root);
  n += snprintf(buf + n, len - (size_t)n, ") on rank %d", op->comm->rank);
  if (op->kind != GROUP_COLL)
    snprintf(buf + n, len - (size_t)n, " %s rank %d", op->kind == GROUP_SEND ? "to" : "from", op->peer);
}

/* The rank a failure of op names: the item's peer, or where the item did
 * not know it, the ring neighbour of the channel it waited on. */
static int op_failure_peer(const group_op_t *op, const kern_failure_t *f) {
  const struct xcclComm *comm = op->comm;
  const comm_channel_t *fch = f->channel >= 0 && f->channel < comm->nchannels ? &comm->channels[f->channel] : NULL;
  int next = fch ? fch->next : comm->next, prev = fch ? fch->prev : comm->prev;
  return op->kind != GROUP_COLL ? op->peer : f->peer >= 0 ? f->peer : f->waiting_on_recv ? prev : next;
}

/* The sentence for a kernel that stopped early. */
/* ", after this rank had waited S s for data from PEER (what, channel C)":
 * the other wait of a launch whose connection failed (kern_failure_t.also_*),
 * which may name the rank the peer that closed was itself behind. */
static void op_failure_also(const group_op_t *op, const group_op_t *also, const kern_failure_t *f, char *buf,
                            size_t len) {
  buf[0] = '\0';
  if (!also || !f->also_ns) return;
  kern_failure_t w = {.peer = f->also_peer, .channel = f->also_channel, .waiting_on_recv = f->also_recv};
  char what[260] = "", peer[160];
  if (also != op) {
    snprintf(what, sizeof(what), " in ");
    group_op_describe(also, what + 4, sizeof(what) - 4);
  }
  comm_peer_desc(also->comm, op_failure_peer(also, &w), peer, sizeof(peer));
  snprintf(buf, len, "; before that, this rank had waited %.1f s on channel %d%s %s %s", (double)f->also_ns / 1e9,
           f->also_channel, what, f->also_recv ? "for data from" : "for room at", peer);
}

static xcclResult_t op_failure(const group_op_t *op, const group_op_t *also, xcclResult_t res,
                               const kern_failure_t *f) {
  xcclComm_t comm = op->comm;
  char what[240], where[320], peer[160], more[600];
  group_op_describe(op, what, sizeof(what));
  if (op->kind == GROUP_COLL)
    snprintf(where, sizeof(where), "%s: %s, channel %d, loop %llu step %d", what, algo_name(op->coll.algo), f->channel,
             (unsigned long long)f->loop, f->action);
  else
    snprintf(where, sizeof(where), "%s: slot %d", what, f->action);
  comm_peer_desc(comm, op_failure_peer(op, f), peer, sizeof(peer));
  switch (f->kind) {
    case KERN_FAIL_TIMEOUT:
      if (f->waiting_on_recv)
        return err_set(res, LOG_COLL, "%s: no data from %s for XCCL_TIMEOUT=%g s", where, peer, comm->timeout_s);
      return err_set(res, LOG_COLL, "%s: %s did not take data for XCCL_TIMEOUT=%g s", where, peer, comm->timeout_s);
    case KERN_FAIL_CONN:
      op_failure_also(op, also, f, more, sizeof(more));
      if (!strstr(f->msg, "rank ")) /* shared memory's checks know the peer's pid, not its rank */
        return err_set(res, LOG_COLL, "%s: %s: %s%s", where, peer, f->msg, more);
      return err_set(res, LOG_COLL, "%s: %s%s", where, f->msg, more);
    case KERN_FAIL_ABORT:
      return err_set(xcclRemoteError, LOG_COLL, "%s: the communicator was aborted", where);
    case KERN_FAIL_CHECKSUM:
      return err_set(xcclRemoteError, LOG_COLL,
                     "%s: the chunk of %zu bytes from %s (its message %llu on this connection) failed its CRC32C "
                     "check: computed %08x, sent %08x. The data was corrupted between the ranks (XCCL_CHECKSUM=1)",
                     where, f->want_bytes, peer, (unsigned long long)f->step, f->crc_computed, f->crc_carried);
    case KERN_FAIL_PROTOCOL:
      if (f->got_gpu)
        return err_set(xcclInvalidUsage, LOG_COLL,
                       "%s: %s sent this message from a device operation into GPU memory, but this rank runs %s on "
                       "host buffers: once device operations have used a connection, run an operation on device "
                       "buffers on every rank or on none (or set XCCL_P2P_DISABLE=1 and XCCL_NET_GDR_LEVEL=LOC)",
                       where, peer, op->coll.name);
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "%s: %s sent %zu bytes where %zu were expected: the ranks called %s with different counts, "
                     "datatypes or roots",
                     where, peer, f->got_bytes, f->want_bytes, op->coll.name);
    default:
      return err_set(xcclInternalError, LOG_COLL, "%s: failed (%s)", where, xcclGetErrorString(res));
  }
}

/* Sends to self meet receives from self in order: a copy. */
static xcclResult_t group_self_copies(const group_op_t *ops, int n, xcclComm_t comm) {
  int r = 0;
  for (int s = 0; s < n; s++) {
    if (ops[s].comm != comm || ops[s].kind != GROUP_SEND || ops[s].peer != comm->rank) continue;
    while (r < n && !(ops[r].comm == comm && ops[r].kind == GROUP_RECV && ops[r].peer == comm->rank)) r++;
    if (r == n)
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "send #%llu on rank %d to itself has no matching receive from itself "
                     "in the group",
                     (unsigned long long)ops[s].seq, comm->rank);
    if (ops[r].bytes != ops[s].bytes)
      return err_set(xcclInvalidUsage, LOG_COLL, "rank %d sends %zu bytes to itself but receives %zu from itself",
                     comm->rank, ops[s].bytes, ops[r].bytes);
    if (ops[s].bytes && ops[r].buf != ops[s].buf) memmove(ops[r].buf, ops[s].buf, ops[s].bytes);
    r++;
  }
  for (; r < n; r++)
    if (ops[r].comm == comm && ops[r].kind == GROUP_RECV && ops[r].peer == comm->rank)
      return err_set(xcclInvalidUsage, LOG_COLL, "a receive from itself on rank %d has no matching send", comm->rank);
  return xcclSuccess;
}

/* Point-to-point connections this comm's operations need: the user's
 * (COMM_P2P_USER), then the algorithms' own (COMM_P2P_ALGO, algo.h). */
static xcclResult_t group_connect(const group_op_t *ops, int n, xcclComm_t comm) {
  int missing = 0; /* most calls find every connection made: nothing to allocate */
  for (int i = 0; i < n && !missing; i++) {
    const group_op_t *op = &ops[i];
    if (op->comm != comm) continue;
    if (op->kind == GROUP_COLL) {
      algo_peers_t p;
      algo_peers_missing(comm, op->coll.algo, &op->coll, &p);
      missing = algo_peers_count(&p) > 0;
    } else if (op->peer != comm->rank) {
      const comm_p2p_t *d =
          op->kind == GROUP_SEND ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
      missing = !d->ready;
    }
  }
  if (!missing) return xcclSuccess;
  comm->obs->connect_begin(comm, ops, n); /* waits on the peers being connected, for dumps */
  int *sends = malloc(sizeof(int) * (size_t)n), *recvs = malloc(sizeof(int) * (size_t)n), ns = 0, nr = 0;
  xcclResult_t res = xcclSuccess;
  if (!sends || !recvs) res = err_set(xcclSystemError, LOG_COLL, "out of memory for a group");
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    if (ops[i].comm != comm || ops[i].kind == GROUP_COLL || ops[i].peer == comm->rank) continue;
    if (ops[i].kind == GROUP_SEND)
      sends[ns++] = ops[i].peer;
    else
      recvs[nr++] = ops[i].peer;
  }
  if (res == xcclSuccess && (ns || nr)) res = comm_connect_p2p(comm, COMM_P2P_USER, sends, ns, recvs, nr);
  /* Per collective, in the order every rank issued them: an operation's
   * connections may depend on it (the tree's on the root, algo.h). */
  for (int i = 0; i < n && res == xcclSuccess; i++)
    if (ops[i].comm == comm && ops[i].kind == GROUP_COLL) res = algo_connect(comm, ops[i].coll.algo, &ops[i].coll);
  comm->obs->connect_end(comm);
  free(sends);
  free(recvs);
  return res;
}

typedef struct {
  xcclComm_t *comms;
  int ncomms;
  p2p_item_t *pitems; /* one per op */
  char *algo_mem;     /* the collectives' scratch (algo_desc_t), one after another in op order */
  kern_item_t **items;
  int *item_op; /* the op of each item */
  int nitems;
} group_run_t;

/* A launch's tables live in one block per thread, kept from call to call:
 * a small collective allocates nothing. Freed when the thread exits. */
typedef struct {
  void *mem;
  size_t cap;
} group_scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
  group_scratch_t *s = p;
  free(s->mem);
  free(s);
}
static void scratch_key_make(void) { pthread_key_create(&scratch_key, scratch_free); }

static void *scratch_get(size_t bytes) {
  pthread_once(&scratch_once, scratch_key_make);
  group_scratch_t *s = pthread_getspecific(scratch_key);
  if (!s) {
    if (!(s = calloc(1, sizeof(*s)))) return NULL;
    pthread_setspecific(scratch_key, s);
  }
  if (s->cap < bytes) {
    void *m = malloc(bytes);
    if (!m) return NULL;
    free(s->mem);
    s->mem = m;
    s->cap = bytes;
  }
  return s->mem;
}

/* count objects of `size` bytes, rounded up to 64-byte blocks. */
static size_t blocks(size_t count, size_t size) { return (count * size + 63) / 64 * 64; }

/* The next `count` objects of `size` bytes from the block at *cur, at a 64-byte offset. */
static void *carve(char **cur, size_t count, size_t size) {
  void *p = *cur;
  *cur += blocks(count, size);
  return p;
}

/* Lays g's tables out in the thread's block, each collective's scratch
 * size kept in its op for group_build; 0 when out of memory. */
static int group_tables(group_run_t *g, group_op_t *ops, int n) {
  size_t algo_bytes = 0, nitems = 0, N = (size_t)n;
  for (int i = 0; i < n; i++) {
    if (ops[i].kind != GROUP_COLL) {
      nitems++;
      continue;
    }
    const algo_desc_t *d = algo_table[ops[i].coll.algo];
    ops[i].scratch = d->scratch_bytes(&ops[i].coll, ops[i].comm);
    algo_bytes += blocks(1, ops[i].scratch);
    nitems += (size_t)d->max_items;
  }
  size_t total = blocks(N, sizeof(*g->comms)) + blocks(N, sizeof(*g->pitems)) + algo_bytes +
                 blocks(nitems, sizeof(*g->items)) + blocks(nitems, sizeof(*g->item_op));
  char *cur = scratch_get(total);
  if (!cur) return 0;
  *g = (group_run_t){0};
  g->comms = carve(&cur, N, sizeof(*g->comms));
  g->pitems = carve(&cur, N, sizeof(*g->pitems));
  g->algo_mem = carve(&cur, algo_bytes, 1);
  g->items = carve(&cur, nitems, sizeof(*g->items));
  g->item_op = carve(&cur, nitems, sizeof(*g->item_op));
  return 1;
}

static int comm_index(group_run_t *g, xcclComm_t comm) {
  for (int i = 0; i < g->ncomms; i++)
    if (g->comms[i] == comm) return i;
  g->comms[g->ncomms] = comm;
  return g->ncomms++;
}

static void group_add_item(group_run_t *g, kern_item_t *it, int op) {
  g->items[g->nitems] = it;
  g->item_op[g->nitems++] = op;
}

/* Work items for every operation, in issue order. */
static xcclResult_t group_build(group_run_t *g, const group_op_t *ops, int n) {
  char *algo_mem = g->algo_mem;
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i];
    xcclComm_t comm = op->comm;
    int ci = comm_index(g, comm);
    kern_lane_t lane0 = kern_lane_comm(ci);
    if (op_local(op)) {
      carve(&algo_mem, 1, op->scratch); /* as group_tables counted */
    } else if (op->kind == GROUP_COLL) {
      const algo_desc_t *d = algo_table[op->coll.algo];
      void *scratch = carve(&algo_mem, 1, op->scratch);
      int k = d->build(&op->coll, comm, lane0, scratch, &g->items[g->nitems]);
      for (int j = 0; j < k; j++) g->item_op[g->nitems++] = i;
    } else if (op->peer != comm->rank) {
      int send = op->kind == GROUP_SEND;
      comm_p2p_t *d = send ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
      host_p2p_item(&g->pitems[i], &comm->env, kern_lane_p2p(ci, op->peer, !send), send, d->fifo, &d->step,
                    op->buf, op->bytes);
      g->pitems[i].base.peer = op->peer; /* whom it waits on, for state dumps */
      group_add_item(g, &g->pitems[i].base, i);
    }
  }
  return xcclSuccess;
}

/* PreMulSum collectives: their inputs scaled into scratch, read now, just
 * before they run (redop.h); group_premul_end frees it. */
static xcclResult_t group_premul_begin(group_op_t *ops, int n) {
  for (int i = 0; i < n; i++)
    if (ops[i].kind == GROUP_COLL) TRY(redop_premul_begin(&ops[i].premul, &ops[i].coll));
  return xcclSuccess;
}

/* What the collectives on one rank leave in recvbuff: sendbuff (scaled by
 * now, for PreMulSum), or nothing. */
static void group_local_copies(const group_op_t *ops, int n) {
  for (int i = 0; i < n; i++) {
    const coll_args_t *a = &ops[i].coll;
    size_t bytes = a->recv_elems * a->esize;
    if (op_local(&ops[i]) && bytes && a->sendbuff && a->sendbuff != a->recvbuff)
      memcpy(a->recvbuff, a->sendbuff, bytes);
  }
}

static void group_premul_end(group_op_t *ops, int n) {
  for (int i = 0; i < n; i++)
    if (ops[i].kind == GROUP_COLL) redop_premul_end(&ops[i].premul);
}

/* The kernel stopped early on ops[fail->item's op] (failed): the error
 * sentence, and every communicator of the launch marked failed with its
 * state recorded for dumps. */
static xcclResult_t launch_failed(const group_op_t *failed, const group_op_t *also, xcclComm_t *comms, int ncomms,
                                  xcclResult_t res, const kern_failure_t *fail) {
  res = op_failure(failed, also, res, fail);
  for (int c = 0; c < ncomms; c++) {
    comms[c]->obs->fail_seen(comms[c], fail, comms[c] == failed->comm ? op_failure_peer(failed, fail) : -1);
    comm_fail(comms[c], res, err_last());
    /* The peers are told; now the in-flight state, for xccl-stuck. */
    comms[c]->obs->op_failed(comms[c], fail, comms[c] == failed->comm, comms[c]->fail_msg);
  }
  return res;
}

/* The items of ops[0..n) on comms[0..ncomms) run: with the proxies told
 * (proxied), what XCCL_FAULT's rules match (on each communicator its first
 * operation), the trace, and on failure the error sentence with every
 * communicator marked failed. item_op: each item's operation (NULL: ops[0]'s). */
static xcclResult_t launch_items(const group_op_t *ops, int n, xcclComm_t *comms, int ncomms, kern_item_t *const *items,
                                 int nitems, const int *item_op, int proxied) {
  for (int c = 0; c < ncomms && proxied; c++) proxy_op_begin(comms[c]->proxy);
  for (int i = n - 1; i >= 0; i--) fault_set_op(&ops[i].comm->fault, ops[i].coll.name, ops[i].seq);
  kern_failure_t fail;
  uint64_t t_trace = comm_trace_clock(ops, n);
  xcclResult_t res = kern_run(items, nitems, &fail);
  for (int c = 0; c < ncomms && proxied; c++) proxy_op_end(comms[c]->proxy);
  for (int c = 0; c < ncomms && t_trace; c++)
    if (comms[c]->trace) comms[c]->obs->ran(comms[c], ops, n, t_trace);
  if (res != xcclSuccess)
    res = launch_failed(&ops[item_op ? item_op[fail.item] : 0], fail.also_ns ? &ops[item_op ? item_op[fail.also_item] : 0] : NULL,
                        comms, ncomms, res, &fail);
  return res;
}

/* A collective alone, outside any group (op->comm held), whose algorithm
 * lays out its item from what the communicator keeps (algo_desc_t.lone):
 * the commonest small call, a gradient bucket's or a barrier's all-reduce,
 * runs without a group's tables, connection checks or proxy bookkeeping.
 * Returns 0 when it cannot (the caller takes group_launch), else 1 with the
 * result in *res_p. */
static int launch_lone(const group_op_t *op, xcclResult_t *res_p) {
  const algo_desc_t *d = algo_table[op->coll.algo];
  xcclComm_t comm = op->comm;
  _Alignas(64) char mem[ALGO_LONE_BYTES];
  kern_item_t *it;
  if (!d->lone || op->kind != GROUP_COLL || op->premul.on || op_local(op) || !(it = d->lone(&op->coll, comm, mem)))
    return 0;
  dump_op_begin(comm, op, 1);
  xcclResult_t res = launch_items(op, 1, &comm, 1, &it, 1, NULL, 0);
  dump_op_end(comm, op, 1, res == xcclSuccess);
  if (res != xcclSuccess) comm_record(comm, res);
  *res_p = res;
  return 1;
}

/* held: the caller already holds the (one) communicator (comm_acquire). */
static xcclResult_t group_launch(group_op_t *ops, int n, int held) {
  group_run_t g = {0};
  if (n <= 0) return xcclSuccess;
  xcclResult_t res = xcclSuccess;
  int acquired = 0;
  for (; acquired < n && !held; acquired++)
    if ((res = comm_acquire(ops[acquired].comm)) != xcclSuccess) goto out;
  if ((res = group_premul_begin(ops, n)) != xcclSuccess) goto out;
  group_local_copies(ops, n);
  if (!group_tables(&g, ops, n)) {
    res = err_set(xcclSystemError, LOG_COLL, "out of memory for a group of %d operations", n);
    goto out;
  }
  for (int i = 0; i < n; i++) comm_index(&g, ops[i].comm);
  for (int c = 0; c < g.ncomms; c++) dump_op_begin(g.comms[c], ops, n); /* what dumps say it is doing */
  for (int c = 0; c < g.ncomms && res == xcclSuccess; c++) {
    res = group_self_copies(ops, n, g.comms[c]);
    if (res == xcclSuccess) res = group_connect(ops, n, g.comms[c]);
  }
  if (res != xcclSuccess) goto out;
  if ((res = group_build(&g, ops, n)) != xcclSuccess || g.nitems == 0) goto out;
  res = launch_items(ops, n, g.comms, g.ncomms, g.items, g.nitems, g.item_op, 1);
out:
  group_premul_end(ops, n);
  for (int c = 0; c < g.ncomms; c++) dump_op_end(g.comms[c], ops, n, res == xcclSuccess);
  for (int i = 0; i < n; i++) {
    if (i < acquired) comm_release(ops[i].comm);
    if (res != xcclSuccess) comm_record(ops[i].comm, res);
  }
  return res;
}

xcclResult_t group_add(const group_op_t *op) {
  if (group_depth == 0) {
    group_op_t one = *op; /* the launch points a PreMulSum's input at its scratch */
    return group_launch(&one, 1, 0);
  }
  if (group_nops == group_cap) {
    int cap = group_cap ? 2 * group_cap : 16;
    group_op_t *o = realloc(group_ops, sizeof(*o) * (size_t)cap);
    if (!o) return err_set(xcclSystemError, LOG_COLL, "out of memory for a group of %d operations", cap);
    group_ops = o;
    group_cap = cap;
  }
  group_ops[group_nops++] = *op;
  return xcclSuccess;
}

xcclResult_t group_add_held(const group_op_t *op) {
  if (group_depth == 0) {
    xcclResult_t res;
    if (launch_lone(op, &res)) return res; /* no PreMulSum: op as it is */
    group_op_t one = *op;
    return group_launch(&one, 1, 1);
  }
  return group_add(op);
}

xcclResult_t group_run_now(group_op_t *ops, int n) { return group_launch(ops, n, 1); }

int group_mark(void) { return group_nops; }

void group_rollback(int mark) {
  if (mark >= 0 && mark <= group_nops) group_nops = mark;
}

xcclResult_t xcclGroupStart(void) {
  group_depth++;
  return xcclSuccess;
}

xcclResult_t xcclGroupEnd(void) {
  if (group_depth == 0) return err_set(xcclInvalidUsage, LOG_COLL, "xcclGroupEnd without a matching xcclGroupStart");
  if (--group_depth > 0) return xcclSuccess;
#ifdef XCCL_HAVE_CUDA
  xcclResult_t dres = enqueue_cuda_group_end(); /* the group's device operations: one kernel, enqueued first */
#endif
  xcclResult_t res = group_nops ? comm_group_connect_shared(group_ops, group_nops) : xcclSuccess; /* group_init.c */
  if (res == xcclSuccess && group_nops) res = group_launch(group_ops, group_nops, 0);
  group_nops = 0;
#ifdef XCCL_HAVE_CUDA
  if (res == xcclSuccess) res = dres;
#endif
  xcclResult_t ires = comm_group_inits_finish(); /* the inits started in the group (group_init.c) */
  return res == xcclSuccess ? ires : res;
}

int group_open(void) { return group_depth > 0; }

/* ---- xcclGroupSimulateEnd ---- */

/* The class of link comm's messages to peer cross: inside the host or
 * between hosts. */
static algo_link_class_t group_link(const struct xcclComm *comm, int peer) {
  return comm_same_host(comm, comm->rank, peer) ? ALGO_LINK_LOCAL : ALGO_LINK_NET;
}

double group_estimate_s(void) {
  double t = 0;
  for (int i = 0; i < group_nops; i++) {
    const group_op_t *op = &group_ops[i];
    struct xcclComm *comm = op->comm;
    if (!comm_acquire_quiet(comm)) continue; /* destroyed since: it would not run either */
    if (op->kind == GROUP_COLL) {
      const coll_args_t *a = &op->coll;
      /* priced as the tuner priced it: the communicator's site (its hosts, links and cores) */
      size_t bytes = a->bytes, slot = comm->peers[comm->rank].chunk_size; /* as op.c priced it */
      double s = cost_estimate_s(a->algo, a->coll, bytes, comm->nranks, slot, &comm->site);
      /* XCCL_ALGO may force an algorithm where its work says it cannot run
       * (hier on one host still runs, as its two levels on one): a ring's
       * price, not an infinite one */
      if (!isfinite(s)) s = cost_estimate_s(ALGO_RING, a->coll, bytes, comm->nranks, slot, &comm->site);
      t += s;
    } else if (op->kind == GROUP_SEND || op->peer != comm->rank) { /* a send to itself is one copy, its receive none */
      t += op->peer == comm->rank ? cost_estimate_s(ALGO_RING, COLL_BROADCAST, op->bytes, 1, 0, &comm->site)
                                  : cost_p2p_s(op->bytes, group_link(comm, op->peer), &comm->site);
    }
    comm_release(comm);
  }
  return t;
}

/* Ends the group as xcclGroupEnd does, but drops what it holds. The
 * operations of one group run together; the estimate adds them up, as one
 * after the other, an upper bound. An inner group's end only reports what
 * is queued so far: the outermost end drops it. */
xcclResult_t xcclGroupSimulateEnd(float *estimatedTimeUs) {
  if (!estimatedTimeUs) return err_set(xcclInvalidArgument, LOG_COLL, "xcclGroupSimulateEnd: estimatedTimeUs is NULL");
  if (group_depth == 0)
    return err_set(xcclInvalidUsage, LOG_COLL, "xcclGroupSimulateEnd without a matching xcclGroupStart");
  double t = group_estimate_s();
  xcclResult_t ires = xcclSuccess;
  if (--group_depth == 0) {
    group_nops = 0; /* nothing queued owns memory until its launch (redop.h) */
#ifdef XCCL_HAVE_CUDA
    enqueue_cuda_group_rollback(0); /* the device operations are dropped too (not estimated), */
    (void)enqueue_cuda_group_end(); /* and the group's bookkeeping with them: nothing left to launch */
#endif
    ires = comm_group_inits_finish(); /* inits are not simulated: they complete (group_init.c) */
  }
  *estimatedTimeUs = (float)(t * 1e6);
  return ires;
}
