/*
 * sim_boot.h — xccl-sim --bootstrap: init's all-gather of the peer info as
 * a ring of k-1 steps and as Bruck's ceil(log2 k) rounds (sim_boot.c).
 */
#ifndef XCCL_TOOLS_SIM_BOOT_H
#define XCCL_TOOLS_SIM_BOOT_H

#include <stddef.h>

#include "sim.h"

/* The bytes one rank contributes: sizeof(comm_peer_info_t). */
size_t sim_boot_block_bytes(void);
/* Replays both on cluster c and prints their times (a table, or JSON rows
 * {algo: bootstrap_ring|bootstrap_bruck, ranks, steps, block_bytes,
 * time_us, bytes_per_rank, msgs}). 0, or 1 when one could not run. */
int sim_bootstrap(const sim_cluster_t *c, int json);

struct json_t;
/* --json (sim_main.c): row as one line of the output's list, after the "["
 * when first, else after a ","; releases row. The list's "[" and its closing
 * "\n]\n" are the caller's. */
void sim_json_row(struct json_t *row, int first);

#endif
