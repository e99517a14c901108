/*
 * kern_recv.h — the check a kernel makes on each message it receives before
 * using it: the size its schedule expects and, with XCCL_CHECKSUM, the
 * CRC32C that came with the data.
 */
#ifndef XCCL_KERNELS_KERN_RECV_H
#define XCCL_KERNELS_KERN_RECV_H

#include "host_engine.h"
#include "slots.h"

/* 1: message `step` of f (ready) holds the `want` data bytes expected, intact.
 * 0: it does not; fail says how (PROTOCOL: sizes, or data in GPU memory;
 * CHECKSUM: CRCs), and the step function returns -1. */
static inline int kern_recv_check(slot_fifo_t *f, uint64_t step, size_t want, kern_failure_t *fail) {
  /* The common case, inline; the raw size, so a message marked as in GPU
   * memory (SLOT_SIZE_GPU) never passes here. */
  if (!f->checksum && slot_fifo_hdr(f, step)->size == want) return 1;
  uint64_t got = 0, carried = 0;
  switch (slot_fifo_check(f, step, want, &got, &carried)) {
    case SLOT_MSG_OK:
      return 1;
    case SLOT_MSG_CRC:
      fail->kind = KERN_FAIL_CHECKSUM;
      fail->crc_computed = (uint32_t)got;
      fail->crc_carried = (uint32_t)carried;
      fail->want_bytes = want;
      fail->step = step;
      return 0;
    case SLOT_MSG_GPU:
      fail->got_gpu = 1;
      /* fall through - a PROTOCOL failure, with got_gpu */
    default:
      fail->got_bytes = (size_t)got;
      fail->want_bytes = want;
      return 0;
  }
}

/* The gate of a stream's next message, step of f, of `bytes` data bytes: a
 * receive waits for it to be ready and checks it (kern_recv_check; on a bad
 * one fail also names peer, the rank at the other end), a send waits for
 * room. 1: the message may move now; 0: not yet; -1: a bad message. */
static inline int kern_fifo_gate(slot_fifo_t *f, uint64_t step, int is_recv, size_t bytes, int peer,
                                 kern_failure_t *fail) {
  if (!is_recv) return slot_fifo_room(f, step) ? 1 : 0;
  if (!slot_fifo_ready(f, step)) return 0;
  if (kern_recv_check(f, step, bytes, fail)) return 1;
  fail->peer = peer;
  return -1;
}

#endif
