#include "bootstrap_msg.h"

#include <arpa/inet.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encryption.h"

#define ID_MAGIC 0x44494358u /* "XCID" */
#define ID_VERSION 1
#define ID_SUM_OFF 120

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

int bs_hdr_parse(const uint8_t hdr[BS_HDR_BYTES], bs_hdr_t *out, char *why, size_t whylen) {
  uint32_t magic = get32(hdr), len = get32(hdr + 8), zero = get32(hdr + 12);
  uint16_t version = get16(hdr + 4), type = get16(hdr + 6);
  if (magic != BS_MAGIC) {
    snprintf(why, whylen, "not an xccl bootstrap message (magic 0x%08x)", magic);
    return -1;
  }
  if (version != BS_VERSION) {
    snprintf(why, whylen, "bootstrap protocol version %u, this library speaks %u (mixed xccl versions?)",
             version, BS_VERSION);
    return -1;
  }
  if (type < 1 || type > BS_TYPE_MAX) {
    snprintf(why, whylen, "unknown bootstrap message type %u", type);
    return -1;
  }
  if (zero != 0) {
    snprintf(why, whylen, "bootstrap header's reserved field is 0x%08x, not 0", zero);
    return -1;
  }
  if (len > BS_MAX_PAYLOAD) {
    snprintf(why, whylen, "bootstrap message claims %u bytes, more than the %u allowed", len, BS_MAX_PAYLOAD);
    return -1;
  }
  out->type = type;
  out->len = len;
  return 0;
}

/* OpenSSL must not tear its state down at exit(): a thread of ours (the
 * bootstrap root, a proxy, a progress thread) may still be inside an HMAC or
 * a TLS record then, and OPENSSL_cleanup under it frees what it uses (seen
 * under AddressSanitizer: a double free, and leaked error states, in 12 of
 * 200 runs of a one-rank test). Asked when the library loads, before any
 * other OpenSSL call of ours; the state stays reachable for the life of the
 * process. */
__attribute__((constructor)) static void bs_openssl_keep_at_exit(void) {
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

static void bs_mac(const uint8_t *data, size_t len, const uint8_t key[BS_SECRET_BYTES],
                   const uint8_t nonce[BS_NONCE_BYTES], uint8_t out[BS_MAC_BYTES]) {
  static const uint8_t zero[BS_NONCE_BYTES];
  EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                         OSSL_PARAM_construct_end()};
  size_t outl = 0;
  memset(out, 0, BS_MAC_BYTES);
  if (ctx && EVP_MAC_init(ctx, key, BS_SECRET_BYTES, params) && EVP_MAC_update(ctx, nonce ? nonce : zero, BS_NONCE_BYTES) &&
      EVP_MAC_update(ctx, data, len))
    EVP_MAC_final(ctx, out, &outl, BS_MAC_BYTES);
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
}

void bs_frame_build(uint8_t *out, bs_type_t type, const void *payload, uint32_t len,
                    const uint8_t key[BS_SECRET_BYTES], const uint8_t nonce[BS_NONCE_BYTES]) {
  put32(out, BS_MAGIC);
  put16(out + 4, BS_VERSION);
  put16(out + 6, (uint16_t)type);
  put32(out + 8, len);
  put32(out + 12, 0);
  if (len) memcpy(out + BS_HDR_BYTES, payload, len);
  bs_mac(out, BS_HDR_BYTES + len, key, nonce, out + BS_HDR_BYTES + len);
}

