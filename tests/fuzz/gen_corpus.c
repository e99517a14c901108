/*
 * gen_corpus.c — writes the seed corpora of fuzz_bootstrap_msg and
 * fuzz_unique_id: a few valid inputs of each mode and a few that are one step
 * from valid. Deterministic; the output is what tests/fuzz/corpus holds:
 *
 *   fuzz_gen_corpus tests/fuzz/corpus
 *
 * Each file starts with the fuzzer's mode byte (see the fuzzers' headers).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bootstrap_msg.h"
#include "fuzz_keys.h"

enum { M_HDR, M_VERIFY, M_SIGNED, M_HELLO, M_ADDR, M_ID, M_STREAM, M_SHRINK }; /* fuzz_bootstrap_msg's modes */

static const char *out_dir;

static void put(const char *sub, const char *name, uint8_t mode, const void *a, size_t alen, const void *b,
                size_t blen) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/%s", out_dir, sub, name);
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
    exit(1);
  }
  fwrite(&mode, 1, 1, f);
  if (alen) fwrite(a, 1, alen, f);
  if (blen) fwrite(b, 1, blen, f);
  fclose(f);
}

static void msg(const char *name, uint8_t mode, const void *a, size_t alen, const void *b, size_t blen) {
  put("bootstrap_msg", name, mode, a, alen, b, blen);
}

static sock_addr_t v4(const char *ip, uint16_t port) {
  sock_addr_t a;
  memset(&a, 0, sizeof(a));
  a.sin.sin_family = AF_INET;
  a.sin.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin.sin_addr);
  return a;
}

static sock_addr_t v6(const char *ip, uint16_t port, uint32_t scope) {
  sock_addr_t a;
  memset(&a, 0, sizeof(a));
  a.sin6.sin6_family = AF_INET6;
  a.sin6.sin6_port = htons(port);
  a.sin6.sin6_scope_id = scope;
  inet_pton(AF_INET6, ip, &a.sin6.sin6_addr);
  return a;
}

