/* algo.c — the algorithm table (algo.h). */
#include "algo.h"

const algo_desc_t *const algo_table[ALGO_COUNT] = {
    [ALGO_RING] = &algo_ring,
    [ALGO_RD] = &algo_rd,
};

const char *algo_name(algo_t a) { return (unsigned)a < ALGO_COUNT ? algo_table[a]->name : "?"; }

int algo_serves(algo_t a, ring_coll_t coll) { return (algo_table[a]->colls >> coll) & 1u; }