int bs_frame_verify(const uint8_t *frame, size_t frame_len, const uint8_t key[BS_SECRET_BYTES],
                    const uint8_t nonce[BS_NONCE_BYTES], char *why, size_t whylen) {
  bs_hdr_t h;
  if (frame_len < BS_HDR_BYTES + BS_MAC_BYTES) {
    snprintf(why, whylen, "bootstrap message of %zu bytes is too short", frame_len);
    return -1;
  }
  if (bs_hdr_parse(frame, &h, why, whylen) != 0) return -1;
  if ((size_t)h.len + BS_HDR_BYTES + BS_MAC_BYTES != frame_len) {
    snprintf(why, whylen, "bootstrap message length %u does not match the %zu bytes received", h.len, frame_len);
    return -1;
  }
  uint8_t mac[BS_MAC_BYTES];
  bs_mac(frame, BS_HDR_BYTES + h.len, key, nonce, mac);
  if (CRYPTO_memcmp(mac, frame + BS_HDR_BYTES + h.len, BS_MAC_BYTES) != 0) {
    snprintf(why, whylen, "bootstrap message failed authentication (wrong secret: not from this job's unique id)");
    return -1;
  }
  return 0;
}

void bs_addr_encode(const sock_addr_t *a, uint8_t out[BS_ADDR_BYTES]) {
  memset(out, 0, BS_ADDR_BYTES);
  if (a->sa.sa_family == AF_INET) {
    put16(out, 4);
    put16(out + 2, ntohs(a->sin.sin_port));
    memcpy(out + 8, &a->sin.sin_addr, 4);
  } else if (a->sa.sa_family == AF_INET6) {
    put16(out, 6);
    put16(out + 2, ntohs(a->sin6.sin6_port));
    put32(out + 4, a->sin6.sin6_scope_id);
    memcpy(out + 8, &a->sin6.sin6_addr, 16);
  }
}

int bs_addr_decode(const uint8_t in[BS_ADDR_BYTES], sock_addr_t *a, char *why, size_t whylen) {
  sock_addr_t r;
  memset(&r, 0, sizeof(r));
  uint16_t fam = get16(in), port = get16(in + 2);
  if (fam == 4) {
    r.sin.sin_family = AF_INET;
    r.sin.sin_port = htons(port);
    memcpy(&r.sin.sin_addr, in + 8, 4);
  } else if (fam == 6) {
    r.sin6.sin6_family = AF_INET6;
    r.sin6.sin6_port = htons(port);
    r.sin6.sin6_scope_id = get32(in + 4);
    memcpy(&r.sin6.sin6_addr, in + 8, 16);
  } else {
    snprintf(why, whylen, "address family %u is neither IPv4 nor IPv6", fam);
    return -1;
  }
  if (port == 0) {
    snprintf(why, whylen, "address has port 0");
    return -1;
  }
  *a = r;
  return 0;
}

void bs_hello_encode(const bs_hello_t *h, uint8_t out[BS_HELLO_BYTES]) {
  memset(out, 0, BS_HELLO_BYTES);
  put64(out, h->job);
  put32(out + 8, (uint32_t)h->rank);
  put32(out + 12, (uint32_t)h->nranks);
  bs_addr_encode(&h->addr, out + 16);
  memcpy(out + 16 + BS_ADDR_BYTES, h->host, strnlen(h->host, BS_HOST_BYTES - 1));
  put32(out + 16 + BS_ADDR_BYTES + BS_HOST_BYTES, h->pid);
}

int bs_hello_decode(const uint8_t *in, size_t len, bs_hello_t *h, char *why, size_t whylen) {
  bs_hello_t r;
  memset(&r, 0, sizeof(r));
  if (len != BS_HELLO_BYTES) {
    snprintf(why, whylen, "hello of %zu bytes, expected %d", len, BS_HELLO_BYTES);
    return -1;
  }
  r.job = get64(in);
  r.rank = (int32_t)get32(in + 8);
  r.nranks = (int32_t)get32(in + 12);
  if (r.nranks < 1 || r.nranks > BS_MAX_RANKS) {
    snprintf(why, whylen, "hello claims nranks=%d, outside 1..%d", r.nranks, BS_MAX_RANKS);
    return -1;
  }
  if (r.rank < 0 || r.rank >= r.nranks) {
    snprintf(why, whylen, "hello claims rank %d, outside 0..%d", r.rank, r.nranks - 1);
    return -1;
  }
  if (bs_addr_decode(in + 16, &r.addr, why, whylen) != 0) return -1;
  memcpy(r.host, in + 16 + BS_ADDR_BYTES, BS_HOST_BYTES - 1);
  r.host[BS_HOST_BYTES - 1] = '\0';
  for (char *c = r.host; *c; c++)
    if (*c < 0x20 || *c > 0x7e) *c = '?'; /* it goes into log lines */
  r.pid = get32(in + 16 + BS_ADDR_BYTES + BS_HOST_BYTES);
  *h = r;
  return 0;
}

