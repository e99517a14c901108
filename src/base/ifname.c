/* ifname.c — which network interfaces are virtual (ifname.h). */
#include "ifname.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
  const char *prefix;
  const char *why;
} virtual_names[] = {
    {"docker", "a docker bridge"},     {"br-", "a docker network bridge"},
    {"veth", "a veth pair end"},       {"cali", "a calico interface"},
    {"flannel", "a flannel overlay"},  {"cni", "a CNI bridge"},
    {"virbr", "a libvirt bridge"},     {"vxlan", "a VXLAN overlay"},
    {"tun", "a tun device"},           {"tap", "a tap device"},
    {"weave", "a weave overlay"},      {"kube-", "a kubernetes interface"},
    {"dummy", "a dummy interface"},    {"lxc", "an LXC or cilium container link"},
    {"cilium_", "a cilium interface"}, {"podman", "a podman bridge"},
    {"vnet", "a libvirt guest's tap"},
};

static void say(char *why, size_t len, const char *text) {
  if (why && len) snprintf(why, len, "%s", text);
}

static int exists(const char *dir, const char *entry) {
  char p[512];
  struct stat st;
  snprintf(p, sizeof(p), "%s/%s", dir, entry);
  return lstat(p, &st) == 0;
}

static int has_lower_link(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e; !found && (e = readdir(d));) found = strncmp(e->d_name, "lower_", 6) == 0;
  closedir(d);
  return found;
}

int ifname_is_virtual(const char *name, const char *sysfs_root, char *why, size_t len) {
  if (!name || !*name) return IFNAME_REAL;
  for (size_t i = 0; i < sizeof(virtual_names) / sizeof(virtual_names[0]); i++) {
    if (strncmp(name, virtual_names[i].prefix, strlen(virtual_names[i].prefix)) == 0) {
      say(why, len, virtual_names[i].why);
      return IFNAME_VIRTUAL;
    }
  }
  /* Interface names hold no '/' and are never "." or ".."; a file's might. */
  if (!sysfs_root || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return IFNAME_REAL;
  char dir[512];
  struct stat st;
  snprintf(dir, sizeof(dir), "%s/class/net/%s", sysfs_root, name);
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return IFNAME_REAL; /* not on this machine: cannot tell */
  if (exists(dir, "device")) return IFNAME_REAL;
  if (exists(dir, "bridge")) {
    say(why, len, "a bridge");
    return IFNAME_VIRTUAL;
  }
  if (exists(dir, "tun_flags")) {
    say(why, len, "a tun/tap device");
    return IFNAME_VIRTUAL;
  }
  if (exists(dir, "bonding") || has_lower_link(dir)) return IFNAME_REAL;
  say(why, len, "no device in sysfs");
  return IFNAME_NO_DEVICE;
}
