/*
 * transport.h — how one direction of a connection between two ranks is
 * made, version 1: every way of connecting (shared memory, the network)
 * is one `static const xccl_transport_v1_t` filled by field name, and one
 * table (transport.c) lists them in order of preference.
 *
 * Making a connection (the core's connect loop, src/core/connect.c):
 *  1. The receiving rank picks the first transport of the table whose
 *     can_connect() says yes and calls its recv_setup(), which makes the
 *     receive side's resources and writes a small "where to reach me"
 *     (transport_where_t). When it fails and a later transport can connect
 *     too, that one is tried (one WARN per process says why): a segment
 *     /dev/shm cannot hold makes that connection go through the network.
 *  2. The where travels to the sender through the bootstrap; the sender's
 *     send_setup() of the transport it names consumes it.
 *  3. Both sides call connect() (sender) / accept() (receiver) until they
 *     say done, serving the bootstrap in between, until XCCL_TIMEOUT.
 *  4. Transports with ack set: the sender, once set up, tells the
 *     receiver, whose acked() then runs (shm: the name is unlinked once the
 *     peer has the segment mapped, so a crash leaves nothing behind).
 *  5. start() on each side: data may move (net: the proxy takes the comm).
 *
 * The contract every transport keeps:
 *  - Nothing blocks: connect()/accept() return xcclSuccess with *done_p = 0
 *    while the connection is not made yet; the caller calls again.
 *  - Every call but can_connect() may fail with an xcclResult_t and a
 *    sentence recorded by err_set; the caller adds which rank and channel.
 *  - recv_setup() that fails holds nothing (another transport may be
 *    tried next); send_setup() or a later step that fails leaves what
 *    free() releases.
 *  - The connection's resources (conn->res) are the transport's own; its
 *    fifo (conn->fifo, and conn->gpu for the net transport) is set by
 *    recv_setup() on the receiver and by send_setup() or connect() on the
 *    sender, and lives as long as res.
 *  - free() releases whatever the connection holds at any step, including
 *    a connect that never finished; after start() it runs only once
 *    whatever moves data on the connection has stopped (the proxy is
 *    destroyed first), and it leaves conn zeroed.
 *  - The where is TRANSPORT_WHERE_BYTES of plain bytes, no pointers: the
 *    peer is another process, maybe on another host.
 */
#ifndef XCCL_TRANSPORT_TRANSPORT_H
#define XCCL_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "proxy.h"
#include "slots.h"

#define TRANSPORT_WHERE_BYTES NET_HANDLE_PUBLIC

/* The two ends of a connection, as every call sees them (the core's). */
typedef struct {
  int rank, peer;                     /* this rank, the one on the other side */
  uint64_t host_hash, peer_host_hash; /* same value = same host */
  uint64_t pidns, peer_pidns;         /* PID namespaces (inode of /proc/self/ns/pid, 0: unknown) */
  uint32_t uid, peer_uid;             /* users the processes run as */
  size_t slot_size;                   /* data bytes of one slot of the fifo */
  int net_dev;                        /* network device of this connection (net_select.h) */
  const xccl_net_ops_v1_t *net;       /* the network transport */
  const uint8_t *net_key;             /* the communicator's key for it (net_session_key) */
  proxy_t *proxy;                     /* moves the data of network connections */
  slot_bell_t *bell;                  /* what the proxy rings when data arrives */
  const char *peer_desc;              /* "rank 3 (host h)", for messages */
} transport_peer_t;

/* "Where to reach me": written by the receiver's recv_setup, read by the
 * sender's send_setup; travels through the bootstrap. */
typedef struct {
  uint8_t transport; /* its index in the table (transport_at) */
  unsigned char data[TRANSPORT_WHERE_BYTES];
} transport_where_t;

struct xccl_transport_v1;

/* One direction of one connection, as its owner holds it. Zeroed: nothing
 * set up. */
typedef struct {
  const struct xccl_transport_v1 *transport; /* chosen at setup */
  void *res;                                 /* the transport's resources */
  slot_fifo_t *fifo;                         /* the fifo the data movers use */
  proxy_gpu_t *gpu; /* network connections: their GPUDirect RDMA state (proxy.h), set with fifo, in res; else NULL */
} transport_conn_t;

typedef int transport_can_connect_fn(const transport_peer_t *tp);
typedef xcclResult_t transport_recv_setup_fn(const transport_peer_t *tp, transport_conn_t *conn,
                                             transport_where_t *where_p);
typedef xcclResult_t transport_send_setup_fn(const transport_peer_t *tp, transport_conn_t *conn,
                                             const transport_where_t *where);
typedef xcclResult_t transport_progress_fn(const transport_peer_t *tp, transport_conn_t *conn, int *done_p);
typedef void transport_acked_fn(transport_conn_t *conn);
typedef xcclResult_t transport_start_fn(const transport_peer_t *tp, transport_conn_t *conn);
typedef void transport_free_fn(transport_conn_t *conn);

typedef struct xccl_transport_v1 {
  const char *name;                      /* what XCCL_TRANSPORT calls it */
  const char *what;                      /* in words, for INFO lines: "shared memory" */
  int shared;                            /* the sender writes straight into the receiver's fifo (no proxy) */
  int ack;                               /* the sender acknowledges its setup (step 4 above) */
  transport_can_connect_fn *can_connect; /* may these two ranks use it? never fails */
  transport_recv_setup_fn *recv_setup;
  transport_send_setup_fn *send_setup;
  transport_progress_fn *connect; /* never blocks; default: done */
  transport_progress_fn *accept;  /* never blocks; default: done */
  transport_acked_fn *acked;      /* receiver; default: nothing */
  transport_start_fn *start;      /* default: nothing */
  transport_free_fn *free;
} xccl_transport_v1_t;

/* The transports built in, in order of preference, each laid over the
 * defaults (no NULL slot): transport_at(i) for 0 <= i < transport_count(). */
int transport_count(void);
const xccl_transport_v1_t *transport_at(int i);

/* The table transport_at gives for one of the tables below (what a
 * connection's transport points to); NULL when it is not in the table. */
const xccl_transport_v1_t *transport_completed(const xccl_transport_v1_t *table);

/* XCCL_TRANSPORT is empty or names a transport of the table by its name
 * (shm, socket); xcclInvalidUsage with a sentence listing them otherwise.
 * Naming one passes over every transport preferred to it, for every
 * connection (socket: never shared memory). */
xcclResult_t transport_check_config(void);
/* The transport XCCL_TRANSPORT names, which every ring connection must then
 * be able to use (init refuses a ring neighbour it cannot reach); NULL when
 * unset. */
const xccl_transport_v1_t *transport_required(void);
/* XCCL_TRANSPORT lets connections use the transport called name (shm,
 * socket): it is unset, or names that one or one preferred to it. */
int transport_allows(const char *name);

/* Step 1 for one connection: picks the transport and sets up the receive
 * side. On success conn and *where_p are filled; on failure conn is left
 * zeroed. */
xcclResult_t transport_recv_setup(const transport_peer_t *tp, transport_conn_t *conn, transport_where_t *where_p);
/* Step 2: the sender sets up what the where names. On failure conn is
 * left as transport_conn_free can release it. */
xcclResult_t transport_send_setup(const transport_peer_t *tp, transport_conn_t *conn, const transport_where_t *where);
/* Releases what conn holds (any step; a zeroed conn is fine) and zeroes it. */
void transport_conn_free(transport_conn_t *conn);

/* The tables of the transports built in (transport.c lists them). */
extern const xccl_transport_v1_t transport_shm;
extern const xccl_transport_v1_t transport_net;

#endif
