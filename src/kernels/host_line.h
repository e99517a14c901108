/*
 * host_line.h — the all-reduce of a few bytes between ranks of one host, in
 * one exchange of cache lines. Each pair of ranks shares a line (slots.h's
 * slot_line_t, in the fifo from the lower rank to the higher): a rank
 * writes its input and the operation's number into its half of the line it
 * shares with every peer, waits until each peer's half holds the same
 * number, and reduces all inputs in rank order, so every rank ends with the
 * same bits.
 *
 * Why one shared line: a rank's write pulls the line to its core with the
 * peer's half in it, so a 2-rank exchange costs about one transfer of the
 * line. Bare exchanges on the development VM, per exchange over a cache
 * line's one-way trip: one shared line 1.0x, two lines taken in turn 1.25x,
 * a line per direction 1.34x, the slots' data, tail and head lines 1.5x.
 *
 * A rank's half holds two messages (slots.h's slot_line_t), by the parity
 * of the operation's number: a rank writes operation n + 2 only after it
 * saw every peer's n + 1, which each wrote after it read everything of n.
 * A pair whose connections are not both shared memory (a segment that
 * could not be made, and TCP took over) exchanges its inputs as one
 * message each way through the slots instead: both ranks of the pair see
 * the same two connections, so they agree. Inputs of at most
 * SLOT_LINE_BYTES.
 */
#ifndef XCCL_KERNELS_HOST_LINE_H
#define XCCL_KERNELS_HOST_LINE_H

#include "host_engine.h"
#include "host_partners.h"

#define LINE_MAX_BYTES SLOT_LINE_BYTES
#define LINE_MAX_RANKS 64

typedef struct {
  kern_item_t base;
  const partner_args_t *args;
  uint64_t seq;  /* the operation's number on the communicator, from 1 */
  int next_send; /* the lowest peer this rank's input has not gone to */
  int next;      /* the lowest peer whose input has not come */
} line_item_t;

/* The pair of rank and peer exchanges through a line: both its connections
 * are shared memory (else through the slots, one message each way). */
static inline int host_line_shared(const partner_args_t *a, int peer) {
  return a->send_fifo[peer]->shared && a->recv_fifo[peer]->shared;
}

/* The fifo that holds the lines rank shares with peer: the pair's from the
 * lower rank to the higher. */
static inline slot_fifo_t *host_line_fifo(const partner_args_t *a, int peer) {
  return a->rank < peer ? a->send_fifo[peer] : a->recv_fifo[peer];
}

/* The line rank shares with peer, and rank's side of it. */
static inline slot_line_t *host_line_of(const partner_args_t *a, int peer, int *side_p) {
  *side_p = a->rank > peer;
  return &host_line_fifo(a, peer)->line;
}

/* a: the operation's (count * type size <= LINE_MAX_BYTES, every peer's
 * fifos shared); seq: its number, one more than the communicator's last
 * line all-reduce. */
void host_line_item(line_item_t *it, const partner_args_t *a, uint64_t seq, const kern_env_t *env, kern_lane_t lane);

#endif
