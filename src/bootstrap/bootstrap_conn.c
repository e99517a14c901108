/*
 * bootstrap_conn.c — one authenticated bootstrap connection: reading frames
 * as they arrive, checking them, and writing them. Used by the root and by
 * point-to-point messages.
 */
#include "bootstrap_conn.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"

/* What the acceptor sends in clear before TLS: the only plaintext bytes of a
 * TLS bootstrap connection. Its first four bytes are the frame magic, so a
 * plaintext peer reads it where it expects a frame header. */
static const uint8_t tls_preamble[BS_HDR_BYTES] = "XCBS TLS1.3 PSK";
#define BS_TLS_LABEL "xccl bootstrap tls psk v1"

static xcclResult_t conn_tls_start(bs_conn_t *c, const uint8_t *secret, int is_server) {
  uint8_t key[NET_KEY_BYTES];
  char s[SOCK_ADDR_STRLEN], peer[SOCK_ADDR_STRLEN + 32];
  snprintf(peer, sizeof(peer), "bootstrap peer %s", sock_addr_str(&c->from, s, sizeof(s)));
  if (bs_derive_key(secret, BS_TLS_LABEL, key) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "OpenSSL could not derive the bootstrap's TLS key (HKDF)");
  xcclResult_t r = sock_tls_new(c->fd, is_server, key, peer, &c->tls);
  OPENSSL_cleanse(key, sizeof(key));
  if (r == xcclSuccess) c->tls_state = BS_TLS_HANDSHAKE;
  return r;
}

