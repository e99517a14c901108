/*
 * bootstrap_p2p.c — point-to-point bootstrap messages between any two ranks:
 * transport handles, the all-gather's rounds (bootstrap_allgather.c).
 *
 * A message travels on its own connection to the receiver's bootstrap port:
 * the receiver sends a challenge, the sender answers with one BS_P2P frame
 * {from rank, tag, bytes} authenticated with that nonce, and closes. A rank
 * that waits for anything (its own send's challenge, or a message) also
 * accepts and reads whatever else arrives, so two ranks sending to each
 * other never wait on each other.
 *
 * On these messages alone, survivors of a failed communicator agree on a
 * new bootstrap for xcclCommShrink (bootstrap_shrink, at the end).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_conn.h"
#include "clock.h"
#include "config.h"
#include "error.h"
#include "log.h"

#define P2P_HDR 8 /* from rank, tag */

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24); }

static void incoming_drop(bootstrap_t *bs, int k, const char *why) {
  char s[SOCK_ADDR_STRLEN];
  unsigned long nth;
  if (why && sock_refusal_first(&bs->incoming[k].from, &nth))
    WARN(BOOTSTRAP, "bootstrap rank %d refused a connection from %s: %s (later ones from that host: INFO)", bs->rank,
         sock_addr_str(&bs->incoming[k].from, s, sizeof(s)), why);
  else if (why)
    INFO(BOOTSTRAP, "bootstrap rank %d refused a connection from %s (#%lu from that host): %s", bs->rank,
         sock_addr_str(&bs->incoming[k].from, s, sizeof(s)), nth, why);
  conn_close(&bs->incoming[k]);
  bs->incoming[k] = bs->incoming[--bs->nincoming];
}

/* A whole frame arrived on incoming connection k: queue its message. */
static void incoming_take(bootstrap_t *bs, int k) {
  bs_conn_t *c = &bs->incoming[k];
  if (c->h.type != BS_P2P || c->h.len < P2P_HDR) return incoming_drop(bs, k, "not a point-to-point message");
  const uint8_t *pl = c->frame + BS_HDR_BYTES;
  int from = (int)get32(pl);
  if (from < 0 || from >= bs->nranks || from == bs->rank) return incoming_drop(bs, k, "from a rank out of range");
  bs_msg_t *m = calloc(1, sizeof(*m));
  size_t size = c->h.len - P2P_HDR;
  uint8_t *data = malloc(size ? size : 1);
  if (!m || !data) {
    free(m);
    free(data);
    return incoming_drop(bs, k, "out of memory");
  }
  memcpy(data, pl + P2P_HDR, size);
  *m = (bs_msg_t){.peer = from, .tag = get32(pl + 4), .size = size, .data = data};
  bs_msg_t **tail = &bs->unexpected; /* keep arrival order */
  while (*tail) tail = &(*tail)->next;
  *tail = m;
  incoming_drop(bs, k, NULL);
}

/* Polls the listener, the pending incoming connections and (if fd >= 0) one
 * more fd for `events`, for at most ms. Serves the listener and the incoming
 * connections. Returns the extra fd's revents. */
static short p2p_poll(bootstrap_t *bs, int fd, short events, int ms) {
  struct pollfd pf[BS_MAX_INCOMING + 2];
  int n = 0;
  /* A full table leaves new connections waiting in the kernel's backlog
   * until one of ours completes or goes stale (conn_table_room). */
  char who[48];
  snprintf(who, sizeof(who), "bootstrap rank %d", bs->rank);
  int room = conn_table_room(bs->incoming, &bs->nincoming, BS_MAX_INCOMING, who);
  pf[n++] = (struct pollfd){.fd = room ? bs->listen_fd : -1, .events = POLLIN};
  pf[n++] = (struct pollfd){.fd = fd, .events = events};
  for (int k = 0; k < bs->nincoming; k++)
    pf[n++] = (struct pollfd){.fd = bs->incoming[k].fd, .events = conn_events(&bs->incoming[k], POLLIN)};
  if (poll(pf, (nfds_t)n, ms) <= 0) return 0;
  for (int k = bs->nincoming - 1; k >= 0; k--) {
    if (!pf[2 + k].revents) continue;
    char why[512];
    int ready;
    if (conn_read(&bs->incoming[k], bs->id.secret, bs->incoming[k].nonce, &ready, why, sizeof(why)) != 0)
      incoming_drop(bs, k, why);
    else if (ready)
      incoming_take(bs, k);
  }
  if ((pf[0].revents & POLLIN) && bs->nincoming < BS_MAX_INCOMING) {
    bs_conn_t c = {.fd = -1, .accepted_ns = clock_ns()};
    if (sock_accept(bs->listen_fd, &c.fd, &c.from) == xcclSuccess && c.fd >= 0) {
      err_quiet(1);
      if (conn_accepted(&c, bs->id.secret, clock_deadline(1.0)) == xcclSuccess)
        bs->incoming[bs->nincoming++] = c;
      else
        conn_close(&c);
      err_quiet(0);
    }
  }
  return pf[1].revents;
}