void bs_welcome_encode(uint8_t *out, int nranks, int count, const int *ranks, const bs_hello_t *hellos) {
  put32(out, (uint32_t)nranks);
  put32(out + 4, (uint32_t)count);
  for (int i = 0; i < count; i++) {
    uint8_t *e = out + BS_WELCOME_BYTES(i);
    put32(e, (uint32_t)ranks[i]);
    bs_addr_encode(&hellos[ranks[i]].addr, e + 4);
  }
}

int bs_welcome_check(const uint8_t *in, size_t len, int nranks, char *why, size_t whylen) {
  if (len < 8) {
    snprintf(why, whylen, "welcome of %zu bytes, shorter than its 8-byte head", len);
    return -1;
  }
  uint32_t n = get32(in), count = get32(in + 4);
  if ((int64_t)n != nranks) {
    snprintf(why, whylen, "welcome for %u ranks, expected %d", n, nranks);
    return -1;
  }
  if (count > BS_WELCOME_MAX || len != BS_WELCOME_BYTES(count)) {
    snprintf(why, whylen, "welcome of %zu bytes claims %u addresses (at most %d)", len, count, BS_WELCOME_MAX);
    return -1;
  }
  return (int)count;
}

int bs_welcome_entry(const uint8_t *in, int i, int nranks, int *rank, sock_addr_t *a, char *why, size_t whylen) {
  const uint8_t *e = in + BS_WELCOME_BYTES(i);
  uint32_t r = get32(e);
  if (r >= (uint32_t)nranks) {
    snprintf(why, whylen, "welcome names rank %u, outside 0..%d", r, nranks - 1);
    return -1;
  }
  *rank = (int)r;
  return bs_addr_decode(e + 4, a, why, whylen);
}

static void id_checksum(const uint8_t *bytes, uint8_t out[8]) {
  uint8_t digest[32];
  unsigned int dl = 0;
  EVP_Digest(bytes, ID_SUM_OFF, digest, &dl, EVP_sha256(), NULL);
  memcpy(out, digest, 8);
}

void bs_id_encode(const bs_id_t *id, xcclUniqueId *out) {
  uint8_t *p = (uint8_t *)out->internal;
  memset(p, 0, XCCL_UNIQUE_ID_BYTES);
  put32(p, ID_MAGIC);
  put16(p + 4, ID_VERSION);
  p[6] = (uint8_t)id->flags;
  bs_addr_encode(&id->root, p + 8);
  memcpy(p + 36, id->secret, BS_SECRET_BYTES);
  put64(p + 68, id->job);
  put64(p + 76, id->parent);
  put32(p + 84, id->parent_nranks);
  id_checksum(p, p + ID_SUM_OFF);
}

int bs_id_decode(const xcclUniqueId *in, bs_id_t *id, char *why, size_t whylen) {
  const uint8_t *p = (const uint8_t *)in->internal;
  if (get32(p) != ID_MAGIC) {
    snprintf(why, whylen, "the unique id was not made by xcclGetUniqueId (bad magic)");
    return -1;
  }
  if (get16(p + 4) != ID_VERSION) {
    snprintf(why, whylen, "the unique id has version %u, this library reads %u", get16(p + 4), ID_VERSION);
    return -1;
  }
  uint8_t sum[8];
  id_checksum(p, sum);
  if (memcmp(sum, p + ID_SUM_OFF, 8) != 0) {
    snprintf(why, whylen, "the unique id is corrupted (checksum mismatch): it must reach every rank byte for byte");
    return -1;
  }
  bs_id_t r;
  memset(&r, 0, sizeof(r));
  if (bs_addr_decode(p + 8, &r.root, why, whylen) != 0) return -1;
  memcpy(r.secret, p + 36, BS_SECRET_BYTES);
  r.job = get64(p + 68);
  r.parent = get64(p + 76);
  r.parent_nranks = get32(p + 84);
  r.flags = p[6];
  *id = r;
  return 0;
}

