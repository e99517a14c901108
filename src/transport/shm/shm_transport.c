/*
 * shm_transport.c — the shm transport: ranks on one host connect through
 * shared memory. The receiver creates its receive fifo in a segment and
 * says in the where how to find it; the sender maps it and writes straight
 * into it (no proxy, no copy through the kernel). The segment is memory
 * without a name when the sender can open the receiver's descriptors (one
 * PID namespace, one user), so a rank killed at any instant leaves nothing
 * behind; else a named segment in /dev/shm, unlinked once the sender
 * acknowledged the mapping (shm_seg.h). The segment is a shm_conn_hdr_t,
 * then the fifo (shm_conn.h).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "shm_conn.h"
#include "shm_seg.h"
#include "transport.h"

/* Same host, unless XCCL_SHM_DISABLE. */
static int shm_can_connect(const transport_peer_t *tp) {
  return !config_bool(CFG_SHM_DISABLE) && tp->peer_host_hash == tp->host_hash;
}

static size_t shm_conn_bytes(const transport_peer_t *tp) { return SHM_CONN_FIFO_OFF + slot_fifo_bytes(tp->slot_size); }

/* Can the sender open this process's descriptors (/proc/<pid>/fd), so that
 * the segment needs no name? Says once per process when it cannot. */
static int shm_unnamed(const transport_peer_t *tp) {
  if (!config_bool(CFG_SHM_MEMFD)) return 0;
  const char *why = !tp->pidns || tp->pidns != tp->peer_pidns ? "it runs in another PID namespace"
                    : tp->uid != tp->peer_uid                  ? "it runs as another user"
                                                               : NULL;
  static _Atomic int said;
  if (why && !atomic_exchange(&said, 1))
    INFO(INIT, "rank %d: shared memory from %s is a named segment in /dev/shm (%s, so it cannot open memory without "
         "a name here): a rank killed while they connect may leave it there",
         tp->rank, tp->peer_desc, why);
  return !why;
}

static xcclResult_t shm_recv_setup(const transport_peer_t *tp, transport_conn_t *conn, transport_where_t *where_p) {
  shm_seg_t *seg = calloc(1, sizeof(*seg));
  if (!seg) return err_set(xcclSystemError, LOG_INIT, "out of memory for a shared-memory connection");
  xcclResult_t res = shm_seg_create(shm_conn_bytes(tp), shm_unnamed(tp), seg);
  if (res != xcclSuccess) {
    free(seg);
    return res;
  }
  /* Laid out before the peer hears of it: it may write at once. The
   * header is all zeroes, as a new segment is: SHM_DEV_NONE. */
  slot_fifo_t *f = slot_fifo_init_at((char *)seg->base + SHM_CONN_FIFO_OFF, tp->slot_size);
  f->shared = 1;
  slot_fifo_side_set(f, 0);
  shm_seg_where(seg, (char *)where_p->data, sizeof(where_p->data));
  conn->res = seg;
  conn->fifo = f;
  return xcclSuccess;
}

static xcclResult_t shm_send_setup(const transport_peer_t *tp, transport_conn_t *conn, const transport_where_t *where) {
  char name[sizeof(where->data) + 1];
  memcpy(name, where->data, sizeof(where->data));
  name[sizeof(where->data)] = '\0';
  shm_seg_t *seg = calloc(1, sizeof(*seg));
  if (!seg) return err_set(xcclSystemError, LOG_INIT, "out of memory for a shared-memory connection");
  xcclResult_t res = shm_seg_open(name, shm_conn_bytes(tp), seg);
  if (res != xcclSuccess) {
    free(seg);
    return res;
  }
  conn->res = seg;
  conn->fifo = (slot_fifo_t *)((char *)seg->base + SHM_CONN_FIFO_OFF);
  slot_fifo_side_set(conn->fifo, 1);
  return xcclSuccess;
}

/* The sender has the segment mapped: its name or descriptor can go. */
static void shm_acked(transport_conn_t *conn) { shm_seg_unlink(conn->res); }

static void shm_free(transport_conn_t *conn) {
  shm_seg_t *seg = conn->res;
  if (!seg) return;
  shm_seg_close(seg); /* the fifo was in it */
  free(seg);
}

const xccl_transport_v1_t transport_shm = {
    .name = "shm",
    .what = "shared memory",
    .shared = 1,
    .ack = 1,
    .can_connect = shm_can_connect,
    .recv_setup = shm_recv_setup,
    .send_setup = shm_send_setup,
    .acked = shm_acked,
    .free = shm_free,
};

shm_conn_hdr_t *shm_conn_hdr(const transport_conn_t *conn) {
  if (!conn->res || conn->transport != transport_completed(&transport_shm)) return NULL;
  return ((shm_seg_t *)conn->res)->base;
}
