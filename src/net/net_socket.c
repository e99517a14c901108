/*
 * net_socket.c — the TCP transport.
 *
 * One connection is XCCL_NSOCKS TCP streams. A message goes as an 8-byte
 * length on stream 0, then its bytes: messages under SOCKET_MIN_SPLIT all on
 * stream 0, larger ones cut into one contiguous slice per stream. Each stream
 * works through the requests in posting order, so both sides agree on which
 * bytes belong to which message without any other framing.
 *
 * Devices: one per interface sock_list_interfaces gives, in its order.
 *
 * Connection set-up: listen(dev) opens a port on that device's address and
 * puts address, port and a random connection id in the handle; connect()
 * opens the streams to the handle's address (routing picks the interface)
 * and sends each a small header {magic, id, index, count}; accept() admits
 * streams whose header carries the id and drops anything else (logged).
 *
 * XCCL_TLS=1: after its header, each stream runs a TLS 1.3 handshake keyed
 * by the communicator's secret (sock_tls.h), and every byte after it,
 * lengths included, is encrypted. accept() admits a stream only once its
 * handshake completed; a stream whose handshake fails is refused like one
 * with a wrong header, and connect() fails with the handshake's sentence.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "net.h"
#include "sock.h"
#include "sock_tls.h"

#define SOCKET_MAGIC 0x58534f43u /* "XSOC" */
#define SOCKET_MAX_STREAMS 16
#define SOCKET_MIN_SPLIT (64 * 1024)
#define SOCKET_MAX_PENDING 64

/* What travels in the handle (first NET_HANDLE_PUBLIC bytes). */
typedef struct {
  uint32_t magic;
  uint32_t pad;
  uint64_t conn_id;
  sock_addr_t addr;
} socket_handle_t;

/* Connect progress, kept in the handle's private bytes. */
typedef struct {
  struct socket_connect *conn;
} socket_handle_state_t;

_Static_assert(sizeof(socket_handle_t) <= NET_HANDLE_PUBLIC, "socket handle too large");
_Static_assert(NET_HANDLE_PUBLIC + sizeof(socket_handle_state_t) <= NET_HANDLE_BYTES, "no room for state");

typedef struct {
  uint32_t magic;
  uint32_t index;
  uint32_t nstreams;
  uint32_t pad;
  uint64_t conn_id;
} socket_stream_hdr_t;

typedef struct socket_connect {
  int nstreams;
  int fds[SOCKET_MAX_STREAMS];
  int connected[SOCKET_MAX_STREAMS];
  size_t hdr_sent[SOCKET_MAX_STREAMS];
  socket_stream_hdr_t hdr[SOCKET_MAX_STREAMS];
  int use_tls;
  uint8_t key[NET_KEY_BYTES];
  sock_tls_t *tls[SOCKET_MAX_STREAMS];
  int tls_done[SOCKET_MAX_STREAMS];
} socket_connect_t;

typedef struct {
  int fd;
  size_t got;
  socket_stream_hdr_t hdr;
  sock_addr_t from;
  sock_tls_t *tls; /* XCCL_TLS: its handshake, once the header is read */
} socket_pending_t;

typedef struct {
  int fd;
  uint64_t conn_id;
  sock_addr_t addr;
  int nstreams; /* learned from the first valid header */
  int fds[SOCKET_MAX_STREAMS];
  sock_tls_t *tls[SOCKET_MAX_STREAMS]; /* XCCL_TLS: the admitted streams' */
  int use_tls;
  uint8_t key[NET_KEY_BYTES];
  socket_pending_t pending[SOCKET_MAX_PENDING];
  int npending;
} socket_listen_t;

struct socket_comm;

typedef struct {
  struct socket_comm *comm;
  uint64_t seq;
  int in_use;
  char *data;
  size_t capacity; /* recv: posted buffer size; send: message size */
  size_t size;     /* message size; for a recv, known once its header is read */
  int size_known;
  uint64_t hdr; /* the length as it goes on the wire */
  size_t hdr_off;
} socket_req_t;

