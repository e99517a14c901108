/*
 * transport.c — the table of transports, the defaults their tables are laid
 * over, and the choice of a transport for each connection.
 */
#include "transport.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "error.h"
#include "log.h"

/* In order of preference: the first that can connect a pair is tried first. */
static const xccl_transport_v1_t *const transport_table[] = {&transport_shm, &transport_net};
#define TRANSPORT_N ((int)(sizeof(transport_table) / sizeof(transport_table[0])))

static int never_connects(const transport_peer_t *tp) { return 0; }
static xcclResult_t no_recv_setup(const transport_peer_t *tp, transport_conn_t *conn, transport_where_t *where_p) {
  return err_set(xcclInternalError, LOG_INIT, "transport %s cannot receive", conn->transport->name);
}
static xcclResult_t no_send_setup(const transport_peer_t *tp, transport_conn_t *conn, const transport_where_t *where) {
  return err_set(xcclInternalError, LOG_INIT, "transport %s cannot send", conn->transport->name);
}
static xcclResult_t done_at_once(const transport_peer_t *tp, transport_conn_t *conn, int *done_p) {
  *done_p = 1;
  return xcclSuccess;
}
static void nothing_to_ack(transport_conn_t *conn) {}
static xcclResult_t nothing_to_start(const transport_peer_t *tp, transport_conn_t *conn) { return xcclSuccess; }
static void nothing_to_free(transport_conn_t *conn) {}

static xccl_transport_v1_t complete[TRANSPORT_N];

#define DEFAULT(t, slot, fn) ((t)->slot = (t)->slot ? (t)->slot : (fn))
static void complete_tables(void) {
  for (int i = 0; i < TRANSPORT_N; i++) {
    xccl_transport_v1_t *t = &complete[i];
    *t = *transport_table[i];
    DEFAULT(t, can_connect, never_connects);
    DEFAULT(t, recv_setup, no_recv_setup);
    DEFAULT(t, send_setup, no_send_setup);
    DEFAULT(t, connect, done_at_once);
    DEFAULT(t, accept, done_at_once);
    DEFAULT(t, acked, nothing_to_ack);
    DEFAULT(t, start, nothing_to_start);
    DEFAULT(t, free, nothing_to_free);
  }
}

int transport_count(void) { return TRANSPORT_N; }

const xccl_transport_v1_t *transport_at(int i) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, complete_tables);
  return i >= 0 && i < TRANSPORT_N ? &complete[i] : NULL;
}

/* The table index XCCL_TRANSPORT names, TRANSPORT_N when unset, -1 when it
 * names none. */
static int transport_forced(void) {
  const char *t = config_str(CFG_TRANSPORT);
  if (!*t) return TRANSPORT_N;
  for (int i = 0; i < TRANSPORT_N; i++)
    if (strcasecmp(t, transport_table[i]->name) == 0) return i;
  return -1;
}

xcclResult_t transport_check_config(void) {
  if (transport_forced() >= 0) return xcclSuccess;
  char names[128] = "";
  for (int i = 0, n = 0; i < TRANSPORT_N; i++)
    n += snprintf(names + n, sizeof(names) - (size_t)n, "%s%s", i == 0 ? "" : i == TRANSPORT_N - 1 ? " or " : ", ",
                  transport_table[i]->name);
  return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_TRANSPORT=%s is not %s", config_str(CFG_TRANSPORT), names);
}

const xccl_transport_v1_t *transport_completed(const xccl_transport_v1_t *table) {
  for (int i = 0; i < TRANSPORT_N; i++)
    if (transport_table[i] == table) return transport_at(i);
  return NULL;
}

const xccl_transport_v1_t *transport_required(void) {
  int f = transport_forced();
  return f >= 0 && f < TRANSPORT_N ? transport_at(f) : NULL;
}

/* Transport i may be chosen: XCCL_TRANSPORT passes over the ones preferred
 * to the one it names (socket: never shared memory). */
static int transport_allowed(int i) {
  int f = transport_forced();
  return f < 0 || f == TRANSPORT_N || i >= f; /* unset (or refused at init): every one */
}

int transport_allows(const char *name) {
  for (int i = 0; i < TRANSPORT_N; i++)
    if (strcasecmp(name, transport_table[i]->name) == 0) return transport_allowed(i);
  return 0;
}

/* Whether a transport after the i-th could take the connection instead. */
static int later_can_connect(const transport_peer_t *tp, int i) {
  for (int j = i + 1; j < TRANSPORT_N; j++)
    if (transport_allowed(j) && transport_at(j)->can_connect(tp)) return 1;
  return 0;
}

xcclResult_t transport_recv_setup(const transport_peer_t *tp, transport_conn_t *conn, transport_where_t *where_p) {
  static _Atomic int warned; /* one line per process says why a transport was passed over */
  for (int i = 0; i < TRANSPORT_N; i++) {
    const xccl_transport_v1_t *t = transport_at(i);
    if (!transport_allowed(i) || !t->can_connect(tp)) continue;
    int fallback = later_can_connect(tp, i);
    transport_conn_t c = {.transport = t};
    transport_where_t w = {.transport = (uint8_t)i};
    if (fallback) err_quiet(1);
    xcclResult_t res = t->recv_setup(tp, &c, &w);
    if (fallback) err_quiet(0);
    if (res == xcclSuccess) {
      *conn = c;
      *where_p = w;
      return xcclSuccess;
    }
    if (!fallback) return res;
    if (!atomic_exchange(&warned, 1)) WARN(INIT, "%s", err_last());
  }
  return err_set(xcclInternalError, LOG_INIT, "rank %d: no transport can connect to %s", tp->rank, tp->peer_desc);
}

xcclResult_t transport_send_setup(const transport_peer_t *tp, transport_conn_t *conn, const transport_where_t *where) {
  const xccl_transport_v1_t *t = transport_at(where->transport);
  if (!t)
    return err_set(xcclRemoteError, LOG_INIT, "%s named transport %d, which this build does not have", tp->peer_desc,
                   (int)where->transport);
  *conn = (transport_conn_t){.transport = t};
  return t->send_setup(tp, conn, where);
}

void transport_conn_free(transport_conn_t *conn) {
  if (conn->transport) conn->transport->free(conn);
  *conn = (transport_conn_t){0};
}
