/*
 * cost.h — the one price of an operation: an algorithm states its work
 * (algo_desc_t.work: latency steps and bytes of the busiest rank per class
 * of link) and cost_price turns that and a site's links into seconds. The
 * tuner (tuning_pick), xcclGroupSimulateEnd (group.c) and xccl-sim
 * (tools/sim) all price through these functions and no other formula, so
 * what one of them says an algorithm costs is what the others say.
 */
#ifndef XCCL_CORE_COST_H
#define XCCL_CORE_COST_H

#include <stddef.h>

#include "algo.h"

/* The work of algo for coll of `bytes` (the schedule's count times the
 * element size) on nranks (>= 2) ranks at site, into *work_p (written
 * whole). ring_slot: the ring channels' slot bytes; algo's own connections
 * use site->peer_slot where it is set (algo_slot). Not ok where algo does
 * not serve coll. */
void cost_work(algo_t algo, coll_kind_t coll, size_t bytes, int nranks, size_t ring_slot, const algo_site_t *site,
               algo_work_t *work_p);

/* Seconds work takes on site's links: per class, steps x alpha + bytes /
 * beta, added up; HUGE_VAL when the work is not ok. Ranks sharing cores
 * are already in the links (algo_site_t.cpu_share). */
double cost_price(const algo_work_t *work, const algo_site_t *site);

/* cost_price of cost_work: seconds algo takes for coll of `bytes` on
 * nranks ranks at site. One rank: a copy of the bytes at shared memory's
 * speed. HUGE_VAL where algo cannot run there. */
double cost_estimate_s(algo_t algo, coll_kind_t coll, size_t bytes, int nranks, size_t ring_slot,
                       const algo_site_t *site);

/* Seconds a send (or its receive) of `bytes` takes over a link of class
 * cls (ALGO_LINK_*) at site: one step and its bytes. */
double cost_p2p_s(size_t bytes, algo_link_class_t cls, const algo_site_t *site);

#endif
