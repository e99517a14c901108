#include "sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "error.h"
#include "ifname.h"
#include "log.h"

const char *sock_addr_str(const sock_addr_t *addr, char *buf, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr->sa.sa_family == AF_INET) {
    inet_ntop(AF_INET, &addr->sin.sin_addr, host, sizeof(host));
    snprintf(buf, len, "%s:%u", host, ntohs(addr->sin.sin_port));
  } else if (addr->sa.sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &addr->sin6.sin6_addr, host, sizeof(host));
    if (addr->sin6.sin6_scope_id)
      snprintf(buf, len, "[%s%%%u]:%u", host, addr->sin6.sin6_scope_id, ntohs(addr->sin6.sin6_port));
    else
      snprintf(buf, len, "[%s]:%u", host, ntohs(addr->sin6.sin6_port));
  } else {
    snprintf(buf, len, "(no address)");
  }
  return buf;
}

socklen_t sock_addr_len(const sock_addr_t *addr) {
  return addr->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

uint16_t sock_addr_port(const sock_addr_t *addr) {
  return ntohs(addr->sa.sa_family == AF_INET6 ? addr->sin6.sin6_port : addr->sin.sin_port);
}

void sock_addr_set_port(sock_addr_t *addr, uint16_t port) {
  if (addr->sa.sa_family == AF_INET6)
    addr->sin6.sin6_port = htons(port);
  else
    addr->sin.sin_port = htons(port);
}

xcclResult_t sock_addr_parse(const char *text, sock_addr_t *addr_p) {
  char host[256];
  const char *port;
  if (text[0] == '[') {
    const char *close = strchr(text, ']');
    if (!close || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
      return err_set(xcclInvalidArgument, LOG_NET, "address '%s' is not [ipv6]:port", text);
    memcpy(host, text + 1, (size_t)(close - text - 1));
    host[close - text - 1] = '\0';
    port = close + 2;
  } else {
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof(host) || strchr(text, ':') != colon)
      return err_set(xcclInvalidArgument, LOG_NET, "address '%s' is not host:port (IPv6 as [addr]:port)", text);
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    port = colon + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p <= 0 || p > 65535)
    return err_set(xcclInvalidArgument, LOG_NET, "address '%s': port '%s' is not in 1..65535", text, port);
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0 || !res)
    return err_set(xcclInvalidArgument, LOG_NET, "address '%s': cannot resolve '%s': %s", text, host, gai_strerror(rc));
  sock_addr_t a;
  memset(&a, 0, sizeof(a));
  memcpy(&a, res->ai_addr, res->ai_addrlen <= sizeof(a) ? res->ai_addrlen : sizeof(a));
  freeaddrinfo(res);
  sock_addr_set_port(&a, (uint16_t)p);
  *addr_p = a;
  return xcclSuccess;
}

int sock_ifname_match(const char *filter, const char *name) {
  int exclude = filter[0] == '^';
  if (exclude) filter++;
  int exact = filter[0] == '=';
  if (exact) filter++;
  int hit = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", filter);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && !hit; tok = strtok_r(NULL, ",", &save))
    hit = exact ? strcmp(tok, name) == 0 : strncmp(tok, name, strlen(tok)) == 0;
  return exclude ? !hit : hit;
}

static void note_skipped(char *skipped, size_t size, const char *name, const char *why) {
  char item[160];
  snprintf(item, sizeof(item), "%s (%s)", name, why);
  for (const char *p = skipped; (p = strstr(p, item)); p++)
    if ((p == skipped || p[-1] == ' ') && (p[strlen(item)] == ',' || p[strlen(item)] == 0)) return;
  size_t len = strlen(skipped);
  if (len + strlen(item) + 3 >= size) return;
  snprintf(skipped + len, size - len, "%s%s", len ? ", " : "", item);
}

/* Ranks of the auto-pick, IPv6 one more than IPv4. */
enum { RANK_DEVICE = 0, RANK_NO_DEVICE = 5, RANK_LOOPBACK = 10 };

