/*
 * bootstrap_msg.h — what the bootstrap says on the wire, and how every byte
 * of it is checked. Pure functions: no sockets, so the unit tests and the
 * fuzzers call them directly.
 *
 * A frame is a 16-byte header {magic "XCBS", version, type, payload length,
 * zero}, the payload, and an HMAC-SHA256 over (connection nonce || header ||
 * payload) keyed by the job's secret. The nonce is the 16 random bytes the
 * accepting side sent first in a CHALLENGE frame (whose own MAC uses an
 * all-zero nonce), so a frame recorded on one connection is worthless on
 * another. All integers are little-endian.
 */
#ifndef XCCL_CORE_BOOTSTRAP_MSG_H
#define XCCL_CORE_BOOTSTRAP_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "sock.h"
#include "xccl.h"

#define BS_MAGIC 0x53424358u /* "XCBS" */
#define BS_VERSION 2 /* 2: a welcome names only the all-gather's first partners */
#define BS_HDR_BYTES 16
#define BS_MAC_BYTES 32
#define BS_NONCE_BYTES 16
#define BS_SECRET_BYTES 32
#define BS_ADDR_BYTES 28
#define BS_HOST_BYTES 64
#define BS_MAX_PAYLOAD (64u << 20)
#define BS_MAX_RANKS (1 << 20)

typedef enum {
  BS_CHALLENGE = 1, /* acceptor -> connector: nonce */
  BS_HELLO = 2,     /* rank -> root: who I am */
  BS_WELCOME = 3,   /* root -> rank: the addresses of the ranks it first sends to (bs_welcome_*) */
  BS_FAIL = 4,      /* root -> rank: why the job cannot start (text) */
  BS_RING_HELLO = 5,/* rank -> next rank: no longer sent (the ring is gone), still parsed */
  BS_DATA = 6,      /* all-gather payloads: no longer sent (they travel as BS_P2P) */
  BS_P2P = 7,       /* point-to-point: {from rank, tag, bytes} */
  BS_TYPE_MAX = 7
} bs_type_t;

typedef struct {
  uint16_t type;
  uint32_t len;
} bs_hdr_t;

typedef struct {
  uint64_t job;
  int32_t rank;
  int32_t nranks;
  sock_addr_t addr; /* where this rank's bootstrap listens */
  char host[BS_HOST_BYTES];
  uint32_t pid;
} bs_hello_t;

#define BS_HELLO_BYTES (8 + 4 + 4 + BS_ADDR_BYTES + BS_HOST_BYTES + 4)

/* The unique id's contents. */
typedef struct {
  sock_addr_t root;
  uint8_t secret[BS_SECRET_BYTES];
  uint64_t job;
  uint32_t flags; /* BS_ID_* */
  /* BS_ID_GROW: the communicator that handed the id out (its job) and its
   * size; existing ranks check the first, joiners number from the second. */
  uint64_t parent;
  uint32_t parent_nranks;
} bs_id_t;
/* No root runs yet: the init of rank 0 starts it at root (an id that
 * xcclGetUniqueId derived from XCCL_ROOT / NCCL_COMM_ID, as NCCL does). */
#define BS_ID_ROOT_AT_RANK0 1u
/* Made by xcclCommGetUniqueId for xcclCommGrow (grow.c). */
#define BS_ID_GROW 2u

/* ---- Frames ---- */
/* Checks a header. 0 and *out filled, or -1 with a reason in why. */
int bs_hdr_parse(const uint8_t hdr[BS_HDR_BYTES], bs_hdr_t *out, char *why, size_t whylen);
/* Writes header + payload + MAC to out (BS_HDR_BYTES + len + BS_MAC_BYTES). */
void bs_frame_build(uint8_t *out, bs_type_t type, const void *payload, uint32_t len,
                    const uint8_t key[BS_SECRET_BYTES], const uint8_t nonce[BS_NONCE_BYTES]);
/* Checks the MAC of a whole frame (header, payload, MAC). 0 or -1 + why. */
int bs_frame_verify(const uint8_t *frame, size_t frame_len, const uint8_t key[BS_SECRET_BYTES],
                    const uint8_t nonce[BS_NONCE_BYTES], char *why, size_t whylen);

/* ---- Payloads ---- */
void bs_addr_encode(const sock_addr_t *a, uint8_t out[BS_ADDR_BYTES]);
int bs_addr_decode(const uint8_t in[BS_ADDR_BYTES], sock_addr_t *a, char *why, size_t whylen);

void bs_hello_encode(const bs_hello_t *h, uint8_t out[BS_HELLO_BYTES]);

/* A welcome: u32 nranks, u32 count, then count entries of u32 rank and
 * that rank's address, the ranks bootstrap_allgather first sends to
 * (bootstrap_allgather_sends_to: at most BS_WELCOME_MAX). The all-gather of
 * every rank's address that follows brings the others, so the root sends
 * O(k log k) bytes in all where a full table to each rank was O(k^2). */
#define BS_WELCOME_MAX 32
#define BS_WELCOME_ENTRY (4 + BS_ADDR_BYTES)
#define BS_WELCOME_BYTES(count) (8 + (size_t)(count)*BS_WELCOME_ENTRY)
/* Writes the welcome of nranks ranks naming ranks[0..count) (into
 * BS_WELCOME_BYTES(count) bytes), their addresses from the hellos (indexed
 * by rank). */
