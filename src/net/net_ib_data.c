/*
 * net_ib_data.c — the ib transport's data path (protocol in net_ib.h):
 * irecv posts receives and writes a clear-to-send entry into the sender's
 * fifo; isend waits for that entry and answers with RDMA writes with
 * immediate; test polls the comm's completion queue (a flush request goes
 * to net_ib_flush.c).
 *
 * Failures are final for the comm: a completion error (with the verbs status
 * text), an async QP/CQ error, or a disconnect by the peer, seen after the
 * completions that arrived before it were delivered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "net_ib.h"

enum { IB_WR_DATA = 1, IB_WR_RECV = 2, IB_WR_CTS = 3 };
#define IB_SEQ_MASK ((1ull << 48) - 1)
#define IB_EVENT_PERIOD_NS 1000000ull /* look at the event channel at most every ms */

static uint64_t ib_wr_id(int kind, int qp, uint64_t seq) {
  return ((uint64_t)kind << 56) | ((uint64_t)qp << 48) | (seq & IB_SEQ_MASK);
}

xcclResult_t ib_comm_fail(ib_comm_t *c, xcclResult_t res, const char *fmt, ...) {
  if (!c->failed) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->fail_msg, sizeof(c->fail_msg), fmt, ap);
    va_end(ap);
    c->failed = res;
  }
  return err_set(c->failed, LOG_NET, "%s", c->fail_msg);
}

xcclResult_t ib_comm_check(ib_comm_t *c) {
  if (c->failed) return err_set(c->failed, LOG_NET, "%s", c->fail_msg);
  if (atomic_load_explicit(&c->async_failed, memory_order_acquire))
    return ib_comm_fail(c, xcclRemoteError, "ib: connection with %s broke: %s", c->peer, c->async_msg);
  /* Port and device events fail the comm at once: with no other port to
   * move to, waiting for the retry counters to run out only adds seconds. */
  if (c->ctx && atomic_load_explicit(&c->ctx->fatal, memory_order_acquire))
    return ib_comm_fail(c, xcclSystemError, "ib: connection with %s: the device reported a fatal error (%s)", c->peer,
                        ibv_event_type_str(IBV_EVENT_DEVICE_FATAL));
  if (c->port && atomic_load_explicit(&c->ctx->port_errs[c->port], memory_order_acquire) != c->port_errs0)
    return ib_comm_fail(c, xcclRemoteError,
                        "ib: connection with %s: the port went down (%s; its link is down or was unplugged), and "
                        "there is no other port to fail over to",
                        c->peer, ibv_event_type_str(IBV_EVENT_PORT_ERR));
  return xcclSuccess;
}

static void ib_events_maybe(ib_comm_t *c) {
  uint64_t now = clock_ns();
  if (now < c->next_event_ns) return;
  c->next_event_ns = now + IB_EVENT_PERIOD_NS;
  ib_comm_events(c);
}

static xcclResult_t ib_fail_gone(ib_comm_t *c) {
  return ib_comm_fail(c, xcclRemoteError,
                      "ib: connection with %s closed by the peer (%s: it exited, aborted, or gave up after a failure "
                      "of its own)",
                      c->peer, c->gone_why);
}

static const char *ib_wr_kind(int kind) {
  return kind == IB_WR_DATA ? "RDMA write to" : kind == IB_WR_RECV ? "receive from" : "clear-to-send write to";
}

