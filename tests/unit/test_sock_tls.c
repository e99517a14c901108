/*
 * test_sock_tls.c — XCCL_TLS=1 on the socket transport over loopback, in one
 * process (net_socket_ops directly):
 *   - two ends with one key connect, and 3 MiB crosses bit for bit;
 *   - a client with another key fails connect() within seconds, with a
 *     sentence naming the peer, and the listener admits nothing;
 *   - a plaintext stranger that sends a valid stream header, then clear
 *     bytes, is refused (the listener closes it, admits nothing, and says it
 *     does not speak TLS);
 *   - the key derivation (bs_hkdf) against RFC 5869's test case 3, and keys
 *     for two labels or two secrets differ.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_msg.h"
#include "error.h"
#include "net.h"
#include "sock.h"
#include "test_util.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const xccl_net_ops_v1_t *ops = &net_socket_ops;

/* Connects with key_c to a listener with key_l; returns the connect error
 * (xcclSuccess when both ends got a comm within 10 s). */
static xcclResult_t try_pair(const uint8_t *key_l, const uint8_t *key_c, void **send_p, void **recv_p) {
  net_handle_t h, hc;
  void *listen = NULL, *send = NULL, *recv = NULL;
  net_session_key(key_l);
  XCHECK(ops->listen(0, &h, &listen));
  memset(&hc, 0, sizeof(hc));
  memcpy(hc.data, h.data, NET_HANDLE_PUBLIC);
  net_session_key(key_c);
  xcclResult_t res = xcclSuccess;
  double t0 = now_s();
  while ((!send || !recv) && now_s() - t0 < 10) {
    if (!send) {
      res = ops->connect(0, &hc, &send);
      if (res != xcclSuccess) break;
    }
    if (!recv) XCHECK(ops->accept(listen, &recv));
  }
  net_session_key(NULL);
  if (res != xcclSuccess) {
    ops->connect_abandon(&hc);
    /* the listener saw the handshake fail: it must admit nothing */
    for (int i = 0; i < 50 && !recv; i++) {
      XCHECK(ops->accept(listen, &recv));
      usleep(10000);
    }
    CHECK(recv == NULL, "the listener admitted a stream whose handshake failed");
  } else {
    CHECK(send && recv, "no connection within 10 s");
  }
  ops->close_listen(listen);
  *send_p = send;
  *recv_p = recv;
  return res;
}

static void test_same_key(void) {
  uint8_t key[NET_KEY_BYTES];
  memset(key, 7, sizeof(key));
  void *send, *recv;
  CHECK(try_pair(key, key, &send, &recv) == xcclSuccess, "connect with the listener's key failed: %s", err_last());
  if (!send || !recv) return;
  size_t n = 3u << 20;
  char *a = malloc(n), *b = calloc(1, n);
  for (size_t i = 0; i < n; i++) a[i] = (char)(i * 131 + 7);
  void *rs = NULL, *rr = NULL;
  XCHECK(ops->isend(send, a, n, NULL, &rs));
  XCHECK(ops->irecv(recv, b, n, NULL, &rr));
  int ds = 0, dr = 0;
  size_t got = 0;
  double t0 = now_s();
  while ((!ds || !dr) && now_s() - t0 < 20) {
    if (!ds) XCHECK(ops->test(rs, &ds, NULL));
    if (!dr) XCHECK(ops->test(rr, &dr, &got));
  }
  CHECK(ds && dr && got == n && memcmp(a, b, n) == 0, "3 MiB over TLS: done %d %d, %zu bytes, equal %d", ds, dr, got,
        memcmp(a, b, n) == 0);
  ops->close_send(send);
  ops->close_recv(recv);
  free(a);
  free(b);
}

static void test_wrong_key(void) {
  uint8_t kl[NET_KEY_BYTES], kc[NET_KEY_BYTES];
  memset(kl, 7, sizeof(kl));
  memset(kc, 8, sizeof(kc));
  void *send, *recv;
  double t0 = now_s();
  xcclResult_t res = try_pair(kl, kc, &send, &recv);
  double took = now_s() - t0;
  CHECK(res != xcclSuccess && send == NULL, "a client with another key connected");
  CHECK(took < 5, "the wrong key took %.1f s to be refused", took);
  const char *why = err_last();
  CHECK(strstr(why, "TLS handshake with 127.0.0.1") && strstr(why, "holds another key: it is not a rank"),
        "the refusal does not name the peer and the key: %s", why);
  printf("wrong key: refused in %.2f s: %s\n", took, why);
  if (send) ops->close_send(send);
  if (recv) ops->close_recv(recv);
}

