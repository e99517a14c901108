/*
 * test_bootstrap_msg.c — the bootstrap's wire format (src/bootstrap/bootstrap_msg.h):
 * frames and their MAC, header checks, the hello and welcome payloads, the unique id, and
 * the secret and random helpers. All pure functions: no sockets.
 *
 * Expected bytes come from the format documented in bootstrap_msg.h, written
 * here independently: little-endian fields at fixed offsets, and the MAC
 * recomputed with OpenSSL's one-shot HMAC() over nonce || header || payload.
 * Negative cases change one thing at a time from a frame, hello or id that is
 * first shown to be accepted, so a rejection can only come from that change.
 */
#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_msg.h"
#include "test_util.h"

static void wr16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v & 0xff);
  p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int has(const char *why, const char *word) { return strstr(why, word) != NULL; }

/* ---- Frames ---------------------------------------------------------------- */

/* HMAC-SHA256(key, nonce || data), the MAC the header comment describes. */
static void ref_mac(const uint8_t *data, size_t len, const uint8_t *key, const uint8_t *nonce, uint8_t out[32]) {
  uint8_t *buf = malloc(BS_NONCE_BYTES + len);
  static const uint8_t zero[BS_NONCE_BYTES];
  memcpy(buf, nonce ? nonce : zero, BS_NONCE_BYTES);
  memcpy(buf + BS_NONCE_BYTES, data, len);
  unsigned int ol = 0;
  HMAC(EVP_sha256(), key, BS_SECRET_BYTES, buf, BS_NONCE_BYTES + len, out, &ol);
  free(buf);
}

/* Verifies and expects rejection with a reason that contains word. */
static void expect_frame_bad(const uint8_t *frame, size_t len, const uint8_t *key, const uint8_t *nonce,
                             const char *what, const char *word) {
  char why[256] = "";
  int rc = bs_frame_verify(frame, len, key, nonce, why, sizeof(why));
  CHECK(rc == -1, "%s: frame accepted", what);
  CHECK(has(why, word), "%s: reason '%s' lacks '%s'", what, why, word);
}

