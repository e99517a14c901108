/*
 * cost.c — work into seconds (cost.h).
 */
#include "cost.h"

#include <math.h>
#include <string.h>

#include "tuning.h"

void cost_work(algo_t algo, coll_kind_t coll, size_t bytes, int nranks, size_t ring_slot, const algo_site_t *site,
               algo_work_t *work_p) {
  memset(work_p, 0, sizeof(*work_p));
  if ((unsigned)algo >= ALGO_COUNT || !algo_serves(algo, coll)) return;
  size_t slot = algo_slot(algo, ring_slot, site->peer_slot);
  algo_table[algo]->work(coll, bytes, nranks, slot ? slot : 1, site, work_p);
}

double cost_price(const algo_work_t *work, const algo_site_t *site) {
  if (!work->ok) return HUGE_VAL;
  double t = 0, slowest = 0;
  for (int c = 0; c < ALGO_NLINKS; c++) /* a class the work does not cross may have no link (0 bps) */
    if (work->steps[c] != 0 || work->bytes[c] != 0) {
      double moving = work->bytes[c] / site->link[c].beta_bps;
      t += work->steps[c] * site->link[c].alpha_s + (work->pipelined ? 0 : moving);
      slowest = moving > slowest ? moving : slowest;
    }
  return t + (work->pipelined ? slowest : 0);
}

double cost_estimate_s(algo_t algo, coll_kind_t coll, size_t bytes, int nranks, size_t ring_slot,
                       const algo_site_t *site) {
  if (nranks < 2) return (double)bytes / tuning_links[TUNING_LINK_SHM].beta_bps; /* a local copy at most */
  algo_work_t w;
  cost_work(algo, coll, bytes, nranks, ring_slot, site, &w);
  return cost_price(&w, site);
}

double cost_p2p_s(size_t bytes, algo_link_class_t cls, const algo_site_t *site) {
  algo_work_t w = {.ok = 1};
  w.steps[cls] = 1;
  w.bytes[cls] = (double)bytes;
  return cost_price(&w, site);
}
