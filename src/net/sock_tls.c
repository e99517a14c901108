/*
 * sock_tls.c — TLS 1.3 through OpenSSL on the socket transport's streams.
 *
 * Authentication is an external PSK (RFC 8446 section 2.2): both sides hold
 * the same 32-byte key, derived from the communicator's bootstrap secret,
 * and offer it under one fixed identity. A peer with another key fails the
 * binder check; OpenSSL still runs (EC)DHE beside the PSK (psk_dhe_ke), so
 * the traffic keys are fresh per stream. Only SHA-256 suites are offered,
 * the hash the PSK is bound to. No session tickets. With XCCL_TLS_CERT
 * (tls_cert.c) certificates verified against XCCL_TLS_CA, both ways,
 * replace the PSK; the key then binds the stream to the job after the
 * handshake (tls_bind_step), since the CA may sign ranks of other jobs.
 *
 * Records reach the socket through stream_bio (send with MSG_NOSIGNAL), so a
 * dead peer fails the stream without SIGPIPE and without a signal mask per
 * call. Kernel TLS: when the kernel offers the tls ULP, SSL_OP_ENABLE_KTLS
 * lets OpenSSL hand the record layer to the kernel after the handshake;
 * only OpenSSL's own socket BIO can do that, so those streams keep it and
 * guard SIGPIPE around each call instead (see sigpipe_guard_t).
 */
#include "sock_tls.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "log.h"
#include "sock.h"
#include "tls_cert.h"

struct sock_tls {
  SSL *ssl;
  int fd;
  int is_server;
  int socket_bio;     /* OpenSSL's socket BIO (kernel TLS possible), not stream_bio */
  int eof;            /* stream_bio: recv returned 0 */
  int wrong_identity; /* server: the client offered an identity that is not ours */
  uint8_t key[NET_KEY_BYTES];
  char peer[SOCK_ADDR_STRLEN + 32];
  /* Certificates: the job binding after the handshake (tls_bind_step). */
  int bind_state; /* TLS_BIND_* */
  uint8_t bind_mine[TLS_CERT_BIND_BYTES], bind_peer[TLS_CERT_BIND_BYTES];
  size_t bind_sent, bind_got;
};

enum {
  TLS_BIND_HANDSHAKE = 0, /* the TLS handshake is under way */
  TLS_BIND_EXCHANGE,      /* certificates: the binding values cross */
  TLS_BIND_DONE,          /* the stream is open */
};

static _Thread_local uint8_t session_key[NET_KEY_BYTES];
static _Thread_local int session_key_set;

void net_session_key(const uint8_t *key) {
  session_key_set = key != NULL;
  if (key) memcpy(session_key, key, NET_KEY_BYTES);
}

int sock_tls_session_key(uint8_t key[NET_KEY_BYTES]) {
  if (session_key_set) memcpy(key, session_key, NET_KEY_BYTES);
  return session_key_set;
}

int sock_tls_wanted(void) { return config_bool(CFG_TLS); }

static const char psk_identity[] = "xccl socket psk v1";
static const unsigned char aes128gcm_sha256[] = {0x13, 0x01}; /* TLS_AES_128_GCM_SHA256 */

static SSL_CTX *tls_ctx[2]; /* client, server */
static int tls_ktls;        /* the kernel offers the tls ULP */
static int tls_certs;      /* XCCL_TLS_CERT: certificates, not the pre-shared key */
static char tls_ctx_err[640];
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static SSL_SESSION *psk_session(SSL *ssl, const uint8_t *key) {
  const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, aes128gcm_sha256);
  SSL_SESSION *s = cipher ? SSL_SESSION_new() : NULL;
  if (s && SSL_SESSION_set1_master_key(s, key, NET_KEY_BYTES) && SSL_SESSION_set_cipher(s, cipher) &&
      SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION))
    return s;
  SSL_SESSION_free(s);
  return NULL;
}

static int psk_use(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen, SSL_SESSION **sess) {
  sock_tls_t *t = SSL_get_app_data(ssl);
  SSL_SESSION *s = psk_session(ssl, t->key);
  if (!s) return 0;
  *sess = s;
  *id = (const unsigned char *)psk_identity;
  *idlen = sizeof(psk_identity) - 1;
  return 1;
}