static void test_frames(void) {
  uint8_t key[BS_SECRET_BYTES], nonce[BS_NONCE_BYTES], payload[100];
  CHECK(bs_random(key, sizeof(key)) == 0 && bs_random(nonce, sizeof(nonce)) == 0, "bs_random failed");
  for (size_t k = 0; k < sizeof(payload); k++) payload[k] = (uint8_t)(k * 7 + 3);
  const uint32_t len = sizeof(payload);
  const size_t flen = BS_HDR_BYTES + len + BS_MAC_BYTES;
  uint8_t frame[BS_HDR_BYTES + sizeof(payload) + BS_MAC_BYTES + 1];
  memset(frame, 0xEE, sizeof(frame));
  bs_frame_build(frame, BS_DATA, payload, len, key, nonce);

  /* The layout: "XCBS", version 2, type, length, zero, payload, MAC. */
  CHECK(memcmp(frame, "XCBS", 4) == 0, "magic bytes %02x %02x %02x %02x", frame[0], frame[1], frame[2], frame[3]);
  CHECK(rd16(frame + 4) == 2 && rd16(frame + 6) == BS_DATA, "version %u type %u", rd16(frame + 4),
        rd16(frame + 6));
  CHECK(rd32(frame + 8) == len && rd32(frame + 12) == 0, "length %u reserved %u", rd32(frame + 8), rd32(frame + 12));
  CHECK(memcmp(frame + BS_HDR_BYTES, payload, len) == 0, "payload not copied");
  CHECK(frame[flen] == 0xEE, "bs_frame_build wrote past the frame");
  uint8_t mac[32];
  ref_mac(frame, BS_HDR_BYTES + len, key, nonce, mac);
  CHECK(memcmp(mac, frame + BS_HDR_BYTES + len, 32) == 0, "MAC is not HMAC-SHA256(key, nonce||header||payload)");

  char why[256] = "";
  CHECK(bs_frame_verify(frame, flen, key, nonce, why, sizeof(why)) == 0, "round trip rejected: %s", why);
  bs_hdr_t h = {0, 0};
  CHECK(bs_hdr_parse(frame, &h, why, sizeof(why)) == 0 && h.type == BS_DATA && h.len == len,
        "header parse: type %u len %u (%s)", h.type, h.len, why);

  /* Same key, different nonce, different key: each must fail the MAC. */
  uint8_t key2[BS_SECRET_BYTES], nonce2[BS_NONCE_BYTES];
  memcpy(key2, key, sizeof(key2));
  key2[31] ^= 0x01;
  memcpy(nonce2, nonce, sizeof(nonce2));
  nonce2[0] ^= 0x80;
  expect_frame_bad(frame, flen, key2, nonce, "wrong key", "authentication");
  expect_frame_bad(frame, flen, key, nonce2, "wrong nonce", "authentication");
  expect_frame_bad(frame, flen, key, NULL, "zero nonce instead of the real one", "authentication");

  /* Every single-bit flip anywhere in the frame is caught: the header by its
   * checks or the MAC, the payload and the MAC itself by the MAC. */
  int caught = 0, total = 0;
  for (size_t pos = 0; pos < flen; pos++) {
    for (int bit = 0; bit < 8; bit++) {
      uint8_t copy[sizeof(frame)];
      memcpy(copy, frame, flen);
      copy[pos] ^= (uint8_t)(1u << bit);
      total++;
      caught += bs_frame_verify(copy, flen, key, nonce, why, sizeof(why)) != 0;
    }
  }
  CHECK(caught == total, "%d of %d single-bit flips went unnoticed", total - caught, total);
  {
    uint8_t copy[sizeof(frame)];
    memcpy(copy, frame, flen);
    copy[BS_HDR_BYTES + 50] ^= 0x10;
    expect_frame_bad(copy, flen, key, nonce, "flipped payload bit", "authentication");
    memcpy(copy, frame, flen);
    copy[flen - 1] ^= 0x01;
    expect_frame_bad(copy, flen, key, nonce, "flipped MAC bit", "authentication");
  }

  /* Lengths: truncated, one byte extra, shorter than a header plus MAC, and a
   * header whose length field disagrees with the bytes received. */
  expect_frame_bad(frame, flen - 1, key, nonce, "truncated by one byte", "does not match");
  expect_frame_bad(frame, flen + 1, key, nonce, "one byte extra", "does not match");
  expect_frame_bad(frame, BS_HDR_BYTES + BS_MAC_BYTES - 1, key, nonce, "shorter than header+MAC", "too short");
  expect_frame_bad(frame, 0, key, nonce, "empty", "too short");
  {
    uint8_t copy[sizeof(frame)];
    memcpy(copy, frame, flen);
    wr32(copy + 8, len - 1);
    expect_frame_bad(copy, flen, key, nonce, "length field one short", "does not match");
    wr32(copy + 8, len + 1);
    expect_frame_bad(copy, flen, key, nonce, "length field one long", "does not match");
  }

  /* An empty payload (payload pointer NULL) and a NULL nonce, which means the
   * all-zero nonce of a CHALLENGE frame. */
  uint8_t empty[BS_HDR_BYTES + BS_MAC_BYTES];
  static const uint8_t zero_nonce[BS_NONCE_BYTES];
  bs_frame_build(empty, BS_CHALLENGE, NULL, 0, key, NULL);
  CHECK(rd32(empty + 8) == 0 && rd16(empty + 6) == BS_CHALLENGE, "empty frame header");
  CHECK(bs_frame_verify(empty, sizeof(empty), key, NULL, why, sizeof(why)) == 0, "empty frame: %s", why);
  CHECK(bs_frame_verify(empty, sizeof(empty), key, zero_nonce, why, sizeof(why)) == 0,
        "NULL nonce is not the zero nonce: %s", why);
  expect_frame_bad(empty, sizeof(empty), key, nonce, "zero-nonce frame checked with a real nonce", "authentication");
  ref_mac(empty, BS_HDR_BYTES, key, zero_nonce, mac);
  CHECK(memcmp(mac, empty + BS_HDR_BYTES, 32) == 0, "empty frame MAC differs from the reference");
}

