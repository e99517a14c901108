/*
 * algo_pairwise.c — all-to-all as one group of sends and receives, the
 * partners in pairwise-exchange order: in step s (1 .. k-1) rank q sends to
 * q + s and receives from q - s, so that no rank is every rank's first
 * partner. enqueue.c's p2p_coll submits them; the descriptor is the tuner's
 * price and XCCL_ALGO's name, and never builds an item (build NULL).
 */
#include <math.h>

#include "algo.h"

/* For k ranks, blocks of B bytes and slots of S bytes: k - 1 messages of
 * ceil(B/S) pieces each, all in flight at once, so one latency step per
 * piece and, for each further message, the sender's own work to issue it,
 * priced at ALGO_MSG_ISSUE of a step (a step's latency also holds the
 * peer's wake-up and the wire; a message's issue is the proxy's or the
 * copy's work alone):
 *   steps = (1 + (k-2) ALGO_MSG_ISSUE) ceil(B/S),  bytes = (k - 1) B
 * on the site's flat link.
 * Measured here (2 cores, 8 ranks on shared memory and 4 over sockets)
 * pairwise beat Bruck at every size; with 1/8 the model leaves Bruck to
 * about 40 ranks and more, where its log2 k rounds save more issue work
 * than they cost in latency. (ALGO_MSG_ISSUE: algo.h) */

static void pairwise_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                          algo_work_t *work_p) {
  (void)coll;
  double b = (double)bytes, k = nranks, s = (double)slot;
  algo_work_flat(work_p, site, (1 + (k - 2) * ALGO_MSG_ISSUE) * (b > 0 ? ceil(b / s) : 1), (k - 1) * b);
}

const algo_desc_t algo_pairwise = {
    .name = "pairwise",
    .colls = 1u << COLL_ALLTOALL,
    .work = pairwise_work,
    .peers = algo_peers_none,
};