static xcclResult_t p2p_check_wait(bootstrap_t *bs, uint64_t deadline, const char *what, int peer) {
  if (bs->abort_flag && atomic_load(bs->abort_flag))
    return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: aborted while %s rank %d", what, peer);
  if (clock_expired(deadline))
    return err_set(xcclTimeout, LOG_BOOTSTRAP,
                   "bootstrap: %s rank %d took longer than the timeout (%g s, XCCL_TIMEOUT or xcclCommSetTimeout)",
                   what, peer, (double)bs->deadline_s_ns / 1e9);
  return xcclSuccess;
}

void bootstrap_set_timeout(bootstrap_t *bs, double timeout_s) { bs->deadline_s_ns = (uint64_t)(timeout_s * 1e9); }

xcclResult_t bootstrap_send(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size) {
  return bootstrap_send_by(bs, peer, tag, data, size, clock_ns() + bs->deadline_s_ns);
}

xcclResult_t bootstrap_send_by(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size,
                               uint64_t deadline) {
  if (peer < 0 || peer >= bs->nranks || peer == bs->rank || size > BS_MAX_PAYLOAD - P2P_HDR)
    return err_set(xcclInternalError, LOG_BOOTSTRAP, "bootstrap_send to rank %d of %zu bytes", peer, size);
  char desc[64];
  snprintf(desc, sizeof(desc), "rank %d (bootstrap)", peer);
  bs_conn_t c = {.fd = -1};
  xcclResult_t res;
  TRY(sock_connect_retry(&bs->addrs[peer], &c.fd, deadline, (const volatile int *)bs->abort_flag));
  conn_connected(&c, &bs->addrs[peer]);
  for (;;) { /* wait for the peer's challenge, serving our own listener meanwhile */
    char why[512];
    int ready;
    if (conn_read(&c, bs->id.secret, NULL, &ready, why, sizeof(why)) != 0) {
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: sending to %s: %s", desc, why);
      goto out;
    }
    if (ready) break;
    TRY_GOTO(p2p_check_wait(bs, deadline, "sending to", peer), out);
    p2p_poll(bs, c.fd, conn_events(&c, POLLIN), clock_ms_left(deadline, 100));
  }
  if (c.h.type != BS_CHALLENGE || c.h.len != BS_NONCE_BYTES) {
    res = err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap: %s did not answer with a challenge", desc);
    goto out;
  }
  memcpy(c.nonce, c.frame + BS_HDR_BYTES, BS_NONCE_BYTES);
  uint8_t *payload = malloc(P2P_HDR + size);
  if (!payload) {
    res = err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a bootstrap message");
    goto out;
  }
  put32(payload, (uint32_t)bs->rank);
  put32(payload + 4, tag);
  if (size) memcpy(payload + P2P_HDR, data, size);
  res = send_frame(&c, BS_P2P, payload, (uint32_t)(P2P_HDR + size), bs->id.secret, c.nonce, deadline,
                   bs->abort_flag);
  free(payload);
out:
  conn_close(&c);
  return res;
}

xcclResult_t bootstrap_recv_msg(bootstrap_t *bs, int peer, uint32_t tag, uint64_t deadline, void **data_p,
                               size_t *size_p) {
  for (;;) {
    for (bs_msg_t **mp = &bs->unexpected; *mp; mp = &(*mp)->next) {
      bs_msg_t *m = *mp;
      if (m->peer != peer || m->tag != tag) continue;
      *mp = m->next;
      *data_p = m->data;
      *size_p = m->size;
      free(m);
      return xcclSuccess;
    }
    TRY(p2p_check_wait(bs, deadline, "waiting for a message from", peer));
    p2p_poll(bs, -1, 0, clock_ms_left(deadline, 100));
  }
}

