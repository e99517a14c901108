/*
 * shm_conn.h — what a shared-memory connection keeps beside its fifo, for
 * the layers above (the CUDA p2p exchange, src/cuda/cuda_p2p.c). Its
 * segment starts with a shm_conn_hdr_t, which both processes map; the fifo
 * (slots.h) follows at SHM_CONN_FIFO_OFF.
 */
#ifndef XCCL_TRANSPORT_SHM_CONN_H
#define XCCL_TRANSPORT_SHM_CONN_H

#include <stdatomic.h>
#include <stdint.h>

#include "transport.h"

typedef struct {
  /* Device operations over the connection (the CUDA p2p transport): the
   * consumer may offer a data area in its GPU's memory laid out like the
   * slots, the producer takes or declines it; once taken, its device
   * operations write their data there and mark the message
   * (SLOT_SIZE_GPU), while headers and counters stay in the fifo. */
  _Alignas(64) _Atomic int32_t dev_state; /* SHM_DEV_* */
  _Atomic int32_t dev_closed;             /* the producer no longer maps the offered area */
  unsigned char dev_handle[64];           /* the offer: a cudaIpcMemHandle_t */
  uint64_t dev_addr;                      /* the consumer's own address of it (a producer in the same process) */
  char dev_note[160];                     /* why the area was not offered or not taken, in words */
} shm_conn_hdr_t;

/* From the segment's first byte to the fifo's (64-byte aligned). */
#define SHM_CONN_FIFO_OFF ((sizeof(shm_conn_hdr_t) + 63) / 64 * 64)

/* dev_state: NONE -> OFFERED (by the consumer, handle first) or UNOFFERED
 * (note); OFFERED -> OPENING (the producer maps the area) -> TAKEN or
 * DECLINED (note); OFFERED -> UNOFFERED when the consumer withdraws at
 * teardown. */
enum { SHM_DEV_NONE = 0, SHM_DEV_OFFERED, SHM_DEV_OPENING, SHM_DEV_TAKEN, SHM_DEV_DECLINED, SHM_DEV_UNOFFERED };

/* The header of conn's segment, as this process maps it; NULL when conn is
 * not a shared-memory connection (or not set up). */
shm_conn_hdr_t *shm_conn_hdr(const transport_conn_t *conn);

#endif
