/*
 * launch_torchrun.c — the unique id through torchrun's agent store.
 *
 * torchrun's default (static) rendezvous runs a c10d TCPStore in the agent,
 * listening on MASTER_ADDR:MASTER_PORT, and tells its workers so with
 * TORCHELASTIC_USE_AGENT_STORE=True. That port is taken, so rank 0 cannot
 * host the bootstrap root there; instead rank 0 makes a unique id and sets it
 * in the store, and the others read it. This file is a client of the store's
 * wire protocol, which comes in two forms:
 *
 *  - torch 1.x (tested: 1.13): a query is one byte of type (SET 0, GET 2,
 *    ADD 3, CHECK 4, GETNUMKEYS 6) and its arguments; strings and byte
 *    vectors are a u64 length and the bytes; ADD takes a key and an i64 and
 *    answers the sum (i64; the value is kept as decimal text); CHECK takes a
 *    u64 count of keys and answers one byte, 0 when every key is set; GET
 *    answers a vector; GETNUMKEYS an i64.
 *  - torch 2.x: the same with VALIDATE = 0 inserted before SET (so SET 1,
 *    GET 3, ADD 4, CHECK 5, GETNUMKEYS 7), and a connection's first query must be
 *    VALIDATE with the u32 0x3C85F7CE; until then the server ignores it.
 *
 * Which one: a GETNUMKEYS of 1.x on a fresh connection. A 1.x store answers
 * at once; a 2.x store ignores a connection that has not validated, so no
 * answer within LAUNCH_STORE_PROBE_S means 2.x, checked on a new connection
 * by VALIDATE and a GETNUMKEYS that must be answered. (The other order is
 * unsafe: a 1.x store would read VALIDATE as a SET of a ~1 GB key.)
 * All integers little-endian, as the x86 and Arm hosts torch runs on.
 *
 * Keys: every rank first ADDs 1 to xccl/<run id>/<restart count>/arrivals;
 * its answer v (1, 2, ...) puts it in meeting (v - 1) / nranks, whose id is
 * under xccl/<run id>/<restart count>/<meeting>/unique_id. The ranks of one
 * xcclCommInitFromEnv all add before any of them can finish it (the bootstrap
 * needs all of them), so the next call of the process, or the next program
 * in the same worker, meets under the next number and never reads an old id.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "launch.h"
#include "log.h"
#include "sock.h"

#define LAUNCH_STORE_PROBE_S 2.0
#define LAUNCH_STORE_MAGIC 0x3C85F7CEu
#define LAUNCH_STORE_KEY_MAX 512

typedef enum { STORE_SET, STORE_GET, STORE_ADD, STORE_CHECK, STORE_GETNUMKEYS } store_query_t;

/* Each query's type byte: [protocol][query], protocol 0 = torch 1.x, 1 = 2.x. */
static const uint8_t store_type[2][5] = {{0, 2, 3, 4, 6}, {1, 3, 4, 5, 7}};

typedef struct {
  int fd;
  int proto; /* 0: torch 1.x, 1: torch 2.x */
  char where[SOCK_ADDR_STRLEN + 64];
  uint64_t deadline;
} store_t;

/* A query under construction: at most one key and one value. */
typedef struct {
  uint8_t buf[16 + 2 * 8 + LAUNCH_STORE_KEY_MAX + XCCL_UNIQUE_ID_BYTES];
  size_t len;
} store_msg_t;

static void msg_u8(store_msg_t *m, uint8_t v) { m->buf[m->len++] = v; }

static void msg_u64(store_msg_t *m, uint64_t v) {
  for (int i = 0; i < 8; i++) m->buf[m->len++] = (uint8_t)(v >> (8 * i));
}