xcclResult_t bootstrap_recv(bootstrap_t *bs, int peer, uint32_t tag, void *data, size_t size) {
  void *got = NULL;
  size_t got_size = 0;
  TRY(bootstrap_recv_msg(bs, peer, tag, clock_ns() + bs->deadline_s_ns, &got, &got_size));
  xcclResult_t res = xcclSuccess;
  if (got_size != size)
    res = err_set(xcclInternalError, LOG_BOOTSTRAP,
                  "bootstrap: rank %d sent %zu bytes under tag %u where %zu were expected", peer, got_size, tag, size);
  else if (size)
    memcpy(data, got, size);
  free(got);
  return res;
}

xcclResult_t bootstrap_recv_any(bootstrap_t *bs, const uint32_t *tags, int ntags, uint64_t deadline, int *peer_p,
                                uint32_t *tag_p, void **data_p, size_t *size_p) {
  for (;;) {
    for (bs_msg_t **mp = &bs->unexpected; *mp; mp = &(*mp)->next) {
      bs_msg_t *m = *mp;
      int wanted = 0;
      for (int t = 0; t < ntags && !wanted; t++) wanted = m->tag == tags[t];
      if (!wanted) continue;
      *mp = m->next;
      *peer_p = m->peer;
      if (tag_p) *tag_p = m->tag;
      *data_p = m->data;
      *size_p = m->size;
      free(m);
      return xcclSuccess;
    }
    if (bs->abort_flag && atomic_load(bs->abort_flag))
      return err_set(xcclRemoteError, LOG_BOOTSTRAP, "bootstrap rank %d: aborted while waiting for a message",
                     bs->rank);
    if (clock_expired(deadline))
      return err_set(xcclTimeout, LOG_BOOTSTRAP, "bootstrap rank %d: the message it waited for did not come in time",
                     bs->rank);
    p2p_poll(bs, -1, 0, clock_ms_left(deadline, 100));
  }
}

void bootstrap_serve(bootstrap_t *bs) { p2p_poll(bs, -1, 0, 0); }

void bootstrap_p2p_close(bootstrap_t *bs) {
  while (bs->nincoming > 0) incoming_drop(bs, bs->nincoming - 1, NULL);
  while (bs->unexpected) {
    bs_msg_t *m = bs->unexpected;
    bs->unexpected = m->next;
    free(m->data);
    free(m);
  }
}

/* ---- Shrink: the survivors agree on a new bootstrap (bootstrap.h) ---- */

#define SHRINK_TAG_JOIN 0x53524b4au   /* "SRKJ": a survivor's exclude list, to the leader */
#define SHRINK_TAG_ANSWER 0x53524b41u /* "SRKA": the leader's GO or FAIL */
#define SHRINK_GRACE_S 5.0            /* the others wait this much longer, so the leader's reason reaches them */
#define SHRINK_STRAY_S 2.0            /* to answer a request that was not ours: its sender waits for it */
#define SHRINK_LIST_CHARS 160

enum { SHRINK_OUT, SHRINK_WAITING, SHRINK_JOINED, SHRINK_DIFFERS }; /* the leader's view of each rank */
static int shrink_waiting(const void *state, int r) { return ((const uint8_t *)state)[r] == SHRINK_WAITING; }

static int list_has(const int *l, int n, int r) {
  for (int i = 0; i < n; i++)
    if (l[i] == r) return 1;
  return 0;
}

static int lists_equal(const int *a, int na, const int *b, int nb) {
  if (na != nb) return 0;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

/* "{2, 5}" for messages; a long list is cut with "...". */
static const char *list_str(const int *l, int n, char *buf, size_t len) {
  size_t off = (size_t)snprintf(buf, len, "{");
  int i = 0;
  for (; i < n && off + 24 < len; i++) off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? ", " : "", l[i]);
  snprintf(buf + off, len - off, "%s}", i < n ? ", ..." : "");
  return buf;
}

static xcclResult_t shrink_send(bootstrap_t *bs, int peer, uint32_t tag, const bs_shrink_msg_t *m, const int *ex,
                                int nex, uint64_t deadline) {
  size_t len = 0;
  uint8_t *buf = bs_shrink_encode(m, ex, nex, &len);
  if (!buf) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a shrink message");
  xcclResult_t res = bootstrap_send_by(bs, peer, tag, buf, len, deadline);
  free(buf);
  return res;
}