/* Lower is better; -1 = not eligible. An interface XCCL_SOCKET_IFNAME names
 * (a prefix or =name) is taken whatever it is; otherwise virtual ones
 * (ifname.h) never are, one that sysfs shows without a device only before
 * loopback, and loopback last (with "^eth" too: a rail on loopback would
 * reach this host itself). */
static int interface_rank(const struct ifaddrs *ifa, const char *filter, int family, const char *sysfs_root,
                          sock_iface_list_t *list) {
  if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP)) return -1;
  int fam = ifa->ifa_addr->sa_family;
  if (fam != AF_INET && fam != AF_INET6) return -1;
  if (family && fam != family) return -1;
  int loop = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
  if (fam == AF_INET6) {
    const struct in6_addr *a6 = &((const struct sockaddr_in6 *)ifa->ifa_addr)->sin6_addr;
    if (IN6_IS_ADDR_LINKLOCAL(a6) && !*filter) return -1; /* needs a scope: only when asked for */
  }
  int v6 = fam == AF_INET ? 0 : 1;
  if (*filter && !sock_ifname_match(filter, ifa->ifa_name)) return -1;
  if (*filter && filter[0] != '^') return v6; /* named: chosen as it is */
  if (loop) return RANK_LOOPBACK + v6;        /* an exclusion list leaves it the last resort */
  char why[96];
  int kind = ifname_is_virtual(ifa->ifa_name, sysfs_root, why, sizeof(why));
  if (kind == IFNAME_VIRTUAL) {
    note_skipped(list->skipped, sizeof(list->skipped), ifa->ifa_name, why);
    return -1;
  }
  return (kind == IFNAME_NO_DEVICE ? RANK_NO_DEVICE : RANK_DEVICE) + v6;
}

void sock_rank_interfaces(const struct ifaddrs *ifaddrs, const char *filter, int family, const char *sysfs_root,
                          sock_iface_list_t *list_p) {
  /* The best address of each interface (the first at its best rank). */
  struct {
    const struct ifaddrs *ifa;
    int rank, pos;
  } seen[SOCK_MAX_IFACES * 4], tmp;
  int nseen = 0, best_class = 1 << 30, pos = 0;
  memset(list_p, 0, sizeof(*list_p));
  for (const struct ifaddrs *ifa = ifaddrs; ifa; ifa = ifa->ifa_next, pos++) {
    int r = interface_rank(ifa, filter, family, sysfs_root, list_p);
    if (r < 0) continue;
    int i = 0;
    while (i < nseen && strcmp(seen[i].ifa->ifa_name, ifa->ifa_name) != 0) i++;
    if (i == nseen) {
      if (nseen == (int)(sizeof(seen) / sizeof(seen[0]))) continue;
      seen[nseen++].rank = 1 << 30;
    }
    if (r < seen[i].rank) seen[i].ifa = ifa, seen[i].rank = r, seen[i].pos = pos;
    if (r / 5 * 5 < best_class) best_class = r / 5 * 5;
  }
  /* In the order of those best addresses, so that the first is the entry a
   * plain "first at the best rank" pick would take. */
  for (int i = 1; i < nseen; i++)
    for (int j = i; j > 0 && seen[j - 1].pos > seen[j].pos; j--)
      tmp = seen[j], seen[j] = seen[j - 1], seen[j - 1] = tmp;
  /* Those at the best class, IPv4 ones first (the pick's preference), each
   * family in order of appearance; loopback only alone. */
  for (int v6 = 0; v6 <= 1; v6++)
    for (int i = 0; i < nseen && list_p->n < SOCK_MAX_IFACES; i++) {
      if (seen[i].rank != best_class + v6) continue;
      if (best_class == RANK_LOOPBACK && list_p->n > 0) break;
      sock_iface_t *d = &list_p->ifaces[list_p->n++];
      const struct sockaddr *sa = seen[i].ifa->ifa_addr;
      memcpy(&d->addr, sa, sa->sa_family == AF_INET6 ? sizeof(d->addr.sin6) : sizeof(d->addr.sin));
      sock_addr_set_port(&d->addr, 0);
      snprintf(d->name, sizeof(d->name), "%s", seen[i].ifa->ifa_name);
    }
  list_p->no_device = list_p->n > 0 && best_class == RANK_NO_DEVICE;
}