uint8_t *bs_shrink_encode(const bs_shrink_msg_t *m, const int *exclude, int nexclude, size_t *len_p) {
  size_t body = 0, tl = 0;
  if (m->kind == BS_SHRINK_JOIN) body = 4 * (size_t)nexclude;
  if (m->kind == BS_SHRINK_GO) body = BS_ADDR_BYTES + 8 + BS_SECRET_BYTES;
  if (m->kind == BS_SHRINK_FAIL) body = tl = strnlen(m->text, BS_SHRINK_TEXT_MAX);
  uint8_t *out = calloc(1, BS_SHRINK_HDR_BYTES + body);
  if (!out) return NULL;
  put32(out, m->kind);
  put64(out + 8, m->nonce);
  put32(out + 16, (uint32_t)m->nranks);
  uint8_t *b = out + BS_SHRINK_HDR_BYTES;
  if (m->kind == BS_SHRINK_JOIN) {
    put32(out + 20, (uint32_t)nexclude);
    for (int i = 0; i < nexclude; i++) put32(b + 4 * (size_t)i, (uint32_t)exclude[i]);
  } else if (m->kind == BS_SHRINK_GO) {
    bs_addr_encode(&m->root, b);
    put64(b + BS_ADDR_BYTES, m->job);
    memcpy(b + BS_ADDR_BYTES + 8, m->salt, BS_SECRET_BYTES);
  } else if (m->kind == BS_SHRINK_FAIL) {
    put32(out + 20, (uint32_t)m->code);
    memcpy(b, m->text, tl);
  }
  *len_p = BS_SHRINK_HDR_BYTES + body;
  return out;
}

int bs_shrink_decode(const uint8_t *in, size_t len, bs_shrink_msg_t *m, int *exclude, int cap, int *nexclude_p,
                     char *why, size_t whylen) {
  bs_shrink_msg_t r;
  memset(&r, 0, sizeof(r));
  if (len < BS_SHRINK_HDR_BYTES) {
    snprintf(why, whylen, "shrink message of %zu bytes is shorter than its %d-byte header", len, BS_SHRINK_HDR_BYTES);
    return -1;
  }
  r.kind = get32(in);
  r.nonce = get64(in + 8);
  r.nranks = (int32_t)get32(in + 16);
  int32_t count = (int32_t)get32(in + 20);
  const uint8_t *b = in + BS_SHRINK_HDR_BYTES;
  size_t body = len - BS_SHRINK_HDR_BYTES;
  if (get32(in + 4) != 0 || r.nranks < 1 || r.nranks > BS_MAX_RANKS) {
    snprintf(why, whylen, "shrink message with a non-zero reserved field or nranks=%d outside 1..%d", r.nranks,
             BS_MAX_RANKS);
    return -1;
  }
  if (r.kind == BS_SHRINK_JOIN) {
    if (count < 0 || count >= r.nranks || count > cap || body != 4 * (size_t)count) {
      snprintf(why, whylen, "shrink request lists %d excluded ranks of %d in %zu bytes", count, r.nranks, body);
      return -1;
    }
    for (int i = 0; i < count; i++) {
      int32_t v = (int32_t)get32(b + 4 * (size_t)i);
      if (v < 0 || v >= r.nranks || (i > 0 && v <= exclude[i - 1])) {
        snprintf(why, whylen, "shrink request's excluded rank #%d is %d: not ascending in 0..%d", i, v, r.nranks - 1);
        return -1;
      }
      exclude[i] = v;
    }
    *nexclude_p = count;
  } else if (r.kind == BS_SHRINK_GO) {
    if (count != 0 || body != BS_ADDR_BYTES + 8 + BS_SECRET_BYTES) {
      snprintf(why, whylen, "shrink answer GO of %zu bytes, expected %d", body, BS_ADDR_BYTES + 8 + BS_SECRET_BYTES);
      return -1;
    }
    if (bs_addr_decode(b, &r.root, why, whylen) != 0) return -1;
    r.job = get64(b + BS_ADDR_BYTES);
    memcpy(r.salt, b + BS_ADDR_BYTES + 8, BS_SECRET_BYTES);
  } else if (r.kind == BS_SHRINK_FAIL) {
    if (count <= 0 || count >= xcclNumResults || count == xcclInProgress || body > BS_SHRINK_TEXT_MAX) {
      snprintf(why, whylen, "shrink answer FAIL with result code %d and %zu bytes of text", count, body);
      return -1;
    }
    r.code = count;
    memcpy(r.text, b, body);
    for (size_t i = 0; i < body; i++)
      if (r.text[i] < 0x20 || r.text[i] > 0x7e) r.text[i] = '?'; /* it goes into error messages */
  } else {
    snprintf(why, whylen, "unknown shrink message kind %u", r.kind);
    return -1;
  }
  *m = r;
  return 0;
}