typedef struct socket_comm {
  int is_send;
  int nstreams;
  int fds[SOCKET_MAX_STREAMS];
  sock_tls_t *tls[SOCKET_MAX_STREAMS]; /* XCCL_TLS; else NULL */
  uint64_t posted;                  /* requests posted so far */
  uint64_t cur[SOCKET_MAX_STREAMS]; /* the request each stream works on */
  size_t off[SOCKET_MAX_STREAMS];   /* progress of that stream in its slice */
  socket_req_t reqs[NET_MAX_REQUESTS];
  xcclResult_t failed; /* the first error; the comm is unusable after it */
  char fail_msg[256];
  unsigned char stream_failed[SOCKET_MAX_STREAMS]; /* that stream stopped (its error is `failed` or later) */
} socket_comm_t;

/* One device per interface sock_list_interfaces gives (XCCL_SOCKET_IFNAME
 * matching several, or every one the auto-pick takes at its best rank):
 * the core spreads channels over them. */
static sock_iface_list_t socket_devs;

static xcclResult_t socket_init(void) {
  TRY(sock_list_interfaces(&socket_devs));
  char line[SOCK_MAX_IFACES * (SOCK_IFNAME_LEN + INET6_ADDRSTRLEN + 8)];
  size_t len = 0;
  for (int i = 0; i < socket_devs.n; i++) {
    const sock_addr_t *a = &socket_devs.ifaces[i].addr;
    char host[INET6_ADDRSTRLEN] = "?";
    inet_ntop(a->sa.sa_family,
              a->sa.sa_family == AF_INET6 ? (const void *)&a->sin6.sin6_addr : (const void *)&a->sin.sin_addr, host,
              sizeof(host));
    len +=
        (size_t)snprintf(line + len, sizeof(line) - len, "%s%s (%s)", i ? ", " : "", socket_devs.ifaces[i].name, host);
  }
  INFO(NET, "socket transport: %d device%s: %s", socket_devs.n, socket_devs.n == 1 ? "" : "s", line);
  return xcclSuccess;
}

static xcclResult_t socket_devices(int *ndev_p) {
  *ndev_p = socket_devs.n;
  return xcclSuccess;
}

static xcclResult_t socket_check_dev(int dev) {
  if (dev < 0 || dev >= socket_devs.n)
    return err_set(xcclInvalidArgument, LOG_NET, "socket transport: device %d does not exist (%d device%s)", dev,
                   socket_devs.n, socket_devs.n == 1 ? "" : "s");
  return xcclSuccess;
}

/* The link speed sysfs gives for an interface, 0 when it says none (-1 on
 * veth and loopback, no file on some virtual ones). */
static int socket_speed_mbps(const char *ifname) {
  char path[128];
  snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int mbps = 0;
  if (fscanf(f, "%d", &mbps) != 1 || mbps < 0) mbps = 0;
  fclose(f);
  return mbps;
}

static xcclResult_t socket_get_properties(int dev, net_props_t *props_p) {
  TRY(socket_check_dev(dev));
  net_props_t p;
  memset(&p, 0, sizeof(p));
  snprintf(p.name, sizeof(p.name), "%s", socket_devs.ifaces[dev].name);
  p.speed_mbps = socket_speed_mbps(p.name);
  p.ptr_support = NET_PTR_HOST;
  p.pollable = 1;
  p.max_msg = (size_t)1 << 40;
  *props_p = p;
  return xcclSuccess;
}

/* XCCL_TLS: the communicator's key, which the caller set (net_session_key). */
static xcclResult_t socket_tls_key(int *use_p, uint8_t key[NET_KEY_BYTES]) {
  *use_p = sock_tls_wanted();
  if (*use_p && !sock_tls_session_key(key))
    return err_set(xcclInternalError, LOG_NET, "XCCL_TLS=1 but the socket transport was given no key to use");
  return xcclSuccess;
}

static xcclResult_t socket_listen(int dev, net_handle_t *handle_p, void **listen_comm_p) {
  TRY(socket_check_dev(dev));
  socket_listen_t *l = calloc(1, sizeof(*l));
  if (!l) return err_set(xcclSystemError, LOG_NET, "out of memory for a socket listener");
  l->addr = socket_devs.ifaces[dev].addr;
  xcclResult_t res = socket_tls_key(&l->use_tls, l->key);
  if (res == xcclSuccess) res = sock_listen(&l->addr, &l->fd);
  if (res != xcclSuccess) {
    free(l);
    return res;
  }
  if (getrandom(&l->conn_id, sizeof(l->conn_id), 0) != sizeof(l->conn_id)) {
    close(l->fd);
    free(l);
    return err_set(xcclSystemError, LOG_NET, "getrandom failed: %s", strerror(errno));
  }
  for (int i = 0; i < SOCKET_MAX_STREAMS; i++) l->fds[i] = -1;
  socket_handle_t h = {.magic = SOCKET_MAGIC, .conn_id = l->conn_id, .addr = l->addr};
  memset(handle_p, 0, sizeof(*handle_p));
  memcpy(handle_p->data, &h, sizeof(h));
  *listen_comm_p = l;
  return xcclSuccess;
}