/* Said once per process: the picks of the unique id, the bootstrap and the
 * socket transport see the same interfaces. */
static atomic_int said_skipped, said_no_device;

xcclResult_t sock_list_interfaces(sock_iface_list_t *list_p) {
  const char *filter = config_str(CFG_SOCKET_IFNAME);
  const char *fam_s = config_str(CFG_SOCKET_FAMILY);
  int family = 0;
  if (strcasecmp(fam_s, "AF_INET") == 0)
    family = AF_INET;
  else if (strcasecmp(fam_s, "AF_INET6") == 0)
    family = AF_INET6;
  else if (*fam_s)
    return err_set(xcclInvalidArgument, LOG_NET, "XCCL_SOCKET_FAMILY=%s is not AF_INET or AF_INET6", fam_s);
  struct ifaddrs *ifaddrs;
  if (getifaddrs(&ifaddrs) != 0) return err_set(xcclSystemError, LOG_NET, "getifaddrs failed: %s", strerror(errno));
  sock_iface_list_t *list = malloc(sizeof(*list));
  if (!list) {
    freeifaddrs(ifaddrs);
    return err_set(xcclSystemError, LOG_NET, "out of memory for the interface list");
  }
  sock_rank_interfaces(ifaddrs, filter, family, "/sys", list);
  freeifaddrs(ifaddrs);
  if (list->skipped[0] && !atomic_exchange(&said_skipped, 1))
    INFO(NET, "network interface auto-pick skips virtual interfaces: %s (XCCL_SOCKET_IFNAME can name one)",
         list->skipped);
  if (list->no_device && !atomic_exchange(&said_no_device, 1))
    INFO(NET,
         "network interface %s has no device in sysfs (a container's veth, a dummy...): chosen because no "
         "interface with a device is up; XCCL_SOCKET_IFNAME chooses another",
         list->ifaces[0].name);
  if (list->n == 0) {
    xcclResult_t r = err_set(xcclSystemError, LOG_NET,
                             "no network interface matches XCCL_SOCKET_IFNAME='%s' XCCL_SOCKET_FAMILY='%s'%s%s%s; "
                             "`ip addr` lists the interfaces that are up",
                             filter, fam_s, list->skipped[0] ? " (left out as virtual: " : "", list->skipped,
                             list->skipped[0] ? ")" : "");
    free(list);
    return r;
  }
  *list_p = *list;
  free(list);
  return xcclSuccess;
}

xcclResult_t sock_pick_interface(sock_addr_t *addr_p, char *ifname_p, size_t ifname_len) {
  sock_iface_list_t list;
  TRY(sock_list_interfaces(&list));
  snprintf(ifname_p, ifname_len, "%s", list.ifaces[0].name);
  *addr_p = list.ifaces[0].addr;
  return xcclSuccess;
}

static xcclResult_t sock_setup(int fd) {
  int one = 1;
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
    return err_set(xcclSystemError, LOG_NET, "fcntl on socket failed: %s", strerror(errno));
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return xcclSuccess;
}

xcclResult_t sock_listen(sock_addr_t *addr, int *fd_p) {
  char s[SOCK_ADDR_STRLEN];
  int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return err_set(xcclSystemError, LOG_NET, "socket() failed: %s", strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sock_addr_t bound = *addr;
  socklen_t len = sock_addr_len(&bound);
  if (bind(fd, &bound.sa, len) != 0 || listen(fd, 1024) != 0 || getsockname(fd, &bound.sa, &len) != 0) {
    xcclResult_t r = err_set(xcclSystemError, LOG_NET, "cannot listen on %s: %s", sock_addr_str(addr, s, sizeof(s)),
                             strerror(errno));
    close(fd);
    return r;
  }
  xcclResult_t r = sock_setup(fd);
  if (r != xcclSuccess) {
    close(fd);
    return r;
  }
  *addr = bound;
  *fd_p = fd;
  return xcclSuccess;
}

xcclResult_t sock_accept(int listen_fd, int *fd_p, sock_addr_t *peer_p) {
  sock_addr_t peer;
  socklen_t len = sizeof(peer);
  memset(&peer, 0, sizeof(peer));
  int fd = accept4(listen_fd, &peer.sa, &len, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
      *fd_p = -1;
      return xcclSuccess;
    }
    return err_set(xcclSystemError, LOG_NET, "accept failed: %s", strerror(errno));
  }
  xcclResult_t r = sock_setup(fd);
  if (r != xcclSuccess) {
    close(fd);
    return r;
  }
  if (peer_p) *peer_p = peer;
  *fd_p = fd;
  return xcclSuccess;
}

