/*
 * bootstrap_p2p.c — point-to-point bootstrap messages between any two ranks,
 * used to exchange transport handles for connections outside the ring.
 *
 * A message travels on its own connection to the receiver's bootstrap port:
 * the receiver sends a challenge, the sender answers with one BS_P2P frame
 * {from rank, tag, bytes} authenticated with that nonce, and closes. A rank
 * that waits for anything (its own send's challenge, or a message) also
 * accepts and reads whatever else arrives, so two ranks sending to each
 * other never wait on each other.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_conn.h"
#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"

#define P2P_HDR 8 /* from rank, tag */

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }

static void incoming_drop(bootstrap_t *bs, int k, const char *why) {
  char s[SOCK_ADDR_STRLEN];
  if (why)
    WARN(BOOTSTRAP, "bootstrap rank %d refused a connection from %s: %s", bs->rank,
         sock_addr_str(&bs->incoming[k].from, s, sizeof(s)), why);
  conn_close(&bs->incoming[k]);
  bs->incoming[k] = bs->incoming[--bs->nincoming];
}

/* A whole frame arrived on incoming connection k: queue its message. */
static void incoming_take(bootstrap_t *bs, int k) {
  bs_conn_t *c = &bs->incoming[k];
  if (c->h.type != BS_P2P || c->h.len < P2P_HDR) return incoming_drop(bs, k, "not a point-to-point message");
  const uint8_t *pl = c->frame + BS_HDR_BYTES;
  int from = (int)get32(pl);
  if (from < 0 || from >= bs->nranks || from == bs->rank) return incoming_drop(bs, k, "from a rank out of range");
  bs_msg_t *m = calloc(1, sizeof(*m));
  size_t size = c->h.len - P2P_HDR;
  uint8_t *data = malloc(size ? size : 1);
  if (!m || !data) {
    free(m);
    free(data);
    return incoming_drop(bs, k, "out of memory");
  }
  memcpy(data, pl + P2P_HDR, size);
  *m = (bs_msg_t){.peer = from, .tag = get32(pl + 4), .size = size, .data = data};
  bs_msg_t **tail = &bs->unexpected; /* keep arrival order */
  while (*tail) tail = &(*tail)->next;
  *tail = m;
  incoming_drop(bs, k, NULL);
}

/* Polls the listener, the pending incoming connections and (if fd >= 0) one
 * more fd for `events`, for at most ms. Serves the listener and the incoming
 * connections. Returns the extra fd's revents. */
static short p2p_poll(bootstrap_t *bs, int fd, short events, int ms) {
  struct pollfd pf[BS_MAX_INCOMING + 2];
  int n = 0;
  /* A full table leaves new connections waiting in the kernel's backlog
   * until one of ours completes or goes stale (conn_table_room). */
  char who[48];
  snprintf(who, sizeof(who), "bootstrap rank %d", bs->rank);
  int room = conn_table_room(bs->incoming, &bs->nincoming, BS_MAX_INCOMING, who);
  pf[n++] = (struct pollfd){.fd = room ? bs->listen_fd : -1, .events = POLLIN};
  pf[n++] = (struct pollfd){.fd = fd, .events = events};
  for (int k = 0; k < bs->nincoming; k++) pf[n++] = (struct pollfd){.fd = bs->incoming[k].fd, .events = POLLIN};
  if (poll(pf, (nfds_t)n, ms) <= 0) return 0;
  for (int k = bs->nincoming - 1; k >= 0; k--) {
    if (!pf[2 + k].revents) continue;
    char why[512];
    int ready;
    if (conn_read(&bs->incoming[k], bs->id.secret, bs->incoming[k].nonce, &ready, why, sizeof(why)) != 0)
      incoming_drop(bs, k, why);
    else if (ready)
      incoming_take(bs, k);
  }
  if ((pf[0].revents & POLLIN) && bs->nincoming < BS_MAX_INCOMING) {
    bs_conn_t c = {.fd = -1, .accepted_ns = clock_ns()};
    if (sock_accept(bs->listen_fd, &c.fd, &c.from) == xcclSuccess && c.fd >= 0) {
      err_quiet(1);
      if (send_challenge(&c, bs->id.secret, clock_deadline(1.0)) == xcclSuccess)
        bs->incoming[bs->nincoming++] = c;
      else
        conn_close(&c);
      err_quiet(0);
    }
  }
  return pf[1].revents;
}

