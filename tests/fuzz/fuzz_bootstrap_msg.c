/*
 * fuzz_bootstrap_msg.c — libFuzzer target for what a bootstrap port reads
 * from the network: headers, whole frames and their HMAC, the streaming frame
 * reader (conn_read over a socketpair, fed in fuzzer-chosen chunks), hello
 * and address payloads, and the unique id's binary form.
 *
 * Input: byte 0 picks a mode, the rest is that mode's data. Every mode checks
 * an oracle, not only "no crash": a parser either accepts (and then the value
 * survives an encode/decode round trip, or the frame is byte for byte the one
 * bs_frame_build makes) or refuses with a reason. The key and nonce are fixed
 * so that seeds made by gen_corpus.c carry authentic frames.
 */
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap_conn.h"
#include "bootstrap_msg.h"
#include "error.h"
#include "fuzz_keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { M_HDR, M_VERIFY, M_SIGNED, M_HELLO, M_ADDR, M_ID, M_STREAM, M_SHRINK, M_COUNT };

#define MAX_IN 8192 /* frames larger than this add nothing but time */

static uint32_t le32(const uint8_t *p) { return (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }

/* A refusal must say why. */
static void must_explain(const char *why) {
  if (!why[0]) abort();
}

/* The header rules, restated independently of bootstrap_msg.c. */
static int hdr_expected_ok(const uint8_t *h) {
  uint16_t version = (uint16_t)(h[4] | h[5] << 8), type = (uint16_t)(h[6] | h[7] << 8);
  return le32(h) == BS_MAGIC && version == BS_VERSION && type >= 1 && type <= BS_TYPE_MAX && le32(h + 12) == 0 &&
         le32(h + 8) <= BS_MAX_PAYLOAD;
}

static void fuzz_hdr(const uint8_t *d, size_t n) {
  if (n < BS_HDR_BYTES) return;
  bs_hdr_t h = {0, 0};
  char why[256] = "";
  int rc = bs_hdr_parse(d, &h, why, sizeof(why));
  if ((rc == 0) != hdr_expected_ok(d)) abort();
  if (rc != 0) return must_explain(why);
  if (h.type < 1 || h.type > BS_TYPE_MAX || h.len != le32(d + 8)) abort();
}

/* verify accepts exactly the frames bs_frame_build makes with this key and nonce. */
static void fuzz_verify(const uint8_t *d, size_t n, const uint8_t *nonce) {
  char why[256] = "";
  if (bs_frame_verify(d, n, fuzz_key(), nonce, why, sizeof(why)) != 0) return must_explain(why);
  uint32_t len = le32(d + 8);
  if ((size_t)len + BS_HDR_BYTES + BS_MAC_BYTES != n) abort();
  uint8_t *again = malloc(n);
  bs_frame_build(again, (bs_type_t)(d[6] | d[7] << 8), d + BS_HDR_BYTES, len, fuzz_key(), nonce);
  if (memcmp(again, d, n) != 0) abort();
  free(again);
}

/* What a receiver does with an authentic frame's payload (the checks of
 * rank_join_root, root_admit and incoming_take, on the decoders they use). */
static void decode_payload(uint16_t type, const uint8_t *pl, uint32_t len) {
  char why[256] = "";
  if (type == BS_HELLO || type == BS_RING_HELLO) {
    bs_hello_t h;
    if (bs_hello_decode(pl, len, &h, why, sizeof(why)) != 0) must_explain(why);
  } else if (type == BS_WELCOME && len >= 4) {
    uint32_t claimed = le32(pl); /* the receiver expects its own count: take the frame's, so the rest is reached */
    int nranks = claimed >= 1 && claimed <= BS_MAX_RANKS ? (int)claimed : 1;
    int count = bs_welcome_check(pl, len, nranks, why, sizeof(why));
    if (count < 0) must_explain(why);
    for (int i = 0; i < count; i++) {
      int r;
      sock_addr_t a;
      why[0] = '\0';
      if (bs_welcome_entry(pl, i, nranks, &r, &a, why, sizeof(why)) != 0) must_explain(why);
    }
  }
}

/* Feeds bytes to conn_read through a socketpair, `chunk` bytes at a time, then
 * closes the writer. Returns 1 when a frame was accepted (its bytes are then
 * the first frame_len bytes of d), 0 when it was refused. */
static int stream_through_conn(const uint8_t *d, size_t n, size_t chunk, const uint8_t *nonce) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) abort();
  bs_conn_t c;
  memset(&c, 0, sizeof(c));
  c.fd = sv[0];
  char why[512] = "";
  int ready = 0, rc = 0;
  size_t off = 0;
  if (chunk == 0) chunk = 1;
  while (off < n && rc == 0 && !ready) {
    size_t k = n - off < chunk ? n - off : chunk;
    ssize_t w = write(sv[1], d + off, k);
    if (w <= 0) abort(); /* MAX_IN is far below a socketpair's buffer */
    off += (size_t)w;
    rc = conn_read(&c, fuzz_key(), nonce, &ready, why, sizeof(why));
  }
  close(sv[1]);
  for (int i = 0; i < 4 && rc == 0 && !ready; i++) rc = conn_read(&c, fuzz_key(), nonce, &ready, why, sizeof(why));
  if (rc == 0 && !ready) abort(); /* the writer is gone: accept or refuse, never "more later" */
  if (rc != 0) must_explain(why);
  int accepted = rc == 0 && ready;
  if (accepted) {
    if (c.frame_len > n || memcmp(c.frame, d, c.frame_len) != 0 || c.h.len != c.frame_len - BS_HDR_BYTES - BS_MAC_BYTES)
      abort();
    fuzz_verify(c.frame, c.frame_len, nonce);
    decode_payload(c.h.type, c.frame + BS_HDR_BYTES, c.h.len);
  }
  conn_close(&c);
  return accepted;
}

