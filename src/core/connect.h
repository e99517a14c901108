/*
 * connect.h — a communicator's connections: made at init (rings) and on demand
 * (point-to-point), walked, counted, broken and freed (connect.c).
 */
#ifndef XCCL_CORE_CONNECT_H
#define XCCL_CORE_CONNECT_H

#include "comm.h"

/* Connects each channel's ring, a send connection to comm->next and a
 * receive connection from comm->prev, each through the first transport
 * that can take it (transport.h), and starts the proxy (created here).
 * Collective over all ranks, at init (connect.c). */
xcclResult_t comm_connect_rings(struct xcclComm *comm);

/* Makes the point-to-point connections of a set (COMM_P2P_*) a group needs:
 * sends to send_peers, receives from recv_peers (each may repeat; connected
 * ones are skipped). On failure those not yet started are released.
 * Collective over the peers involved (connect.c). */
xcclResult_t comm_connect_p2p(struct xcclComm *comm, int set, const int *send_peers, int nsend, const int *recv_peers,
                              int nrecv);

/* Calls fn(ctx, conn, producer) for every connection of comm whose fifo
 * is ready (conn->fifo is what the data movers use): each ring channel's
 * send (producer = 1) and receive connection, and every point-to-point
 * connection made so far. */
void comm_each_conn(struct xcclComm *comm, void (*fn)(void *ctx, transport_conn_t *conn, int producer), void *ctx);
/* How many connections comm has made, and the bytes of the slot fifos this
 * rank holds for them: every receive side's, and a send side's that is not
 * in shared memory (the network's). The one count of a communicator's
 * connection memory: the INFO lines at init and connect, xcclCommMemStats
 * and xcclCommSuspend's release all read it. */
void comm_conn_memory(struct xcclComm *comm, int *nconns, uint64_t *recv_bytes);
/* The bytes one side's slot fifo of slot_size holds: what comm_conn_memory
 * adds per fifo, and what xccl-info prints per connection. */
uint64_t comm_conn_bytes(size_t slot_size);

/* Releases every connection of comm, once the proxy has stopped (teardown,
 * xcclCommSuspend), and leaves comm with none made: ring fifos NULL,
 * point-to-point connections not ready, every step back to 0, so that
 * comm_connect_rings and comm_connect_p2p can make them again. */
void comm_free_conns(struct xcclComm *comm);

/* Marks every shared-memory fifo failed with msg, so that peers waiting on
 * them stop at once (a failed operation, or abort). */
void comm_break_shm(struct xcclComm *comm, const char *msg);
/* Bytes sent to and received from peer since init: what the producers
 * published on every fifo between the two, whatever the transport. */
void comm_peer_bytes(struct xcclComm *comm, int peer, uint64_t *sent_p, uint64_t *recv_p);

#endif