static void gen_bootstrap_msg(void) {
  uint8_t hello[BS_HELLO_BYTES], frame[BS_HDR_BYTES + 4 + 2 * BS_ADDR_BYTES + BS_MAC_BYTES + BS_HELLO_BYTES];
  bs_hello_t h = {.job = 0x1122334455667788ull, .rank = 1, .nranks = 4, .addr = v4("127.0.0.1", 40001), .pid = 4242};
  snprintf(h.host, sizeof(h.host), "node-a");
  bs_hello_encode(&h, hello);

  /* Headers: each type, then one wrong field at a time. */
  for (int t = BS_CHALLENGE; t <= BS_TYPE_MAX; t++) {
    char name[32];
    bs_frame_build(frame, (bs_type_t)t, NULL, 0, fuzz_key(), NULL);
    frame[8] = 64; /* claims 64 payload bytes */
    snprintf(name, sizeof(name), "hdr_type%d", t);
    msg(name, M_HDR, frame, BS_HDR_BYTES, NULL, 0);
  }
  bs_frame_build(frame, BS_HELLO, NULL, 0, fuzz_key(), NULL);
  frame[4] = 2;
  msg("hdr_version2", M_HDR, frame, BS_HDR_BYTES, NULL, 0);
  bs_frame_build(frame, BS_HELLO, NULL, 0, fuzz_key(), NULL);
  frame[11] = 0x04; /* 64 MiB + 1 */
  frame[8] = 1;
  msg("hdr_too_long", M_HDR, frame, BS_HDR_BYTES, NULL, 0);

  /* Authentic frames (fuzz_keys.h), with the nonce and without (a challenge). */
  size_t hl = BS_HDR_BYTES + BS_HELLO_BYTES + BS_MAC_BYTES;
  bs_frame_build(frame, BS_HELLO, hello, BS_HELLO_BYTES, fuzz_key(), fuzz_nonce());
  msg("verify_hello", M_VERIFY, frame, hl, NULL, 0);
  uint8_t chunk7 = 6; /* conn_read is fed 7 bytes at a time */
  msg("stream_hello", M_STREAM, &chunk7, 1, frame, hl);
  msg("stream_hello_cut", M_STREAM, &chunk7, 1, frame, hl - 5);
  frame[BS_HDR_BYTES + 3] ^= 1;
  msg("verify_hello_tampered", M_VERIFY, frame, hl, NULL, 0);
  bs_frame_build(frame, BS_CHALLENGE, fuzz_nonce(), BS_NONCE_BYTES, fuzz_key(), NULL);
  uint8_t nonce_null = 0x80 | 15; /* no nonce, 16 bytes at a time */
  msg("stream_challenge", M_STREAM, &nonce_null, 1, frame, BS_HDR_BYTES + BS_NONCE_BYTES + BS_MAC_BYTES);
  bs_frame_build(frame, BS_DATA, NULL, 0, fuzz_key(), NULL);
  frame[11] = 0x04; /* claims 64 MiB, then the stream ends */
  msg("stream_huge_claim", M_STREAM, &chunk7, 1, frame, BS_HDR_BYTES);

  /* Payloads the fuzzer signs itself: {type, flip lo, flip hi, flags, chunk}. */
  uint8_t head[5] = {BS_HELLO, 0xff, 0xff, 0, 31};
  msg("signed_hello", M_SIGNED, head, 5, hello, BS_HELLO_BYTES);
  head[0] = BS_RING_HELLO, head[1] = 20, head[2] = 0;
  msg("signed_ring_hello_flipped", M_SIGNED, head, 5, hello, BS_HELLO_BYTES);
  uint8_t welcome[BS_WELCOME_BYTES(2)];
  sock_addr_t a0 = v4("127.0.0.1", 40001), a1 = v6("::1", 40002, 0);
  bs_hello_t three[3] = {{.addr = a0}, {.addr = a1}};
  bs_welcome_encode(welcome, 3, 2, (const int[]){0, 1}, three);
  head[0] = BS_WELCOME, head[1] = head[2] = 0xff, head[3] = 0, head[4] = 255;
  msg("signed_welcome", M_SIGNED, head, 5, welcome, sizeof(welcome));
  uint8_t p2p[8 + 4] = {3, 0, 0, 0, 7, 0, 0, 0, 'd', 'a', 't', 'a'};
  head[0] = BS_P2P;
  msg("signed_p2p", M_SIGNED, head, 5, p2p, sizeof(p2p));
  uint8_t fail[4 + 9] = {5, 0, 0, 0, 't', 'i', 'm', 'e', 'd', ' ', 'o', 'u', 't'};
  head[0] = BS_FAIL, head[3] = 1; /* no nonce */
  msg("signed_fail", M_SIGNED, head, 5, fail, sizeof(fail));

  /* Hello and address payloads alone. */
  msg("hello", M_HELLO, hello, BS_HELLO_BYTES, NULL, 0);
  bs_hello_t bad = h;
  bad.rank = 4;
  bs_hello_encode(&bad, hello);
  msg("hello_rank_out_of_range", M_HELLO, hello, BS_HELLO_BYTES, NULL, 0);
  uint8_t addr[BS_ADDR_BYTES];
  bs_addr_encode(&a0, addr);
  msg("addr_v4", M_ADDR, addr, BS_ADDR_BYTES, NULL, 0);
  sock_addr_t ll = v6("fe80::1", 5, 2);
  bs_addr_encode(&ll, addr);
  msg("addr_v6_scope", M_ADDR, addr, BS_ADDR_BYTES, NULL, 0);
  addr[2] = addr[3] = 0;
  msg("addr_port0", M_ADDR, addr, BS_ADDR_BYTES, NULL, 0);

  /* The unique id's bytes: {flags (bit 0: repair checksum)} + 128 bytes. */
  bs_id_t id = {.root = a0, .job = 99};
  for (int i = 0; i < BS_SECRET_BYTES; i++) id.secret[i] = (uint8_t)i;
  xcclUniqueId uid;
  bs_id_encode(&id, &uid);
  uint8_t flags = 0;
  msg("id", M_ID, &flags, 1, uid.internal, sizeof(uid.internal));
  uid.internal[8] = 5; /* address family 5, checksum repaired by the fuzzer */
  flags = 1;
  msg("id_bad_family", M_ID, &flags, 1, uid.internal, sizeof(uid.internal));

  /* xcclCommShrink's messages: a JOIN with its exclude list, a GO, a FAIL. */
  bs_shrink_msg_t sm = {.kind = BS_SHRINK_JOIN, .nonce = 12345, .nranks = 8};
  int exclude[] = {2, 5};
  size_t sl = 0;
  uint8_t *enc = bs_shrink_encode(&sm, exclude, 2, &sl);
  if (enc) msg("shrink_join", M_SHRINK, enc, sl, NULL, 0);
  free(enc);
  sm = (bs_shrink_msg_t){.kind = BS_SHRINK_GO, .nonce = 12345, .nranks = 6, .root = a0, .job = 77};
  for (int i = 0; i < BS_SECRET_BYTES; i++) sm.salt[i] = (uint8_t)(3 * i);
  if ((enc = bs_shrink_encode(&sm, NULL, 0, &sl))) msg("shrink_go", M_SHRINK, enc, sl, NULL, 0);
  free(enc);
  sm = (bs_shrink_msg_t){.kind = BS_SHRINK_FAIL, .nonce = 1, .code = 4};
  snprintf(sm.text, sizeof(sm.text), "rank 3 passed another exclude list");
  if ((enc = bs_shrink_encode(&sm, NULL, 0, &sl))) msg("shrink_fail", M_SHRINK, enc, sl, NULL, 0);
  free(enc);
}

