/*
 * bootstrap_split.c — the agreement behind xcclCommSplit (bootstrap.h),
 * over point-to-point messages of the parent's bootstrap only.
 *
 * Rank 0 leads: every other rank sends it a JOIN {nonce, nranks, color,
 * key}; once all are in, it orders each color's ranks by (key, rank),
 * starts one bootstrap root per color (as xcclGetUniqueId does, on the
 * address of its own bootstrap listener) and answers each rank with a GO
 * {nonce, new size, new rank, root, job, salt} (new size 0: no color), or
 * everyone that joined with a FAIL {code, sentence} naming the ranks that
 * never came. The new secrets are derived from the parent's and the salt
 * (bs_derive_child_secret): they never travel. All integers little-endian.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_conn.h"
#include "clock.h"
#include "error.h"
#include "log.h"

#define SPLIT_TAG_JOIN 0x53504c4au   /* "SPLJ" */
#define SPLIT_TAG_ANSWER 0x53504c41u /* "SPLA" */
#define SPLIT_GRACE_S 5.0            /* the others wait this much longer, so the leader's reason reaches them */
#define SPLIT_HDR_BYTES 28           /* u32 kind, u32 0, u64 nonce, i32 a, i32 b, i32 c */
#define SPLIT_GO_BYTES (SPLIT_HDR_BYTES + BS_ADDR_BYTES + 8 + BS_SECRET_BYTES)
#define SPLIT_TEXT_MAX 900

enum { SPLIT_JOIN = 1, SPLIT_GO = 2, SPLIT_FAIL = 3 };

typedef struct {
  uint32_t kind;
  uint64_t nonce;
  int32_t a, b, c; /* JOIN: nranks, color, key; GO: new nranks, new rank, 0; FAIL: code, 0, 0 */
  sock_addr_t root; /* GO */
  uint64_t job;     /* GO */
  uint8_t salt[BS_SECRET_BYTES];
  char text[SPLIT_TEXT_MAX + 1]; /* FAIL */
} split_msg_t;

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }
static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static xcclResult_t split_send(bootstrap_t *bs, int peer, uint32_t tag, const split_msg_t *m, uint64_t deadline) {
  uint8_t buf[SPLIT_HDR_BYTES + BS_ADDR_BYTES + 8 + BS_SECRET_BYTES + SPLIT_TEXT_MAX];
  memset(buf, 0, sizeof(buf));
  put32(buf, m->kind);
  put64(buf + 8, m->nonce);
  put32(buf + 16, (uint32_t)m->a);
  put32(buf + 20, (uint32_t)m->b);
  put32(buf + 24, (uint32_t)m->c);
  size_t len = SPLIT_HDR_BYTES;
  if (m->kind == SPLIT_GO) {
    bs_addr_encode(&m->root, buf + len);
    put64(buf + len + BS_ADDR_BYTES, m->job);
    memcpy(buf + len + BS_ADDR_BYTES + 8, m->salt, BS_SECRET_BYTES);
    len = SPLIT_GO_BYTES;
  } else if (m->kind == SPLIT_FAIL) {
    size_t tl = strnlen(m->text, SPLIT_TEXT_MAX);
    memcpy(buf + len, m->text, tl);
    len += tl;
  }
  return bootstrap_send_by(bs, peer, tag, buf, len, deadline);
}

/* Checks and reads a message of a communicator of nranks ranks: 0, or -1 with why. */
static int split_decode(const uint8_t *in, size_t len, int nranks, split_msg_t *m, char *why, size_t wl) {
  memset(m, 0, sizeof(*m));
  if (len < SPLIT_HDR_BYTES || get32(in + 4) != 0) {
    snprintf(why, wl, "split message of %zu bytes with a bad header", len);
    return -1;
  }
  m->kind = get32(in);
  m->nonce = get64(in + 8);
  m->a = (int32_t)get32(in + 16), m->b = (int32_t)get32(in + 20), m->c = (int32_t)get32(in + 24);
  if (m->kind == SPLIT_JOIN) {
    if (len != SPLIT_HDR_BYTES || m->a != nranks || m->b < XCCL_SPLIT_NOCOLOR) {
      snprintf(why, wl, "split request for %d ranks (this communicator has %d) with color %d", m->a, nranks, m->b);
      return -1;
    }
  } else if (m->kind == SPLIT_GO) {
    if (len != SPLIT_GO_BYTES || m->a < 0 || m->a > nranks || (m->a > 0 && (m->b < 0 || m->b >= m->a))) {
      snprintf(why, wl, "split answer of %zu bytes: rank %d of %d", len, m->b, m->a);
      return -1;
    }
    if (m->a > 0 && bs_addr_decode(in + SPLIT_HDR_BYTES, &m->root, why, wl) != 0) return -1; /* (no color: none) */
    m->job = get64(in + SPLIT_HDR_BYTES + BS_ADDR_BYTES);
    memcpy(m->salt, in + SPLIT_HDR_BYTES + BS_ADDR_BYTES + 8, BS_SECRET_BYTES);
  } else if (m->kind == SPLIT_FAIL) {
    size_t tl = len - SPLIT_HDR_BYTES;
    if (m->a <= 0 || m->a >= xcclNumResults || m->a == xcclInProgress || tl > SPLIT_TEXT_MAX) {
      snprintf(why, wl, "split answer FAIL with result code %d and %zu bytes of text", m->a, tl);
      return -1;
    }
    memcpy(m->text, in + SPLIT_HDR_BYTES, tl);
    for (size_t i = 0; i < tl; i++)
      if (m->text[i] < 0x20 || m->text[i] > 0x7e) m->text[i] = '?'; /* it goes into error messages */
  } else {
    snprintf(why, wl, "unknown split message kind %u", m->kind);
    return -1;
  }
  return 0;
}