/* Takes the streams' fds and TLS state (tls may be NULL: plaintext). */
static socket_comm_t *socket_comm_new(int is_send, int nstreams, const int *fds, sock_tls_t *const *tls) {
  socket_comm_t *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->is_send = is_send;
  c->nstreams = nstreams;
  memcpy(c->fds, fds, sizeof(int) * (size_t)nstreams);
  if (tls) memcpy(c->tls, tls, sizeof(tls[0]) * (size_t)nstreams);
  for (int i = 0; i < NET_MAX_REQUESTS; i++) c->reqs[i].comm = c;
  return c;
}

static void socket_connect_free(socket_connect_t *sc) {
  for (int i = 0; i < sc->nstreams; i++) {
    sock_tls_free(&sc->tls[i]);
    sock_close(&sc->fds[i]);
  }
  memset(sc->key, 0, sizeof(sc->key));
  free(sc);
}

static xcclResult_t socket_connect(int dev, net_handle_t *handle, void **send_comm_p) {
  socket_handle_t h;
  memcpy(&h, handle->data, sizeof(h));
  if (h.magic != SOCKET_MAGIC)
    return err_set(xcclInternalError, LOG_NET, "socket connect: the peer's handle is not a socket handle");
  socket_handle_state_t *st = (socket_handle_state_t *)(handle->data + NET_HANDLE_PUBLIC);
  socket_connect_t *sc = st->conn;
  if (!sc) {
    sc = calloc(1, sizeof(*sc));
    if (!sc) return err_set(xcclSystemError, LOG_NET, "out of memory for a socket connection");
    sc->nstreams = (int)config_int(CFG_NSOCKS);
    xcclResult_t res = socket_tls_key(&sc->use_tls, sc->key);
    if (res != xcclSuccess) {
      free(sc);
      return res;
    }
    for (int i = 0; i < sc->nstreams; i++) {
      sc->fds[i] = -1;
      sc->hdr[i] = (socket_stream_hdr_t){
          .magic = SOCKET_MAGIC, .index = (uint32_t)i, .nstreams = (uint32_t)sc->nstreams, .conn_id = h.conn_id};
    }
    st->conn = sc;
  }
  int ready = 0;
  for (int i = 0; i < sc->nstreams; i++) {
    if (sc->fds[i] < 0) TRY(sock_connect_start(&h.addr, &sc->fds[i]));
    if (!sc->connected[i]) TRY(sock_connect_poll(sc->fds[i], &h.addr, &sc->connected[i]));
    if (sc->connected[i]) TRY(sock_send_some(sc->fds[i], &sc->hdr[i], sizeof(sc->hdr[i]), &sc->hdr_sent[i]));
    int sent = sc->connected[i] && sc->hdr_sent[i] == sizeof(sc->hdr[i]);
    if (sent && sc->use_tls && !sc->tls_done[i]) {
      if (!sc->tls[i]) {
        char a[SOCK_ADDR_STRLEN], desc[SOCK_ADDR_STRLEN + 32];
        snprintf(desc, sizeof(desc), "%s (stream %d of %d)", sock_addr_str(&h.addr, a, sizeof(a)), i + 1,
                 sc->nstreams);
        TRY(sock_tls_new(sc->fds[i], 0, sc->key, desc, &sc->tls[i]));
      }
      TRY(sock_tls_handshake(sc->tls[i], &sc->tls_done[i]));
    }
    ready += sent && (!sc->use_tls || sc->tls_done[i]);
  }
  if (ready < sc->nstreams) {
    *send_comm_p = NULL;
    return xcclSuccess;
  }
  socket_comm_t *c = socket_comm_new(1, sc->nstreams, sc->fds, sc->tls);
  if (!c) return err_set(xcclSystemError, LOG_NET, "out of memory for a socket comm");
  memset(sc->key, 0, sizeof(sc->key));
  free(sc);
  st->conn = NULL;
  *send_comm_p = c;
  return xcclSuccess;
}