/* Signs a payload with the fixed key, maybe flips one bit, and checks that
 * verify and the streaming reader agree: authentic iff untouched and typed. */
static void fuzz_signed(const uint8_t *d, size_t n) {
  if (n < 6) return;
  uint16_t type = d[0] % (BS_TYPE_MAX + 2); /* 0 and TYPE_MAX+1 must be refused */
  uint16_t flip_at = (uint16_t)(d[1] | d[2] << 8);
  const uint8_t *nonce = (d[3] & 1) ? NULL : fuzz_nonce();
  size_t chunk = (size_t)d[4] + 1;
  const uint8_t *pl = d + 5;
  uint32_t len = (uint32_t)(n - 5);
  size_t flen = BS_HDR_BYTES + len + BS_MAC_BYTES;
  uint8_t *frame = malloc(flen);
  bs_frame_build(frame, (bs_type_t)type, pl, len, fuzz_key(), nonce);
  int flipped = flip_at != 0xffff;
  if (flipped) frame[flip_at % flen] ^= (uint8_t)(1u << (d[3] >> 5));
  int want = !flipped && type >= 1 && type <= BS_TYPE_MAX;
  char why[256] = "";
  int ok = bs_frame_verify(frame, flen, fuzz_key(), nonce, why, sizeof(why)) == 0;
  if (ok != want) abort();
  if (stream_through_conn(frame, flen, chunk, nonce) != want) abort();
  free(frame);
}

static void fuzz_hello(const uint8_t *d, size_t n) {
  bs_hello_t h, h2;
  char why[256] = "";
  if (bs_hello_decode(d, n, &h, why, sizeof(why)) != 0) return must_explain(why);
  uint8_t enc[BS_HELLO_BYTES];
  bs_hello_encode(&h, enc);
  if (bs_hello_decode(enc, sizeof(enc), &h2, why, sizeof(why)) != 0) abort();
  if (h2.job != h.job || h2.rank != h.rank || h2.nranks != h.nranks || h2.pid != h.pid ||
      memcmp(&h2.addr, &h.addr, sizeof(h.addr)) != 0)
    abort();
  /* The host name was made printable; the encoded form keeps it up to its NUL. */
  if (strcmp(h.host, h2.host) != 0) abort();
  for (const char *c = h.host; *c; c++)
    if (*c < 0x20 || *c > 0x7e) abort();
}