/* ---- Headers --------------------------------------------------------------- */

static void make_hdr(uint8_t h[BS_HDR_BYTES], uint32_t magic, uint16_t version, uint16_t type, uint32_t len,
                     uint32_t zero) {
  wr32(h, magic);
  wr16(h + 4, version);
  wr16(h + 6, type);
  wr32(h + 8, len);
  wr32(h + 12, zero);
}

static void expect_hdr_bad(const uint8_t h[BS_HDR_BYTES], const char *what, const char *word) {
  bs_hdr_t out = {0xBEEF, 0xDEADBEEF};
  char why[256] = "";
  CHECK(bs_hdr_parse(h, &out, why, sizeof(why)) == -1, "%s: header accepted", what);
  CHECK(out.type == 0xBEEF && out.len == 0xDEADBEEF, "%s: output written on failure", what);
  CHECK(why[0] && (!word || has(why, word)), "%s: reason '%s' lacks '%s'", what, why, word ? word : "");
}

static void test_headers(void) {
  uint8_t h[BS_HDR_BYTES];
  bs_hdr_t out;
  char why[256];
  for (uint16_t t = 1; t <= BS_TYPE_MAX; t++) {
    make_hdr(h, BS_MAGIC, BS_VERSION, t, 1234, 0);
    memset(&out, 0, sizeof(out));
    CHECK(bs_hdr_parse(h, &out, why, sizeof(why)) == 0 && out.type == t && out.len == 1234,
          "type %u rejected or misread (%u, %u)", t, out.type, out.len);
  }
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_DATA, BS_MAX_PAYLOAD, 0);
  CHECK(bs_hdr_parse(h, &out, why, sizeof(why)) == 0 && out.len == BS_MAX_PAYLOAD, "the maximum length rejected");

  make_hdr(h, 0x53424359u, BS_VERSION, BS_DATA, 0, 0);
  expect_hdr_bad(h, "wrong magic", "magic");
  make_hdr(h, 0, BS_VERSION, BS_DATA, 0, 0);
  expect_hdr_bad(h, "zero magic", "magic");
  make_hdr(h, BS_MAGIC, BS_VERSION + 1, BS_DATA, 0, 0);
  expect_hdr_bad(h, "version 3", "version 3, this library speaks 2");
  make_hdr(h, BS_MAGIC, 1, BS_DATA, 0, 0); /* a library from before welcomes were short */
  expect_hdr_bad(h, "version 1", "version 1, this library speaks 2");
  make_hdr(h, BS_MAGIC, 0, BS_DATA, 0, 0);
  expect_hdr_bad(h, "version 0", "version 0");
  make_hdr(h, BS_MAGIC, BS_VERSION, 0, 0, 0);
  expect_hdr_bad(h, "type 0", "type 0");
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_TYPE_MAX + 1, 0, 0);
  expect_hdr_bad(h, "type MAX+1", "type");
  make_hdr(h, BS_MAGIC, BS_VERSION, 0xFFFF, 0, 0);
  expect_hdr_bad(h, "type 0xffff", "type");
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_DATA, 0, 1);
  expect_hdr_bad(h, "reserved field 1", NULL);
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_DATA, 0, 0x80000000u);
  expect_hdr_bad(h, "reserved field high bit", NULL);
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_DATA, BS_MAX_PAYLOAD + 1, 0);
  expect_hdr_bad(h, "length max+1", "more than");
  make_hdr(h, BS_MAGIC, BS_VERSION, BS_DATA, 0xFFFFFFFFu, 0);
  expect_hdr_bad(h, "length 2^32-1", "more than");
}

/* ---- Hello ----------------------------------------------------------------- */

enum { H_JOB = 0, H_RANK = 8, H_NRANKS = 12, H_ADDR = 16, H_HOST = 16 + BS_ADDR_BYTES,
       H_PID = 16 + BS_ADDR_BYTES + BS_HOST_BYTES };