static xcclResult_t socket_connect_abandon(void *handle) {
  socket_handle_state_t *st = (socket_handle_state_t *)(((net_handle_t *)handle)->data + NET_HANDLE_PUBLIC);
  if (st->conn) socket_connect_free(st->conn);
  st->conn = NULL;
  return xcclSuccess;
}

/* Reads a pending stream's header; admits it, drops it, or leaves it pending. */
static void socket_pending_progress(socket_listen_t *l, int k) {
  socket_pending_t *p = &l->pending[k];
  char s[SOCK_ADDR_STRLEN];
  err_quiet(1);
  xcclResult_t res = sock_recv_some(p->fd, &p->hdr, sizeof(p->hdr), &p->got);
  err_quiet(0);
  const char *why = NULL;
  if (res != xcclSuccess) {
    why = err_last();
  } else if (p->got < sizeof(p->hdr)) {
    return;
  } else if (p->hdr.magic != SOCKET_MAGIC || p->hdr.conn_id != l->conn_id) {
    why = "its header does not carry this connection's id";
  } else if (p->hdr.nstreams < 1 || p->hdr.nstreams > SOCKET_MAX_STREAMS || p->hdr.index >= p->hdr.nstreams ||
             (l->nstreams && (int)p->hdr.nstreams != l->nstreams) || l->fds[p->hdr.index] >= 0) {
    why = "its stream index or count is inconsistent";
  } else if (l->use_tls) {
    int done = 0;
    err_quiet(1);
    if (!p->tls) {
      char a[SOCK_ADDR_STRLEN], desc[SOCK_ADDR_STRLEN + 32];
      snprintf(desc, sizeof(desc), "%s (stream %u of %u)", sock_addr_str(&p->from, a, sizeof(a)), p->hdr.index + 1,
               p->hdr.nstreams);
      res = sock_tls_new(p->fd, 1, l->key, desc, &p->tls);
    }
    if (res == xcclSuccess) res = sock_tls_handshake(p->tls, &done);
    err_quiet(0);
    if (res != xcclSuccess)
      why = err_last();
    else if (!done)
      return;
  }
  if (why) {
    unsigned long nth;
    if (sock_refusal_first(&p->from, &nth))
      WARN(NET, "refused a connection from %s to the socket transport's port: %s (later ones from that host: INFO)",
           sock_addr_str(&p->from, s, sizeof(s)), why);
    else
      INFO(NET, "refused a connection from %s to the socket transport's port (#%lu from that host): %s",
           sock_addr_str(&p->from, s, sizeof(s)), nth, why);
    sock_tls_free(&p->tls);
    close(p->fd);
  } else {
    l->nstreams = (int)p->hdr.nstreams;
    l->fds[p->hdr.index] = p->fd;
    l->tls[p->hdr.index] = p->tls;
  }
  l->pending[k] = l->pending[--l->npending];
}

static xcclResult_t socket_accept(void *listen_comm, void **recv_comm_p) {
  socket_listen_t *l = listen_comm;
  for (;;) {
    int fd;
    sock_addr_t from;
    TRY(sock_accept(l->fd, &fd, &from));
    if (fd < 0) break;
    if (l->npending == SOCKET_MAX_PENDING) {
      char s[SOCK_ADDR_STRLEN];
      WARN(NET, "too many unidentified connections; dropped one from %s", sock_addr_str(&from, s, sizeof(s)));
      close(fd);
      continue;
    }
    l->pending[l->npending++] = (socket_pending_t){.fd = fd, .from = from};
  }
  for (int k = l->npending - 1; k >= 0; k--) socket_pending_progress(l, k);
  int have = 0;
  for (int i = 0; i < l->nstreams; i++) have += l->fds[i] >= 0;
  if (l->nstreams == 0 || have < l->nstreams) {
    *recv_comm_p = NULL;
    return xcclSuccess;
  }
  socket_comm_t *c = socket_comm_new(0, l->nstreams, l->fds, l->tls);
  if (!c) return err_set(xcclSystemError, LOG_NET, "out of memory for a socket comm");
  for (int i = 0; i < SOCKET_MAX_STREAMS; i++) l->fds[i] = -1, l->tls[i] = NULL;
  l->nstreams = 0;
  *recv_comm_p = c;
  return xcclSuccess;
}