static int psk_find(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess) {
  sock_tls_t *t = SSL_get_app_data(ssl);
  if (idlen != sizeof(psk_identity) - 1 || memcmp(id, psk_identity, idlen) != 0) {
    t->wrong_identity = 1;
    *sess = NULL; /* no PSK: with no certificate either, the handshake fails */
    return 1;
  }
  *sess = psk_session(ssl, t->key);
  return *sess != NULL;
}

static int ktls_offered(void) {
  FILE *f = fopen("/proc/sys/net/ipv4/tcp_available_ulp", "r");
  char line[256] = "";
  if (!f) return 0;
  if (!fgets(line, sizeof(line), f)) line[0] = 0;
  fclose(f);
  for (char *w = strtok(line, " \t\n"); w; w = strtok(NULL, " \t\n"))
    if (strcmp(w, "tls") == 0) return 1;
  return 0;
}

/* ---- stream_bio: the records' way to the socket ----
 * A source/sink BIO over the stream's fd (the sock_tls_t is its data):
 * send(MSG_NOSIGNAL) and recv, non-blocking; EAGAIN and EINTR are "retry". */
static BIO_METHOD *stream_bio_method;

static int stream_bio_write(BIO *b, const char *buf, int len) {
  sock_tls_t *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t n = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return (int)n;
}

static int stream_bio_read(BIO *b, char *buf, int len) {
  sock_tls_t *t = BIO_get_data(b);
  BIO_clear_retry_flags(b);
  ssize_t n = recv(t->fd, buf, (size_t)len, 0);
  if (n == 0) t->eof = 1;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return (int)n;
}

static long stream_bio_ctrl(BIO *b, int cmd, long num, void *ptr) {
  (void)num, (void)ptr;
  sock_tls_t *t = BIO_get_data(b);
  switch (cmd) {
  case BIO_CTRL_FLUSH: /* nothing is buffered here */
    return 1;
  case BIO_CTRL_EOF: /* how OpenSSL tells a peer's close from a retry */
    return t && t->eof;
  default:
    return 0;
  }
}

static int stream_bio_create(BIO *b) {
  BIO_set_init(b, 1);
  return 1;
}

static BIO_METHOD *stream_bio_method_new(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "xccl stream");
  if (m && BIO_meth_set_write(m, stream_bio_write) && BIO_meth_set_read(m, stream_bio_read) &&
      BIO_meth_set_ctrl(m, stream_bio_ctrl) && BIO_meth_set_create(m, stream_bio_create))
    return m;
  BIO_meth_free(m);
  return NULL;
}

/* The stream's BIO: stream_bio, or OpenSSL's socket BIO where kernel TLS
 * may take the records. 1 on success. */
static int stream_bio_attach(sock_tls_t *t) {
  if (tls_ktls) {
    t->socket_bio = 1;
    return SSL_set_fd(t->ssl, t->fd);
  }
  BIO *b = BIO_new(stream_bio_method);
  if (!b) return 0;
  BIO_set_data(b, t);
  SSL_set_bio(t->ssl, b, b);
  return 1;
}

static void tls_ctx_init(void) {
  tls_ktls = ktls_offered();
  tls_certs = tls_cert_wanted();
  stream_bio_method = tls_ktls ? NULL : stream_bio_method_new();
  if (!tls_ktls && !stream_bio_method) {
    snprintf(tls_ctx_err, sizeof(tls_ctx_err), "OpenSSL could not make a BIO method");
    return;
  }
  for (int server = 0; server < 2; server++) {
    SSL_CTX *c = SSL_CTX_new(TLS_method());
    if (!c || !SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION) ||
        !SSL_CTX_set_ciphersuites(c, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256") ||
        !SSL_CTX_set_num_tickets(c, 0)) {
      SSL_CTX_free(c);
      snprintf(tls_ctx_err, sizeof(tls_ctx_err), "OpenSSL could not make a TLS 1.3 context");
      return;
    }
    if (tls_certs && tls_cert_configure(c, tls_ctx_err, sizeof(tls_ctx_err)) != 0) {
      SSL_CTX_free(c);
      return;
    }
    SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(c, SSL_OP_NO_TICKET);
#ifdef SSL_OP_ENABLE_KTLS
    if (tls_ktls) SSL_CTX_set_options(c, SSL_OP_ENABLE_KTLS);
#endif
    if (!tls_certs && server) /* with certificates, tls_cert_configure asked for the peer's */
      SSL_CTX_set_psk_find_session_callback(c, psk_find);
    else if (!tls_certs)
      SSL_CTX_set_psk_use_session_callback(c, psk_use);
    tls_ctx[server] = c;
  }
  if (tls_ktls)
    INFO(NET, "TLS: the kernel offers the tls ULP: streams ask OpenSSL for kernel TLS offload (SSL_OP_ENABLE_KTLS)");
  else
    INFO(NET, "TLS: no kernel TLS offload (tls is not in /proc/sys/net/ipv4/tcp_available_ulp; modprobe tls): "
              "OpenSSL encrypts in user space");
}