void bs_derive_child_secret(const uint8_t parent[BS_SECRET_BYTES], const uint8_t salt[BS_SECRET_BYTES],
                            uint8_t child[BS_SECRET_BYTES]) {
  static const char label[] = "xccl shrink secret v1:";
  uint8_t text[sizeof(label) - 1 + BS_SECRET_BYTES];
  memcpy(text, label, sizeof(label) - 1);
  memcpy(text + sizeof(label) - 1, salt, BS_SECRET_BYTES);
  bs_mac(text, sizeof(text), parent, NULL, child); /* the nonce is all zero: a fixed context */
}

size_t bs_name_missing(char *buf, size_t len, size_t keep, int n, int (*missing)(const void *ctx, int r),
                       const void *ctx) {
  int total = 0, shown = 0;
  for (int r = 0; r < n; r++) total += missing(ctx, r) != 0;
  size_t off = (size_t)snprintf(buf, len, "%s", total == 1 ? "rank" : "ranks");
  for (int r = 0; r < n && shown < total && off + keep < len; r++)
    if (missing(ctx, r)) off += (size_t)snprintf(buf + off, len - off, "%s%d", shown++ ? ", " : " ", r);
  if (shown < total && off < len) off += (size_t)snprintf(buf + off, len - off, ", ...");
  return off < len ? off : (len ? len - 1 : 0);
}

int bs_random(void *buf, size_t len) { return RAND_bytes(buf, (int)len) == 1 ? 0 : -1; }

void bs_derive_secret(const char *text, uint8_t key[BS_SECRET_BYTES]) {
  static const char label[] = "xccl bootstrap secret v1:";
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  unsigned int dl = 0;
  EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
  EVP_DigestUpdate(ctx, label, sizeof(label) - 1);
  EVP_DigestUpdate(ctx, text, strlen(text));
  EVP_DigestFinal_ex(ctx, key, &dl);
  EVP_MD_CTX_free(ctx);
}

int bs_hkdf(const uint8_t *ikm, size_t ikm_len, const char *info, uint8_t *out, size_t out_len) {
  EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
  EVP_KDF_CTX *ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)ikm, ikm_len),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, strlen(info)),
      OSSL_PARAM_construct_end(),
  };
  int ok = ctx && EVP_KDF_derive(ctx, out, out_len, params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  if (!ok) memset(out, 0, out_len);
  return ok ? 0 : -1;
}

int bs_derive_key(const uint8_t secret[BS_SECRET_BYTES], const char *label, uint8_t key[32]) {
  uint8_t ikm[ENCRYPTION_PSK_MAX + BS_SECRET_BYTES];
  size_t n = encryption_psk(ikm, ENCRYPTION_PSK_MAX);
  memcpy(ikm + n, secret, BS_SECRET_BYTES);
  int rc = bs_hkdf(ikm, n + BS_SECRET_BYTES, label, key, 32);
  OPENSSL_cleanse(ikm, sizeof(ikm));
  return rc;
}