/* The header a stream starts with (net_socket.c's socket_stream_hdr_t) and
 * the handle's public part (socket_handle_t): the stranger knows both. */
typedef struct {
  uint32_t magic, index, nstreams, pad;
  uint64_t conn_id;
} stream_hdr_t;
typedef struct {
  uint32_t magic, pad;
  uint64_t conn_id;
  sock_addr_t addr;
} handle_t;

static void test_plaintext_stranger(void) {
  uint8_t key[NET_KEY_BYTES];
  memset(key, 7, sizeof(key));
  net_handle_t h;
  void *listen = NULL, *admitted = NULL;
  net_session_key(key);
  XCHECK(ops->listen(0, &h, &listen));
  net_session_key(NULL);
  handle_t hd;
  memcpy(&hd, h.data, sizeof(hd));
  int fd = -1, done = 0;
  XCHECK(sock_connect_start(&hd.addr, &fd));
  double t0 = now_s();
  while (!done && now_s() - t0 < 5) XCHECK(sock_connect_poll(fd, &hd.addr, &done));
  stream_hdr_t sh = {.magic = hd.magic, .index = 0, .nstreams = 1, .conn_id = hd.conn_id};
  char clear[512];
  memset(clear, 'x', sizeof(clear));
  size_t off = 0, off2 = 0;
  XCHECK(sock_send_some(fd, &sh, sizeof(sh), &off));
  XCHECK(sock_send_some(fd, clear, sizeof(clear), &off2));
  int closed = 0;
  while (!closed && now_s() - t0 < 5) {
    XCHECK(ops->accept(listen, &admitted));
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
    closed = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    usleep(1000);
  }
  const char *why = err_last();
  CHECK(closed, "the listener did not close a plaintext stranger's stream");
  CHECK(admitted == NULL, "the listener admitted a plaintext stream");
  CHECK(strstr(why, "does not speak TLS"), "the refusal does not say the peer speaks plaintext: %s", why);
  printf("plaintext stranger: %s\n", why);
  sock_close(&fd);
  ops->close_listen(listen);
}

static void test_hkdf(void) {
  /* RFC 5869 A.3: IKM 22 x 0x0b, no salt, no info. */
  uint8_t ikm[22], okm[42];
  memset(ikm, 0x0b, sizeof(ikm));
  static const uint8_t want[42] = {0x8d, 0xa4, 0xe7, 0x75, 0xa5, 0x63, 0xc1, 0x8f, 0x71, 0x5f, 0x80, 0x2a, 0x06, 0x3c,
                                   0x5a, 0x31, 0xb8, 0xa1, 0x1f, 0x5c, 0x5e, 0xe1, 0x87, 0x9e, 0xc3, 0x45, 0x4e, 0x5f,
                                   0x3c, 0x73, 0x8d, 0x2d, 0x9d, 0x20, 0x13, 0x95, 0xfa, 0xa4, 0xb6, 0x1a, 0x96, 0xc8};
  CHECK(bs_hkdf(ikm, sizeof(ikm), "", okm, sizeof(okm)) == 0, "bs_hkdf failed");
  CHECK(memcmp(okm, want, sizeof(want)) == 0, "bs_hkdf differs from RFC 5869 test case 3");
  uint8_t s1[BS_SECRET_BYTES], s2[BS_SECRET_BYTES], k1[32], k2[32], k3[32];
  memset(s1, 1, sizeof(s1));
  memset(s2, 1, sizeof(s2));
  s2[31] = 2;
  bs_hkdf(s1, sizeof(s1), "xccl socket tls psk v1", k1, 32);
  bs_hkdf(s2, sizeof(s2), "xccl socket tls psk v1", k2, 32);
  bs_hkdf(s1, sizeof(s1), "another purpose", k3, 32);
  CHECK(memcmp(k1, k2, 32) != 0, "two secrets gave one key");
  CHECK(memcmp(k1, k3, 32) != 0, "two labels gave one key");
  CHECK(memcmp(k1, s1, 32) != 0, "the key is the secret");
}

int main(void) {
  test_hkdf();
  setenv("XCCL_TLS", "1", 1);
  if (!getenv("XCCL_SOCKET_IFNAME")) setenv("XCCL_SOCKET_IFNAME", "lo", 1);
  XCHECK(ops->init());
  test_same_key();
  test_wrong_key();
  test_plaintext_stranger();
  return test_finish("test_sock_tls");
}
