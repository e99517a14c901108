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

#endif
