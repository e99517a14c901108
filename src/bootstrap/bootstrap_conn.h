/*
 * bootstrap_conn.h — internals shared by the bootstrap's files: one
 * authenticated connection (frames in and out), and the rank's state.
 */
#ifndef XCCL_CORE_BOOTSTRAP_CONN_H
#define XCCL_CORE_BOOTSTRAP_CONN_H

#include <stdatomic.h>

#include "bootstrap.h"
#include "sock_tls.h"

/* XCCL_TLS on the bootstrap (bootstrap_conn.c): the acceptor first sends
 * BS_TLS_PREAMBLE in clear (so a plaintext peer learns at once why the
 * two cannot talk), then the connector starts TLS 1.3 with a key derived
 * by bs_derive_key under its own label; every frame, the challenge
 * included, then travels inside TLS. The preamble is 16 fixed bytes and a
 * fresh nonce (BS_NONCE_BYTES). */
typedef enum {
  BS_TLS_OFF = 0,    /* plaintext frames */
  BS_TLS_PREAMBLE,   /* connector: reading the acceptor's preamble */
  BS_TLS_HANDSHAKE,  /* either side: TLS handshake under way */
  BS_TLS_OPEN,       /* frames go through tls */
} bs_tls_state_t;

/* A peer that differs in XCCL_TLS is told in an authentic plaintext
 * BS_FAIL frame under the acceptor's nonce (its challenge's, or the one
 * that follows the preamble), so the root fails every rank at once instead
 * of waiting for the one that cannot join. */
enum {
  BS_MISMATCH_NONE = 0,
  BS_MISMATCH_PLAIN_ACCEPTOR, /* we run TLS; the acceptor sent a plaintext challenge */
  BS_MISMATCH_PLAIN_PEER,     /* we accept with TLS; the peer sent a plaintext frame (only BS_FAIL is taken) */
};

typedef struct {
  int fd;
  sock_tls_t *tls;        /* NULL: plaintext, or before the handshake */
  bs_tls_state_t tls_state;
  int acceptor;           /* accepted here: sends the challenge */
  int tls_mismatch;       /* BS_MISMATCH_*: the two ends differ in XCCL_TLS */
  int peeked;             /* acceptor with TLS: the peer's first bytes were looked at */
  size_t nonce_got;       /* bytes of the preamble's nonce received */
  sock_addr_t from;
  uint8_t nonce[BS_NONCE_BYTES]; /* the acceptor's challenge: MAC context of every frame */
  uint8_t hdr[BS_HDR_BYTES];
  size_t got;      /* bytes of the current frame received */
  uint8_t *frame;  /* header + payload + MAC once the header is known */
  size_t frame_len;
  bs_hdr_t h;
  uint64_t accepted_ns; /* when the acceptor took it (clock_ns) */
} bs_conn_t;

void conn_reset_frame(bs_conn_t *c);

/* Accepted connections that have not yet sent a whole frame are held in
 * small tables. Makes room in tab[0..*n) for one more: closes those silent
 * for BS_IDLE_S, then, if the table is still full, the oldest when it has
 * been silent for BS_GIVEWAY_S. Returns whether there is room. So idle
 * connections (a flood, a port scanner) cannot keep real peers out for
 * long. `who` names the owner in the log ("bootstrap rank 3"). */
#define BS_IDLE_S 10.0
#define BS_GIVEWAY_S 1.0
int conn_table_room(bs_conn_t *tab, int *n, int max, const char *who);
void conn_close(bs_conn_t *c);
/* A connection just accepted (c->fd, c->from set): with XCCL_TLS, the
 * preamble is sent and the handshake begins (the challenge follows it, in
 * conn_read); else the challenge is sent. A failure names c->from. */
xcclResult_t conn_accepted(bs_conn_t *c, const uint8_t *secret, uint64_t deadline);
/* A connection just made to addr (c->fd set): with XCCL_TLS, conn_read
 * first expects the acceptor's preamble, then runs the handshake. */
void conn_connected(bs_conn_t *c, const sock_addr_t *addr);
/* Reads what is available. *ready = 1 once a whole, authentic frame is in
 * c->frame. -1 with why on a closed connection or a bad frame. */
int conn_read(bs_conn_t *c, const uint8_t *key, const uint8_t *nonce, int *ready, char *why, size_t wl);
/* The poll() events to wait for on c when the caller would wait for
 * `events`: with TLS, OpenSSL may need the other direction first (a
 * handshake or post-handshake message), and then only that wakes it. */
short conn_events(const bs_conn_t *c, short events);
/* Blocking read of one frame of the given type, with a deadline. A FAIL
 * frame from the root is turned into the error it carries. */
xcclResult_t conn_read_frame(bs_conn_t *c, const uint8_t *key, const uint8_t *nonce, bs_type_t want,
                             uint64_t deadline, const _Atomic int *abort_flag, const char *peer);
xcclResult_t send_frame(bs_conn_t *c, bs_type_t type, const void *payload, uint32_t len, const uint8_t *key,
                        const uint8_t *nonce, uint64_t deadline, const _Atomic int *abort_flag);
/* The acceptor's first word on a connection: a fresh nonce. */
xcclResult_t send_challenge(bs_conn_t *c, const uint8_t *key, uint64_t deadline);
void send_fail(bs_conn_t *c, xcclResult_t code, const uint8_t *key, const uint8_t *nonce, const char *text);

/* A point-to-point message that arrived before it was asked for. */
typedef struct bs_msg {
  struct bs_msg *next;
  int peer;
  uint32_t tag;
  size_t size;
  uint8_t *data;
} bs_msg_t;

#define BS_MAX_INCOMING 16

struct bootstrap {
  int rank, nranks;
  bs_id_t id;
  sock_addr_t *addrs; /* every rank's bootstrap address */
  uint64_t deadline_s_ns; /* XCCL_TIMEOUT in ns, for each later wait */
  const _Atomic int *abort_flag;
  int listen_fd;             /* stays open for point-to-point messages */
  bs_conn_t incoming[BS_MAX_INCOMING]; /* accepted, message not yet read */
  int nincoming;
  bs_msg_t *unexpected;      /* arrived before bootstrap_recv asked */
  uint32_t ag_calls;         /* bootstrap_allgather calls so far: part of their tags */
  int ag_rounds;             /* rounds the last one took (bootstrap_allgather_rounds) */
  size_t ag_chunk_max;       /* most bytes of blocks in one message (tests lower it) */
};

/* bootstrap_p2p.c: frees the queued messages and pending connections. */
void bootstrap_p2p_close(bootstrap_t *bs);
/* bootstrap_recv without a size: waits until deadline for peer's message
 * under tag and hands it over, *data_p malloc'ed (the caller frees it) of
 * *size_p bytes. Errors name the peer. */
xcclResult_t bootstrap_recv_msg(bootstrap_t *bs, int peer, uint32_t tag, uint64_t deadline, void **data_p,
                               size_t *size_p);

#endif