static bs_hello_t hello_v4(void) {
  bs_hello_t h;
  memset(&h, 0, sizeof(h));
  h.job = 0x0123456789abcdefull;
  h.rank = 3;
  h.nranks = 8;
  h.addr.sin.sin_family = AF_INET;
  h.addr.sin.sin_port = htons(29500);
  inet_pton(AF_INET, "10.1.2.3", &h.addr.sin.sin_addr);
  snprintf(h.host, sizeof(h.host), "node-17.example");
  h.pid = 4242;
  return h;
}

static void expect_hello_bad(const uint8_t *in, size_t len, const char *what, const char *word) {
  bs_hello_t out;
  memset(&out, 0xAB, sizeof(out));
  bs_hello_t before = out;
  char why[256] = "";
  CHECK(bs_hello_decode(in, len, &out, why, sizeof(why)) == -1, "%s: hello accepted", what);
  CHECK(memcmp(&out, &before, sizeof(out)) == 0, "%s: output written on failure", what);
  CHECK(has(why, word), "%s: reason '%s' lacks '%s'", what, why, word);
}

static void test_hello(void) {
  CHECK(BS_HELLO_BYTES == 112, "hello is %d bytes", BS_HELLO_BYTES);
  char why[256] = "";
  uint8_t enc[BS_HELLO_BYTES + 1];
  bs_hello_t in = hello_v4(), out;

  /* IPv4: the wire bytes, then the round trip. */
  memset(enc, 0xCC, sizeof(enc));
  bs_hello_encode(&in, enc);
  CHECK(enc[BS_HELLO_BYTES] == 0xCC, "encode wrote past the hello");
  CHECK(rd64(enc + H_JOB) == in.job && rd32(enc + H_RANK) == 3 && rd32(enc + H_NRANKS) == 8, "hello ints");
  CHECK(rd16(enc + H_ADDR) == 4 && rd16(enc + H_ADDR + 2) == 29500, "addr family %u port %u", rd16(enc + H_ADDR),
        rd16(enc + H_ADDR + 2));
  CHECK(memcmp(enc + H_ADDR + 8, "\x0a\x01\x02\x03", 4) == 0, "IPv4 bytes");
  CHECK(strcmp((const char *)enc + H_HOST, "node-17.example") == 0 && rd32(enc + H_PID) == 4242, "host/pid");
  memset(&out, 0, sizeof(out));
  CHECK(bs_hello_decode(enc, BS_HELLO_BYTES, &out, why, sizeof(why)) == 0, "IPv4 hello rejected: %s", why);
  CHECK(out.job == in.job && out.rank == 3 && out.nranks == 8 && out.pid == 4242, "IPv4 hello fields");
  CHECK(out.addr.sa.sa_family == AF_INET && out.addr.sin.sin_port == htons(29500) &&
            out.addr.sin.sin_addr.s_addr == in.addr.sin.sin_addr.s_addr,
        "IPv4 address did not round-trip");
  CHECK(strcmp(out.host, in.host) == 0, "host '%s'", out.host);

  /* IPv6 with a scope id, rank 0 of 1, a 63-character host name. */
  bs_hello_t in6;
  memset(&in6, 0, sizeof(in6));
  in6.job = UINT64_MAX;
  in6.rank = 0;
  in6.nranks = 1;
  in6.addr.sin6.sin6_family = AF_INET6;
  in6.addr.sin6.sin6_port = htons(65535);
  in6.addr.sin6.sin6_scope_id = 7;
  inet_pton(AF_INET6, "2001:db8::1:2", &in6.addr.sin6.sin6_addr);
  memset(in6.host, 'h', BS_HOST_BYTES - 1);
  in6.pid = 0xFFFFFFFFu;
  bs_hello_encode(&in6, enc);
  CHECK(rd16(enc + H_ADDR) == 6 && rd32(enc + H_ADDR + 4) == 7, "IPv6 family/scope on the wire");
  memset(&out, 0, sizeof(out));
  CHECK(bs_hello_decode(enc, BS_HELLO_BYTES, &out, why, sizeof(why)) == 0, "IPv6 hello rejected: %s", why);
  CHECK(out.addr.sa.sa_family == AF_INET6 && out.addr.sin6.sin6_port == htons(65535) &&
            out.addr.sin6.sin6_scope_id == 7 &&
            memcmp(&out.addr.sin6.sin6_addr, &in6.addr.sin6.sin6_addr, 16) == 0,
        "IPv6 address did not round-trip");
  CHECK(out.job == UINT64_MAX && out.rank == 0 && out.nranks == 1 && out.pid == 0xFFFFFFFFu, "IPv6 hello fields");
  CHECK(strlen(out.host) == BS_HOST_BYTES - 1 && strspn(out.host, "h") == BS_HOST_BYTES - 1, "63-char host");

  /* A host array filled to the brim (no terminator) is cut to 63. */
  bs_hello_t full = hello_v4();
  memset(full.host, 'x', sizeof(full.host));
  bs_hello_encode(&full, enc);
  CHECK(enc[H_HOST + BS_HOST_BYTES - 1] == 0, "unterminated host overran its field");
  CHECK(bs_hello_decode(enc, BS_HELLO_BYTES, &out, why, sizeof(why)) == 0 && strlen(out.host) == 63,
        "unterminated host: %zu chars", strlen(out.host));

  /* Non-printable host bytes become '?' (the host goes into log lines). */
  bs_hello_encode(&in, enc);
  const uint8_t raw[] = {'a', 0x01, 'b', 0x1f, 0x7f, 0x80, 0xff, '~', ' ', 'z', 0};
  memcpy(enc + H_HOST, raw, sizeof(raw));
  CHECK(bs_hello_decode(enc, BS_HELLO_BYTES, &out, why, sizeof(why)) == 0, "hello with odd host: %s", why);
  CHECK(strcmp(out.host, "a?b????~ z") == 0, "host sanitised to '%s', want 'a?b????~ z'", out.host);

  /* Every limit, each on an otherwise valid hello. */
  bs_hello_encode(&in, enc);
  expect_hello_bad(enc, BS_HELLO_BYTES - 1, "one byte short", "expected 112");
  expect_hello_bad(enc, BS_HELLO_BYTES + 1, "one byte long", "expected 112");
  expect_hello_bad(enc, 0, "empty", "expected 112");
  uint8_t bad[BS_HELLO_BYTES];
  struct {
    const char *what;
    size_t off;
    uint32_t val;
    int width;
    const char *word;
  } cases[] = {
      {"nranks 0", H_NRANKS, 0, 32, "nranks=0"},
      {"nranks -1", H_NRANKS, 0xFFFFFFFFu, 32, "nranks=-1"},
      {"nranks max+1", H_NRANKS, BS_MAX_RANKS + 1, 32, "nranks="},
      {"rank -1", H_RANK, 0xFFFFFFFFu, 32, "rank -1"},
      {"rank == nranks", H_RANK, 8, 32, "rank 8, outside 0..7"},
      {"family 5", H_ADDR, 5, 16, "family 5"},
      {"family 0", H_ADDR, 0, 16, "family 0"},
      {"port 0", H_ADDR + 2, 0, 16, "port 0"},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    memcpy(bad, enc, sizeof(bad));
    if (cases[k].width == 32)
      wr32(bad + cases[k].off, cases[k].val);
    else
      wr16(bad + cases[k].off, (uint16_t)cases[k].val);
    expect_hello_bad(bad, sizeof(bad), cases[k].what, cases[k].word);
  }
  /* The largest job is fine: rank max-1 of BS_MAX_RANKS. */
  memcpy(bad, enc, sizeof(bad));
  wr32(bad + H_NRANKS, BS_MAX_RANKS);
  wr32(bad + H_RANK, BS_MAX_RANKS - 1);
  CHECK(bs_hello_decode(bad, sizeof(bad), &out, why, sizeof(why)) == 0 && out.nranks == BS_MAX_RANKS &&
            out.rank == BS_MAX_RANKS - 1,
        "largest job rejected: %s", why);
}