static void uid(const char *name, uint8_t mode, const void *a, size_t alen, const char *text) {
  put("unique_id", name, mode, a, alen, text, text ? strlen(text) : 0);
}

static void gen_unique_id(void) {
  bs_id_t id = {.root = v4("127.0.0.1", 29500), .job = 7};
  for (int i = 0; i < BS_SECRET_BYTES; i++) id.secret[i] = (uint8_t)(255 - i);
  xcclUniqueId u;
  bs_id_encode(&id, &u);
  char hex[2 * XCCL_UNIQUE_ID_BYTES + 1];
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)u.internal[i]);
  uid("hex_valid", 0, NULL, 0, hex);
  hex[17] = hex[17] == '0' ? '1' : '0';
  uid("hex_bad_checksum", 0, NULL, 0, hex);
  hex[17] = 'g';
  uid("hex_not_hex", 0, NULL, 0, hex);
  hex[100] = '\0';
  uid("hex_short", 0, NULL, 0, hex);

  uint8_t flags = 2; /* upper-case hex, checksum as is */
  put("unique_id", "bin_valid", 1, &flags, 1, u.internal, sizeof(u.internal));
  sock_addr_t six = v6("::1", 29500, 0);
  id.root = six;
  bs_id_encode(&id, &u);
  u.internal[10] = u.internal[11] = 0; /* port 0; the fuzzer repairs the checksum */
  flags = 1;
  put("unique_id", "bin_v6_port0", 1, &flags, 1, u.internal, sizeof(u.internal));

  static const struct {
    const char *name, *text;
    uint8_t flags; /* bit 0: rank 1 (else 0, which starts the root); bit 1: XCCL_SECRET set */
  } roots[] = {
      {"root_v4", "127.0.0.1:29500", 0},      {"root_v6", "[::1]:29500", 1},
      {"root_v6_scope", "[fe80::1%1]:7", 3},  {"root_port0", "127.0.0.1:0", 1},
      {"root_no_port", "127.0.0.1", 0},       {"root_bare_v6", "::1:29500", 1},
      {"root_name", "localhost:29500", 2},    {"root_big_port", "10.0.0.1:65536", 1},
  };
  for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) uid(roots[i].name, 2, &roots[i].flags, 1, roots[i].text);

  uid("torchrun_v4", 3, NULL, 0, "0\n2\n127.0.0.1\n29500");
  uid("torchrun_v6", 3, NULL, 0, "1\n2\n::1\n29500");
  uid("torchrun_rank_too_big", 3, NULL, 0, "2\n2\n127.0.0.1\n29500");
  uid("torchrun_no_master", 3, NULL, 0, "0\n1\n\n");
  uid("torchrun_signs", 3, NULL, 0, " +1\n-0x2\n127.0.0.1\n1");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR (writes CORPUS_DIR/bootstrap_msg and CORPUS_DIR/unique_id)\n", argv[0]);
    return 2;
  }
  out_dir = argv[1];
  char path[1024];
  snprintf(path, sizeof(path), "%s/bootstrap_msg", out_dir);
  mkdir(path, 0755);
  snprintf(path, sizeof(path), "%s/unique_id", out_dir);
  mkdir(path, 0755);
  gen_bootstrap_msg();
  gen_unique_id();
  return 0;
}
