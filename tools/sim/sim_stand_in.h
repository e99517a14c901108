/*
 * sim_stand_in.h — the arguments xccl-sim builds the kernels' own work items
 * over (host_rd_item, host_rab_item, host_hier_item; host_tree_item over
 * its fifo alone): every connection is one stand-in fifo that carries only
 * slot_size (XCCL_ALGO_CHUNK_SIZE), so an item's geometry is the kernel's
 * and no data moves.
 */
#ifndef XCCL_TOOLS_SIM_STAND_IN_H
#define XCCL_TOOLS_SIM_STAND_IN_H

#include "host_engine.h"
#include "host_partners.h"
#include "sim.h"

typedef struct {
  slot_fifo_t fifo;
  slot_fifo_t **fifos;
  uint64_t step;
  uint64_t **steps;
  partner_args_t a; /* a.rank is the caller's to set per item */
  kern_env_t env;
} stand_in_t;

/* The data type of s->esize bytes the items are built for (the sim's
 * default 4: xcclFloat32, as xccl-perf's). */
static inline xcclDataType_t stand_in_type(size_t esize) {
  return esize == 8 ? xcclFloat64 : esize == 2 ? xcclFloat16 : esize == 1 ? xcclInt8 : xcclFloat32;
}

/* Fills si for s's operation: 0, or -1 when out of memory (si then holds
 * nothing to free). */
int stand_in_make(stand_in_t *si, const sim_t *s);

/* Elements of one piece on the algorithms' own connections (at least 1). */
static inline size_t stand_in_piece_elems(const sim_t *s) {
  return s->peer_slot / s->esize ? s->peer_slot / s->esize : 1;
}
void stand_in_free(stand_in_t *si);

#endif