/* ---- Unique id ------------------------------------------------------------- */

#define ID_SUM_AT 120

/* Recomputes the id checksum (first 8 bytes of SHA-256 of bytes 0..119), so a
 * test can change a field and still present a well-sealed id. */
static void reseal(xcclUniqueId *u) {
  uint8_t d[32];
  unsigned int dl = 0;
  EVP_Digest(u->internal, ID_SUM_AT, d, &dl, EVP_sha256(), NULL);
  memcpy(u->internal + ID_SUM_AT, d, 8);
}

static void expect_id_bad(const xcclUniqueId *u, const char *what, const char *word, int *count_bad) {
  bs_id_t out;
  memset(&out, 0x5C, sizeof(out));
  bs_id_t before = out;
  char why[256] = "";
  int rc = bs_id_decode(u, &out, why, sizeof(why));
  int ok = rc == -1 && memcmp(&out, &before, sizeof(out)) == 0 && (!word || has(why, word));
  if (count_bad) {
    /* In a loop: count, and only report the first few failures. */
    if (!ok && (*count_bad)++ < 5)
      fprintf(stderr, "%s: rc %d, reason '%s' (want '%s')\n", what, rc, why, word ? word : "any");
    return;
  }
  CHECK(rc == -1, "%s: id accepted", what);
  CHECK(memcmp(&out, &before, sizeof(out)) == 0, "%s: output written on failure", what);
  CHECK(!word || has(why, word), "%s: reason '%s' lacks '%s'", what, why, word);
}