/* Tells peer why its shrink fails. Best effort: it is waiting for the answer
 * unless it already gave up, which is then logged here. */
static void shrink_refuse(bootstrap_t *bs, int peer, uint64_t nonce, xcclResult_t code, const char *text,
                          uint64_t deadline) {
  bs_shrink_msg_t m = {.kind = BS_SHRINK_FAIL, .nonce = nonce, .nranks = bs->nranks, .code = (int32_t)code};
  snprintf(m.text, sizeof(m.text), "%s", text);
  err_quiet(1);
  xcclResult_t res = shrink_send(bs, peer, SHRINK_TAG_ANSWER, &m, NULL, 0, deadline);
  err_quiet(0);
  if (res != xcclSuccess)
    WARN(BOOTSTRAP, "bootstrap rank %d: could not tell rank %d why its shrink failed: %s", bs->rank, peer, err_last());
}

/* The lowest survivor: collects the others' lists, then answers all. */
static xcclResult_t shrink_lead(bootstrap_t *bs, const int *ex, int nex, double timeout_s, bs_id_t *id_p) {
  int n = bs->nranks, me = bs->rank, waiting = 0, first_diff = -1;
  uint8_t *state = calloc((size_t)n, 1);
  uint64_t *nonce = calloc((size_t)n, sizeof(*nonce));
  int *theirs = calloc((size_t)n, sizeof(*theirs));
  char mine[SHRINK_LIST_CHARS], other[SHRINK_LIST_CHARS], diff[SHRINK_LIST_CHARS] = "";
  char why[BS_SHRINK_TEXT_MAX + 1] = "", text[BS_SHRINK_TEXT_MAX + 1];
  xcclResult_t res = xcclSuccess;
  if (!state || !nonce || !theirs) {
    res = err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the shrink of %d ranks", n);
    goto out;
  }
  list_str(ex, nex, mine, sizeof(mine));
  for (int r = 0; r < n; r++) {
    state[r] = list_has(ex, nex, r) ? SHRINK_OUT : r == me ? SHRINK_JOINED : SHRINK_WAITING;
    waiting += state[r] == SHRINK_WAITING;
  }
  /* A survivor blocked in an operation with a live rank that left for the
   * shrink notices only when its own wait times out: give it that and more. */
  uint64_t deadline = clock_deadline(timeout_s + SHRINK_GRACE_S);
  const uint32_t tag = SHRINK_TAG_JOIN;
  while (waiting > 0) {
    int from = -1, nt = 0;
    void *data = NULL;
    size_t size = 0;
    bs_shrink_msg_t m;
    char bad[256] = "not a request for a communicator of this size";
    err_quiet(1);
    res = bootstrap_recv_any(bs, &tag, 1, deadline, &from, NULL, &data, &size);
    err_quiet(0);
    if (res != xcclSuccess) break;
    int ok = bs_shrink_decode(data, size, &m, theirs, n - 1, &nt, bad, sizeof(bad)) == 0 && m.kind == BS_SHRINK_JOIN &&
             m.nranks == n;
    free(data);
    if (!ok) {
      WARN(BOOTSTRAP, "bootstrap rank %d: dropped a shrink request from rank %d: %s", me, from, bad);
      continue;
    }
    if (state[from] == SHRINK_OUT) { /* alive after all, and it did not exclude itself */
      snprintf(text, sizeof(text),
               "rank %d is in excludeRanks %s of rank %d (the lowest rank left, which leads the shrink) but passed %s: "
               "an excluded rank must not call xcclCommShrink, and every caller must pass the same list",
               from, mine, me, list_str(theirs, nt, other, sizeof(other)));
      shrink_refuse(bs, from, m.nonce, xcclInvalidArgument, text, clock_deadline(SHRINK_STRAY_S));
      continue;
    }
    if (state[from] == SHRINK_WAITING) waiting--;
    nonce[from] = m.nonce; /* a request repeated by a later call replaces the earlier one */
    state[from] = lists_equal(ex, nex, theirs, nt) ? SHRINK_JOINED : SHRINK_DIFFERS;
    if (state[from] == SHRINK_DIFFERS && first_diff < 0) {
      first_diff = from;
      list_str(theirs, nt, diff, sizeof(diff));
    }
  }
  int aborted = res != xcclSuccess && bs->abort_flag && atomic_load(bs->abort_flag);
  int differs = 0;
  for (int r = 0; r < n; r++) differs |= state[r] == SHRINK_DIFFERS;
  if (differs) {
    res = xcclInvalidUsage;
    snprintf(why, sizeof(why),
             "rank %d passed excludeRanks %s but rank %d (the lowest rank left, which leads the shrink) passed %s: "
             "every rank that calls xcclCommShrink must pass the same list",
             first_diff, diff, me, mine);
  } else if (aborted) {
    res = xcclRemoteError;
    snprintf(why, sizeof(why), "the communicator was aborted while rank %d led its shrink", me);
  } else if (waiting > 0) {
    res = xcclTimeout;
    size_t off = bs_name_missing(why, sizeof(why), 260 + strlen(mine), n, shrink_waiting, state);
    snprintf(why + off, sizeof(why) - off,
             " did not call xcclCommShrink within XCCL_TIMEOUT + %g s = %g s although excludeRanks %s of rank %d (which "
             "leads the shrink) keeps them: a rank that died must be in the list, and every caller must pass the same "
             "one",
             SHRINK_GRACE_S, timeout_s + SHRINK_GRACE_S, mine, me);
  }
  if (res == xcclSuccess) { /* a root of its own for the survivors, as xcclGetUniqueId makes one */
    bs_shrink_msg_t go = {.kind = BS_SHRINK_GO, .nranks = n - nex};
    bs_id_t id;
    memset(&id, 0, sizeof(id));
    id.root = bs->addrs[me]; /* where every survivor reached this rank before */
    sock_addr_set_port(&id.root, 0);
    if (bs_random(go.salt, sizeof(go.salt)) != 0 || bs_random(&id.job, sizeof(id.job)) != 0) {
      res = xcclSystemError;
      snprintf(why, sizeof(why), "rank %d cannot draw random bytes for the new communicator's secret", me);
    } else {
      bs_derive_child_secret(bs->id.secret, go.salt, id.secret);
      res = bootstrap_root_start(&id, timeout_s);
      if (res != xcclSuccess)
        snprintf(why, sizeof(why), "rank %d cannot start the new bootstrap root: %s", me, err_last());
    }
    if (res == xcclSuccess) {
      go.root = id.root;
      go.job = id.job;
      for (int r = 0; r < n; r++) {
        if (r == me || state[r] != SHRINK_JOINED) continue;
        go.nonce = nonce[r];
        err_quiet(1);
        xcclResult_t sr = shrink_send(bs, r, SHRINK_TAG_ANSWER, &go, NULL, 0, clock_deadline(timeout_s));
        err_quiet(0);
        if (sr != xcclSuccess) /* its init will be named missing on every survivor */
          WARN(BOOTSTRAP, "bootstrap rank %d: could not give rank %d the new root: %s", me, r, err_last());
      }
      *id_p = id;
      goto out;
    }
  }
  for (int r = 0; r < n && !aborted; r++) /* (bootstrap_send fails at once on an aborted communicator) */
    if (r != me && (state[r] == SHRINK_JOINED || state[r] == SHRINK_DIFFERS))
      shrink_refuse(bs, r, nonce[r], res, why, clock_deadline(timeout_s));
  err_set(res, LOG_BOOTSTRAP, "%s", why);
out:
  free(state);
  free(nonce);
  free(theirs);
  return res;
}

