/*
 * algo_ring.c — the ring algorithm: every collective, on the communicator's
 * ring channels (host_ring.h), one work item per channel.
 */
#include <math.h>

#include "algo.h"
#include "comm.h"

/*
 * For k ranks, B bytes and slots of S bytes (ring_schedule.h's steps), on
 * the site's flat link:
 *   all-reduce: 2(k-1) steps of B/k, pipelined over ceil(B/(kS)) loops:
 *     2(k-1) + loops - 1 steps, 2(k-1)/k B bytes
 *   all-gather, reduce-scatter (B: one rank's block): k-1 steps per loop,
 *     ceil(B/S) loops: k-1 + loops - 1 steps, (k-1) B bytes
 *   broadcast, reduce: a chain of k-1 hops, ceil(B/S) pieces:
 *     k-1 + loops - 1 steps, B bytes
 */
static void ring_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                      algo_work_t *work_p) {
  double k = nranks, b = (double)bytes, s = (double)slot;
  int all = coll == COLL_ALLREDUCE, gathers = coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER;
  double hops = all ? 2 * (k - 1) : k - 1;
  double loops = b > 0 ? ceil(all ? b / (k * s) : b / s) : 1;
  double moved = all ? 2 * (k - 1) / k * b : (gathers ? k - 1 : 1) * b;
  if (algo_levels_g(site)) {
    double H = site->nhosts, rails = algo_rails(site);
    if (all || gathers) {
      /* Between hosts: H of a pass's k hops cross a NIC, the rest stay
       * inside; every hop carries at once, and a host's crossings spread
       * over its rails (channel c on NIC c), so the busiest link bounds it. */
      algo_work_levels(work_p, hops * (k - H) / k, moved, hops * H / k + loops - 1, moved / rails, 1);
      return;
    }
    /* Broadcast, reduce: a chain per channel (one per rail) whose every hop
     * takes a piece in before it passes it on; the pieces then follow at
     * the network's pace. */
    double per = b / rails, chain_loops = per > 0 ? ceil(per / s) : 1, piece = per < s ? per : s;
    double net_hops = (k - 1) * H / k, local_hops = (k - 1) - net_hops;
    algo_work_levels(work_p, local_hops, local_hops * piece, net_hops + chain_loops - 1,
                     (net_hops + chain_loops - 1) * piece, 0);
    return;
  }
  algo_work_flat(work_p, site, hops + loops - 1, moved);
}

/* One operation's scratch. */
typedef struct {
  ring_args_t args;
  ring_channel_t chans[XCCL_MAX_CHANNELS];
  ring_item_t items[XCCL_MAX_CHANNELS];
} ring_launch_t;

static size_t ring_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a, (void)comm;
  return sizeof(ring_launch_t);
}

static int ring_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  ring_launch_t *l = scratch;
  int nch = a->nchannels; /* the same on every rank, and on the CUDA path (op.h) */
  for (int c = 0; c < nch; c++) {
    comm_channel_t *ch = &comm->channels[c];
    l->chans[c] = (ring_channel_t){ch->send,
                                   ch->recv,
                                   &ch->send_step,
                                   &ch->recv_step,
                                   .position = comm_ring_pos(comm, c, comm->rank),
                                   .root = comm_ring_pos(comm, c, a->root < 0 ? 0 : a->root),
                                   .ring = comm_ring(comm, c)};
  }
  l->args = (ring_args_t){.coll = a->coll,
                          .sendbuff = a->sendbuff,
                          .recvbuff = a->recvbuff,
                          .count = a->count,
                          .type = a->type,
                          .op = a->op,
                          .nranks = comm->nranks,
                          .nchannels = nch,
                          .channels = l->chans};
  host_ring_items(&l->args, &comm->env, lane0 + ALGO_LANE_CHANNEL, l->items);
  for (int c = 0; c < nch; c++) items[c] = &l->items[c].base;
  return nch;
}

const algo_desc_t algo_ring = {
    .name = "ring",
    .colls = ((1u << COLL_NKINDS) - 1) & ~(1u << COLL_ALLTOALL),
    .work = ring_work,
    .max_items = XCCL_MAX_CHANNELS,
    .scratch_bytes = ring_scratch_bytes,
    .build = ring_build,
    .peers = algo_peers_none,
};