static void test_unique_id(void) {
  bs_id_t id, out;
  char why[256] = "";
  memset(&id, 0, sizeof(id));
  id.root.sin.sin_family = AF_INET;
  id.root.sin.sin_port = htons(5555);
  inet_pton(AF_INET, "127.0.0.1", &id.root.sin.sin_addr);
  CHECK(bs_random(id.secret, sizeof(id.secret)) == 0 && bs_random(&id.job, sizeof(id.job)) == 0, "bs_random");
  xcclUniqueId u;
  memset(&u, 0x77, sizeof(u));
  bs_id_encode(&id, &u);
  CHECK(memcmp(u.internal, "XCID", 4) == 0, "id magic");
  xcclUniqueId sealed = u;
  reseal(&sealed);
  CHECK(memcmp(&sealed, &u, sizeof(u)) == 0, "id checksum is not SHA-256(bytes 0..119)[0..7]");

  memset(&out, 0, sizeof(out));
  CHECK(bs_id_decode(&u, &out, why, sizeof(why)) == 0, "IPv4 id rejected: %s", why);
  CHECK(out.root.sa.sa_family == AF_INET && out.root.sin.sin_port == htons(5555) &&
            out.root.sin.sin_addr.s_addr == id.root.sin.sin_addr.s_addr,
        "id root did not round-trip");
  CHECK(memcmp(out.secret, id.secret, BS_SECRET_BYTES) == 0 && out.job == id.job, "id secret/job");

  /* IPv6 root. */
  bs_id_t id6 = id;
  memset(&id6.root, 0, sizeof(id6.root));
  id6.root.sin6.sin6_family = AF_INET6;
  id6.root.sin6.sin6_port = htons(1);
  inet_pton(AF_INET6, "::1", &id6.root.sin6.sin6_addr);
  xcclUniqueId u6;
  bs_id_encode(&id6, &u6);
  memset(&out, 0, sizeof(out));
  CHECK(bs_id_decode(&u6, &out, why, sizeof(why)) == 0, "IPv6 id rejected: %s", why);
  CHECK(out.root.sa.sa_family == AF_INET6 && out.root.sin6.sin6_port == htons(1) &&
            memcmp(&out.root.sin6.sin6_addr, &in6addr_loopback, 16) == 0 && out.job == id.job,
        "IPv6 id did not round-trip");

  /* Any single changed byte in what the checksum covers, or in the checksum,
   * is refused: magic first, then version, then the checksum. */
  int bad_flips = 0, positions = 0;
  for (int pos = 0; pos < ID_SUM_AT + 8; pos++) {
    for (int pattern = 0; pattern < 2; pattern++) {
      xcclUniqueId c = u;
      c.internal[pos] = (char)(c.internal[pos] ^ (pattern ? 0xFF : 0x01));
      const char *word = pos < 4 ? "magic" : pos < 6 ? "version" : "checksum";
      char what[64];
      snprintf(what, sizeof(what), "byte %d ^ 0x%02x", pos, pattern ? 0xFF : 0x01);
      expect_id_bad(&c, what, word, &bad_flips);
      positions++;
    }
  }
  CHECK(bad_flips == 0, "%d of %d single-byte changes not refused as expected", bad_flips, positions);
  test_checks += positions - 1; /* each changed byte counts as one check */

  /* Each field check on its own, with a valid checksum. */
  xcclUniqueId c = u;
  c.internal[4] = 2;
  reseal(&c);
  expect_id_bad(&c, "version 2, resealed", "version 2", NULL);
  c = u;
  c.internal[0] = 'Y';
  reseal(&c);
  expect_id_bad(&c, "magic YCID, resealed", "magic", NULL);
  c = u;
  c.internal[8 + 2] = 0;
  c.internal[8 + 3] = 0;
  reseal(&c);
  expect_id_bad(&c, "port 0, resealed", "port 0", NULL);
  c = u;
  c.internal[8] = 5;
  reseal(&c);
  expect_id_bad(&c, "family 5, resealed", "family 5", NULL);
  xcclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  expect_id_bad(&zero, "all-zero id", "magic", NULL);
}

