/*
 * sim_site.c — what xccl's tuner knows of a modelled cluster (sim.h): the
 * site (algo.h's algo_site_t) that xccl-sim's picks and model_us are priced
 * at (cost.h, the tuner's own price) and hier's replay chooses its phase
 * (2) by, as init would build it for these ranks.
 */
#include <stdlib.h>

#include "error.h"
#include "log.h"
#include "sim.h"
#include "tuning.h"

int sim_site_make(const sim_cluster_t *c, size_t peer_slot, algo_site_t *site_p) {
  int k = c->nranks, forced[COLL_NKINDS];
  for (int i = 0; i < COLL_NKINDS; i++) forced[i] = -1;
  /* The hosts, as init finds them from the peers' host hashes (hier's
   * layout); ranks taking turns on cores (--cores) are already in the
   * cluster's links (sim_main.c's share_cores), so no CPUs are given. */
  algo_site_t site = {.flat = c->hosts > 1 ? ALGO_LINK_NET : ALGO_LINK_LOCAL, .peer_slot = peer_slot};
  uint64_t *hash = malloc((size_t)k * sizeof(*hash));
  void *mem = malloc(hier_layout_bytes(k));
  xcclResult_t res = xcclSystemError;
  if (!hash || !mem) {
    err_set(res, LOG_INIT, "out of memory for the hosts of %d ranks", k);
  } else {
    for (int r = 0; r < k; r++) hash[r] = sim_host_hash(c->gpus, r);
    res = tuning_site_hosts(&site, hier_layout_make(k, hash, sizeof(*hash), mem), NULL, 0, 1, forced);
  }
  free(hash);
  if (res != xcclSuccess) {
    free(mem);
    return -1;
  }
  /* This cluster's links in place of the table's: the network's latency is
   * the wire's and a message's own cost, its bandwidth a GPU's NIC's; the
   * NVLink's inside a host. */
  site.link[ALGO_LINK_LOCAL] = (algo_link_t){c->nvl_lat + c->local_msg_s, c->nvl_bps};
  site.link[ALGO_LINK_NET] = (algo_link_t){c->nic_lat + c->msg_s, c->nic_bps};
  site.nics = c->nics < c->nchannels ? c->nics : c->nchannels; /* rails: NICs the channels use (sim_engine.c) */
  *site_p = site;
  return 0;
}

void sim_site_free(algo_site_t *site) {
  free((void *)site->layout);
  site->layout = NULL;
}
