/*
 * netns_ifpick.c — what the interface auto-pick chooses here: prints
 *   pick IFNAME ADDRESS        (sock_pick_interface, the socket transport's)
 *   uniqueid ADDRESS           (where xcclGetUniqueId's bootstrap root listens)
 * for tests/netns/test_ifpick.sh. Exit 1 when either fails.
 */
#include <stdio.h>

#include "bootstrap_msg.h"
#include "sock.h"
#include "xccl.h"

int main(void) {
  sock_addr_t a;
  char ifname[64], s[SOCK_ADDR_STRLEN];
  if (sock_pick_interface(&a, ifname, sizeof(ifname)) != xcclSuccess) {
    fprintf(stderr, "sock_pick_interface: %s\n", xcclGetLastError(NULL));
    return 1;
  }
  printf("pick %s %s\n", ifname, sock_addr_str(&a, s, sizeof(s)));
  xcclUniqueId uid;
  bs_id_t id;
  char why[128];
  if (xcclGetUniqueId(&uid) != xcclSuccess) {
    fprintf(stderr, "xcclGetUniqueId: %s\n", xcclGetLastError(NULL));
    return 1;
  }
  if (bs_id_decode(&uid, &id, why, sizeof(why)) != 0) {
    fprintf(stderr, "bs_id_decode: %s\n", why);
    return 1;
  }
  printf("uniqueid %s\n", sock_addr_str(&id.root, s, sizeof(s)));
  fflush(stdout);
  return 0;
}