/* ---- Secret and random ----------------------------------------------------- */

static void test_secret_random(void) {
  uint8_t a[BS_SECRET_BYTES], b[BS_SECRET_BYTES], c[BS_SECRET_BYTES], e[BS_SECRET_BYTES];
  static const uint8_t zero[BS_SECRET_BYTES];
  bs_derive_secret("job-secret|10.0.0.1:29500", a);
  bs_derive_secret("job-secret|10.0.0.1:29500", b);
  bs_derive_secret("job-secret|10.0.0.1:29501", c);
  bs_derive_secret("", e);
  CHECK(memcmp(a, b, sizeof(a)) == 0, "bs_derive_secret is not deterministic");
  CHECK(memcmp(a, c, sizeof(a)) != 0, "texts differing in one character give the same secret");
  CHECK(memcmp(e, a, sizeof(a)) != 0 && memcmp(e, zero, sizeof(e)) != 0, "empty text secret");
  /* A label is mixed in: the key is not the bare SHA-256 of the text. */
  uint8_t plain[32];
  unsigned int dl = 0;
  EVP_Digest("", 0, plain, &dl, EVP_sha256(), NULL);
  CHECK(memcmp(plain, e, sizeof(e)) != 0, "secret of \"\" is the bare SHA-256 of \"\"");

  uint8_t r1[64], r2[64];
  uint8_t big[4096 + 16];
  memset(r1, 0, sizeof(r1));
  memset(r2, 0, sizeof(r2));
  CHECK(bs_random(r1, sizeof(r1)) == 0 && bs_random(r2, sizeof(r2)) == 0, "bs_random failed");
  CHECK(memcmp(r1, r2, sizeof(r1)) != 0, "two random draws are equal");
  CHECK(memcmp(r1, zero, sizeof(zero)) != 0 && memcmp(r1 + 32, zero, sizeof(zero)) != 0, "random left zeros");
  /* Exactly len bytes are written, and they look random: about 16 of 4096
   * bytes should be zero (P(>100) is astronomically small). */
  memset(big, 0, sizeof(big));
  memset(big + 4096, 0xA5, 16);
  CHECK(bs_random(big, 4096) == 0, "bs_random(4096) failed");
  int zeros = 0, guard = 1;
  for (int k = 0; k < 4096; k++) zeros += big[k] == 0;
  for (int k = 4096; k < 4096 + 16; k++) guard &= big[k] == 0xA5;
  CHECK(zeros < 100, "%d of 4096 random bytes are zero", zeros);
  CHECK(guard, "bs_random wrote past len");
  CHECK(bs_random(big, 0) == 0, "bs_random of 0 bytes failed");
}

/* A welcome: u32 nranks, u32 count, count x {u32 rank, address}; each
 * refusal changes one field of one that is first accepted. */