static void msg_bytes(store_msg_t *m, const void *p, size_t n) {
  msg_u64(m, n);
  memcpy(m->buf + m->len, p, n);
  m->len += n;
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static xcclResult_t store_io_fail(store_t *s, xcclResult_t r, const char *doing) {
  return err_prefix(r, "xcclCommInitFromEnv: torchrun's agent store at %s, %s", s->where, doing);
}

static xcclResult_t store_send(store_t *s, const store_msg_t *m, const char *doing) {
  xcclResult_t r = sock_send_all(s->fd, m->buf, m->len, s->deadline, NULL);
  return r == xcclSuccess ? r : store_io_fail(s, r, doing);
}

static xcclResult_t store_recv(store_t *s, void *p, size_t n, uint64_t deadline, const char *doing) {
  xcclResult_t r = sock_recv_all(s->fd, p, n, deadline, NULL);
  return r == xcclSuccess ? r : store_io_fail(s, r, doing);
}

/* A GETNUMKEYS in protocol s->proto, answered before deadline. */
static xcclResult_t store_ping(store_t *s, uint64_t deadline) {
  store_msg_t m = {.len = 0};
  msg_u8(&m, store_type[s->proto][STORE_GETNUMKEYS]);
  uint8_t answer[8];
  TRY(store_send(s, &m, "asking for its number of keys"));
  return store_recv(s, answer, sizeof(answer), deadline, "waiting for its number of keys");
}

static xcclResult_t store_connect(store_t *s, const sock_addr_t *addr) {
  xcclResult_t r = sock_connect_retry(addr, &s->fd, s->deadline, NULL);
  return r == xcclSuccess ? r : store_io_fail(s, r, "connecting (is the torchrun agent running?)");
}

/* Connects and finds which protocol the store speaks. */
static xcclResult_t store_open(store_t *s, const sock_addr_t *addr) {
  TRY(store_connect(s, addr));
  s->proto = 0;
  uint64_t probe = clock_deadline(LAUNCH_STORE_PROBE_S);
  err_quiet(1);
  xcclResult_t r = store_ping(s, probe < s->deadline ? probe : s->deadline);
  err_quiet(0);
  if (r == xcclSuccess) return r;
  sock_close(&s->fd);
  TRY(store_connect(s, addr));
  s->proto = 1;
  store_msg_t m = {.len = 0};
  msg_u8(&m, 0); /* VALIDATE */
  for (int i = 0; i < 4; i++) msg_u8(&m, (uint8_t)(LAUNCH_STORE_MAGIC >> (8 * i)));
  TRY(store_send(s, &m, "validating as torch 2.x clients do"));
  r = store_ping(s, s->deadline);
  if (r != xcclSuccess)
    return err_prefix(r, "it answered neither torch 1.x's nor torch 2.x's store protocol (set XCCL_ROOT=host:port "
                         "of a free port on rank 0's host instead)");
  return xcclSuccess;
}

static xcclResult_t store_set(store_t *s, const char *key, const void *value, size_t len) {
  store_msg_t m = {.len = 0};
  msg_u8(&m, store_type[s->proto][STORE_SET]);
  msg_bytes(&m, key, strlen(key));
  msg_bytes(&m, value, len);
  return store_send(s, &m, "setting the unique id");
}

/* Adds 1 to key; *value_p is the sum. */
static xcclResult_t store_add1(store_t *s, const char *key, uint64_t *value_p) {
  store_msg_t m = {.len = 0};
  msg_u8(&m, store_type[s->proto][STORE_ADD]);
  msg_bytes(&m, key, strlen(key));
  msg_u64(&m, 1);
  uint8_t v[8];
  TRY(store_send(s, &m, "counting the ranks that arrived"));
  TRY(store_recv(s, v, sizeof(v), s->deadline, "counting the ranks that arrived"));
  *value_p = get_u64(v);
  return xcclSuccess;
}

/* Waits until key is set: CHECK every 10 ms at first, every 100 ms later. */
static xcclResult_t store_wait(store_t *s, const char *key) {
  int delay_ms = 10;
  for (;;) {
    store_msg_t m = {.len = 0};
    msg_u8(&m, store_type[s->proto][STORE_CHECK]);
    msg_u64(&m, 1);
    msg_bytes(&m, key, strlen(key));
    uint8_t ready = 1;
    TRY(store_send(s, &m, "checking for rank 0's unique id"));
    /* A store answers CHECK at once: the last one, sent as time runs out, gets 1 s more. */
    TRY(store_recv(s, &ready, 1, s->deadline + 1000000000ull, "checking for rank 0's unique id"));
    if (ready == 0) return xcclSuccess;
    if (clock_expired(s->deadline))
      return err_set(xcclTimeout, LOG_INIT,
                     "xcclCommInitFromEnv: torchrun's agent store at %s has no key %s after XCCL_TIMEOUT=%g s: rank 0 "
                     "did not publish its unique id (is it running, and does it call xcclCommInitFromEnv as often as "
                     "this rank?)",
                     s->where, key, config_double(CFG_TIMEOUT));
    poll(NULL, 0, clock_ms_left(s->deadline, delay_ms));
    if (delay_ms < 100) delay_ms *= 2;
  }
}

static xcclResult_t store_get_uid(store_t *s, const char *key, xcclUniqueId *uid) {
  store_msg_t m = {.len = 0};
  msg_u8(&m, store_type[s->proto][STORE_GET]);
  msg_bytes(&m, key, strlen(key));
  TRY(store_send(s, &m, "getting rank 0's unique id"));
  uint8_t len[8];
  TRY(store_recv(s, len, sizeof(len), s->deadline, "getting rank 0's unique id"));
  if (get_u64(len) != XCCL_UNIQUE_ID_BYTES)
    return err_set(xcclInternalError, LOG_INIT,
                   "xcclCommInitFromEnv: torchrun's agent store at %s holds %llu bytes under %s, not a unique id of %d "
                   "bytes: is another program using that key?",
                   s->where, (unsigned long long)get_u64(len), key, XCCL_UNIQUE_ID_BYTES);
  return store_recv(s, uid->internal, XCCL_UNIQUE_ID_BYTES, s->deadline, "getting rank 0's unique id");
}

void launch_torch_store_key(const char *run_id, const char *restart, const char *name, char *key, size_t keylen) {
  snprintf(key, keylen, "xccl/%.200s/%.20s/%s", run_id, restart, name);
}

/* Connects, counts this rank in, and publishes or fetches the meeting's id. */
static xcclResult_t store_meet(store_t *s, const sock_addr_t *where, int rank, int nranks, const char *run_id,
                               const char *restart, xcclUniqueId *uid, char *key, size_t keylen) {
  char arrivals[LAUNCH_STORE_KEY_MAX], name[32];
  TRY(store_open(s, where));
  launch_torch_store_key(run_id, restart, "arrivals", arrivals, sizeof(arrivals));
  uint64_t v = 0;
  TRY(store_add1(s, arrivals, &v));
  if (v < 1)
    return err_set(xcclInternalError, LOG_INIT, "xcclCommInitFromEnv: torchrun's agent store at %s counted %llu under %s: "
                   "is another program using that key?", s->where, (unsigned long long)v, arrivals);
  snprintf(name, sizeof(name), "%llu/unique_id", (unsigned long long)((v - 1) / (uint64_t)nranks));
  launch_torch_store_key(run_id, restart, name, key, keylen);
  if (rank == 0) {
    TRY(store_set(s, key, uid->internal, sizeof(uid->internal)));
    /* The set has no answer: one more query says the store has read it
     * before the connection closes. */
    return store_ping(s, s->deadline);
  }
  TRY(store_wait(s, key));
  return store_get_uid(s, key, uid);
}

xcclResult_t launch_torch_store(const char *addr, const char *port, int rank, int nranks, xcclUniqueId *uid_p,
                                char *how, size_t howlen) {
  char text[300];
  snprintf(text, sizeof(text), strchr(addr, ':') ? "[%s]:%s" : "%s:%s", addr, port);
  sock_addr_t where;
  xcclResult_t r = sock_addr_parse(text, &where);
  if (r != xcclSuccess)
    return err_prefix(r, "xcclCommInitFromEnv: torchrun's agent store MASTER_ADDR:MASTER_PORT=%s", text);
  const char *run_id = config_foreign_env("TORCHELASTIC_RUN_ID"), *restart = config_foreign_env("TORCHELASTIC_RESTART_COUNT");
  xcclUniqueId uid;
  if (rank == 0) TRY(xcclGetUniqueId(&uid));
  store_t s = {.fd = -1, .deadline = clock_deadline(config_double(CFG_TIMEOUT))};
  snprintf(s.where, sizeof(s.where), "%s", text);
  char key[LAUNCH_STORE_KEY_MAX];
  r = store_meet(&s, &where, rank, nranks, run_id ? run_id : "none", restart ? restart : "0", &uid, key, sizeof(key));
  sock_close(&s.fd);
  if (r != xcclSuccess) return r;
  snprintf(how, howlen, "torchrun's agent store at %s (torch %s protocol), key %s", text, s.proto ? "2.x" : "1.x", key);
  *uid_p = uid;
  return xcclSuccess;
}
