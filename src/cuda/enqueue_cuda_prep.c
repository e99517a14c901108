/*
 * enqueue_cuda_prep.c — what a device launch settles before its work is laid
 * out (enqueue_cuda_int.h): copies to self, point-to-point connections, the
 * CUDA IPC and GPUDirect state of the fifos it uses, and the refusals that
 * must come before any step counter moves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "connect.h"
#include "cuda_gdr.h"
#include "cuda_p2p.h"
#include "enqueue_cuda_int.h"
#include "log.h"
#include "net_select.h"
#include "reduce.h"
#include "ring_schedule.h"

/* Sends to self meet receives from self in order: copies on the stream. */
xcclResult_t cuda_self_copies(const dev_op_t *ops, int n, xcclComm_t comm) {
  int r = 0;
  for (int s = 0; s < n; s++) {
    const group_op_t *so = &ops[s].op;
    if (so->comm != comm || so->kind != GROUP_SEND || so->peer != comm->rank) continue;
    while (r < n && !(ops[r].op.comm == comm && ops[r].op.kind == GROUP_RECV && ops[r].op.peer == comm->rank)) r++;
    if (r == n)
      return err_set(xcclInvalidUsage, LOG_COLL,
                     "send #%llu on rank %d to itself has no matching receive from itself "
                     "in the group",
                     (unsigned long long)so->seq, comm->rank);
    if (ops[r].op.bytes != so->bytes)
      return err_set(xcclInvalidUsage, LOG_COLL, "rank %d sends %zu bytes to itself but receives %zu from itself",
                     comm->rank, so->bytes, ops[r].op.bytes);
    cudaError_t e = so->bytes && ops[r].op.buf != so->buf
                        ? cudaMemcpyAsync(ops[r].op.buf, so->buf, so->bytes, cudaMemcpyDefault, ops[r].stream)
                        : cudaSuccess;
    if (e != cudaSuccess) {
      cudaGetLastError();
      return err_set(xcclUnhandledCudaError, LOG_COLL, "rank %d: the copy of a send to itself failed: %s", comm->rank,
                     cudaGetErrorString(e));
    }
    r++;
  }
  for (; r < n; r++)
    if (ops[r].op.comm == comm && ops[r].op.kind == GROUP_RECV && ops[r].op.peer == comm->rank)
      return err_set(xcclInvalidUsage, LOG_COLL, "a receive from itself on rank %d has no matching send", comm->rank);
  return xcclSuccess;
}

/* The point-to-point connections comm's operations need (as group.c makes them). */
xcclResult_t cuda_connect_p2p(const dev_op_t *ops, int n, xcclComm_t comm) {
  int *sends = malloc(sizeof(int) * (size_t)n), *recvs = malloc(sizeof(int) * (size_t)n), ns = 0, nr = 0;
  xcclResult_t res = xcclSuccess;
  if (!sends || !recvs) res = err_set(xcclSystemError, LOG_COLL, "out of memory for a group");
  for (int i = 0; i < n && res == xcclSuccess; i++) {
    const group_op_t *op = &ops[i].op;
    if (op->comm != comm || op->kind == GROUP_COLL || op->peer == comm->rank) continue;
    int send = op->kind == GROUP_SEND;
    if ((send ? comm->p2p_send : comm->p2p_recv)[COMM_P2P_USER][op->peer].ready) continue;
    if (send)
      sends[ns++] = op->peer;
    else
      recvs[nr++] = op->peer;
  }
  if (res == xcclSuccess && (ns || nr)) res = comm_connect_p2p(comm, COMM_P2P_USER, sends, ns, recvs, nr);
  free(sends);
  free(recvs);
  return res;
}

static void settle_fifo(cuda_p2p_need_t *needs, int *nn, xcclComm_t comm, transport_conn_t *conn, int producer,
                        int peer, int channel, int dev) {
  if (conn->fifo->shared)
    needs[(*nn)++] = (cuda_p2p_need_t){comm, conn, producer, peer, channel};
  else
    cuda_gdr_settle(comm, conn, producer, peer, dev);
}

/* Where device work finds the data of the fifos the operations use: for
 * shared-memory fifos the CUDA p2p exchange moves on (cuda_p2p.h), network
 * fifos settle GPUDirect RDMA (cuda_gdr.h). Each channel of every
 * communicator (of comms, the launch's) with a ring operation, once however
 * many it has, and the connections of its sends and receives. */