static void test_welcome(void) {
  bs_hello_t hellos[5] = {hello_v4(), hello_v4(), hello_v4(), hello_v4(), hello_v4()};
  for (int i = 0; i < 5; i++) hellos[i].addr.sin.sin_port = htons((uint16_t)(40000 + i));
  const int ranks[2] = {4, 3};
  uint8_t w[BS_WELCOME_BYTES(2) + 1];
  memset(w, 0xCC, sizeof(w));
  bs_welcome_encode(w, 5, 2, ranks, hellos);
  CHECK(w[BS_WELCOME_BYTES(2)] == 0xCC, "encode wrote past the welcome");
  CHECK(rd32(w) == 5 && rd32(w + 4) == 2 && rd32(w + 8) == 4 && rd32(w + 8 + 4 + 28) == 3, "welcome ints");
  CHECK(rd16(w + 12) == 4 && rd16(w + 14) == 40004, "first entry's address: family %u port %u", rd16(w + 12),
        rd16(w + 14));
  char why[256] = "";
  CHECK(bs_welcome_check(w, BS_WELCOME_BYTES(2), 5, why, sizeof(why)) == 2, "good welcome refused: %s", why);
  int r = -1;
  sock_addr_t a;
  CHECK(bs_welcome_entry(w, 1, 5, &r, &a, why, sizeof(why)) == 0 && r == 3 && ntohs(a.sin.sin_port) == 40003,
        "entry 1: rank %d (%s)", r, why);
  why[0] = '\0';
  CHECK(bs_welcome_check(w, BS_WELCOME_BYTES(2), 6, why, sizeof(why)) < 0 && strstr(why, "for 5 ranks, expected 6"),
        "other rank count: '%s'", why);
  why[0] = '\0';
  CHECK(bs_welcome_check(w, BS_WELCOME_BYTES(2) - 1, 5, why, sizeof(why)) < 0 && strstr(why, "claims 2 addresses"),
        "short welcome: '%s'", why);
  why[0] = '\0';
  CHECK(bs_welcome_check(w, 7, 5, why, sizeof(why)) < 0 && strstr(why, "8-byte head"), "7 bytes: '%s'", why);
  wr32(w + 4, BS_WELCOME_MAX + 1);
  why[0] = '\0';
  CHECK(bs_welcome_check(w, BS_WELCOME_BYTES(BS_WELCOME_MAX + 1), 5, why, sizeof(why)) < 0 && strstr(why, "at most"),
        "too many entries: '%s'", why);
  wr32(w + 4, 2);
  wr32(w + 8, 5);
  why[0] = '\0';
  CHECK(bs_welcome_entry(w, 0, 5, &r, &a, why, sizeof(why)) < 0 && strstr(why, "rank 5, outside 0..4"),
        "rank out of range: '%s'", why);
}

static int odd_missing(const void *ctx, int r) { return r % 2 == 1 && r < *(const int *)ctx; }

/* The leaders' "ranks 3, 5, ..." (bs_name_missing). */
static void test_name_missing(void) {
  char buf[64];
  int below = 4;
  size_t n = bs_name_missing(buf, sizeof(buf), 10, 8, odd_missing, &below);
  CHECK(strcmp(buf, "ranks 1, 3") == 0 && n == strlen(buf), "two missing: '%s' (%zu)", buf, n);
  below = 2;
  bs_name_missing(buf, sizeof(buf), 10, 8, odd_missing, &below);
  CHECK(strcmp(buf, "rank 1") == 0, "one missing: '%s'", buf);
  below = 1000; /* 500 missing: cut with room for `keep` bytes left */
  n = bs_name_missing(buf, sizeof(buf), 20, 1000, odd_missing, &below);
  CHECK(n + 20 <= sizeof(buf) + 10 && strncmp(buf, "ranks 1, 3, 5", 13) == 0 && strstr(buf, ", ...") != NULL,
        "many missing: '%s' (%zu)", buf, n);
  CHECK(n == strlen(buf), "length %zu of '%s'", n, buf);
}

int main(void) {
  test_name_missing();
  test_frames();
  test_headers();
  test_hello();
  test_welcome();
  test_unique_id();
  test_secret_random();
  return test_finish("test_bootstrap_msg");
}
