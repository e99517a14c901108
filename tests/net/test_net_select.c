/*
 * test_net_select.c — which transport net_get() gives on a host without
 * verbs devices: socket by default (the ib transport says why once, at
 * INFO), and a clear error naming the cause when XCCL_NET=ib (or IB) asks
 * for ib. Skipped where a verbs device is up (the rxe VM covers that case).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "net.h"
#include "test_util.h"

static xcclResult_t get_with(const char *net, const xccl_net_ops_v1_t **ops_p) {
  if (net) setenv("XCCL_NET", net, 1);
  else unsetenv("XCCL_NET");
  config_reset_for_test();
  err_clear();
  return net_get(ops_p);
}

int main(void) {
  const xccl_net_ops_v1_t *ops = NULL;
  xcclResult_t r = get_with(NULL, &ops);
  CHECK(r == xcclSuccess, "net_get without XCCL_NET failed: %s", err_last());
  if (r == xcclSuccess && strcmp(ops->name, "socket") != 0) test_skip("a verbs device is up here: ib is the default");
  for (int i = 0; i < 2; i++) {
    const char *want = i ? "IB" : "ib";
    const xccl_net_ops_v1_t *o = NULL;
    r = get_with(want, &o);
    const char *msg = err_last();
    CHECK(r != xcclSuccess && o == NULL, "XCCL_NET=%s without a device succeeded", want);
#ifdef XCCL_HAVE_IB
    CHECK(strstr(msg, "no verbs devices") != NULL, "XCCL_NET=%s: the error does not name the cause: %s", want, msg);
#endif
    CHECK(strstr(msg, want) != NULL, "XCCL_NET=%s: the error does not name the setting: %s", want, msg);
    printf("XCCL_NET=%s: %s\n", want, msg);
  }
  r = get_with("socket", &ops);
  CHECK(r == xcclSuccess && strcmp(ops->name, "socket") == 0, "XCCL_NET=socket failed");
  return test_finish("test_net_select");
}