static void fuzz_addr(const uint8_t *d, size_t n) {
  uint8_t in[BS_ADDR_BYTES] = {0}, enc[BS_ADDR_BYTES];
  memcpy(in, d, n < sizeof(in) ? n : sizeof(in));
  sock_addr_t a, a2;
  char why[256] = "";
  if (bs_addr_decode(in, &a, why, sizeof(why)) != 0) return must_explain(why);
  bs_addr_encode(&a, enc);
  if (bs_addr_decode(enc, &a2, why, sizeof(why)) != 0 || memcmp(&a, &a2, sizeof(a)) != 0) abort();
}

/* d[0] & 1: write a correct checksum (SHA-256 of bytes 0..119, first 8
 * bytes, at 120) so that the checks behind it are reached too. */
static void fuzz_id(const uint8_t *d, size_t n) {
  if (n < 1) return;
  xcclUniqueId uid;
  memset(&uid, 0, sizeof(uid));
  memcpy(uid.internal, d + 1, n - 1 < sizeof(uid.internal) ? n - 1 : sizeof(uid.internal));
  if (d[0] & 1) {
    uint8_t digest[SHA256_DIGEST_LENGTH];
    SHA256((const uint8_t *)uid.internal, 120, digest);
    memcpy(uid.internal + 120, digest, 8);
  }
  bs_id_t id, id2;
  char why[256] = "";
  if (bs_id_decode(&uid, &id, why, sizeof(why)) != 0) return must_explain(why);
  xcclUniqueId again;
  bs_id_encode(&id, &again);
  if (bs_id_decode(&again, &id2, why, sizeof(why)) != 0 || memcmp(&id, &id2, sizeof(id)) != 0) abort();
}

/* xcclCommShrink's messages: what decodes re-encodes to the same message. */
static void fuzz_shrink(const uint8_t *d, size_t n) {
  int ex[64], ex2[64], nex = 0, nex2 = 0;
  bs_shrink_msg_t m, m2;
  char why[256] = "";
  if (bs_shrink_decode(d, n, &m, ex, 64, &nex, why, sizeof(why)) != 0) return must_explain(why);
  if (m.kind == BS_SHRINK_JOIN && (nex < 0 || nex > 64 || nex >= m.nranks)) abort();
  for (int i = 1; m.kind == BS_SHRINK_JOIN && i < nex; i++)
    if (ex[i] <= ex[i - 1] || ex[i] >= m.nranks) abort(); /* ascending, in range */
  size_t len = 0;
  uint8_t *enc = bs_shrink_encode(&m, ex, nex, &len);
  if (!enc) return;
  if (bs_shrink_decode(enc, len, &m2, ex2, 64, &nex2, why, sizeof(why)) != 0) abort();
  free(enc);
  if (m2.kind != m.kind || m2.nonce != m.nonce || m2.nranks != m.nranks) abort();
  if (m.kind == BS_SHRINK_JOIN && (nex2 != nex || memcmp(ex, ex2, sizeof(int) * (size_t)nex) != 0)) abort();
  if (m.kind == BS_SHRINK_GO && (m2.job != m.job || memcmp(m2.salt, m.salt, sizeof(m.salt)) != 0)) abort();
  if (m.kind == BS_SHRINK_FAIL && (m2.code != m.code || strcmp(m2.text, m.text) != 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > MAX_IN) return 0;
  const uint8_t *d = data + 1;
  size_t n = size - 1;
  err_quiet(1);
  switch (data[0] % M_COUNT) {
    case M_HDR: fuzz_hdr(d, n); break;
    case M_VERIFY:
      fuzz_verify(d, n, fuzz_nonce());
      fuzz_verify(d, n, NULL);
      break;
    case M_SIGNED: fuzz_signed(d, n); break;
    case M_HELLO: fuzz_hello(d, n); break;
    case M_ADDR: fuzz_addr(d, n); break;
    case M_ID: fuzz_id(d, n); break;
    case M_SHRINK: fuzz_shrink(d, n); break;
    case M_STREAM:
      if (n >= 1) stream_through_conn(d + 1, n - 1, (size_t)d[0] + 1, (d[0] & 0x80) ? NULL : fuzz_nonce());
      break;
  }
  err_quiet(0);
  return 0;
}