/* Takes every completion there is. */
static xcclResult_t ib_poll(ib_comm_t *c) {
  struct ibv_wc wc[16];
  for (;;) {
    int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) return ib_comm_fail(c, xcclSystemError, "ib: ibv_poll_cq failed (connection with %s)", c->peer);
    for (int k = 0; k < n; k++) {
      int kind = (int)(wc[k].wr_id >> 56), qp = (int)((wc[k].wr_id >> 48) & 0xff);
      uint64_t seq = wc[k].wr_id & IB_SEQ_MASK;
      ib_req_t *r = &c->reqs[seq % NET_MAX_REQUESTS];
      if (wc[k].status != IBV_WC_SUCCESS) {
        if (c->failed) continue;
        if (wc[k].status == IBV_WC_WR_FLUSH_ERR) {
          ib_comm_events(c); /* flushed: most likely the peer disconnected */
          if (c->peer_gone) {
            ib_fail_gone(c);
            continue;
          }
        }
        ib_comm_fail(c, xcclRemoteError, "ib: %s %s failed: %s (status %d, vendor error 0x%x, QP %d, message %llu)%s",
                     ib_wr_kind(kind), c->peer, ibv_wc_status_str(wc[k].status), (int)wc[k].status,
                     wc[k].vendor_err, qp, (unsigned long long)seq,
                     wc[k].status == IBV_WC_WR_FLUSH_ERR
                         ? ": the queue pair went to the error state (an operation of the peer failed; see its log)"
                         : "");
        continue;
      }
      if (kind == IB_WR_CTS || !r->in_use || (r->seq & IB_SEQ_MASK) != seq) continue;
      if (kind == IB_WR_RECV) {
        uint32_t size = ntohl(wc[k].imm_data);
        if (size > r->size && !c->failed)
          ib_comm_fail(c, xcclRemoteError, "ib: %s sent a %u-byte message into a %zu-byte receive (mismatched operations)",
                       c->peer, size, r->size);
        r->got = size;
      }
      r->ncomp++;
      if (kind == IB_WR_DATA || kind == IB_WR_RECV) c->qp_comp[qp]++;
    }
    if (n < 16) return xcclSuccess;
  }
}

/* The QPs message seq uses: [*first, *first + *count). Whole messages go
 * round-robin; split ones use every QP. */
static void ib_msg_qps(const ib_comm_t *c, uint64_t seq, int *first, int *count) {
  *first = c->split ? 0 : (int)(seq % (uint64_t)c->nqps);
  *count = c->split ? c->nqps : 1;
}

/* The slice of a message that QP i carries. */
static void ib_slice(const ib_comm_t *c, size_t size, int i, size_t *off_p, size_t *len_p) {
  int nqps = c->nqps;
  if (!c->split) { /* whole, on its own QP */
    *off_p = 0;
    *len_p = size;
    return;
  }
  if (size < IB_SPLIT_MIN || nqps == 1) {
    *off_p = 0;
    *len_p = i == 0 ? size : 0;
    return;
  }
  size_t per = (size + (size_t)nqps - 1) / (size_t)nqps;
  per = (per + 127) & ~(size_t)127;
  size_t off = per * (size_t)i;
  *off_p = off < size ? off : size;
  *len_p = off < size ? (size - off < per ? size - off : per) : 0;
}

/* The registration of a buffer given without an mhandle: the comm keeps a
 * reference until it closes. */
static xcclResult_t ib_comm_reg(ib_comm_t *c, void *data, size_t size, ib_reg_t **reg_p) {
  uintptr_t a = (uintptr_t)data;
  ib_reg_t *r = c->last_reg;
  if (r && r->start <= a && a + size <= r->end) return *reg_p = r, xcclSuccess;
  for (int i = 0; i < c->nregs; i++) {
    r = c->regs[i];
    if (r->start <= a && a + size <= r->end) return *reg_p = c->last_reg = r, xcclSuccess;
  }
  if (c->nregs == c->cap) {
    int cap = c->cap ? 2 * c->cap : 8;
    ib_reg_t **regs = realloc(c->regs, sizeof(*regs) * (size_t)cap);
    if (!regs) return ib_comm_fail(c, xcclSystemError, "ib: out of memory for registrations");
    c->regs = regs;
    c->cap = cap;
  }
  TRY(ib_reg_get(c->ctx, data, size, 0, &r));
  c->regs[c->nregs++] = r;
  *reg_p = c->last_reg = r;
  return xcclSuccess;
}

