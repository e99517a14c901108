/*
 * test_ifname.c — which interfaces are virtual (src/base/ifname.c): every
 * name rule with its reason, names that must stay real, and the sysfs rules
 * on trees built here in a temporary folder (with and without a `device`
 * link, a bridge, a tun/tap, a bond, a VLAN over a real port).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ifname.h"
#include "test_util.h"

static void expect(const char *name, const char *root, int kind, const char *why_part) {
  char why[96] = "(unset)";
  int k = ifname_is_virtual(name, root, why, sizeof(why));
  CHECK(k == kind, "%s: kind %d, want %d (why: %s)", name, k, kind, why);
  if (why_part) CHECK(strstr(why, why_part) != NULL, "%s: reason '%s' lacks '%s'", name, why, why_part);
  if (kind == IFNAME_REAL) CHECK(strcmp(why, "(unset)") == 0, "%s: real but reason written: '%s'", name, why);
}

static void test_names(void) {
  static const struct {
    const char *name, *why;
  } v[] = {{"docker0", "docker bridge"},
           {"br-3e8f2a9c1d4b", "docker network bridge"},
           {"veth5a1c9e2", "veth pair end"},
           {"cali8d2e1c4f7a0", "calico"},
           {"flannel.1", "flannel"},
           {"cni0", "CNI"},
           {"virbr0", "libvirt bridge"},
           {"vxlan.calico", "VXLAN"},
           {"tun0", "tun"},
           {"tap3", "tap"},
           {"weave", "weave"},
           {"kube-ipvs0", "kubernetes"},
           {"dummy0", "dummy"},
           {"lxc1234abcd", "LXC"},
           {"cilium_host", "cilium"},
           {"podman0", "podman"},
           {"vnet0", "libvirt"}};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    expect(v[i].name, NULL, IFNAME_VIRTUAL, v[i].why);
    expect(v[i].name, "/nonexistent", IFNAME_VIRTUAL, v[i].why); /* names win before sysfs */
  }
  static const char *real[] = {"eth0",  "eno1", "ens1f0np0", "enp65s0f1", "ib0",   "mlx5_0", "mlx5_bond_0",
                               "bond0", "br0",  "em1",       "hsi0",      "wlan0", ""};
  for (size_t i = 0; i < sizeof(real) / sizeof(real[0]); i++) expect(real[i], NULL, IFNAME_REAL, NULL);
  CHECK(ifname_is_virtual(NULL, NULL, NULL, 0) == IFNAME_REAL, "NULL name");
  CHECK(ifname_is_virtual("veth0", NULL, NULL, 0) == IFNAME_VIRTUAL, "NULL why");
}

static char root[256];

static void mk(const char *rel) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", root, rel);
  CHECK(mkdir(p, 0755) == 0, "mkdir %s", p);
}
static void touch(const char *rel) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", root, rel);
  FILE *f = fopen(p, "w");
  CHECK(f != NULL, "create %s", p);
  if (f) fclose(f);
}
static void link_to(const char *target, const char *rel) {
  char p[512];
  snprintf(p, sizeof(p), "%s/%s", root, rel);
  CHECK(symlink(target, p) == 0, "symlink %s", p);
}

static void test_sysfs(void) {
  snprintf(root, sizeof(root), "%s/xccl-ifname-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(root)) {
    CHECK(0, "mkdtemp %s", root);
    return;
  }
  mk("class");
  mk("class/net");
  mk("devices");
  mk("devices/0000:3b:00.0");
  /* A port with its PCI device, as the kernel shows one. */
  mk("class/net/eth0");
  link_to("../../../devices/0000:3b:00.0", "class/net/eth0/device");
  /* A container's eth0 end of a veth, or a dummy with another name: no device. */
  mk("class/net/eth1");
  touch("class/net/eth1/address");
  /* A bridge without a telling name; a tun/tap; a bond; a VLAN over eth0. */
  mk("class/net/xbr0");
  mk("class/net/xbr0/bridge");
  mk("class/net/xtun");
  touch("class/net/xtun/tun_flags");
  mk("class/net/bond0");
  mk("class/net/bond0/bonding");
  mk("class/net/eth0.100");
  link_to("../eth0", "class/net/eth0.100/lower_eth0");
  /* A name rule wins even with a device link. */
  mk("class/net/veth9");
  link_to("../../../devices/0000:3b:00.0", "class/net/veth9/device");

  expect("eth0", root, IFNAME_REAL, NULL);
  expect("eth1", root, IFNAME_NO_DEVICE, "no device in sysfs");
  expect("xbr0", root, IFNAME_VIRTUAL, "a bridge");
  expect("xtun", root, IFNAME_VIRTUAL, "tun/tap");
  expect("bond0", root, IFNAME_REAL, NULL);
  expect("eth0.100", root, IFNAME_REAL, NULL);
  expect("veth9", root, IFNAME_VIRTUAL, "veth pair end");
  expect("eth7", root, IFNAME_REAL, NULL);        /* not in this tree: cannot tell */
  expect("eth1", NULL, IFNAME_REAL, NULL);        /* no sysfs: names only */
  expect("../net/eth1", root, IFNAME_REAL, NULL); /* a file's name with '/' never walks the tree */
  /* The same tree without the device link: the port becomes "no device". */
  char p[512];
  snprintf(p, sizeof(p), "%s/class/net/eth0/device", root);
  CHECK(unlink(p) == 0, "unlink %s", p);
  expect("eth0", root, IFNAME_NO_DEVICE, "no device in sysfs");
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
  CHECK(system(cmd) == 0, "%s", cmd);
}

int main(void) {
  test_names();
  test_sysfs();
  return test_finish("topo_ifname");
}