static xcclResult_t p2p_check_wait(bootstrap_t *bs, uint64_t deadline, const char *what, int peer) {
  if (bs->abort_flag && atomic_load(bs->abort_flag))
    return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: aborted while %s rank %d", what, peer);
  if (clock_expired(deadline))
    return err_set(xcclTimeout, LOG_BOOTSTRAP, "bootstrap: %s rank %d took longer than XCCL_TIMEOUT=%g s", what,
                   peer, config_double(CFG_TIMEOUT));
  return xcclSuccess;
}

xcclResult_t bootstrap_send(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size) {
  if (peer < 0 || peer >= bs->nranks || peer == bs->rank || size > BS_MAX_PAYLOAD - P2P_HDR)
    return err_set(xcclInternalError, LOG_BOOTSTRAP, "bootstrap_send to rank %d of %zu bytes", peer, size);
  uint64_t deadline = clock_ns() + bs->deadline_s_ns;
  char desc[64];
  snprintf(desc, sizeof(desc), "rank %d (bootstrap)", peer);
  bs_conn_t c = {.fd = -1};
  xcclResult_t res;
  TRY(sock_connect_retry(&bs->addrs[peer], &c.fd, deadline, (const volatile int *)bs->abort_flag));
  for (;;) { /* wait for the peer's challenge, serving our own listener meanwhile */
    char why[512];
    int ready;
    if (conn_read(&c, bs->id.secret, NULL, &ready, why, sizeof(why)) != 0) {
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: sending to %s: %s", desc, why);
      goto out;
    }
    if (ready) break;
    TRY_GOTO(p2p_check_wait(bs, deadline, "sending to", peer), out);
    p2p_poll(bs, c.fd, POLLIN, clock_ms_left(deadline, 100));
  }
  if (c.h.type != BS_CHALLENGE || c.h.len != BS_NONCE_BYTES) {
    res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s did not answer with a challenge", desc);
    goto out;
  }
  memcpy(c.nonce, c.frame + BS_HDR_BYTES, BS_NONCE_BYTES);
  uint8_t *payload = malloc(P2P_HDR + size);
  if (!payload) {
    res = err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a bootstrap message");
    goto out;
  }
  put32(payload, (uint32_t)bs->rank);
  put32(payload + 4, tag);
  if (size) memcpy(payload + P2P_HDR, data, size);
  res = send_frame(c.fd, BS_P2P, payload, (uint32_t)(P2P_HDR + size), bs->id.secret, c.nonce, deadline,
                   bs->abort_flag);
  free(payload);
out:
  conn_close(&c);
  return res;
}

xcclResult_t bootstrap_recv(bootstrap_t *bs, int peer, uint32_t tag, void *data, size_t size) {
  uint64_t deadline = clock_ns() + bs->deadline_s_ns;
  for (;;) {
    for (bs_msg_t **mp = &bs->unexpected; *mp; mp = &(*mp)->next) {
      bs_msg_t *m = *mp;
      if (m->peer != peer || m->tag != tag) continue;
      *mp = m->next;
      xcclResult_t res = xcclSuccess;
      if (m->size != size)
        res = err_set(xcclInternalError, LOG_BOOTSTRAP,
                      "bootstrap: rank %d sent %zu bytes under tag %u where %zu were expected", peer, m->size, tag,
                      size);
      else if (size)
        memcpy(data, m->data, size);
      free(m->data);
      free(m);
      return res;
    }
    TRY(p2p_check_wait(bs, deadline, "waiting for a message from", peer));
    p2p_poll(bs, -1, 0, clock_ms_left(deadline, 100));
  }
}

void bootstrap_serve(bootstrap_t *bs) { p2p_poll(bs, -1, 0, 0); }

void bootstrap_p2p_close(bootstrap_t *bs) {
  while (bs->nincoming > 0) incoming_drop(bs, bs->nincoming - 1, NULL);
  while (bs->unexpected) {
    bs_msg_t *m = bs->unexpected;
    bs->unexpected = m->next;
    free(m->data);
    free(m);
  }
}