xcclResult_t sock_connect_start(const sock_addr_t *addr, int *fd_p) {
  char s[SOCK_ADDR_STRLEN];
  int fd = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return err_set(xcclSystemError, LOG_NET, "socket() failed: %s", strerror(errno));
  xcclResult_t r = sock_setup(fd);
  if (r != xcclSuccess) {
    close(fd);
    return r;
  }
  if (connect(fd, &addr->sa, sock_addr_len(addr)) != 0 && errno != EINPROGRESS) {
    r = err_set(xcclSystemError, LOG_NET, "connect to %s failed: %s", sock_addr_str(addr, s, sizeof(s)),
                strerror(errno));
    close(fd);
    return r;
  }
  *fd_p = fd;
  return xcclSuccess;
}

xcclResult_t sock_connect_poll(int fd, const sock_addr_t *addr, int *done_p) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int n = poll(&p, 1, 0);
  if (n == 0) {
    *done_p = 0;
    return xcclSuccess;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  char a[SOCK_ADDR_STRLEN];
  if (err)
    return err_set(xcclRemoteError, LOG_NET, "connect to %s failed: %s", sock_addr_str(addr, a, sizeof(a)),
                   strerror(err));
  *done_p = 1;
  return xcclSuccess;
}

xcclResult_t sock_send_some(int fd, const void *buf, size_t len, size_t *off_p) {
  while (*off_p < len) {
    ssize_t n = send(fd, (const char *)buf + *off_p, len - *off_p, MSG_NOSIGNAL);
    if (n > 0) {
      *off_p += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return xcclSuccess;
    if (n < 0 && errno == EINTR) continue;
    return err_set(xcclRemoteError, LOG_NET, "send failed: %s", n < 0 ? strerror(errno) : "no progress");
  }
  return xcclSuccess;
}

xcclResult_t sock_recv_some(int fd, void *buf, size_t len, size_t *off_p) {
  while (*off_p < len) {
    ssize_t n = recv(fd, (char *)buf + *off_p, len - *off_p, 0);
    if (n > 0) {
      *off_p += (size_t)n;
      continue;
    }
    if (n == 0)
      return err_set(xcclRemoteError, LOG_NET,
                     "connection closed by the peer (it exited, aborted, or gave up after a failure of its own)");
    if (errno == EAGAIN || errno == EWOULDBLOCK) return xcclSuccess;
    if (errno == EINTR) continue;
    return err_set(xcclRemoteError, LOG_NET, "recv failed: %s", strerror(errno));
  }
  return xcclSuccess;
}

xcclResult_t sock_send2_some(int fd, const void *hdr, size_t hlen, size_t *hoff_p, const void *body, size_t blen,
                             size_t *boff_p) {
  while (*hoff_p < hlen) {
    struct iovec iov[2] = {{(char *)hdr + *hoff_p, hlen - *hoff_p}, {(char *)body + *boff_p, blen - *boff_p}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = blen > *boff_p ? 2 : 1};
    ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return xcclSuccess;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return err_set(xcclRemoteError, LOG_NET, "send failed: %s", n < 0 ? strerror(errno) : "no progress");
    size_t h = (size_t)n < hlen - *hoff_p ? (size_t)n : hlen - *hoff_p;
    *hoff_p += h;
    *boff_p += (size_t)n - h;
  }
  return sock_send_some(fd, body, blen, boff_p);
}

typedef xcclResult_t (*sock_io_fn)(int, void *, size_t, size_t *);

static xcclResult_t sock_io_all(int fd, void *buf, size_t len, short events, sock_io_fn io, uint64_t deadline_ns,
                                const volatile int *abort_flag) {
  size_t off = 0;
  for (;;) {
    TRY(io(fd, buf, len, &off));
    if (off == len) return xcclSuccess;
    if (abort_flag && *abort_flag) return err_set(xcclRemoteError, LOG_NET, "aborted while waiting on a socket");
    if (clock_expired(deadline_ns))
      return err_set(xcclTimeout, LOG_NET, "timed out after %zu of %zu bytes (XCCL_TIMEOUT=%g s)", off, len,
                     config_double(CFG_TIMEOUT));
    struct pollfd p = {.fd = fd, .events = events};
    poll(&p, 1, clock_ms_left(deadline_ns, 100));
  }
}

static xcclResult_t send_adapter(int fd, void *buf, size_t len, size_t *off) {
  return sock_send_some(fd, buf, len, off);
}

xcclResult_t sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, const volatile int *abort_flag) {
  return sock_io_all(fd, (void *)buf, len, POLLOUT, send_adapter, deadline_ns, abort_flag);
}