xcclResult_t ib_isend(void *send_comm, void *data, size_t size, void *mhandle, void **req_p) {
  ib_comm_t *c = send_comm;
  TRY(ib_comm_check(c));
  if (size > IB_MAX_MSG)
    return err_set(xcclInvalidArgument, LOG_NET, "ib: a %zu-byte message is above the transport's %u-byte limit", size,
                   IB_MAX_MSG);
  uint64_t seq = c->posted;
  ib_req_t *r = &c->reqs[seq % NET_MAX_REQUESTS];
  volatile ib_cts_t *e = &c->fifo[seq % NET_MAX_REQUESTS];
  if (r->in_use || e->marker != seq + 1 || e->seq1 != seq + 1) {
    /* Not yet: the receiver has not posted this one. A receiver that went
     * away would leave us here for good, so its disconnect is looked for. */
    ib_events_maybe(c);
    if (c->peer_gone) return ib_fail_gone(c);
    *req_p = NULL;
    return xcclSuccess;
  }
  atomic_thread_fence(memory_order_acquire);
  uint64_t raddr = e->addr;
  uint32_t rkey = e->rkey, cap = e->size;
  size_t too_big = size > cap ? (size_t)cap + 1 : 0;
  ib_reg_t *reg = mhandle;
  if (!too_big && size > c->max_inline && !reg) TRY(ib_comm_reg(c, data, size, &reg));
  int first, count;
  ib_msg_qps(c, seq, &first, &count);
  *r = (ib_req_t){.comm = c, .seq = seq, .in_use = 1, .nwant = count, .data = data, .size = size,
                  .too_big = too_big};
  for (int i = first; i < first + count; i++) {
    size_t off, len;
    ib_slice(c, too_big ? 0 : size, i, &off, &len);
    struct ibv_sge sge = {.addr = (uintptr_t)data + off, .length = (uint32_t)len, .lkey = reg ? reg->mr->lkey : 0};
    struct ibv_send_wr wr[2], *bad;
    memset(wr, 0, sizeof(wr));
    /* Adaptive-routing form: the data as a plain write (unsignalled: an
     * error still completes, under the same id), then an empty write with
     * immediate that the receiver's completion waits on. Not for inline
     * data: it has no registration to write from, and it is one packet,
     * which no path can reorder. */
    int ar = len > c->max_inline && len >= c->ar_min;
    struct ibv_send_wr *imm = &wr[ar];
    if (ar) {
      wr[0].wr_id = ib_wr_id(IB_WR_DATA, i, seq);
      wr[0].opcode = IBV_WR_RDMA_WRITE;
      wr[0].sg_list = &sge;
      wr[0].num_sge = 1;
      wr[0].wr.rdma.remote_addr = raddr + off;
      wr[0].wr.rdma.rkey = rkey;
      wr[0].next = imm;
    }
    imm->wr_id = ib_wr_id(IB_WR_DATA, i, seq);
    imm->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    imm->imm_data = htonl((uint32_t)size); /* the receiver learns the size, even when it does not fit */
    imm->sg_list = len && !ar ? &sge : NULL;
    imm->num_sge = len && !ar ? 1 : 0;
    imm->send_flags = IBV_SEND_SIGNALED | (len && !ar && len <= c->max_inline ? IBV_SEND_INLINE : 0);
    imm->wr.rdma.remote_addr = raddr + (ar ? off + len : off);
    imm->wr.rdma.rkey = rkey;
    int rc = ibv_post_send(c->ids[i]->qp, wr, &bad);
    if (rc != 0)
      return ib_comm_fail(c, xcclSystemError, "ib: ibv_post_send to %s failed: %s", c->peer, strerror(rc));
  }
  c->posted++;
  *req_p = r;
  return xcclSuccess;
}