/* The slice of a message of `size` bytes that stream i carries. */
static void socket_slice(size_t size, int nstreams, int i, size_t *off_p, size_t *len_p) {
  if (size < SOCKET_MIN_SPLIT || nstreams == 1) {
    *off_p = 0;
    *len_p = i == 0 ? size : 0;
    return;
  }
  size_t per = (size + (size_t)nstreams - 1) / (size_t)nstreams;
  per = (per + 4095) & ~(size_t)4095;
  size_t off = per * (size_t)i;
  *off_p = off < size ? off : size;
  *len_p = off < size ? (size - off < per ? size - off : per) : 0;
}

static xcclResult_t socket_failed(socket_comm_t *c) { return err_set(c->failed, LOG_NET, "%s", c->fail_msg); }

/* A receive is taken even after a stream failed: older receives may still
 * complete on the other streams, and the proxy posts into freed slots
 * before it tests them. The new one fails when tested (socket_test). */
static xcclResult_t socket_post(socket_comm_t *c, void *data, size_t size, void **req_p) {
  if (c->failed && c->is_send) return socket_failed(c);
  socket_req_t *r = &c->reqs[c->posted % NET_MAX_REQUESTS];
  if (r->in_use) {
    *req_p = NULL;
    return xcclSuccess;
  }
  *r = (socket_req_t){.comm = c, .seq = c->posted++, .in_use = 1, .data = data, .capacity = size};
  if (c->is_send) {
    r->size = size;
    r->size_known = 1;
    r->hdr = size;
  }
  *req_p = r;
  return xcclSuccess;
}

static xcclResult_t socket_isend(void *send_comm, void *data, size_t size, void *mh, void **req_p) {
  return socket_post(send_comm, data, size, req_p);
}

static xcclResult_t socket_irecv(void *recv_comm, void *data, size_t size, void *mh, void **req_p) {
  return socket_post(recv_comm, data, size, req_p);
}

static xcclResult_t socket_send_some(socket_comm_t *c, int i, const void *buf, size_t len, size_t *off_p) {
  return c->tls[i] ? sock_tls_send_some(c->tls[i], buf, len, off_p) : sock_send_some(c->fds[i], buf, len, off_p);
}

static xcclResult_t socket_recv_some(socket_comm_t *c, int i, void *buf, size_t len, size_t *off_p) {
  return c->tls[i] ? sock_tls_recv_some(c->tls[i], buf, len, off_p) : sock_recv_some(c->fds[i], buf, len, off_p);
}

/* Moves stream i's bytes of request r; returns with *done_p = 1 when its part
 * of r is complete. */
static xcclResult_t socket_stream_io(socket_comm_t *c, int i, socket_req_t *r, int *done_p) {
  int fd = c->fds[i];
  *done_p = 0;
  if (c->is_send && i == 0 && r->hdr_off < sizeof(r->hdr) && !c->tls[0]) { /* one sendmsg for both */
    size_t off, len;
    socket_slice(r->size, c->nstreams, 0, &off, &len);
    TRY(sock_send2_some(fd, &r->hdr, sizeof(r->hdr), &r->hdr_off, r->data + off, len, &c->off[0]));
    if (r->hdr_off < sizeof(r->hdr)) return xcclSuccess;
  }
  if (i == 0 && r->hdr_off < sizeof(r->hdr)) {
    if (c->is_send)
      TRY(socket_send_some(c, 0, &r->hdr, sizeof(r->hdr), &r->hdr_off));
    else
      TRY(socket_recv_some(c, 0, &r->hdr, sizeof(r->hdr), &r->hdr_off));
    if (r->hdr_off < sizeof(r->hdr)) return xcclSuccess;
    if (!c->is_send) {
      if (r->hdr > r->capacity)
        return err_set(xcclRemoteError, LOG_NET,
                       "the peer sent a %llu-byte message into a %zu-byte receive (corrupt stream or mismatched "
                       "operations)",
                       (unsigned long long)r->hdr, r->capacity);
      r->size = (size_t)r->hdr;
      r->size_known = 1;
    }
  }
  if (!r->size_known) return xcclSuccess; /* stream 0 has not read the length yet */
  size_t off, len;
  socket_slice(r->size, c->nstreams, i, &off, &len);
  if (c->is_send)
    TRY(socket_send_some(c, i, r->data + off, len, &c->off[i]));
  else
    TRY(socket_recv_some(c, i, r->data + off, len, &c->off[i]));
  *done_p = c->off[i] == len;
  return xcclSuccess;
}

/* Moves bytes on every stream. A stream that fails stops, but the others go
 * on: they may still complete older requests (a peer that closes right after
 * its last message). The first error is kept in the comm. */
