/* net_select.c — a network device per channel, nearest first (net_select.h). */
#include "comm_plan.h"
#include "net_select.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "config.h"
#include "ifname.h"
#include "log.h"
#include "topo.h"

int net_pick_devs(int ndev, const int *dev_numa, int my_numa, int nch, int *dev_of_channel) {
  int near[XCCL_MAX_CHANNELS * 4], nnear = 0;
  for (int d = 0; d < ndev && nnear < (int)(sizeof(near) / sizeof(near[0])); d++)
    if (my_numa >= 0 && dev_numa[d] == my_numa) near[nnear++] = d;
  if (nnear == 0) /* nothing on this domain, or nothing known: every device is as near */
    for (int d = 0; d < ndev && nnear < (int)(sizeof(near) / sizeof(near[0])); d++) near[nnear++] = d;
  for (int c = 0; c < nch; c++) dev_of_channel[c] = nnear ? near[c % nnear] : 0;
  return nch < nnear ? nch : nnear;
}

/* A topology NIC is named as its verbs device or interface; "mlx5_0:1" is
 * port 1 of mlx5_0. */
int net_topo_nic(const topo_system_t *sys, const net_props_t *p) {
  size_t len = strcspn(p->name, ":");
  for (int n = 0; sys && n < topo_nnics(sys); n++) {
    const char *name = topo_nic_name(sys, n);
    if (strlen(name) == len && strncmp(name, p->name, len) == 0) return n;
  }
  return -1;
}

int net_dev_numa(const topo_system_t *sys, const net_props_t *p) {
  int n = net_topo_nic(sys, p);
  if (n >= 0) return topo_nic_numa(sys, n);
  if (!p->pci_path[0]) return -1;
  char path[300];
  snprintf(path, sizeof(path), "%s/numa_node", p->pci_path);
  FILE *f = fopen(path, "r");
  int numa = -1;
  if (f) {
    if (fscanf(f, "%d", &numa) != 1) numa = -1;
    fclose(f);
  }
  return numa;
}

int net_real_devs(int ndev, const net_props_t *props, const char *sysfs_root, int *idx, char *skipped, size_t len) {
  /* Ranked real, no device, virtual; pass 0 finds the best rank there is,
   * pass 1 takes the devices of that rank. */
  static const int kind_rank[] = {[IFNAME_REAL] = 0, [IFNAME_NO_DEVICE] = 1, [IFNAME_VIRTUAL] = 2};
  int best = 3, n = 0;
  size_t off = 0;
  if (skipped && len) skipped[0] = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (int d = 0; d < ndev; d++) {
      char name[64], why[96] = "";
      snprintf(name, sizeof(name), "%.*s", (int)strcspn(props[d].name, ":"), props[d].name);
      int r = kind_rank[ifname_is_virtual(name, sysfs_root, why, sizeof(why))];
      if (pass == 0) {
        if (r < best) best = r;
      } else if (r == best) {
        idx[n++] = d;
      } else if (skipped && off + strlen(props[d].name) + strlen(why) + 8 < len) {
        off += (size_t)snprintf(skipped + off, len - off, "%s%s (%s)", off ? ", " : "", props[d].name, why);
      }
    }
  }
  return n;
}

xcclResult_t comm_pick_net_devs(struct xcclComm *comm) {
  int ndev = 0;
  for (int c = 0; c < XCCL_MAX_CHANNELS; c++) comm->chan_dev[c] = 0;
  if (comm->net->devices(&ndev) != xcclSuccess || ndev <= 1) return xcclSuccess; /* nothing to choose */
  int *numa = malloc(sizeof(int) * (size_t)ndev);
  net_props_t *props = calloc((size_t)ndev, sizeof(*props));
  if (!numa || !props) {
    free(numa);
    free(props);
    return err_set(xcclSystemError, LOG_INIT, "out of memory for %d network devices", ndev);
  }
  /* The topology init plans with (loaded once per process, comm_plan.c; a
   * file the user named that fails has failed init already). Without one,
   * the NUMA domains of the devices come from sysfs. */
  const topo_system_t *sys = comm_plan_topology();
  if (!sys) INFO(INIT, "no topology of this machine: NUMA domains of the network devices from sysfs only");
  for (int d = 0; d < ndev; d++) {
    if (comm->net->get_properties(d, &props[d]) != xcclSuccess) snprintf(props[d].name, sizeof(props[d].name), "%d", d);
    numa[d] = net_dev_numa(sys, &props[d]);
  }
  int my_numa = comm->peers[comm->rank].numa;
  /* Virtual interfaces (ifname.h) only when the transport has nothing else. */
  int *real = malloc(sizeof(int) * (size_t)ndev);
  char skipped[512];
  int nreal = real ? net_real_devs(ndev, props, "/sys", real, skipped, sizeof(skipped)) : 0;
  int used;
  if (nreal > 0 && nreal < ndev) {
    INFO(INIT, "rank %d: %s devices left out of the channels: %s", comm->rank, comm->net->name, skipped);
    for (int k = 0; k < nreal; k++) numa[k] = numa[real[k]]; /* real[] ascends: in place is safe */
    used = net_pick_devs(nreal, numa, my_numa, comm->nchannels, comm->chan_dev);
    for (int c = 0; c < comm->nchannels; c++) comm->chan_dev[c] = real[comm->chan_dev[c]];
  } else {
    used = net_pick_devs(ndev, numa, my_numa, comm->nchannels, comm->chan_dev);
  }
  free(real);
  char line[512];
  int n = 0;
  for (int c = 0; c < comm->nchannels && n < (int)sizeof(line) - 80; c++)
    n += snprintf(line + n, sizeof(line) - (size_t)n, " %d:%s", c, props[comm->chan_dev[c]].name);
  INFO(INIT, "rank %d: %s devices for %d channels (rank on NUMA %d; %d of %d devices used):%s", comm->rank,
       comm->net->name, comm->nchannels, my_numa, used, ndev, line);
  free(numa);
  free(props);
  return xcclSuccess;
}

/* Both ends must take the same channel's device, as a ring channel's two
 * ends do: with a network per rail (NIC i of every node on subnet i), NIC 0
 * of one rank cannot reach NIC 1 of another. The lower rank's channel is the
 * same number on both sides; where hosts hold G ranks each and G channels,
 * partners G apart (rd, Rabenseifner, hier's shard rings: the same GPU of
 * two hosts) then meet on that GPU's own rail, every rail carrying one pair,
 * where (rank + peer) put them all on even rails. */
int net_p2p_channel(int rank, int peer, int nchannels) {
  return nchannels > 0 ? (rank < peer ? rank : peer) % nchannels : 0;
}

int comm_p2p_dev(const struct xcclComm *comm, int peer) {
  return comm->nchannels > 0 ? comm->chan_dev[net_p2p_channel(comm->rank, peer, comm->nchannels)] : 0;
}
