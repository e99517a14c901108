/*
 * tuning.h — which algorithm runs a collective: XCCL_ALGO when it forces
 * one, else the cheapest by the algorithms' costs (algo.h).
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
 * `slot` bytes (site->peer_slot on the algorithms' own connections): the forced one, else the cheapest that serves coll (the earlier in
 * algo_table on a tie); on one rank the first that serves coll (the ring;
 * pairwise for all-to-all). */
algo_t tuning_pick(const int *forced, coll_kind_t coll, size_t bytes, int nranks, size_t slot,
                   const algo_site_t *site);

/*
 * The cost model of xcclGroupSimulateEnd: an alpha-beta time per operation,
 * steps x the link's per-step latency + bytes each rank moves / the link's
 * bandwidth, by the kind of link the operation's messages cross.
 */
typedef enum {
  TUNING_LINK_SHM, /* shared memory: every rank on one host, a transport that writes the peer's fifo */
  TUNING_LINK_NET, /* a network transport (sockets, ib) */
  TUNING_NLINKS
} tuning_link_t;

typedef struct {
  double alpha_s;  /* seconds per step, the latency of one message */
  double beta_bps; /* bytes per second one rank moves */
} tuning_link_cost_t;

extern const tuning_link_cost_t tuning_links[TUNING_NLINKS];

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

/* Fills site's hosts (algo.h: nhosts ... layout) for nranks ranks whose
 * hosts are told apart by host_hash (one 64-bit value per rank, stride
 * bytes apart; the peer info's), with shm_used: ranks of one host talk over
 * shared memory. cpus (an algo_cpus_t per rank, the same stride; NULL: a
 * core each): the CPUs each rank may use; where a host's ranks outnumber
 * them, every link of the site is priced as ranks taking turns on the
 * cores (site->cpu_share, tuning.c). forced: XCCL_ALGO's (tuning_parse). site->layout is then
 * the caller's, freed with tuning_site_free. Fails (site unchanged) when out
 * of memory, or when hier is forced and some rank would need more than
 * ALGO_MAX_PEERS connections for it, saying so. */
xcclResult_t tuning_site_hosts(algo_site_t *site, int nranks, const void *host_hash, const void *cpus,
                               size_t stride, int shm_used, const int *forced);
/* XCCL_HIER_INTER as site->hier_inter holds it (HIER_INTER_RING, _TREE or
 * both, for auto), into *inter_p; xcclInvalidUsage, saying so, on another
 * value (*inter_p unchanged). tuning_site_hosts reads it so. */
xcclResult_t tuning_hier_inter(unsigned *inter_p);
void tuning_site_free(algo_site_t *site);

/* Seconds algo takes to run coll of `bytes` (the schedule's count times the
 * element size, as tuning_pick is given) on nranks ranks with slots of
 * `slot` bytes over link; grows with bytes and nranks. One rank: a copy. */
double tuning_estimate_s(algo_t algo, coll_kind_t coll, size_t bytes, int nranks, size_t slot, tuning_link_t link);
/* Seconds a send (or its receive) of `bytes` takes over link. */
double tuning_p2p_estimate_s(size_t bytes, tuning_link_t link);

#endif