xcclResult_t sock_tls_new(int fd, int is_server, const uint8_t key[NET_KEY_BYTES], const char *peer,
                          sock_tls_t **tls_p) {
  pthread_once(&tls_once, tls_ctx_init);
  if (!tls_ctx[is_server]) return err_set(xcclSystemError, LOG_NET, "TLS with %s: %s", peer, tls_ctx_err);
  sock_tls_t *t = calloc(1, sizeof(*t));
  if (!t) return err_set(xcclSystemError, LOG_NET, "out of memory for a TLS stream with %s", peer);
  t->fd = fd;
  t->is_server = is_server;
  memcpy(t->key, key, NET_KEY_BYTES);
  snprintf(t->peer, sizeof(t->peer), "%s", peer);
  t->ssl = SSL_new(tls_ctx[is_server]);
  if (!t->ssl || !stream_bio_attach(t)) {
    SSL_free(t->ssl);
    free(t);
    return err_set(xcclSystemError, LOG_NET, "TLS with %s: OpenSSL could not make a stream", peer);
  }
  SSL_set_app_data(t->ssl, t);
  SSL_set_quiet_shutdown(t->ssl, 1); /* closing never waits for the peer's close_notify */
  *tls_p = t;
  return xcclSuccess;
}

int sock_tls_pending(const sock_tls_t *t) { return SSL_has_pending(t->ssl); }

short sock_tls_events(const sock_tls_t *t, short events) {
  if (SSL_want_read(t->ssl)) return POLLIN;
  if (SSL_want_write(t->ssl)) return POLLOUT;
  return events;
}

void sock_tls_free(sock_tls_t **tls_p) {
  sock_tls_t *t = *tls_p;
  if (!t) return;
  SSL_free(t->ssl);
  OPENSSL_cleanse(t->key, sizeof(t->key));
  free(t);
  *tls_p = NULL;
}

/* The likely cause of a failed handshake, from OpenSSL's reason. */
static const char *tls_cause(const sock_tls_t *t, int reason, char *buf, size_t len) {
  const char *cert = tls_certs ? tls_cert_cause(t->ssl, reason, buf, len) : NULL;
  if (cert) return cert;
  if (t->wrong_identity) return "the peer offered another pre-shared key identity (not an xccl rank with XCCL_TLS=1)";
  switch (reason) {
  case SSL_R_BINDER_DOES_NOT_VERIFY:
  case SSL_R_TLSV1_ALERT_DECRYPT_ERROR:
  case SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER: /* what OpenSSL sends when the binder fails */
  case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
  case SSL_R_NO_SHARED_CIPHER:
    return "the peer holds another key: it is not a rank of this communicator (another unique id, XCCL_SECRET, "
           "or psk given to xcclSetEncryption)";
  case SSL_R_WRONG_VERSION_NUMBER:
  case SSL_R_PACKET_LENGTH_TOO_LONG:
  case SSL_R_HTTP_REQUEST:
  case SSL_R_UNEXPECTED_MESSAGE:
    return "the peer does not speak TLS (plaintext: is XCCL_TLS=1 set on that host too?)";
  case SSL_R_UNEXPECTED_EOF_WHILE_READING:
    return "the peer closed the connection during the handshake (it refused our key, or does not speak TLS)";
  default:
    return "the peer holds another key or does not speak TLS (XCCL_TLS=1 and the same secret on every rank?)";
  }
}

