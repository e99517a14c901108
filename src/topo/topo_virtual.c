/*
 * topo_virtual.c — network interfaces the graph leaves out because they are
 * virtual (the rule is ifname.h's, shared with the socket auto-pick), and
 * the list of them that xccl-topo shows.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ifname.h"
#include "log.h"
#include "topo_graph.h"
#include "topo_load.h"

static void record(topo_system_t *sys, const char *name, const char *why) {
  int kept = sys->nexcluded < TOPO_MAX_EXCLUDED ? sys->nexcluded : TOPO_MAX_EXCLUDED;
  for (int i = 0; i < kept; i++)
    if (strcmp(sys->excluded[i].name, name) == 0) return;
  if (sys->nexcluded < TOPO_MAX_EXCLUDED) {
    snprintf(sys->excluded[sys->nexcluded].name, sizeof(sys->excluded[0].name), "%s", name);
    snprintf(sys->excluded[sys->nexcluded].why, sizeof(sys->excluded[0].why), "%s", why);
  }
  sys->nexcluded++;
}

int topo_exclude_virtual(topo_system_t *sys, const char *name, const char *sysfs_root) {
  char why[64];
  if (ifname_is_virtual(name, sysfs_root, why, sizeof(why)) == IFNAME_REAL) return 0;
  INFO(TOPO, "%s: NIC %s left out: %s, never a channel's NIC", sys->source, name, why);
  record(sys, name, why);
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct topo_excluded_s *)a)->name, ((const struct topo_excluded_s *)b)->name);
}

void topo_exclude_live_interfaces(topo_system_t *sys, const char *sysfs_root) {
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/class/net", sysfs_root);
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0) continue;
    char why[64];
    int kind = ifname_is_virtual(e->d_name, sysfs_root, why, sizeof(why));
    if (kind == IFNAME_NO_DEVICE) snprintf(why, sizeof(why), "no device in sysfs (the socket auto-pick's last resort)");
    if (kind != IFNAME_REAL) record(sys, e->d_name, why);
  }
  closedir(d);
  /* readdir's order is the kernel's: by name, so the list reads the same on every run. */
  int kept = sys->nexcluded < TOPO_MAX_EXCLUDED ? sys->nexcluded : TOPO_MAX_EXCLUDED;
  qsort(sys->excluded, (size_t)kept, sizeof(sys->excluded[0]), by_name);
}

int topo_nexcluded(const topo_system_t *sys) { return sys ? sys->nexcluded : 0; }

const char *topo_excluded_name(const topo_system_t *sys, int i) {
  return sys && i >= 0 && i < sys->nexcluded && i < TOPO_MAX_EXCLUDED ? sys->excluded[i].name : "";
}

const char *topo_excluded_why(const topo_system_t *sys, int i) {
  return sys && i >= 0 && i < sys->nexcluded && i < TOPO_MAX_EXCLUDED ? sys->excluded[i].why : "";
}