xcclResult_t ib_irecv(void *recv_comm, void *data, size_t size, void *mhandle, void **req_p) {
  ib_comm_t *c = recv_comm;
  TRY(ib_comm_check(c));
  uint64_t seq = c->posted;
  ib_req_t *r = &c->reqs[seq % NET_MAX_REQUESTS];
  if (r->in_use) {
    *req_p = NULL;
    return xcclSuccess;
  }
  if (c->peer_gone) return ib_fail_gone(c);
  if (size > IB_MAX_MSG) size = IB_MAX_MSG; /* no message can be larger */
  ib_reg_t *reg = mhandle;
  if (size && !reg) TRY(ib_comm_reg(c, data, size, &reg));
  int first, count;
  ib_msg_qps(c, seq, &first, &count);
  for (int i = first; i < first + count; i++) {
    struct ibv_recv_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = ib_wr_id(IB_WR_RECV, i, seq);
    int rc = ibv_post_recv(c->ids[i]->qp, &wr, &bad);
    if (rc != 0)
      return ib_comm_fail(c, xcclSystemError, "ib: ibv_post_recv failed: %s (connection with %s)", strerror(rc), c->peer);
  }
  *r = (ib_req_t){.comm = c, .seq = seq, .in_use = 1, .nwant = count, .data = data, .size = size};
  /* The clear-to-send entry, into the sender's fifo slot for this message. */
  ib_cts_t *e = &c->cts[seq % NET_MAX_REQUESTS];
  uint32_t rkey = reg ? reg->mr->rkey : 0;
  if (c->fault_rkey) rkey ^= 0x5a5a5au; /* test hook: XCCL_IB_FAULT_RKEY */
  *e = (ib_cts_t){.seq1 = seq + 1, .addr = (uintptr_t)data, .rkey = rkey, .size = (uint32_t)size, .marker = seq + 1};
  struct ibv_sge sge = {.addr = (uintptr_t)e, .length = sizeof(*e), .lkey = c->cts_mr->lkey};
  struct ibv_send_wr wr, *bad;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = ib_wr_id(IB_WR_CTS, 0, seq);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  /* Selective signalling: unsignalled writes free their send-queue slots
   * when a later signalled one completes. */
  wr.send_flags = (c->cts_written % IB_CTS_SIGNAL == IB_CTS_SIGNAL - 1 ? IBV_SEND_SIGNALED : 0) |
                  (sizeof(*e) <= c->max_inline ? IBV_SEND_INLINE : 0);
  wr.wr.rdma.remote_addr = c->rfifo_addr + (seq % NET_MAX_REQUESTS) * sizeof(*e);
  wr.wr.rdma.rkey = c->rfifo_rkey;
  int rc = ibv_post_send(c->ids[0]->qp, &wr, &bad);
  if (rc != 0)
    return ib_comm_fail(c, xcclSystemError, "ib: posting a clear-to-send to %s failed: %s", c->peer, strerror(rc));
  c->cts_written++;
  c->posted++;
  *req_p = r;
  return xcclSuccess;
}

xcclResult_t ib_test(void *req, int *done_p, size_t *size_p) {
  ib_req_t *r = req;
  if (r->flush) return ib_flush_test(r, done_p, size_p);
  ib_comm_t *c = r->comm;
  if (r->ncomp < r->nwant && !c->failed) TRY(ib_poll(c));
  if (r->ncomp >= r->nwant && !(c->failed && !c->is_send && r->got > r->size)) {
    r->in_use = 0;
    if (r->too_big) /* the receiver fails it too: the comm is done */
      return ib_comm_fail(c, xcclRemoteError, "ib: the %zu-byte message did not fit the %zu-byte receive posted by %s",
                          r->size, r->too_big - 1, c->peer);
    if (size_p) *size_p = c->is_send ? r->size : r->got;
    *done_p = 1;
    return xcclSuccess;
  }
  TRY(ib_comm_check(c));
  ib_events_maybe(c);
  if (c->peer_gone) {
    TRY(ib_poll(c)); /* what arrived before the disconnect still counts */
    if (r->ncomp < r->nwant) return ib_fail_gone(c);
    return ib_test(req, done_p, size_p);
  }
  *done_p = 0;
  return xcclSuccess;
}
