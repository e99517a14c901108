/*
 * net_select.h — which network device each ring channel and each
 * point-to-point peer uses: the devices nearest the rank (same NUMA domain,
 * as the topology or, failing it, sysfs says), taken in turn, so a node with
 * a NIC per socket sends each rank's traffic through its own socket's NIC and
 * a rank with several near NICs spreads its channels over them.
 */
#ifndef XCCL_CORE_NET_SELECT_H
#define XCCL_CORE_NET_SELECT_H

#include "net.h"
#include "topo.h"
#include "xccl.h"

struct xcclComm;

/* The choice itself, a pure function: device of channel c for c < nch, from
 * ndev devices whose NUMA domains are dev_numa[] (-1 unknown). Devices on
 * my_numa are used in turn; when none is (or my_numa is -1), all are.
 * Returns how many devices the channels use. */
int net_pick_devs(int ndev, const int *dev_numa, int my_numa, int nch, int *dev_of_channel);

/* Which of the ndev devices (props[]) channels may use: those that are no
 * virtual interface (ifname.h, by name and, with sysfs_root, sysfs; "mlx5_0:1"
 * judged as mlx5_0); when there is none, those sysfs only shows without a
 * device; when none either, all. Writes their indices to idx[] in order and
 * returns how many; skipped (may be NULL) gets "name (why), ..." of the
 * others, cut at len. */
int net_real_devs(int ndev, const net_props_t *props, const char *sysfs_root, int *idx, char *skipped, size_t len);

/* The topology's NIC that is net device p (by name: "mlx5_0:1" is port 1
 * of mlx5_0), or -1; sys may be NULL. */
int net_topo_nic(const topo_system_t *sys, const net_props_t *p);

/* The NUMA domain of net device p: the topology's NIC of the same name
 * (sys may be NULL), else the kernel's numa_node of its PCI device; -1. */
int net_dev_numa(const topo_system_t *sys, const net_props_t *p);

/* Fills comm->chan_dev[] for comm->nchannels channels from the transport's
 * devices (comm->net set), logging the choice at INFO when there is one. */
xcclResult_t comm_pick_net_devs(struct xcclComm *comm);

/* The channel whose device a point-to-point connection between rank and
 * peer takes, the same at both ends: min(rank, peer) % nchannels. */
int net_p2p_channel(int rank, int peer, int nchannels);
/* The device for point-to-point connections with peer: this rank's device
 * of channel net_p2p_channel(rank, peer). */
int comm_p2p_dev(const struct xcclComm *comm, int peer);

#endif
