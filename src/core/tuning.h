/*
 * tuning.h — which algorithm runs a collective: XCCL_ALGO when it forces
 * one, else the cheapest by the algorithms' price (cost.h) at the
 * communicator's site, which tuning_site_hosts fills.
 */
#ifndef XCCL_CORE_TUNING_H
#define XCCL_CORE_TUNING_H

#include <stddef.h>

#include "algo.h"
#include "ring_schedule.h"
#include "xccl.h"

/* Reads XCCL_ALGO into forced[COLL_NKINDS] (-1: not forced). A name
 * that is not an algorithm, or an algorithm that does not serve the named
 * collective, is an error that says what is allowed; forced is then left
 * as it was. */
xcclResult_t tuning_parse(const char *text, int *forced);

/* The collective named name ("allreduce", any case) as XCCL_ALGO names
 * them, -1 for another. */
int tuning_coll_lookup(const char *name);
/* coll's name as XCCL_ALGO spells it ("?" for none). */
const char *tuning_coll_name(coll_kind_t coll);

/* The algorithm for coll of `bytes` on nranks ranks with ring slots of
 * `slot` bytes (site->peer_slot on the algorithms' own connections): the
 * one XCCL_ALGO forces, else the first whose work a setting forces
 * (algo_work_t.forced), else the cheapest by cost_price that serves coll
 * (the earlier in algo_table on a tie); on one rank the first that serves
 * coll (the ring; pairwise for all-to-all). */
algo_t tuning_pick(const int *forced, coll_kind_t coll, size_t bytes, int nranks, size_t slot,
                   const algo_site_t *site);

/* The links of tuning_site_hosts' sites, from which every site starts. */
typedef enum {
  TUNING_LINK_SHM, /* shared memory: a transport that writes the peer's fifo */
  TUNING_LINK_NET, /* a network transport (sockets, ib) */
  TUNING_NLINKS
} tuning_link_t;

extern const algo_link_t tuning_links[TUNING_NLINKS];

/* What a step waits, per rank beyond one per core, for the scheduler to
 * hand the core over (tuning.c, with its measurement; xccl-sim --cores). */
#define TUNING_HANDOVER_S 8e-6

/* One link (alpha seconds per step, bytes/s) with f ranks per core (> 1:
 * taking turns): alpha + (f - 1) TUNING_HANDOVER_S, bps / f. The tuner's
 * site and xccl-sim --cores both price their links so. */
static inline void tuning_share_link(double f, double *alpha_s, double *bps) {
  if (f <= 1) return;
  *alpha_s += (f - 1) * TUNING_HANDOVER_S;
  *bps /= f;
}

/* Fills site's links (link[], from tuning_links) and hosts (algo.h:
 * nhosts ... layout) for the ranks of host layout l (the communicator's,
 * host_hier.h), with shm_used: ranks of one host talk over shared memory.
 * cpus (an algo_cpus_t per rank, stride bytes apart; the peer info's; NULL:
 * a core each): the CPUs each rank may use; where a host's ranks outnumber
 * them, every link is priced as ranks taking turns on the cores
 * (site->cpu_share, tuning.c), once, here. forced: XCCL_ALGO's
 * (tuning_parse). site->flat is the caller's. site->layout is then l, which
 * stays the caller's and must outlive site. Fails (site unchanged) when
 * XCCL_HIER_INTER is not valid, or when hier is forced and some rank would
 * need more than ALGO_MAX_PEERS connections for it, saying so. */
xcclResult_t tuning_site_hosts(algo_site_t *site, const hier_layout_t *l, const void *cpus, size_t stride,
                               int shm_used, const int *forced);
/* XCCL_HIER_INTER as site->hier_inter holds it (HIER_INTER_RING, _TREE or
 * both, for auto), into *inter_p; xcclInvalidUsage, saying so, on another
 * value (*inter_p unchanged). tuning_site_hosts reads it so. */
xcclResult_t tuning_hier_inter(unsigned *inter_p);

#endif
