/*
 * test_sock_list.c — the socket transport's devices: sock_rank_interfaces
 * over made-up getifaddrs lists (sock.h), and on this machine that
 * sock_pick_interface is the first of sock_list_interfaces.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock.h"
#include "test_util.h"

#define MAX_ENTRIES 64

/* A getifaddrs list of our own. */
typedef struct {
  struct ifaddrs ifa[MAX_ENTRIES];
  sock_addr_t addr[MAX_ENTRIES];
  char name[MAX_ENTRIES][IFNAMSIZ];
  int n;
} fake_list_t;

static void add(fake_list_t *l, const char *name, const char *ip, unsigned flags) {
  int i = l->n++;
  memset(&l->addr[i], 0, sizeof(l->addr[i]));
  if (strchr(ip, ':')) {
    l->addr[i].sin6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, ip, &l->addr[i].sin6.sin6_addr);
  } else {
    l->addr[i].sin.sin_family = AF_INET;
    inet_pton(AF_INET, ip, &l->addr[i].sin.sin_addr);
  }
  snprintf(l->name[i], IFNAMSIZ, "%s", name);
  l->ifa[i] = (struct ifaddrs){.ifa_name = l->name[i], .ifa_flags = flags, .ifa_addr = &l->addr[i].sa};
  if (i > 0) l->ifa[i - 1].ifa_next = &l->ifa[i];
}

#define UP (IFF_UP | IFF_RUNNING)
#define LOOP (IFF_UP | IFF_RUNNING | IFF_LOOPBACK)

/* "name=ip name=ip ..." of the list. */
static const char *names(const sock_iface_list_t *list) {
  static char out[1024];
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < list->n; i++) {
    char host[INET6_ADDRSTRLEN] = "?";
    const sock_addr_t *a = &list->ifaces[i].addr;
    inet_ntop(a->sa.sa_family,
              a->sa.sa_family == AF_INET6 ? (const void *)&a->sin6.sin6_addr : (const void *)&a->sin.sin_addr, host,
              sizeof(host));
    len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s=%s", i ? " " : "", list->ifaces[i].name, host);
  }
  return out;
}

static void expect(const fake_list_t *l, const char *filter, int family, const char *sysfs, const char *want) {
  sock_iface_list_t list;
  sock_rank_interfaces(l->n ? &l->ifa[0] : NULL, filter, family, sysfs, &list);
  CHECK(strcmp(names(&list), want) == 0, "filter '%s': got '%s', want '%s'", filter, names(&list), want);
  for (int i = 0; i < list.n; i++)
    CHECK(sock_addr_port(&list.ifaces[i].addr) == 0, "%s: port is not 0", list.ifaces[i].name);
}

/* A host with two rails, loopback, a docker bridge and a veth. */
static void two_rails(void) {
  fake_list_t l = {.n = 0};
  add(&l, "lo", "127.0.0.1", LOOP);
  add(&l, "xr0", "10.1.0.1", UP);
  add(&l, "docker0", "172.17.0.1", UP);
  add(&l, "xr1", "10.2.0.1", UP);
  add(&l, "vethab12", "169.254.9.1", UP);
  add(&l, "xr0", "10.1.0.9", UP); /* a second address: still one device */
  add(&l, "lo", "::1", LOOP);
  add(&l, "xr0", "fd00::1", UP);
  add(&l, "xr1", "fe80::1", UP);
  expect(&l, "xr", 0, NULL, "xr0=10.1.0.1 xr1=10.2.0.1");
  expect(&l, "=xr1,xr0", 0, NULL, "xr0=10.1.0.1 xr1=10.2.0.1"); /* getifaddrs order, not the filter's */
  expect(&l, "=xr1", 0, NULL, "xr1=10.2.0.1");
  expect(&l, "xr", AF_INET6, NULL, "xr0=fd00::1 xr1=fe80::1"); /* named: link-local too */
  expect(&l, "", 0, NULL, "xr0=10.1.0.1 xr1=10.2.0.1");        /* auto: both, no bridge, veth or lo */
  expect(&l, "^xr1", 0, NULL, "xr0=10.1.0.1");                 /* loopback still last */
  expect(&l, "^xr", 0, NULL, "lo=127.0.0.1");
  expect(&l, "docker", 0, NULL, "docker0=172.17.0.1"); /* named: taken whatever it is */
  expect(&l, "eth", 0, NULL, "");
  sock_iface_list_t list;
  sock_rank_interfaces(&l.ifa[0], "", 0, NULL, &list);
  CHECK(strstr(list.skipped, "docker0 (") && strstr(list.skipped, "vethab12 ("), "skipped: '%s'", list.skipped);
  CHECK(!list.no_device, "real devices flagged as no-device");
}

