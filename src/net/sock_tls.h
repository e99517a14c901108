/*
 * sock_tls.h — TLS 1.3 on one non-blocking TCP stream (XCCL_TLS=1): the
 * socket transport's streams, and the bootstrap's connections
 * (bootstrap_conn.c), each side with a key of its own.
 *
 * The peer is authenticated by an external pre-shared key that each rank
 * derives from its communicator's bootstrap secret (bootstrap_derive_key),
 * or, with XCCL_TLS_CERT, by certificates (tls_cert.h). With certificates
 * the stream is also bound to the job: once the TLS handshake is over, each
 * side proves it holds the stream's key (tls_cert_binding), so a rank of
 * another job whose certificate the same CA signed is refused. A stream
 * whose peer holds another key or certificate, or speaks plaintext, fails
 * its handshake with a sentence naming the peer's host.
 *
 * Every call is non-blocking: it does what the socket allows and returns
 * xcclSuccess with the progress made (WANT_READ / WANT_WRITE are "not yet").
 * Nothing here waits; the caller's loop bounds the handshake (XCCL_TIMEOUT,
 * abort flag).
 */
#ifndef XCCL_NET_SOCK_TLS_H
#define XCCL_NET_SOCK_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "net.h"

typedef struct sock_tls sock_tls_t;

/* 1 when XCCL_TLS asks for TLS on the socket transport. */
int sock_tls_wanted(void);

/* The key the calling thread last gave net_session_key(); 0 when none. */
int sock_tls_session_key(uint8_t key[NET_KEY_BYTES]);

/* A TLS stream on fd (which stays the caller's to close), client or server
 * side, with key (drawn from the job's secret: the pre-shared key, or with
 * certificates the job binding's key; both ends must pass the same); peer
 * names the other host in messages. On failure *tls_p is untouched. */
xcclResult_t sock_tls_new(int fd, int is_server, const uint8_t key[NET_KEY_BYTES], const char *peer,
                          sock_tls_t **tls_p);

/* Moves the handshake on; *done_p = 1 once it completed (the cipher is said
 * at INFO then): with certificates, that includes the job binding (32 bytes
 * each way inside TLS). An error names the peer and the likely cause. */
xcclResult_t sock_tls_handshake(sock_tls_t *t, int *done_p);

/* sock_send_some / sock_recv_some over TLS: moves what it can of
 * buf[*off_p, len), advancing *off_p. */
xcclResult_t sock_tls_send_some(sock_tls_t *t, const void *buf, size_t len, size_t *off_p);
xcclResult_t sock_tls_recv_some(sock_tls_t *t, void *buf, size_t len, size_t *off_p);

/* The poll() events the stream waits for: POLLIN or POLLOUT when the last
 * call stopped because OpenSSL must read or write first (TLS 1.3 can need a
 * read during a write, or a write during a read), else `events`, what the
 * caller itself wants to do. */
short sock_tls_events(const sock_tls_t *t, short events);

/* 1 when decrypted bytes wait inside OpenSSL (poll() on the fd does not
 * see them). */
int sock_tls_pending(const sock_tls_t *t);

/* Frees the stream's TLS state (not the fd); *tls_p becomes NULL. */
void sock_tls_free(sock_tls_t **tls_p);

#endif