static xcclResult_t tls_fail(sock_tls_t *t, const char *what, int ret) {
  int e = SSL_get_error(t->ssl, ret);
  unsigned long err = ERR_peek_last_error();
  char buf[256] = "";
  if (err) ERR_error_string_n(err, buf, sizeof(buf));
  int saved = errno;
  ERR_clear_error();
  if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ret == 0) ||
      (err && ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING && strcmp(what, "handshake") != 0))
    return err_set(xcclRemoteError, LOG_NET,
                   "connection closed by the peer (it exited, aborted, or gave up after a failure of its own)");
  if (e == SSL_ERROR_SYSCALL)
    return err_set(xcclRemoteError, LOG_NET, "TLS %s with %s failed: %s", what, t->peer, strerror(saved));
  if (strcmp(what, "handshake") == 0) {
    char cause[512];
    return err_set(xcclRemoteError, LOG_NET, "TLS handshake with %s failed: %s (OpenSSL: %s)", t->peer,
                   tls_cause(t, err ? ERR_GET_REASON(err) : 0, cause, sizeof(cause)), buf[0] ? buf : "no reason given");
  }
  return err_set(xcclRemoteError, LOG_NET, "TLS %s with %s failed (OpenSSL: %s): the stream is corrupt or forged",
                 what, t->peer, buf[0] ? buf : "no reason given");
}

static int tls_want(sock_tls_t *t, int ret) {
  int e = SSL_get_error(t->ssl, ret);
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/* Sends this side's binding value, then reads the peer's and compares it
 * with the one the peer must have computed (tls_cert.h says why). Moves
 * what the socket allows; t->bind_state becomes TLS_BIND_DONE once the
 * peer's value matched. The peer's alerts (e.g. it refused our certificate
 * after our side of the handshake ended) surface here, hence "handshake". */
static xcclResult_t tls_bind_step(sock_tls_t *t) {
  for (int reading = 0; reading < 2; reading++) {
    uint8_t *buf = reading ? t->bind_peer : t->bind_mine;
    size_t *off = reading ? &t->bind_got : &t->bind_sent;
    while (*off < TLS_CERT_BIND_BYTES) {
      size_t n = 0;
      ERR_clear_error();
      int r = reading ? SSL_read_ex(t->ssl, buf + *off, TLS_CERT_BIND_BYTES - *off, &n)
                      : SSL_write_ex(t->ssl, buf + *off, TLS_CERT_BIND_BYTES - *off, &n);
      if (r != 1) return tls_want(t, r) ? xcclSuccess : tls_fail(t, "handshake", r);
      *off += n;
    }
  }
  uint8_t want[TLS_CERT_BIND_BYTES];
  int ok = tls_cert_binding(t->ssl, t->key, sizeof(t->key), !t->is_server, want) == 0 &&
           CRYPTO_memcmp(want, t->bind_peer, sizeof(want)) == 0;
  OPENSSL_cleanse(want, sizeof(want));
  if (!ok)
    return err_set(xcclRemoteError, LOG_NET,
                   "TLS with %s: the peer holds a certificate signed by XCCL_TLS_CA=%s but not this job's secret: "
                   "a rank of another job? (the ranks of one job share its unique id, XCCL_SECRET, or the psk "
                   "given to xcclSetEncryption)",
                   t->peer, config_str(CFG_TLS_CA));
  t->bind_state = TLS_BIND_DONE;
  return xcclSuccess;
}

static xcclResult_t tls_handshake(sock_tls_t *t, int *done_p) {
  *done_p = 0;
  if (t->bind_state == TLS_BIND_HANDSHAKE) {
    ERR_clear_error();
    int r = t->is_server ? SSL_accept(t->ssl) : SSL_connect(t->ssl);
    if (r != 1) return tls_want(t, r) ? xcclSuccess : tls_fail(t, "handshake", r);
    t->bind_state = tls_certs ? TLS_BIND_EXCHANGE : TLS_BIND_DONE; /* a PSK already binds to the job */
    if (tls_certs && tls_cert_binding(t->ssl, t->key, sizeof(t->key), t->is_server, t->bind_mine) != 0)
      return err_set(xcclSystemError, LOG_NET, "TLS with %s: OpenSSL could not export keying material to bind the "
                     "stream to the job", t->peer);
  }
  if (t->bind_state == TLS_BIND_EXCHANGE) TRY(tls_bind_step(t));
  if (t->bind_state != TLS_BIND_DONE) return xcclSuccess;
  int ktls_send = 0, ktls_recv = 0;
#ifdef SSL_OP_ENABLE_KTLS
  ktls_send = BIO_get_ktls_send(SSL_get_wbio(t->ssl)) > 0;
  ktls_recv = BIO_get_ktls_recv(SSL_get_rbio(t->ssl)) > 0;
#endif
  INFO(NET, "TLS with %s: %s %s, %s, kernel offload %s", t->peer, SSL_get_version(t->ssl),
       SSL_get_cipher_name(t->ssl), tls_certs ? "certificates bound to the job" : "pre-shared key",
       ktls_send || ktls_recv ? (ktls_send && ktls_recv ? "send+recv" : ktls_send ? "send only" : "recv only")
       : tls_ktls            ? "refused by OpenSSL or the kernel"
                             : "absent (no tls ULP)");
  *done_p = 1;
  return xcclSuccess;
}

static xcclResult_t tls_send_some(sock_tls_t *t, const void *buf, size_t len, size_t *off_p) {
  ERR_clear_error(); /* once: a record that succeeds leaves the queue as it was */
  while (*off_p < len) {
    size_t n = 0;
    int r = SSL_write_ex(t->ssl, (const char *)buf + *off_p, len - *off_p, &n);
    if (r == 1) {
      *off_p += n;
      continue;
    }
    if (tls_want(t, r)) return xcclSuccess;
    return tls_fail(t, "send", r);
  }
  return xcclSuccess;
}

static xcclResult_t tls_recv_some(sock_tls_t *t, void *buf, size_t len, size_t *off_p) {
  ERR_clear_error(); /* once: a record that succeeds leaves the queue as it was */
  while (*off_p < len) {
    size_t n = 0;
    int r = SSL_read_ex(t->ssl, (char *)buf + *off_p, len - *off_p, &n);
    if (r == 1) {
      *off_p += n;
      continue;
    }
    if (tls_want(t, r)) return xcclSuccess;
    return tls_fail(t, "receive", r);
  }
  return xcclSuccess;
}

/* OpenSSL's socket BIO writes with write(): to a peer that died that
 * raises SIGPIPE, which kills the rank instead of failing the stream. So a
 * stream's records go through stream_bio (send with MSG_NOSIGNAL, recv), and
 * no signal mask is touched.
 *
 * Kernel TLS is the exception: OpenSSL arms the kernel's record layer only
 * through its own socket BIO (BIO_CTRL_SET_KTLS and the control-message
 * writes live inside it), so where the kernel offers the tls ULP a stream
 * keeps that BIO and each call blocks SIGPIPE in the calling thread (a
 * socket write's SIGPIPE goes to the writer) and discards one it raised
 * (not one that was already pending). */
typedef struct {
  sigset_t old;
  int was_pending;
} sigpipe_guard_t;

static void sigpipe_block(sigpipe_guard_t *g) {
  sigset_t pipe_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &g->old);
}