xcclResult_t conn_accepted(bs_conn_t *c, const uint8_t *secret, uint64_t deadline) {
  c->acceptor = 1;
  if (!sock_tls_wanted()) return send_challenge(c, secret, deadline);
  uint8_t pre[BS_HDR_BYTES + BS_NONCE_BYTES];
  if (bs_random(c->nonce, sizeof(c->nonce)) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot draw random bytes for a bootstrap preamble");
  memcpy(pre, tls_preamble, BS_HDR_BYTES);
  memcpy(pre + BS_HDR_BYTES, c->nonce, BS_NONCE_BYTES);
  TRY(sock_send_all(c->fd, pre, sizeof(pre), deadline, NULL));
  return conn_tls_start(c, secret, 1);
}

/* Tells the acceptor that this process differs from it in XCCL_TLS
 * (BS_FAIL under c->nonce, in clear: TLS cannot run between the two). */
static void conn_tls_notice(bs_conn_t *c, const uint8_t *secret, int we_run_tls) {
  char host[128] = "", text[400];
  if (gethostname(host, sizeof(host) - 1) != 0) snprintf(host, sizeof(host), "?");
  snprintf(text, sizeof(text),
           "bootstrap: a rank on host %s (pid %d) runs %s TLS and the bootstrap root %s: set XCCL_TLS (or "
           "xcclSetEncryption) the same on every rank and where the unique id was made",
           host, (int)getpid(), we_run_tls ? "with" : "without", we_run_tls ? "does not" : "does");
  send_fail(c, xcclInvalidUsage, secret, c->nonce, text);
}

/* A plaintext reader met the TLS preamble: reads its nonce, tells the
 * acceptor, and fails with a sentence. 0 while the nonce is incomplete. */
static int conn_preamble_seen(bs_conn_t *c, const uint8_t *secret, char *why, size_t wl) {
  err_quiet(1);
  xcclResult_t r = sock_recv_some(c->fd, c->nonce, BS_NONCE_BYTES, &c->nonce_got);
  err_quiet(0);
  char s[SOCK_ADDR_STRLEN];
  if (r == xcclSuccess && c->nonce_got < BS_NONCE_BYTES) return 0;
  if (r == xcclSuccess) conn_tls_notice(c, secret, 0);
  snprintf(why, wl,
           "bootstrap peer %s runs TLS (XCCL_TLS=1 or xcclSetEncryption) and this process does not: set it the "
           "same on every rank",
           sock_addr_str(&c->from, s, sizeof(s)));
  return -1;
}

/* Acceptor with TLS, before the handshake reads anything: a peer whose
 * first bytes are a frame's magic runs without TLS; its frame (a BS_FAIL
 * notice, nothing else) is then read in clear. It is verified in conn_read
 * like every frame, by its MAC under the job's secret and the nonce sent
 * with our preamble, so a notice forged without the secret, or replayed
 * from another connection, is refused and the rank goes on waiting
 * (tests/unit/test_bootstrap_notice.c). */
static void conn_peek_plain(bs_conn_t *c) {
  uint8_t b[4];
  ssize_t n = recv(c->fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 || (n > 0 && n < 4 && memcmp(b, tls_preamble, (size_t)n) == 0)) return; /* not yet */
  c->peeked = 1;
  if (n == 4 && memcmp(b, tls_preamble, 4) == 0) {
    sock_tls_free(&c->tls);
    c->tls_state = BS_TLS_OFF;
    c->tls_mismatch = BS_MISMATCH_PLAIN_PEER;
  }
}

void conn_connected(bs_conn_t *c, const sock_addr_t *addr) {
  c->from = *addr;
  c->tls_state = sock_tls_wanted() ? BS_TLS_PREAMBLE : BS_TLS_OFF;
}

short conn_events(const bs_conn_t *c, short events) { return c->tls ? sock_tls_events(c->tls, events) : events; }

static xcclResult_t conn_recv_some(bs_conn_t *c, void *buf, size_t len, size_t *off_p) {
  return c->tls ? sock_tls_recv_some(c->tls, buf, len, off_p) : sock_recv_some(c->fd, buf, len, off_p);
}

/* Moves a TLS connection towards BS_TLS_OPEN: the preamble, the handshake,
 * then (acceptor) the challenge. 0, or -1 with why. */
static int conn_tls_progress(bs_conn_t *c, const uint8_t *secret, char *why, size_t wl) {
  xcclResult_t r = xcclSuccess;
  if (c->tls_state == BS_TLS_PREAMBLE) {
    if (c->got < BS_HDR_BYTES) r = sock_recv_some(c->fd, c->hdr, BS_HDR_BYTES, &c->got);
    if (r == xcclSuccess && c->got == BS_HDR_BYTES && memcmp(c->hdr, tls_preamble, BS_HDR_BYTES) != 0) {
      c->tls_state = BS_TLS_OFF; /* a plaintext acceptor: read its challenge, then tell it (conn_read) */
      c->tls_mismatch = BS_MISMATCH_PLAIN_ACCEPTOR;
      return 0;
    }
    if (r == xcclSuccess && c->got == BS_HDR_BYTES)
      r = sock_recv_some(c->fd, c->nonce, BS_NONCE_BYTES, &c->nonce_got);
    if (r == xcclSuccess && c->nonce_got == BS_NONCE_BYTES) {
      c->got = 0;
      r = conn_tls_start(c, secret, 0);
    }
  }
  if (r == xcclSuccess && c->tls_state == BS_TLS_HANDSHAKE && c->acceptor && !c->peeked) conn_peek_plain(c);
  if (r == xcclSuccess && c->tls_state == BS_TLS_HANDSHAKE && (!c->acceptor || c->peeked)) {
    int done = 0;
    r = sock_tls_handshake(c->tls, &done);
    if (r == xcclSuccess && done) {
      c->tls_state = BS_TLS_OPEN;
      if (c->acceptor) r = send_challenge(c, secret, clock_deadline(1.0));
    }
  }
  if (r != xcclSuccess) {
    snprintf(why, wl, "%s", err_last());
    return -1;
  }
  return 0;
}

void conn_reset_frame(bs_conn_t *c) {
  free(c->frame);
  c->frame = NULL;
  c->got = 0;
  c->frame_len = 0;
}

void conn_close(bs_conn_t *c) {
  conn_reset_frame(c);
  sock_tls_free(&c->tls);
  c->tls_state = BS_TLS_OFF;
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
  if (c->tls_state != BS_TLS_OFF && c->tls_state != BS_TLS_OPEN) {
    int rc = conn_tls_progress(c, key, why, wl);
    if (rc != 0 || (c->tls_state != BS_TLS_OPEN && c->tls_state != BS_TLS_OFF)) {
      err_quiet(0);
      return rc;
    }
  }
  if (c->got < BS_HDR_BYTES) r = conn_recv_some(c, c->hdr, BS_HDR_BYTES, &c->got);
  if (r == xcclSuccess && c->got == BS_HDR_BYTES && !c->frame) {
    if (!c->tls && memcmp(c->hdr, tls_preamble, BS_HDR_BYTES) == 0) {
      err_quiet(0);
      return conn_preamble_seen(c, key, why, wl);
    }
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
  if (r == xcclSuccess && c->frame) r = conn_recv_some(c, c->frame, c->frame_len, &c->got);
  err_quiet(0);
  if (r != xcclSuccess) {
    snprintf(why, wl, "%s", err_last());
    return -1;
  }
  if (!c->frame || c->got < c->frame_len) return 0;
  if (bs_frame_verify(c->frame, c->frame_len, key, nonce, why, wl) != 0) return -1;
  char s[SOCK_ADDR_STRLEN];
  if (c->tls_mismatch == BS_MISMATCH_PLAIN_ACCEPTOR) {
    if (c->h.type == BS_CHALLENGE && c->h.len == BS_NONCE_BYTES) {
      memcpy(c->nonce, c->frame + BS_HDR_BYTES, BS_NONCE_BYTES);
      conn_tls_notice(c, key, 1);
    }
    snprintf(why, wl,
             "bootstrap peer %s does not run TLS (it sent a plaintext bootstrap message) and this process does: "
             "set XCCL_TLS (or xcclSetEncryption) the same on every rank",
             sock_addr_str(&c->from, s, sizeof(s)));
    return -1;
  }
  if (c->tls_mismatch == BS_MISMATCH_PLAIN_PEER && c->h.type != BS_FAIL) {
    snprintf(why, wl, "a plaintext bootstrap message (type %u) where TLS runs: only a notice is taken in clear",
             c->h.type);
    return -1;
  }
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
    struct pollfd p = {.fd = c->fd, .events = conn_events(c, POLLIN)};
    if (!c->tls || !sock_tls_pending(c->tls)) poll(&p, 1, clock_ms_left(deadline, 100));
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

/* Writes all of buf on c (inside TLS when it runs), by deadline. */
static xcclResult_t conn_send_all(bs_conn_t *c, const void *buf, size_t len, uint64_t deadline,
                                  const _Atomic int *abort_flag) {
  if (!c->tls) return sock_send_all(c->fd, buf, len, deadline, (const volatile int *)abort_flag);
  if (c->tls_state != BS_TLS_OPEN)
    return err_set(xcclInternalError, LOG_BOOTSTRAP, "bootstrap: a frame to send before the TLS handshake ended");
  size_t off = 0;
  for (;;) {
    TRY(sock_tls_send_some(c->tls, buf, len, &off));
    if (off == len) return xcclSuccess;
    if (abort_flag && atomic_load(abort_flag))
      return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: aborted while sending");
    if (clock_expired(deadline))
      return err_set(xcclTimeout, LOG_BOOTSTRAP, "bootstrap: sent %zu of %zu bytes within XCCL_TIMEOUT=%g s", off,
                     len, config_double(CFG_TIMEOUT));
    struct pollfd p = {.fd = c->fd, .events = conn_events(c, POLLOUT)}; /* a write may need a read first */
    poll(&p, 1, clock_ms_left(deadline, 100));
  }
}

xcclResult_t send_frame(bs_conn_t *c, bs_type_t type, const void *payload, uint32_t len, const uint8_t *key,
                        const uint8_t *nonce, uint64_t deadline, const _Atomic int *abort_flag) {
  size_t n = BS_HDR_BYTES + (size_t)len + BS_MAC_BYTES;
  uint8_t *buf = malloc(n);
  if (!buf) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a bootstrap message");
  bs_frame_build(buf, type, payload, len, key, nonce);
  xcclResult_t r = conn_send_all(c, buf, n, deadline, abort_flag);
  free(buf);
  return r;
}

/* The acceptor's first word on a connection: a fresh nonce. */
xcclResult_t send_challenge(bs_conn_t *c, const uint8_t *key, uint64_t deadline) {
  if (bs_random(c->nonce, sizeof(c->nonce)) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot draw random bytes for a bootstrap challenge");
  return send_frame(c, BS_CHALLENGE, c->nonce, BS_NONCE_BYTES, key, NULL, deadline, NULL);
}

void send_fail(bs_conn_t *c, xcclResult_t code, const uint8_t *key, const uint8_t *nonce, const char *text) {
  if (c->tls_state != BS_TLS_OFF && c->tls_state != BS_TLS_OPEN) return; /* no channel to say it on */
  size_t tl = strlen(text);
  if (tl > 1000) tl = 1000;
  uint8_t payload[1004];
  payload[0] = (uint8_t)code, payload[1] = payload[2] = payload[3] = 0;
  memcpy(payload + 4, text, tl);
  err_quiet(1);
  send_frame(c, BS_FAIL, payload, (uint32_t)(tl + 4), key, nonce, clock_deadline(1.0), NULL);
  err_quiet(0);
}

