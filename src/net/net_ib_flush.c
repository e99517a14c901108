/*
 * net_ib_flush.c — iflush for the ib transport: received data made visible
 * to a GPU before the proxy tells the kernel (GPUDirect RDMA).
 *
 * A receive's completion says the NIC has issued its PCIe writes, not that
 * they have reached GPU memory. A PCIe read does not pass earlier writes on
 * its way, so an RDMA read of a few bytes of the buffer (through the rkey of
 * its registration) into a host scratch page, on a QP connected to itself,
 * completes only after the message's writes have landed.
 *
 * The loopback QP is made on a recv comm's first iflush, with raw verbs on
 * the comm's context, protection domain and port: an RC QP whose remote
 * side is its own QP number, with the address of the comm's connected QP 0
 * (GID index, traffic class, MTU) but aimed at the port's own GID and LID,
 * which serves InfiniBand and RoCE alike. Flush requests live in the comm's
 * ib_flush_t, complete through its CQ, and ib_test hands them here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "net_ib.h"

#define IB_FLUSH_BYTES 4 /* read at most this much of the buffer */

/* Releases what f holds, in reverse order of making; NULLs are skipped. */
static void ib_flush_free(ib_flush_t *f) {
  if (f->qp && ibv_destroy_qp(f->qp) != 0) WARN(NET, "ib: destroying the flush QP failed: %s", strerror(errno));
  if (f->cq && ibv_destroy_cq(f->cq) != 0) WARN(NET, "ib: destroying the flush CQ failed: %s", strerror(errno));
  if (f->scratch_mr) ibv_dereg_mr(f->scratch_mr);
  free(f->scratch);
  f->qp = NULL;
  f->cq = NULL;
  f->scratch_mr = NULL;
  f->scratch = NULL;
}

void ib_flush_close(ib_comm_t *c) { ib_flush_free(&c->flush); }

/* INIT -> RTR -> RTS, aimed at itself with the address in ah. Returns 0, or
 * the errno value with *step_p naming the transition. */
static int ib_flush_connect(struct ibv_qp *qp, const struct ibv_qp_attr *conn, const struct ibv_ah_attr *ah,
                            const char **step_p) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = conn->pkey_index;
  a.port_num = ah->port_num;
  a.qp_access_flags = IBV_ACCESS_REMOTE_READ; /* it answers its own reads */
  int rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) return *step_p = "ibv_modify_qp to INIT", rc;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = conn->path_mtu;
  a.dest_qp_num = qp->qp_num;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr = *ah;
  rc = ibv_modify_qp(qp, &a,
                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (rc != 0) return *step_p = "ibv_modify_qp to RTR", rc;
  memset(&a, 0, sizeof(a));
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0; /* the rq_psn above: the QP is its own peer */
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  rc = ibv_modify_qp(qp, &a,
                     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC);
  if (rc != 0) return *step_p = "ibv_modify_qp to RTS", rc;
  return 0;
}

/* The comm's loopback QP, CQ and scratch page. A failure fails the comm
 * when fail_comm (a flush was asked for), else only says why. */
static xcclResult_t ib_flush_open(ib_comm_t *c, int fail_comm) {
  struct ibv_context *verbs = c->ctx->verbs;
  const char *dev = ibv_get_device_name(verbs->device), *step;
  uint8_t port = c->ids[0]->port_num;
  ib_flush_t f;
  memset(&f, 0, sizeof(f));
  int e;
  /* Where the connection's QP 0 sends from: port, GID index, MTU, pkey. */
  struct ibv_qp_attr conn;
  struct ibv_qp_init_attr conn_init;
  e = ibv_query_qp(c->ids[0]->qp, &conn, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_PKEY_INDEX | IBV_QP_PORT, &conn_init);
  if (e != 0) {
    step = "ibv_query_qp of the connection's QP";
    goto fail;
  }
  if (conn.port_num) port = conn.port_num;
  struct ibv_port_attr pa;
  if ((e = ibv_query_port(verbs, port, &pa)) != 0) {
    step = "ibv_query_port";
    goto fail;
  }
  struct ibv_ah_attr ah = conn.ah_attr;
  ah.port_num = port;
  ah.dlid = pa.lid; /* 0 on RoCE, where the GID addresses */
  if (ah.is_global && ibv_query_gid(verbs, port, ah.grh.sgid_index, &ah.grh.dgid) != 0) {
    e = errno ? errno : EINVAL;
    step = "ibv_query_gid";
    goto fail;
  }
  if ((e = posix_memalign((void **)&f.scratch, 4096, 4096)) != 0) {
    f.scratch = NULL;
    step = "allocating the scratch page";
    goto fail;
  }
  memset(f.scratch, 0, 4096);
  if (!(f.scratch_mr = ibv_reg_mr(c->ctx->pd, f.scratch, 4096, IBV_ACCESS_LOCAL_WRITE))) {
    e = errno;
    step = "ibv_reg_mr of the scratch page";
    goto fail;
  }
  if (!(f.cq = ibv_create_cq(verbs, NET_MAX_REQUESTS + 4, c, NULL, 0))) {
    e = errno;
    step = "ibv_create_cq";
    goto fail;
  }
  struct ibv_qp_init_attr qi;
  memset(&qi, 0, sizeof(qi));
  qi.qp_context = c; /* async errors of this QP fail the comm too */
  qi.send_cq = f.cq;
  qi.recv_cq = f.cq;
  qi.qp_type = IBV_QPT_RC;
  qi.cap.max_send_wr = NET_MAX_REQUESTS;
  qi.cap.max_recv_wr = 1;
  qi.cap.max_send_sge = 1;
  qi.cap.max_recv_sge = 1;
  if (!(f.qp = ibv_create_qp(c->ctx->pd, &qi))) {
    e = errno;
    step = "ibv_create_qp";
    goto fail;
  }
  if ((e = ib_flush_connect(f.qp, &conn, &ah, &step)) != 0) goto fail;
  c->flush.cq = f.cq;
  c->flush.qp = f.qp;
  c->flush.scratch = f.scratch;
  c->flush.scratch_mr = f.scratch_mr;
  INFO(NET, "ib: flush QP %u on %s:%u (loopback, %s index %d) for the connection with %s", f.qp->qp_num, dev, port,
       ah.is_global ? "GID" : "LID", ah.is_global ? ah.grh.sgid_index : pa.lid, c->peer);
  return xcclSuccess;
fail:
  ib_flush_free(&f);
  if (!fail_comm)
    return err_set(xcclSystemError, LOG_NET,
                   "ib: making the loopback QP that flushes received data on %s:%u (connection with %s) failed: %s: %s",
                   dev, port, c->peer, step, strerror(e));
  return ib_comm_fail(c, xcclSystemError,
                      "ib: making the loopback QP that flushes received data on %s:%u (connection with %s) failed: "
                      "%s: %s",
                      dev, port, c->peer, step, strerror(e));
}

