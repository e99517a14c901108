/*
 * shm_setup.c — ring channels between ranks of one host go through shared
 * memory: each rank creates its receive fifo in a segment and tells the
 * previous rank its name through the bootstrap; that rank maps it and
 * writes straight into it (no proxy, no copy through the kernel). The name
 * is unlinked as soon as the peer acknowledges the mapping, so a crash
 * leaves nothing behind. A segment /dev/shm cannot hold makes that channel
 * use TCP, after one line that says how to make room.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "comm.h"
#include "config.h"
#include "log.h"

#define SHM_TAG_NAME 0x53484d00u /* + channel: the receive fifo's segment, or "" for TCP */
#define SHM_TAG_ACK 0x53484b00u  /* + channel: mapped, you may unlink */

int comm_shm_allowed(struct xcclComm *comm, int peer) {
  const char *t = config_str(CFG_TRANSPORT);
  if (config_bool(CFG_SHM_DISABLE) || strcasecmp(t, "socket") == 0) return 0;
  return comm->peers[peer].host_hash == comm->peers[comm->rank].host_hash;
}

xcclResult_t comm_connect_shm(struct xcclComm *comm, int *shm_send, int *shm_recv) {
  int n = comm->nchannels, want_recv = comm_shm_allowed(comm, comm->prev), want_send = comm_shm_allowed(comm, comm->next);
  size_t slot = comm->peers[comm->rank].chunk_size, bytes = slot_fifo_bytes(slot);
  const char *t = config_str(CFG_TRANSPORT);
  if (*t && strcasecmp(t, "shm") != 0 && strcasecmp(t, "socket") != 0)
    return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_TRANSPORT=%s is not shm or socket", t);
  if (strcasecmp(t, "shm") == 0 && (!want_recv || !want_send))
    return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_TRANSPORT=shm, but rank %d's ring neighbours are not all on its host",
                   comm->rank);
  static int warned;
  /* 1. Receive side: a segment per channel, named to the previous rank. */
  for (int c = 0; c < n && want_recv; c++) {
    comm_channel_t *ch = &comm->channels[c];
    char name[64] = "";
    err_quiet(1);
    xcclResult_t r = shm_seg_create(bytes, &ch->recv_seg);
    err_quiet(0);
    if (r == xcclSuccess) {
      slot_fifo_destroy(ch->recv);
      ch->recv = slot_fifo_init_at(ch->recv_seg.base, slot);
      ch->recv->shared = 1;
      slot_fifo_side_set(ch->recv, 0);
      snprintf(name, sizeof(name), "%s", ch->recv_seg.name);
      shm_recv[c] = 1;
    } else if (!warned++) {
      WARN(INIT, "%s", err_last());
    }
    TRY(bootstrap_send(comm->bs, comm->prev, SHM_TAG_NAME + (uint32_t)c, name, sizeof(name)));
  }
  /* 2. Send side: map the next rank's segments. */
  for (int c = 0; c < n && want_send; c++) {
    comm_channel_t *ch = &comm->channels[c];
    char name[64];
    TRY(bootstrap_recv(comm->bs, comm->next, SHM_TAG_NAME + (uint32_t)c, name, sizeof(name)));
    name[sizeof(name) - 1] = '\0';
    if (!name[0]) continue; /* it has no room: TCP */
    TRY(shm_seg_open(name, bytes, &ch->send_seg));
    slot_fifo_destroy(ch->send);
    ch->send = ch->send_seg.base;
    slot_fifo_side_set(ch->send, 1);
    shm_send[c] = 1;
    TRY(bootstrap_send(comm->bs, comm->next, SHM_TAG_ACK + (uint32_t)c, "", 1));
  }
  /* 3. Receive side: once mapped on the other side, the names can go. */
  for (int c = 0; c < n && want_recv; c++) {
    if (!shm_recv[c]) continue;
    char ack;
    TRY(bootstrap_recv(comm->bs, comm->prev, SHM_TAG_ACK + (uint32_t)c, &ack, 1));
    shm_seg_unlink(&comm->channels[c].recv_seg);
  }
  int ns = 0, nr = 0;
  for (int c = 0; c < n; c++) ns += shm_send[c], nr += shm_recv[c];
  if (ns || nr)
    INFO(INIT, "rank %d: %d of %d channels to rank %d and %d from rank %d through shared memory", comm->rank, ns, n,
         comm->next, nr, comm->prev);
  return xcclSuccess;
}

void comm_each_fifo(struct xcclComm *comm, void (*fn)(void *ctx, slot_fifo_t *f, int producer), void *ctx) {
  for (int c = 0; comm->channels && c < comm->nchannels; c++) {
    if (comm->channels[c].send) fn(ctx, comm->channels[c].send, 1);
    if (comm->channels[c].recv) fn(ctx, comm->channels[c].recv, 0);
  }
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    for (int p = 0; comm->p2p_send[set] && comm->p2p_recv[set] && p < comm->nranks; p++) {
      if (comm->p2p_send[set][p].fifo) fn(ctx, comm->p2p_send[set][p].fifo, 1);
      if (comm->p2p_recv[set][p].fifo) fn(ctx, comm->p2p_recv[set][p].fifo, 0);
    }
  }
}

static void break_one(void *msg, slot_fifo_t *f, int producer) {
  (void)producer;
  if (f->shared) slot_fifo_fail(f, xcclRemoteError, msg);
}

void comm_break_shm(struct xcclComm *comm, const char *msg) { comm_each_fifo(comm, break_one, (void *)msg); }