/* Interfaces that are down, and IPv6-only ones after the IPv4 ones. */
static void families(void) {
  fake_list_t l = {.n = 0};
  add(&l, "eth0", "fd00::2", UP);            /* only IPv6, listed first */
  add(&l, "eth1", "192.0.2.1", IFF_RUNNING); /* down */
  add(&l, "eth2", "198.51.100.1", UP);
  add(&l, "eth3", "fe80::3", UP); /* link-local only: needs a filter */
  expect(&l, "", 0, NULL, "eth2=198.51.100.1 eth0=fd00::2");
  expect(&l, "", AF_INET6, NULL, "eth0=fd00::2");
  expect(&l, "", AF_INET, NULL, "eth2=198.51.100.1");
  expect(&l, "eth", 0, NULL, "eth2=198.51.100.1 eth0=fd00::2 eth3=fe80::3");
}

/* Loopback only as the last resort, and alone. */
static void last_resort(void) {
  fake_list_t l = {.n = 0};
  add(&l, "lo", "127.0.0.1", LOOP);
  add(&l, "docker0", "172.17.0.1", UP);
  add(&l, "lo2", "127.0.0.2", LOOP);
  expect(&l, "", 0, NULL, "lo=127.0.0.1");
  expect(&l, "lo", 0, NULL, "lo=127.0.0.1 lo2=127.0.0.2");
  fake_list_t none = {.n = 0};
  expect(&none, "", 0, NULL, "");
}

/* No-device interfaces (sysfs shows none) only when no real one is up. */
static void no_device(void) {
  char root[] = "/tmp/xccl_sock_list_XXXXXX", p[256];
  if (!mkdtemp(root)) {
    CHECK(0, "mkdtemp failed");
    return;
  }
  const char *dirs[] = {"class", "class/net", "class/net/eth0", "class/net/eth1", "class/net/eth1/device"};
  for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
    snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
    CHECK(mkdir(p, 0755) == 0, "mkdir %s", p);
  }
  fake_list_t l = {.n = 0};
  add(&l, "lo", "127.0.0.1", LOOP);
  add(&l, "eth0", "10.0.0.1", UP); /* no device */
  add(&l, "eth1", "10.0.1.1", UP); /* a device */
  expect(&l, "", 0, root, "eth1=10.0.1.1");
  sock_iface_list_t list;
  l.n = 2, l.ifa[1].ifa_next = NULL;
  sock_rank_interfaces(&l.ifa[0], "", 0, root, &list);
  CHECK(list.n == 1 && strcmp(list.ifaces[0].name, "eth0") == 0 && list.no_device, "no-device fallback: '%s' (%d)",
        names(&list), list.no_device);
  for (int i = (int)(sizeof(dirs) / sizeof(dirs[0])) - 1; i >= 0; i--) {
    snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
    rmdir(p);
  }
  rmdir(root);
}

/* At most SOCK_MAX_IFACES devices, the first ones. */
static void bound(void) {
  fake_list_t l = {.n = 0};
  char name[16], ip[32];
  for (int i = 0; i < SOCK_MAX_IFACES + 4; i++) {
    snprintf(name, sizeof(name), "xr%d", i);
    snprintf(ip, sizeof(ip), "10.%d.0.1", i + 1);
    add(&l, name, ip, UP);
  }
  sock_iface_list_t list;
  sock_rank_interfaces(&l.ifa[0], "xr", 0, NULL, &list);
  CHECK(list.n == SOCK_MAX_IFACES, "%d devices", list.n);
  CHECK(strcmp(list.ifaces[SOCK_MAX_IFACES - 1].name, "xr15") == 0, "last is %s",
        list.ifaces[SOCK_MAX_IFACES - 1].name);
}

/* On this machine (XCCL_SOCKET_IFNAME=lo under ctest): the bootstrap's pick
 * is the transport's device 0. */
static void live(void) {
  sock_iface_list_t list;
  sock_addr_t addr;
  char ifname[64];
  XCHECK(sock_list_interfaces(&list));
  XCHECK(sock_pick_interface(&addr, ifname, sizeof(ifname)));
  CHECK(list.n >= 1 && strcmp(list.ifaces[0].name, ifname) == 0, "pick %s, list '%s'", ifname, names(&list));
  CHECK(memcmp(&list.ifaces[0].addr, &addr, sizeof(addr)) == 0, "pick and list differ in address");
}

int main(void) {
  two_rails();
  families();
  last_resort();
  no_device();
  bound();
  live();
  return test_finish("test_sock_list");
}
