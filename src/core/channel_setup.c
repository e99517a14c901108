/*
 * channel_setup.c — connects each channel's ring: a send connection to the
 * next rank and a receive connection from the previous one, made through the
 * net transport, then handed with their slot fifos to the proxy.
 */
#include <sched.h>
#include <string.h>

#include "clock.h"
#include "comm.h"
#include "config.h"
#include "log.h"
#include "net_select.h"

xcclResult_t comm_listen_channels(struct xcclComm *comm, comm_peer_info_t *me, void **listen_comms) {
  for (int c = 0; c < comm->nchannels; c++) {
    net_handle_t h;
    TRY(comm->net->listen(comm->chan_dev[c], &h, &listen_comms[c]));
    memcpy(me->handles[c], h.data, NET_HANDLE_PUBLIC);
  }
  return xcclSuccess;
}

xcclResult_t comm_connect_channels(struct xcclComm *comm, void **listen_comms, const int *skip_send,
                                   const int *skip_recv) {
  int n = comm->nchannels;
  net_handle_t handles[XCCL_MAX_CHANNELS];
  void *send_comms[XCCL_MAX_CHANNELS] = {0}, *recv_comms[XCCL_MAX_CHANNELS] = {0};
  char next_desc[160], prev_desc[160];
  comm_peer_desc(comm, comm->next, next_desc, sizeof(next_desc));
  comm_peer_desc(comm, comm->prev, prev_desc, sizeof(prev_desc));
  for (int c = 0; c < n; c++) {
    memset(&handles[c], 0, sizeof(handles[c]));
    memcpy(handles[c].data, comm->peers[comm->next].handles[c], NET_HANDLE_PUBLIC);
  }
  uint64_t deadline = clock_deadline(comm->timeout_s);
  xcclResult_t res = xcclSuccess;
  int pending = 0;
  for (int c = 0; c < n; c++) pending += !skip_send[c] + !skip_recv[c];
  while (pending > 0) {
    int moved = 0;
    for (int c = 0; c < n && res == xcclSuccess; c++) {
      if (!send_comms[c] && !skip_send[c]) {
        res = comm->net->connect(comm->chan_dev[c], &handles[c], &send_comms[c]);
        if (res != xcclSuccess) err_prefix(res, "channel %d: connecting to %s", c, next_desc);
        else if (send_comms[c]) pending--, moved = 1;
      }
      if (res == xcclSuccess && !recv_comms[c] && !skip_recv[c]) {
        res = comm->net->accept(listen_comms[c], &recv_comms[c]);
        if (res != xcclSuccess) err_prefix(res, "channel %d: accepting %s", c, prev_desc);
        else if (recv_comms[c]) pending--, moved = 1;
      }
    }
    if (res != xcclSuccess) break;
    if (pending && !moved) {
      if (atomic_load(&comm->abort_flag)) {
        res = err_set(xcclRemoteError, LOG_INIT, "aborted while connecting channels");
        break;
      }
      if (clock_expired(deadline)) {
        int c = 0;
        while (c < n && (send_comms[c] || skip_send[c]) && (recv_comms[c] || skip_recv[c])) c++;
        res = err_set(xcclTimeout, LOG_INIT, "channel %d: no connection %s %s within XCCL_TIMEOUT=%g s", c,
                      send_comms[c] ? "from" : "to", send_comms[c] ? prev_desc : next_desc, comm->timeout_s);
        break;
      }
      bootstrap_serve(comm->bs); /* a peer may be sending us a message meanwhile */
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
  }
  res = res == xcclSuccess && !comm->proxy ? proxy_create(comm->net, &comm->fault, &comm->proxy) : res;
  for (int c = 0; c < n && res == xcclSuccess; c++) {
    comm_channel_t *ch = &comm->channels[c];
    if (res == xcclSuccess && !skip_send[c])
      res = proxy_add_send(comm->proxy, ch->send, send_comms[c], comm->next, next_desc,
                           &comm->bell);
    if (res == xcclSuccess) send_comms[c] = NULL; /* the proxy owns it now */
    if (res == xcclSuccess && !skip_recv[c])
      res = proxy_add_recv(comm->proxy, ch->recv, recv_comms[c], comm->prev, prev_desc,
                           &comm->bell);
    if (res == xcclSuccess) recv_comms[c] = NULL;
  }
  if (res == xcclSuccess) res = proxy_start(comm->proxy);
  for (int c = 0; c < n; c++) {
    if (send_comms[c]) comm->net->close_send(send_comms[c]);
    else if (res != xcclSuccess && !skip_send[c]) comm->net->connect_abandon(&handles[c]);
    if (recv_comms[c]) comm->net->close_recv(recv_comms[c]);
  }
  return res;
}