xcclResult_t sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns, const volatile int *abort_flag) {
  return sock_io_all(fd, buf, len, POLLIN, sock_recv_some, deadline_ns, abort_flag);
}

xcclResult_t sock_connect_retry(const sock_addr_t *addr, int *fd_p, uint64_t deadline_ns,
                                const volatile int *abort_flag) {
  char s[SOCK_ADDR_STRLEN];
  int delay_ms = 10;
  for (;;) {
    int fd = -1, done = 0;
    err_quiet(1);
    xcclResult_t r = sock_connect_start(addr, &fd);
    while (r == xcclSuccess && !done) {
      r = sock_connect_poll(fd, addr, &done);
      if (r == xcclSuccess && !done) {
        if (clock_expired(deadline_ns) || (abort_flag && *abort_flag)) break;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, clock_ms_left(deadline_ns, 100));
      }
    }
    err_quiet(0);
    if (r == xcclSuccess && done) {
      *fd_p = fd;
      return xcclSuccess;
    }
    if (fd >= 0) close(fd);
    if (abort_flag && *abort_flag) return err_set(xcclRemoteError, LOG_NET, "aborted while connecting");
    if (clock_expired(deadline_ns))
      return err_set(xcclTimeout, LOG_NET, "could not connect to %s within XCCL_TIMEOUT=%g s (last error: %s)",
                     sock_addr_str(addr, s, sizeof(s)), config_double(CFG_TIMEOUT), err_last());
    struct timespec ts = {0, (long)clock_ms_left(deadline_ns, delay_ms) * 1000000L};
    nanosleep(&ts, NULL);
    if (delay_ms < 500) delay_ms *= 2;
  }
}

void sock_close(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* ---- Refusals: one WARN per source host ---- */

#define REFUSAL_HOSTS 64
static struct {
  uint8_t ip[16];
  unsigned long n;
} refusals[REFUSAL_HOSTS];
static int refusals_used, refusals_next;
static pthread_mutex_t refusals_lock = PTHREAD_MUTEX_INITIALIZER;

int sock_refusal_first(const sock_addr_t *addr, unsigned long *nth_p) {
  uint8_t ip[16] = {0};
  if (addr->sa.sa_family == AF_INET6)
    memcpy(ip, &addr->sin6.sin6_addr, 16);
  else
    memcpy(ip, &addr->sin.sin_addr, 4);
  pthread_mutex_lock(&refusals_lock);
  int k = 0;
  while (k < refusals_used && memcmp(refusals[k].ip, ip, 16) != 0) k++;
  if (k == refusals_used) { /* new: a free entry, or the oldest one's */
    k = refusals_used < REFUSAL_HOSTS ? refusals_used++ : refusals_next++ % REFUSAL_HOSTS;
    memcpy(refusals[k].ip, ip, 16);
    refusals[k].n = 0;
  }
  unsigned long n = ++refusals[k].n;
  pthread_mutex_unlock(&refusals_lock);
  if (nth_p) *nth_p = n;
  return n == 1;
}
