/*
 * bootstrap_conn.c — one authenticated bootstrap connection: reading frames
 * as they arrive, checking them, and writing them. Used by the root and by
 * point-to-point messages.
 */
#include "bootstrap_conn.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"



void conn_reset_frame(bs_conn_t *c) {
  free(c->frame);
  c->frame = NULL;
  c->got = 0;
  c->frame_len = 0;
}

void conn_close(bs_conn_t *c) {
  conn_reset_frame(c);
  sock_close(&c->fd);
}

static void table_drop(bs_conn_t *tab, int *n, int k, const char *who, double silent_s) {
  char s[SOCK_ADDR_STRLEN];
  WARN(BOOTSTRAP, "%s dropped a connection from %s that sent nothing whole in %.1f s", who,
       sock_addr_str(&tab[k].from, s, sizeof(s)), silent_s);
  conn_close(&tab[k]);
  tab[k] = tab[--*n];
}

int conn_table_room(bs_conn_t *tab, int *n, int max, const char *who) {
  uint64_t now = clock_ns();
  for (int k = *n - 1; k >= 0; k--)
    if ((double)(now - tab[k].accepted_ns) / 1e9 > BS_IDLE_S) table_drop(tab, n, k, who, BS_IDLE_S);
  if (*n < max) return 1;
  int oldest = 0;
  for (int k = 1; k < *n; k++)
    if (tab[k].accepted_ns < tab[oldest].accepted_ns) oldest = k;
  double age = (double)(now - tab[oldest].accepted_ns) / 1e9;
  if (age < BS_GIVEWAY_S) return 0;
  table_drop(tab, n, oldest, who, age);
  return 1;
}

/* Reads what is available. *ready = 1 once a whole, authentic frame is in
 * c->frame. -1 with why on a closed connection or a bad frame. */
int conn_read(bs_conn_t *c, const uint8_t *key, const uint8_t *nonce, int *ready, char *why, size_t wl) {
  *ready = 0;
  err_quiet(1);
  xcclResult_t r = xcclSuccess;
  if (c->got < BS_HDR_BYTES) {
    r = sock_recv_some(c->fd, c->hdr, BS_HDR_BYTES, &c->got);
    if (r == xcclSuccess && c->got == BS_HDR_BYTES) {
      if (bs_hdr_parse(c->hdr, &c->h, why, wl) != 0) {
        err_quiet(0);
        return -1;
      }
      c->frame_len = BS_HDR_BYTES + (size_t)c->h.len + BS_MAC_BYTES;
      c->frame = malloc(c->frame_len);
      if (!c->frame) {
        err_quiet(0);
        snprintf(why, wl, "out of memory for a %zu-byte bootstrap message", c->frame_len);
        return -1;
      }
      memcpy(c->frame, c->hdr, BS_HDR_BYTES);
    }
  }
  if (r == xcclSuccess && c->frame) r = sock_recv_some(c->fd, c->frame, c->frame_len, &c->got);
  err_quiet(0);
  if (r != xcclSuccess) {
    snprintf(why, wl, "%s", err_last());
    return -1;
  }
  if (!c->frame || c->got < c->frame_len) return 0;
  if (bs_frame_verify(c->frame, c->frame_len, key, nonce, why, wl) != 0) return -1;
  *ready = 1;
  return 0;
}

/* Blocking read of one frame of the given type, with a deadline. A FAIL
 * frame from the root is turned into the error it carries. */
xcclResult_t conn_read_frame(bs_conn_t *c, const uint8_t *key, const uint8_t *nonce, bs_type_t want,
                                    uint64_t deadline, const _Atomic int *abort_flag, const char *peer) {
  char why[512];
  for (;;) {
    int ready;
    if (conn_read(c, key, nonce, &ready, why, sizeof(why)) != 0)
      return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s: %s", peer, why);
    if (ready) break;
    if (abort_flag && atomic_load(abort_flag))
      return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: aborted while waiting for %s", peer);
    if (clock_expired(deadline))
      return err_set(xcclTimeout, LOG_BOOTSTRAP, "bootstrap: %s sent nothing within XCCL_TIMEOUT=%g s", peer,
                     config_double(CFG_TIMEOUT));
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    poll(&p, 1, clock_ms_left(deadline, 100));
  }
  if (c->h.type == BS_FAIL && want != BS_FAIL) {
    const uint8_t *pl = c->frame + BS_HDR_BYTES;
    uint32_t code = c->h.len >= 4 ? (uint32_t)(pl[0] | pl[1] << 8 | pl[2] << 16 | (uint32_t)pl[3] << 24) : 3;
    int n = c->h.len > 4 ? (int)c->h.len - 4 : 0;
    return err_set(code > 0 && code < xcclNumResults ? (xcclResult_t)code : xcclRemoteError, LOG_BOOTSTRAP,
                   "%.*s", n > 900 ? 900 : n, (const char *)pl + 4);
  }
  if (c->h.type != want)
    return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s sent message type %u where %u was expected",
                   peer, c->h.type, want);
  return xcclSuccess;
}

xcclResult_t send_frame(int fd, bs_type_t type, const void *payload, uint32_t len, const uint8_t *key,
                               const uint8_t *nonce, uint64_t deadline, const _Atomic int *abort_flag) {
  size_t n = BS_HDR_BYTES + (size_t)len + BS_MAC_BYTES;
  uint8_t *buf = malloc(n);
  if (!buf) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a bootstrap message");
  bs_frame_build(buf, type, payload, len, key, nonce);
  xcclResult_t r = sock_send_all(fd, buf, n, deadline, (const volatile int *)abort_flag);
  free(buf);
  return r;
}

/* The acceptor's first word on a connection: a fresh nonce. */
xcclResult_t send_challenge(bs_conn_t *c, const uint8_t *key, uint64_t deadline) {
  if (bs_random(c->nonce, sizeof(c->nonce)) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot draw random bytes for a bootstrap challenge");
  return send_frame(c->fd, BS_CHALLENGE, c->nonce, BS_NONCE_BYTES, key, NULL, deadline, NULL);
}

void send_fail(int fd, xcclResult_t code, const uint8_t *key, const uint8_t *nonce, const char *text) {
  size_t tl = strlen(text);
  if (tl > 1000) tl = 1000;
  uint8_t payload[1004];
  payload[0] = (uint8_t)code, payload[1] = payload[2] = payload[3] = 0;
  memcpy(payload + 4, text, tl);
  err_quiet(1);
  send_frame(fd, BS_FAIL, payload, (uint32_t)(tl + 4), key, nonce, clock_deadline(1.0), NULL);
  err_quiet(0);
}