static void sigpipe_restore(sigpipe_guard_t *g) {
  int saved = errno;
  sigset_t pipe_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &g->old, NULL);
  errno = saved;
}

/* No-ops on streams that went through stream_bio. */
static void guard_enter(const sock_tls_t *t, sigpipe_guard_t *g) {
  if (t->socket_bio) sigpipe_block(g);
}

static void guard_leave(const sock_tls_t *t, sigpipe_guard_t *g) {
  if (t->socket_bio) sigpipe_restore(g);
}

xcclResult_t sock_tls_handshake(sock_tls_t *t, int *done_p) {
  sigpipe_guard_t g;
  guard_enter(t, &g);
  xcclResult_t res = tls_handshake(t, done_p);
  guard_leave(t, &g);
  return res;
}

xcclResult_t sock_tls_send_some(sock_tls_t *t, const void *buf, size_t len, size_t *off_p) {
  sigpipe_guard_t g;
  guard_enter(t, &g);
  xcclResult_t res = tls_send_some(t, buf, len, off_p);
  guard_leave(t, &g);
  return res;
}

xcclResult_t sock_tls_recv_some(sock_tls_t *t, void *buf, size_t len, size_t *off_p) {
  sigpipe_guard_t g;
  guard_enter(t, &g);
  xcclResult_t res = tls_recv_some(t, buf, len, off_p);
  guard_leave(t, &g);
  return res;
}