void bs_welcome_encode(uint8_t *out, int nranks, int count, const int *ranks, const bs_hello_t *hellos);
/* Checks a welcome's sizes for nranks ranks: its entry count, or -1 + why. */
int bs_welcome_check(const uint8_t *in, size_t len, int nranks, char *why, size_t whylen);
/* Entry i of a checked welcome: the rank (0 and *a, or -1 + why for a rank
 * out of range or a bad address). */
int bs_welcome_entry(const uint8_t *in, int i, int nranks, int *rank, sock_addr_t *a, char *why, size_t whylen);
int bs_hello_decode(const uint8_t *in, size_t len, bs_hello_t *h, char *why, size_t whylen);

/* ---- Unique id ---- */
void bs_id_encode(const bs_id_t *id, xcclUniqueId *out);
/* Checks magic, version and checksum. */
int bs_id_decode(const xcclUniqueId *in, bs_id_t *id, char *why, size_t whylen);

/* ---- Shrink (bootstrap_shrink, for xcclCommShrink) ----
 * Point-to-point payloads between the survivors of a communicator: a JOIN
 * (a survivor's exclude list, to the lowest survivor, who leads), and the
 * leader's answer, GO (where the new bootstrap root listens, the new job and
 * a salt) or FAIL (a result code and a sentence). Layout: u32 kind, u32 0,
 * u64 nonce, i32 nranks, i32 count (JOIN: entries; FAIL: the code; GO: 0),
 * then JOIN: count u32 ranks, ascending; GO: address, u64 job, salt;
 * FAIL: the text, without its NUL. */
typedef enum { BS_SHRINK_JOIN = 1, BS_SHRINK_GO = 2, BS_SHRINK_FAIL = 3 } bs_shrink_kind_t;

#define BS_SHRINK_HDR_BYTES 24
#define BS_SHRINK_TEXT_MAX 900

typedef struct {
  uint32_t kind;
  uint64_t nonce;  /* drawn by the joiner for this call; an answer carries the one of the JOIN it answers */
  int32_t nranks;  /* JOIN: size of the communicator being shrunk; GO: size of the new one */
  int32_t code;    /* FAIL: the xcclResult_t the joiner returns */
  sock_addr_t root;                  /* GO */
  uint64_t job;                      /* GO */
  uint8_t salt[BS_SECRET_BYTES];     /* GO: the new secret is bs_derive_child_secret(old secret, salt) */
  char text[BS_SHRINK_TEXT_MAX + 1]; /* FAIL, NUL-terminated */
} bs_shrink_msg_t;

/* A malloc'ed message (*len_p bytes), NULL when out of memory. exclude
 * (ascending, nexclude entries) is read for a JOIN only. */
uint8_t *bs_shrink_encode(const bs_shrink_msg_t *m, const int *exclude, int nexclude, size_t *len_p);
/* Checks and reads a message. A JOIN's list goes to exclude (room for cap
 * entries), its length to *nexclude_p; it must be ascending, in 0..nranks-1
 * and shorter than nranks. 0, or -1 with a reason in why. */
int bs_shrink_decode(const uint8_t *in, size_t len, bs_shrink_msg_t *m, int *exclude, int cap, int *nexclude_p,
                     char *why, size_t whylen);
/* child = HMAC-SHA256(parent, label || salt): the secret of a bootstrap made
 * from an authenticated one, without the secret ever being sent. */
void bs_derive_child_secret(const uint8_t parent[BS_SECRET_BYTES], const uint8_t salt[BS_SECRET_BYTES],
                            uint8_t child[BS_SECRET_BYTES]);

/* The ranks a leader waited for in vain, for its error: writes "rank 3",
 * "ranks 3, 5, 9" or "ranks 3, 5, ..." (when fewer than `keep` bytes of len
 * would be left) into buf, naming each r < n with missing(ctx, r); returns
 * the length written. The bootstrap root, xcclCommSplit's and
 * xcclCommShrink's leaders name who never came so. */
size_t bs_name_missing(char *buf, size_t len, size_t keep, int n, int (*missing)(const void *ctx, int r),
                       const void *ctx);

/* Random bytes from OpenSSL's generator; -1 on failure. */
int bs_random(void *buf, size_t len);
/* key = SHA-256(label || text): the secret for jobs started without an id. */
void bs_derive_secret(const char *text, uint8_t key[BS_SECRET_BYTES]);
/* HKDF-SHA256 (RFC 5869) with no salt: out_len bytes of key material for the
 * purpose `info` names, from ikm. 0, or -1 when OpenSSL fails (out is then
 * zeroed). Keys for other uses are drawn from the secret this way, so none
 * of them reveals the secret or another. */
int bs_hkdf(const uint8_t *ikm, size_t ikm_len, const char *info, uint8_t *out, size_t out_len);
/* bootstrap_derive_key from a unique id's secret (the root has no
 * bootstrap_t): HKDF of the program's pre-shared key (xcclSetEncryption),
 * if any, followed by the secret. -1 when OpenSSL fails. */
int bs_derive_key(const uint8_t secret[BS_SECRET_BYTES], const char *label, uint8_t key[32]);

#endif