/* Any other survivor: sends its list to the leader and waits for the answer,
 * answering meanwhile requests sent to it by ranks that took it for the
 * leader (their lists differ from its own). */
static xcclResult_t shrink_follow(bootstrap_t *bs, const int *ex, int nex, int leader, double timeout_s,
                                  bs_id_t *id_p) {
  int n = bs->nranks, me = bs->rank;
  uint64_t deadline = clock_deadline(2 * timeout_s + SHRINK_GRACE_S);
  char mine[SHRINK_LIST_CHARS], other[SHRINK_LIST_CHARS], text[BS_SHRINK_TEXT_MAX + 1];
  list_str(ex, nex, mine, sizeof(mine));
  bs_shrink_msg_t join = {.kind = BS_SHRINK_JOIN, .nranks = n};
  if (bs_random(&join.nonce, sizeof(join.nonce)) != 0)
    return err_set(xcclSystemError, LOG_BOOTSTRAP, "cannot draw random bytes for a shrink request");
  xcclResult_t res = shrink_send(bs, leader, SHRINK_TAG_JOIN, &join, ex, nex, deadline);
  if (res != xcclSuccess)
    return err_prefix(res, "cannot reach rank %d, the lowest rank not in excludeRanks %s, which leads the shrink",
                      leader, mine);
  int *theirs = calloc((size_t)n, sizeof(*theirs));
  if (!theirs) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for the shrink of %d ranks", n);
  const uint32_t tags[2] = {SHRINK_TAG_ANSWER, SHRINK_TAG_JOIN};
  for (;;) {
    int from = -1, nt = 0;
    uint32_t tag = 0;
    void *data = NULL;
    size_t size = 0;
    bs_shrink_msg_t m;
    char bad[256] = "not a shrink message for a communicator of this size";
    err_quiet(1);
    res = bootstrap_recv_any(bs, tags, 2, deadline, &from, &tag, &data, &size);
    err_quiet(0);
    if (res != xcclSuccess) {
      if (bs->abort_flag && atomic_load(bs->abort_flag))
        res = err_set(xcclRemoteError, LOG_BOOTSTRAP,
                      "the communicator was aborted while waiting for rank %d, which leads the shrink", leader);
      else
        res = err_set(xcclTimeout, LOG_BOOTSTRAP,
                      "rank %d (the lowest rank not in excludeRanks %s, which leads the shrink) did not answer within "
                      "2 x XCCL_TIMEOUT + %g s = %g s: it died (then it belongs in the list), or waits for a rank "
                      "that passed another list",
                      leader, mine, SHRINK_GRACE_S, 2 * timeout_s + SHRINK_GRACE_S);
      break;
    }
    int ok = bs_shrink_decode(data, size, &m, theirs, n - 1, &nt, bad, sizeof(bad)) == 0 &&
             (m.kind != BS_SHRINK_JOIN || m.nranks == n);
    free(data);
    if (!ok) {
      WARN(BOOTSTRAP, "bootstrap rank %d: dropped a shrink message from rank %d: %s", me, from, bad);
      continue;
    }
    if (tag == SHRINK_TAG_JOIN) { /* its list removes every rank below this one; this rank's does not */
      snprintf(text, sizeof(text),
               "rank %d sent its shrink request to rank %d, taking it for the lowest rank left, but rank %d passed "
               "excludeRanks %s, which keeps rank %d, and rank %d passed %s: every caller must pass the same list",
               from, me, me, mine, leader, from, list_str(theirs, nt, other, sizeof(other)));
      shrink_refuse(bs, from, m.nonce, list_has(ex, nex, from) ? xcclInvalidArgument : xcclInvalidUsage, text,
                    clock_deadline(SHRINK_STRAY_S));
      continue;
    }
    if (from != leader || m.nonce != join.nonce || m.kind == BS_SHRINK_JOIN) continue; /* an earlier call's answer */
    if (m.kind == BS_SHRINK_FAIL) {
      res = err_set((xcclResult_t)m.code, LOG_BOOTSTRAP, "%s", m.text);
      break;
    }
    if (m.nranks != n - nex) {
      res = err_set(xcclInternalError, LOG_BOOTSTRAP,
                    "rank %d, which leads the shrink, made a communicator of %d ranks where %d were expected", leader,
                    m.nranks, n - nex);
      break;
    }
    bs_id_t id;
    memset(&id, 0, sizeof(id));
    id.root = m.root;
    id.job = m.job;
    bs_derive_child_secret(bs->id.secret, m.salt, id.secret);
    *id_p = id;
    break;
  }
  free(theirs);
  return res;
}

xcclResult_t bootstrap_shrink(bootstrap_t *bs, const int *exclude, int n, double timeout_s, bs_id_t *id_p) {
  int leader = 0;
  while (leader < bs->nranks && list_has(exclude, n, leader)) leader++;
  if (leader == bs->nranks || list_has(exclude, n, bs->rank))
    return err_set(xcclInternalError, LOG_BOOTSTRAP, "bootstrap_shrink on rank %d, which its exclude list removes",
                   bs->rank);
  if (leader == bs->rank) return shrink_lead(bs, exclude, n, timeout_s, id_p);
  return shrink_follow(bs, exclude, n, leader, timeout_s, id_p);
}
