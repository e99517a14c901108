/*
 * algo.h — the algorithms that run collectives, as one table. Each
 * algorithm is a descriptor (algo_desc_t) saying which collectives it runs
 * and what it costs. The tuner (tuning.c) chooses among the descriptors
 * without naming an algorithm.
 *
 * Adding an algorithm: a file algo_<name>.c that defines its descriptor, a
 * value of algo_t with its line in algo_table (algo.c), and the file in
 * CMakeLists.txt.
 *
 * Contract of the slots: cost is only asked for collectives the algorithm
 * serves, on 2 or more ranks.
 */
#ifndef XCCL_CORE_ALGO_H
#define XCCL_CORE_ALGO_H

#include <stddef.h>

#include "ring_schedule.h"

/* An algorithm: its index in algo_table. ALGO_RING serves every collective
 * and runs when there is nothing to choose from (one rank). */
typedef enum { ALGO_RING = 0, ALGO_RD = 1, ALGO_COUNT } algo_t;

/* The cost model's constants: a per-step latency and a link bandwidth. They
 * are the socket transport on loopback as measured here with xccl-perf
 * (8-byte all-reduce on 2 ranks: ~60 us for the ring's 2 steps, ~33 us for
 * recursive doubling's 1; 16 MiB: ~2.2 GB/s bus bandwidth); they decide
 * crossovers, not absolute times. */
#define ALGO_ALPHA_S 30e-6
#define ALGO_BETA_BPS 1.5e9

typedef struct {
  const char *name; /* as XCCL_ALGO spells it */
  unsigned colls;   /* the collectives it serves: bit 1u << coll */
  /* Seconds coll of `bytes` (the schedule's count times the element size)
   * takes on nranks ranks with slots of slot bytes, by ALGO_ALPHA_S and
   * ALGO_BETA_BPS: compared with the other algorithms' to choose. */
  double (*cost)(ring_coll_t coll, size_t bytes, int nranks, size_t slot);
} algo_desc_t;

/* Indexed by algo_t; every slot filled. */
extern const algo_desc_t *const algo_table[ALGO_COUNT];

extern const algo_desc_t algo_ring; /* algo_ring.c */
extern const algo_desc_t algo_rd;   /* algo_rd.c */

/* The name of a (as XCCL_ALGO spells it), "?" when it is none. */
const char *algo_name(algo_t a);
/* 1 if a serves coll. */
int algo_serves(algo_t a, ring_coll_t coll);

#endif
