/* sim_engine.c — xccl-sim's event heap and links (sim.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_select.h"
#include "sim.h"

static int ev_before(const sim_ev_t *a, const sim_ev_t *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static int heap_push(sim_t *s, const sim_ev_t *e) {
  if (s->nheap == s->capheap) {
    size_t cap = s->capheap ? 2 * s->capheap : 4096;
    sim_ev_t *h = realloc(s->heap, cap * sizeof(*h));
    if (!h) return -1;
    s->heap = h, s->capheap = cap;
  }
  size_t i = s->nheap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!ev_before(e, &s->heap[p])) break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = *e;
  return 0;
}

static void heap_pop(sim_t *s, sim_ev_t *out) {
  *out = s->heap[0];
  sim_ev_t last = s->heap[--s->nheap];
  size_t i = 0, n = s->nheap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && ev_before(&s->heap[c + 1], &s->heap[c])) c++;
    if (!ev_before(&s->heap[c], &last)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = last;
}

static int heap_failed;

void sim_send_via(sim_t *s, int src, int dst, int rx_rank, int to, int tag, size_t bytes, int nic, double delay) {
  double *tx, *rx, bps, lat;
  int hs = sim_host(s, src), hd = sim_host(s, dst), hr = sim_host(s, rx_rank);
  if (hs == hd) {
    tx = &s->nvl_tx[src], rx = &s->nvl_rx[rx_rank];
    bps = s->c.nvl_bps, lat = s->c.nvl_lat;
  } else {
    int n = (nic >= 0 ? nic : net_p2p_channel(src, dst, s->c.nchannels)) % s->c.nics;
    tx = &s->nic_tx[(size_t)hs * s->c.gpus + n], rx = &s->nic_rx[(size_t)hr * s->c.gpus + n];
    bps = s->c.nic_bps, lat = s->c.nic_lat;
    s->net_bytes += (double)bytes;
  }
  /* The sender's port sends at once when free; the receiver's takes it in
   * when free, not before it left (the fabric holds it in between). */
  double d = (double)bytes / bps, start = s->now + delay, cost = hs == hd ? s->c.local_msg_s : s->c.msg_s;
  if (cost > 0) { /* the sender issues its messages one at a time */
    double *b = &s->busy[src];
    if (*b > start) start = *b;
    start += cost;
    *b = start;
  }
  if (*tx > start) start = *tx;
  double left = start + d, in = *rx + d > left ? *rx + d : left;
  *tx = left, *rx = in;
  sim_ev_t e = {.t = in + lat, .seq = s->seq++, .dst = to, .src = src, .tag = tag, .bytes = (uint32_t)bytes};
  s->nmsgs++;
  if (heap_push(s, &e) != 0) heap_failed = 1;
}

void sim_send(sim_t *s, int src, int dst, int to, int tag, size_t bytes, int nic) {
  sim_send_via(s, src, dst, dst, to, tag, bytes, nic, 0);
}

void sim_credit(sim_t *s, int from, int to_rank, int to, int tag) {
  if (s->c.window <= 0) return;
  double lat = sim_host(s, from) == sim_host(s, to_rank) ? s->c.nvl_lat : s->c.nic_lat;
  sim_ev_t e = {.t = s->now + lat, .seq = s->seq++, .dst = to, .src = from, .tag = tag, .credit = 1};
  if (heap_push(s, &e) != 0) heap_failed = 1;
}

void sim_finish(sim_t *s) {
  s->ndone++;
  if (s->now > s->end) s->end = s->now;
}

int sim_run(sim_t *s, const sim_sched_t *sched) {
  size_t nr = (size_t)s->c.nranks, nn = (size_t)s->c.hosts * (size_t)s->c.gpus;
  int rc = -1;
  heap_failed = 0;
  s->nvl_tx = calloc(nr, sizeof(double));
  s->nvl_rx = calloc(nr, sizeof(double));
  s->nic_tx = calloc(nn, sizeof(double));
  s->nic_rx = calloc(nn, sizeof(double));
  s->busy = calloc(nr, sizeof(double));
  if (!s->nvl_tx || !s->nvl_rx || !s->nic_tx || !s->nic_rx || !s->busy) {
    fprintf(stderr, "xccl-sim: out of memory for %zu ranks' links\n", nr);
    goto free_links;
  }
  if (sched->setup(s) != 0) goto free_links;
  s->now = 0;
  sched->start(s);
  sim_ev_t e;
  while (s->nheap && !heap_failed) {
    heap_pop(s, &e);
    s->now = e.t;
    sched->deliver(s, &e);
  }
  if (heap_failed)
    fprintf(stderr, "xccl-sim: %s: out of memory for the event heap\n", sched->name);
  else if (s->ndone != s->expect)
    fprintf(stderr, "xccl-sim: %s stopped with %llu of %llu items finished (a schedule that waits forever)\n",
            sched->name, (unsigned long long)s->ndone, (unsigned long long)s->expect);
  else
    rc = 0;
  sched->teardown(s);
free_links:
  free(s->heap), s->heap = NULL, s->nheap = s->capheap = 0;
  free(s->nvl_tx), free(s->nvl_rx), free(s->nic_tx), free(s->nic_rx), free(s->busy);
  s->nvl_tx = s->nvl_rx = s->nic_tx = s->nic_rx = s->busy = NULL;
  return rc;
}