xcclResult_t ib_flush_prepare(ib_comm_t *c) { return c->is_send || c->flush.qp ? xcclSuccess : ib_flush_open(c, 0); }

xcclResult_t ib_iflush(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p) {
  ib_comm_t *c = recv_comm;
  ib_reg_t *reg = mhandle;
  if (size == 0 || !reg) {
    *req_p = NULL; /* nothing the NIC wrote, or memory this transport did not register */
    return xcclSuccess;
  }
  if (c->is_send) return err_set(xcclInvalidUsage, LOG_NET, "ib: iflush on a send comm (it flushes receives)");
  uintptr_t a = (uintptr_t)data;
  if (a < reg->start || a + size > reg->end)
    return err_set(xcclInvalidArgument, LOG_NET, "ib: iflush of %p + %zu outside its registration %p..%p", data, size,
                   (void *)reg->start, (void *)reg->end);
  TRY(ib_comm_check(c));
  ib_flush_t *f = &c->flush;
  ib_req_t *r = &f->reqs[f->posted % NET_MAX_REQUESTS];
  if (r->in_use)
    return err_set(xcclInvalidUsage, LOG_NET, "ib: more than %d flushes in flight on the connection with %s",
                   NET_MAX_REQUESTS, c->peer);
  if (!f->qp) TRY(ib_flush_open(c, 1));
  struct ibv_sge sge = {.addr = (uintptr_t)f->scratch,
                        .length = (uint32_t)(size < IB_FLUSH_BYTES ? size : IB_FLUSH_BYTES),
                        .lkey = f->scratch_mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = f->posted;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = a;
  wr.wr.rdma.rkey = reg->mr->rkey;
  int rc = ibv_post_send(f->qp, &wr, &bad);
  if (rc != 0)
    return ib_comm_fail(c, xcclSystemError, "ib: posting a flush read (connection with %s) failed: %s", c->peer,
                        strerror(rc));
  *r = (ib_req_t){.comm = c, .seq = f->posted, .in_use = 1, .nwant = 1, .data = data, .size = size, .flush = 1};
  f->posted++;
  *req_p = r;
  return xcclSuccess;
}

/* Takes every flush completion there is. */
static xcclResult_t ib_flush_poll(ib_comm_t *c) {
  struct ibv_wc wc[8];
  int n;
  do {
    n = ibv_poll_cq(c->flush.cq, 8, wc);
    if (n < 0)
      return ib_comm_fail(c, xcclSystemError, "ib: ibv_poll_cq of the flush CQ failed (connection with %s)", c->peer);
    for (int k = 0; k < n; k++) {
      ib_req_t *r = &c->flush.reqs[wc[k].wr_id % NET_MAX_REQUESTS];
      if (wc[k].status != IBV_WC_SUCCESS) {
        if (!c->failed)
          ib_comm_fail(c, xcclSystemError,
                       "ib: flushing received data (an RDMA read on the loopback QP) failed: %s (status %d, "
                       "vendor error 0x%x, flush %llu, connection with %s)",
                       ibv_wc_status_str(wc[k].status), (int)wc[k].status, wc[k].vendor_err,
                       (unsigned long long)wc[k].wr_id, c->peer);
        continue;
      }
      if (r->in_use && r->seq == wc[k].wr_id) r->ncomp++;
    }
  } while (n == 8);
  return xcclSuccess;
}

xcclResult_t ib_flush_test(ib_req_t *r, int *done_p, size_t *size_p) {
  ib_comm_t *c = r->comm;
  if (r->ncomp < r->nwant && !c->failed) TRY(ib_flush_poll(c));
  if (r->ncomp >= r->nwant) {
    r->in_use = 0;
    if (size_p) *size_p = r->size;
    *done_p = 1;
    return xcclSuccess;
  }
  TRY(ib_comm_check(c));
  *done_p = 0;
  return xcclSuccess;
}