typedef struct {
  int rank, color, key;
} split_entry_t;

static int entry_cmp(const void *pa, const void *pb) {
  const split_entry_t *a = pa, *b = pb;
  if (a->color != b->color) return a->color < b->color ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* The leader, once every rank's color and key are in: a root per color and
 * every rank's answer (its own into *out_p). */
static xcclResult_t split_answer_all(bootstrap_t *bs, split_entry_t *e, const uint64_t *nonce, double timeout_s,
                                     bs_split_t *out_p) {
  int n = bs->nranks, me = bs->rank;
  qsort(e, (size_t)n, sizeof(*e), entry_cmp);
  for (int lo = 0, hi; lo < n; lo = hi) {
    for (hi = lo; hi < n && e[hi].color == e[lo].color; hi++) {
    }
    split_msg_t go = {.kind = SPLIT_GO, .a = 0};
    bs_id_t id;
    memset(&id, 0, sizeof(id));
    if (e[lo].color != XCCL_SPLIT_NOCOLOR) {
      go.a = hi - lo;
      id.root = bs->addrs[me]; /* where every rank reached this one before */
      sock_addr_set_port(&id.root, 0);
      if (bs_random(go.salt, sizeof(go.salt)) != 0 || bs_random(&id.job, sizeof(id.job)) != 0)
        return err_set(xcclSystemError, LOG_BOOTSTRAP, "rank %d cannot draw random bytes for a new secret", me);
      bs_derive_child_secret(bs->id.secret, go.salt, id.secret);
      xcclResult_t r = bootstrap_root_start(&id, timeout_s);
      if (r != xcclSuccess) return err_prefix(r, "rank %d cannot start the root of color %d", me, e[lo].color);
      go.root = id.root;
      go.job = id.job;
    }
    for (int i = lo; i < hi; i++) {
      int r = e[i].rank;
      go.b = go.a ? i - lo : 0;
      if (r == me) {
        *out_p = (bs_split_t){.nranks = go.a, .rank = go.b, .id = id};
        continue;
      }
      go.nonce = nonce[r];
      err_quiet(1);
      xcclResult_t sr = split_send(bs, r, SPLIT_TAG_ANSWER, &go, clock_deadline(timeout_s));
      err_quiet(0);
      if (sr != xcclSuccess) /* its init will be named missing on the others of its color */
        WARN(BOOTSTRAP, "bootstrap rank %d: could not give rank %d its split: %s", me, r, err_last());
    }
  }
  return xcclSuccess;
}

static int split_not_joined(const void *joined, int r) { return !((const uint8_t *)joined)[r]; }

/* Rank 0: collects every other's color and key, then answers all. */
static xcclResult_t split_lead(bootstrap_t *bs, int color, int key, double timeout_s, bs_split_t *out_p) {
  int n = bs->nranks, me = bs->rank, waiting = n - 1;
  split_entry_t *e = calloc((size_t)n, sizeof(*e));
  uint64_t *nonce = calloc((size_t)n, sizeof(*nonce));
  uint8_t *joined = calloc((size_t)n, 1);
  xcclResult_t res = xcclSuccess;
  if (!e || !nonce || !joined) {
    res = err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the split of %d ranks", n);
    goto out;
  }
  e[me] = (split_entry_t){.rank = me, .color = color, .key = key};
  joined[me] = 1;
  uint64_t deadline = clock_deadline(timeout_s);
  const uint32_t tag = SPLIT_TAG_JOIN;
  while (waiting > 0) {
    int from = -1;
    void *data = NULL;
    size_t size = 0;
    split_msg_t m;
    char bad[256];
    err_quiet(1);
    res = bootstrap_recv_any(bs, &tag, 1, deadline, &from, NULL, &data, &size);
    err_quiet(0);
    if (res != xcclSuccess) break;
    int ok = split_decode(data, size, n, &m, bad, sizeof(bad)) == 0 && m.kind == SPLIT_JOIN;
    free(data);
    if (!ok) {
      WARN(BOOTSTRAP, "bootstrap rank %d: dropped a split request from rank %d: %s", me, from, ok ? "" : bad);
      continue;
    }
    if (!joined[from]) waiting--;
    joined[from] = 1;
    nonce[from] = m.nonce; /* a request repeated by a later call replaces the earlier one */
    e[from] = (split_entry_t){.rank = from, .color = m.b, .key = m.c};
  }
  if (waiting == 0) {
    res = split_answer_all(bs, e, nonce, timeout_s, out_p);
    if (res == xcclSuccess) goto out;
  }
  char why[SPLIT_TEXT_MAX + 1];
  if (waiting > 0 && bs->abort_flag && atomic_load(bs->abort_flag)) {
    res = xcclRemoteError;
    snprintf(why, sizeof(why), "the communicator was aborted while rank %d led its split", me);
  } else if (waiting > 0) {
    res = xcclTimeout;
    size_t off = bs_name_missing(why, sizeof(why), 260, n, split_not_joined, joined);
    snprintf(why + off, sizeof(why) - off,
             " did not call xcclCommSplit within the timeout (%g s) on the communicator of %d ranks that rank %d "
             "leads the split of: every rank must call it, with XCCL_SPLIT_NOCOLOR if it wants no new communicator",
             timeout_s, n, me);
  } else {
    snprintf(why, sizeof(why), "%s", err_last());
  }
  split_msg_t fail = {.kind = SPLIT_FAIL, .a = (int32_t)res};
  snprintf(fail.text, sizeof(fail.text), "%s", why);
  for (int r = 0; r < n && res != xcclRemoteError; r++) { /* (bootstrap_send fails at once on an aborted comm) */
    if (r == me || !joined[r]) continue;
    fail.nonce = nonce[r];
    err_quiet(1);
    if (split_send(bs, r, SPLIT_TAG_ANSWER, &fail, clock_deadline(timeout_s)) != xcclSuccess)
      WARN(BOOTSTRAP, "bootstrap rank %d: could not tell rank %d why the split failed: %s", me, r, err_last());
    err_quiet(0);
  }
  err_set(res, LOG_BOOTSTRAP, "%s", why);
out:
  free(e);
  free(nonce);
  free(joined);
  return res;
}

/* Any other rank: sends its color and key to rank 0 and waits for the answer. */
static xcclResult_t split_follow(bootstrap_t *bs, int color, int key, double timeout_s, bs_split_t *out_p) {
  int n = bs->nranks, me = bs->rank;
  uint64_t deadline = clock_deadline(2 * timeout_s + SPLIT_GRACE_S);
  split_msg_t join = {.kind = SPLIT_JOIN, .a = n, .b = color, .c = key};
  if (bs_random(&join.nonce, sizeof(join.nonce)) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot draw random bytes for a split request");
  xcclResult_t res = split_send(bs, 0, SPLIT_TAG_JOIN, &join, deadline);
  if (res != xcclSuccess) return err_prefix(res, "cannot reach rank 0, which leads the split");
  const uint32_t tag = SPLIT_TAG_ANSWER;
  for (;;) {
    int from = -1;
    void *data = NULL;
    size_t size = 0;
    split_msg_t m;
    char bad[256];
    err_quiet(1);
    res = bootstrap_recv_any(bs, &tag, 1, deadline, &from, NULL, &data, &size);
    err_quiet(0);
    if (res != xcclSuccess) {
      if (bs->abort_flag && atomic_load(bs->abort_flag))
        return err_set(xcclRemoteError, LOG_BOOTSTRAP,
                       "the communicator was aborted while waiting for rank 0, which leads the split");
      return err_set(xcclTimeout, LOG_BOOTSTRAP,
                     "rank 0, which leads the split, did not answer rank %d within 2 x timeout + %g s = %g s: it did "
                     "not call xcclCommSplit, or it waits for a rank that did not",
                     me, SPLIT_GRACE_S, 2 * timeout_s + SPLIT_GRACE_S);
    }
    int ok = split_decode(data, size, n, &m, bad, sizeof(bad)) == 0;
    free(data);
    if (!ok) {
      WARN(BOOTSTRAP, "bootstrap rank %d: dropped a split message from rank %d: %s", me, from, bad);
      continue;
    }
    if (from != 0 || m.nonce != join.nonce || m.kind == SPLIT_JOIN) continue; /* an earlier call's answer */
    if (m.kind == SPLIT_FAIL) return err_set((xcclResult_t)m.a, LOG_BOOTSTRAP, "%s", m.text);
    if ((m.a == 0) != (color == XCCL_SPLIT_NOCOLOR))
      return err_set(xcclInternalError, LOG_BOOTSTRAP, "rank 0 answered color %d with a communicator of %d ranks",
                     color, m.a);
    bs_split_t out = {.nranks = m.a, .rank = m.b};
    if (m.a > 0) {
      out.id.root = m.root;
      out.id.job = m.job;
      bs_derive_child_secret(bs->id.secret, m.salt, out.id.secret);
    }
    *out_p = out;
    return xcclSuccess;
  }
}

xcclResult_t bootstrap_split(bootstrap_t *bs, int color, int key, double timeout_s, bs_split_t *out_p) {
  if (bs->rank == 0) return split_lead(bs, color, key, timeout_s, out_p);
  return split_follow(bs, color, key, timeout_s, out_p);
}
