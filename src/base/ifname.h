/*
 * ifname.h — is a network interface virtual? The one rule the socket
 * auto-pick (src/net/sock.c), the channels' NICs (src/topo, src/core) and
 * xccl-topo share.
 *
 * Virtual here means the interface cannot carry traffic off this host by
 * itself: a bridge, one end of a veth pair, an overlay or a tunnel. They are
 * never chosen automatically; XCCL_SOCKET_IFNAME can still name one.
 * Loopback is not judged here (callers keep it as the last resort).
 */
#ifndef XCCL_BASE_IFNAME_H
#define XCCL_BASE_IFNAME_H

#include <stddef.h>

typedef enum {
  IFNAME_REAL = 0,      /* a device, or nothing says otherwise */
  IFNAME_VIRTUAL = 1,   /* virtual by its name or by what sysfs shows: never chosen automatically */
  IFNAME_NO_DEVICE = 2, /* sysfs shows no device, and it is no kind named above (a container's
                           veth called eth0, a dummy not called dummy*): a last resort only */
} ifname_kind_t;

/*
 * Judges interface `name`:
 * - by name: docker* ("a docker bridge"), br-* (docker network bridge),
 *   veth* ("a veth pair end"), cali* (calico), flannel*, cni*, virbr*
 *   (libvirt), vxlan*, tun*, tap*, weave*, kube-*, dummy*, lxc* (LXC and
 *   cilium's container links), cilium_*, podman*, vnet* (libvirt guests'
 *   taps) -> IFNAME_VIRTUAL;
 * - then, when sysfs_root is not NULL ("/sys" on a live machine, a captured
 *   tree in tests) and sysfs_root/class/net/<name> exists: a `device` link
 *   -> IFNAME_REAL; a `bridge` folder -> IFNAME_VIRTUAL ("a bridge"); a
 *   `tun_flags` file -> IFNAME_VIRTUAL ("a tun/tap device"); a `bonding`
 *   folder or a `lower_*` link (a bond, VLAN or macvlan over other
 *   interfaces, whose traffic leaves by the devices below) -> IFNAME_REAL;
 *   anything else -> IFNAME_NO_DEVICE ("no device in sysfs").
 * - otherwise IFNAME_REAL.
 * Returns the kind; why (may be NULL) gets the reason when the kind is not
 * IFNAME_REAL, and is left alone otherwise. Reads only; thread-safe.
 */
int ifname_is_virtual(const char *name, const char *sysfs_root, char *why, size_t len);

#endif