static void socket_progress(socket_comm_t *c) {
  for (int i = 0; i < c->nstreams; i++) {
    while (!c->stream_failed[i] && c->cur[i] < c->posted) {
      socket_req_t *r = &c->reqs[c->cur[i] % NET_MAX_REQUESTS];
      int done;
      xcclResult_t res = socket_stream_io(c, i, r, &done);
      if (res != xcclSuccess) {
        if (!c->failed) {
          c->failed = res;
          snprintf(c->fail_msg, sizeof(c->fail_msg), "%s", err_last());
        }
        c->stream_failed[i] = 1;
        break;
      }
      if (!done) break;
      c->cur[i]++;
      c->off[i] = 0;
    }
  }
}

static xcclResult_t socket_test(void *req, int *done_p, size_t *size_p) {
  socket_req_t *r = req;
  socket_comm_t *c = r->comm;
  socket_progress(c);
  /* A request that completed before the comm failed is still complete: the
   * peer may close right after its last message, and that close must not
   * take the message with it. Nor may one stream's close fail a request
   * whose slices the other streams are still reading: the peer's close
   * reaches each stream after that stream's data, so a request fails only
   * when a stream it still needs has stopped. */
  for (int i = 0; i < c->nstreams; i++) {
    if (c->cur[i] <= r->seq) {
      if (c->stream_failed[i]) return socket_failed(c);
      *done_p = 0;
      return xcclSuccess;
    }
  }
  if (size_p) *size_p = r->size;
  r->in_use = 0;
  *done_p = 1;
  return xcclSuccess;
}

static xcclResult_t socket_close_comm(void *comm) {
  socket_comm_t *c = comm;
  if (!c) return xcclSuccess;
  for (int i = 0; i < c->nstreams; i++) {
    sock_tls_free(&c->tls[i]);
    sock_close(&c->fds[i]);
  }
  free(c);
  return xcclSuccess;
}

static xcclResult_t socket_shutdown(void *comm) {
  socket_comm_t *c = comm;
  for (int i = 0; c && i < c->nstreams; i++)
    if (c->fds[i] >= 0) shutdown(c->fds[i], SHUT_RDWR);
  return xcclSuccess;
}

static int socket_poll_fds(void *comm, int *fds, int max) {
  socket_comm_t *c = comm;
  int n = 0;
  for (int i = 0; i < c->nstreams; i++)
    if (c->tls[i] && sock_tls_pending(c->tls[i]) && c->cur[i] < c->posted)
      return 0; /* bytes already decrypted: poll() would not see them */
  short dir = c->is_send ? POLLOUT : POLLIN; /* what the proxy polls a comm's fds for */
  for (int i = 0; i < c->nstreams; i++)
    if (c->tls[i] && c->cur[i] < c->posted && sock_tls_events(c->tls[i], dir) != dir)
      return 0; /* OpenSSL waits for the other direction, which that poll would not watch */
  for (int i = 0; i < c->nstreams && n < max; i++)
    if (c->cur[i] < c->posted && (c->is_send || i == 0 || c->reqs[c->cur[i] % NET_MAX_REQUESTS].size_known))
      fds[n++] = c->fds[i]; /* streams that can move bytes now */
  return n;
}

static xcclResult_t socket_close_listen(void *listen_comm) {
  socket_listen_t *l = listen_comm;
  if (!l) return xcclSuccess;
  for (int k = 0; k < l->npending; k++) {
    sock_tls_free(&l->pending[k].tls);
    close(l->pending[k].fd);
  }
  for (int i = 0; i < SOCKET_MAX_STREAMS; i++) {
    sock_tls_free(&l->tls[i]);
    sock_close(&l->fds[i]);
  }
  sock_close(&l->fd);
  free(l);
  return xcclSuccess;
}

const xccl_net_ops_v1_t net_socket_ops = {
    .name = "socket",
    .init = socket_init,
    .devices = socket_devices,
    .get_properties = socket_get_properties,
    .listen = socket_listen,
    .connect = socket_connect,
    .accept = socket_accept,
    .isend = socket_isend,
    .irecv = socket_irecv,
    .test = socket_test,
    .close_send = socket_close_comm,
    .close_recv = socket_close_comm,
    .close_listen = socket_close_listen,
    .shutdown = socket_shutdown,
    .connect_abandon = socket_connect_abandon,
    .poll_fds = socket_poll_fds,
};
