/*
 * sock.h — TCP helpers shared by the bootstrap and the socket transport.
 *
 * Sockets are non-blocking, close-on-exec, with TCP_NODELAY. The *_some
 * calls move what they can without blocking and advance *off_p; the *_all
 * calls loop with poll() until done, the deadline passes, or *abort_flag
 * becomes non-zero. Every failure records a sentence with err_set (the OS
 * reason included); callers prefix who the peer was.
 */
#ifndef XCCL_NET_SOCK_H
#define XCCL_NET_SOCK_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xccl.h"

typedef union {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
} sock_addr_t;

#define SOCK_ADDR_STRLEN 80

/* "1.2.3.4:5" or "[::1]:5" (with %scope for link-local). Returns buf. */
const char *sock_addr_str(const sock_addr_t *addr, char *buf, size_t len);
/* Whether a refused connection from addr's host (its address, any port) is
 * the first from there in this process: WARN it then, INFO the rest, so
 * hostile or garbage traffic cannot flood the log. Remembers the last 64
 * hosts; thread-safe. *nth_p: how many from that host so far (1 the first). */
int sock_refusal_first(const sock_addr_t *addr, unsigned long *nth_p);
socklen_t sock_addr_len(const sock_addr_t *addr);
uint16_t sock_addr_port(const sock_addr_t *addr);
void sock_addr_set_port(sock_addr_t *addr, uint16_t port);

/* Parses "host:port", "[v6]:port" or "v6addr" + default_port; resolves host
 * names with getaddrinfo. */
xcclResult_t sock_addr_parse(const char *text, sock_addr_t *addr_p);

#define SOCK_MAX_IFACES 16 /* devices the socket transport offers at most (NCCL's bound) */
#define SOCK_IFNAME_LEN 64

typedef struct {
  sock_addr_t addr; /* port 0 */
  char name[SOCK_IFNAME_LEN];
} sock_iface_t;

typedef struct {
  int n;
  sock_iface_t ifaces[SOCK_MAX_IFACES];
  int no_device;     /* taken only because no interface with a device is up */
  char skipped[512]; /* virtual interfaces left out: "docker0 (a docker bridge), ..." */
} sock_iface_list_t;

struct ifaddrs;

/*
 * The interfaces to use, chosen by XCCL_SOCKET_IFNAME / XCCL_SOCKET_FAMILY,
 * or automatically: those up, not loopback and not virtual (bridges, veth,
 * docker, calico, overlays, tun/tap: ifname.h's rules, said once per
 * process at INFO); if none, those that sysfs shows without a device (a
 * container's eth0, a dummy); else loopback, alone. An XCCL_SOCKET_IFNAME
 * that names interfaces (prefixes, or =exact) takes every one it matches
 * whatever they are; an exclusion list (^...) still leaves out virtual ones.
 * One entry per interface (its first IPv4 address, else its first IPv6
 * one), those with IPv4 first, in getifaddrs order; at most
 * SOCK_MAX_IFACES. Writes *list_p only on success (n >= 1); no interface is
 * an error naming the settings.
 */
xcclResult_t sock_list_interfaces(sock_iface_list_t *list_p);

/* The ranking behind sock_list_interfaces, over any list (getifaddrs's, or
 * a test's): sysfs_root as ifname_is_virtual takes it ("/sys", a captured
 * tree, or NULL to judge by name only). Fills *list_p (n may be 0); logs
 * nothing. */
void sock_rank_interfaces(const struct ifaddrs *ifaddrs, const char *filter, int family, const char *sysfs_root,
                          sock_iface_list_t *list_p);

/* The first of sock_list_interfaces: the address to listen on for the
 * bootstrap and the unique id. Port is 0. ifname_p receives the interface
 * name. */
xcclResult_t sock_pick_interface(sock_addr_t *addr_p, char *ifname_p, size_t ifname_len);

/* Does `name` pass the filter? ("eth,ib": prefixes; "=eth0": exact; "^x": exclude). */
int sock_ifname_match(const char *filter, const char *name);

/* Listening socket bound to *addr (port 0 picks one); writes the bound
 * address back to *addr. */
xcclResult_t sock_listen(sock_addr_t *addr, int *fd_p);
/* Accepts one pending connection, or writes -1 when none is pending. */
xcclResult_t sock_accept(int listen_fd, int *fd_p, sock_addr_t *peer_p);
/* Starts a non-blocking connect. */
xcclResult_t sock_connect_start(const sock_addr_t *addr, int *fd_p);
/* *done_p = 1 once connected, 0 while pending; an error naming addr when refused. */
xcclResult_t sock_connect_poll(int fd, const sock_addr_t *addr, int *done_p);

/* Progress without blocking. A closed connection is xcclRemoteError. */
xcclResult_t sock_send_some(int fd, const void *buf, size_t len, size_t *off_p);
xcclResult_t sock_recv_some(int fd, void *buf, size_t len, size_t *off_p);
/* Like sock_send_some for a header followed by a body, in one system call
 * where the socket takes both; *hoff_p and *boff_p advance. */
xcclResult_t sock_send2_some(int fd, const void *hdr, size_t hlen, size_t *hoff_p, const void *body, size_t blen,
                             size_t *boff_p);

/* Blocking with a deadline (clock_ns() based) and an optional abort flag. */
xcclResult_t sock_send_all(int fd, const void *buf, size_t len, uint64_t deadline_ns, const volatile int *abort_flag);
xcclResult_t sock_recv_all(int fd, void *buf, size_t len, uint64_t deadline_ns, const volatile int *abort_flag);
/* Connects, retrying refused connections until the deadline (the listener
 * may not be up yet). */
xcclResult_t sock_connect_retry(const sock_addr_t *addr, int *fd_p, uint64_t deadline_ns,
                                const volatile int *abort_flag);

void sock_close(int *fd);

#endif