xcclResult_t cuda_settle_fifos(const dev_op_t *ops, int n, xcclComm_t *comms, int ncomms) {
  int cap = n, nn = 0;
  for (int c = 0; c < ncomms; c++) cap += 2 * comms[c]->nchannels;
  cuda_p2p_need_t *needs = malloc(sizeof(*needs) * (size_t)(cap ? cap : 1));
  unsigned char *ring = calloc((size_t)(ncomms ? ncomms : 1), 1);
  if (!needs || !ring) {
    free(needs);
    free(ring);
    return err_set(xcclSystemError, LOG_COLL, "out of memory for a group");
  }
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i].op;
    xcclComm_t comm = op->comm;
    if (op->kind == GROUP_COLL) {
      int ci = 0;
      while (ci < ncomms - 1 && comms[ci] != comm) ci++;
      ring[ci] = 1;
    } else if (op->peer != comm->rank) {
      int send = op->kind == GROUP_SEND;
      comm_p2p_t *p = send ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
      settle_fifo(needs, &nn, comm, &p->conn, send, op->peer, -1, comm_p2p_dev(comm, op->peer));
    }
  }
  for (int ci = 0; ci < ncomms; ci++) {
    xcclComm_t comm = comms[ci];
    for (int c = 0; ring[ci] && c < comm->nchannels; c++) {
      settle_fifo(needs, &nn, comm, &comm->channels[c].send_conn, 1, comm->channels[c].next, c, comm->chan_send_dev[c]);
      settle_fifo(needs, &nn, comm, &comm->channels[c].recv_conn, 0, comm->channels[c].prev, c, comm->chan_dev[c]);
    }
  }
  xcclResult_t res = cuda_p2p_settle(needs, nn);
  free(needs);
  free(ring);
  return res;
}

/* The lane (thread block) of operation op on comm number ci: ring channel
 * c, or the connection to op's peer in its direction. */
kern_lane_t cuda_lane_key(int ci, const group_op_t *op, int c) {
  if (op->kind == GROUP_COLL) return kern_lane_comm(ci) + c;
  return kern_lane_p2p(ci, op->peer, op->kind != GROUP_SEND);
}

/* Refusals that must come before any step counter moves (a failure after
 * that leaves the communicators out of step and fails them on every rank):
 * XCCL_CHECKSUM, which the kernels do not speak, and a group with more lanes
 * than the device holds at once (max_blocks, 0: unknown). */
xcclResult_t cuda_launch_check(const dev_op_t *ops, int n, xcclComm_t *comms, int ncomms, int device, int max_blocks) {
  if (config_bool(CFG_CHECKSUM)) /* the kernels neither add nor check the CRC a message then ends with */
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s on rank %d: XCCL_CHECKSUM=1 covers host buffers only so far: unset it to use device buffers",
                   ops[0].op.coll.name, ops[0].op.comm->rank);
  if (max_blocks <= 0) return xcclSuccess;
  int cap = 0, nkeys = 0;
  for (int i = 0; i < n; i++) cap += ops[i].op.kind == GROUP_COLL ? ops[i].op.comm->nchannels : 1;
  kern_lane_t *keys = malloc(sizeof(*keys) * (size_t)(cap ? cap : 1));
  if (!keys) return err_set(xcclSystemError, LOG_COLL, "out of memory for a group");
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i].op;
    int ci = 0, nch = 1;
    while (ci < ncomms - 1 && comms[ci] != op->comm) ci++;
    if (op->kind == GROUP_COLL)
      nch = op->coll.nchannels;
    else if (op->peer == op->comm->rank)
      continue; /* a copy */
    for (int c = 0; c < nch; c++) {
      kern_lane_t k = cuda_lane_key(ci, op, c);
      int seen = 0;
      for (int j = 0; j < nkeys && !seen; j++) seen = keys[j] == k;
      if (!seen) keys[nkeys++] = k;
    }
  }
  free(keys);
  if (nkeys > max_blocks)
    return err_set(xcclInvalidUsage, LOG_COLL,
                   "%s: the group needs %d lanes (thread blocks running at once) but CUDA device %d holds %d: split "
                   "the group",
                   ops[0].op.coll.name, nkeys, device, max_blocks);
  return xcclSuccess;
}
