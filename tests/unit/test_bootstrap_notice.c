/*
 * test_bootstrap_notice.c — the one plaintext frame a TLS bootstrap acceptor
 * takes (bootstrap_conn.c, BS_MISMATCH_PLAIN_PEER): a BS_FAIL notice from a
 * peer that runs without XCCL_TLS. The root fails every rank with its text,
 * so a notice that anyone could write would let a stranger stop a job.
 *
 * Over a socket pair, with XCCL_TLS=1: the acceptor sends its preamble and
 * nonce (conn_accepted); the test, playing the plaintext peer, answers with
 * a BS_FAIL frame and checks what conn_read makes of it:
 *   - under the job's secret and the preamble's nonce: taken (ready, type
 *     BS_FAIL), which shows the path is reached;
 *   - under another secret (a stranger without the job's key): refused,
 *     "failed authentication";
 *   - under the job's secret but another nonce (a notice replayed from
 *     another connection): refused the same way;
 *   - a plaintext frame of another type under the right key: refused, only
 *     a notice is taken in clear.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_conn.h"
#include "bootstrap_msg.h"
#include "clock.h"
#include "error.h"
#include "test_util.h"

static uint8_t secret[BS_SECRET_BYTES];

/* What conn_read made of the peer's frame: outcome 1 taken (type is the
 * frame's), -1 refused (why says why), 0 neither within 2 s. */
typedef struct {
  int outcome;
  unsigned type;
  char why[512];
} verdict_t;

/* Opens a TLS acceptor on one end of a socket pair, reads its preamble on
 * the other end, sends a frame built with key and nonce_override (NULL: the
 * preamble's nonce), and reads it with conn_read. */
static verdict_t notice(bs_type_t type, const uint8_t *key, const uint8_t *nonce_override) {
  verdict_t v = {0};
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv)) exit(1);
  bs_conn_t acc = {.fd = sv[0], .accepted_ns = clock_ns()};
  XCHECK(conn_accepted(&acc, secret, clock_deadline(2.0)));
  uint8_t pre[BS_HDR_BYTES + BS_NONCE_BYTES];
  XCHECK(sock_recv_all(sv[1], pre, sizeof(pre), clock_deadline(2.0), NULL));
  CHECK(memcmp(pre, "XCBS", 4) == 0, "the acceptor sent no TLS preamble");
  static const char text[] = "bootstrap: the root is going away (forged or not)";
  uint8_t payload[4 + sizeof(text)] = {(uint8_t)xcclInvalidUsage};
  memcpy(payload + 4, text, sizeof(text));
  uint8_t frame[BS_HDR_BYTES + sizeof(payload) + BS_MAC_BYTES];
  bs_frame_build(frame, type, payload, sizeof(payload), key, nonce_override ? nonce_override : pre + BS_HDR_BYTES);
  XCHECK(sock_send_all(sv[1], frame, sizeof(frame), clock_deadline(2.0), NULL));
  uint64_t deadline = clock_deadline(2.0);
  int ready = 0;
  while (!v.outcome && !clock_expired(deadline)) {
    if (conn_read(&acc, secret, acc.nonce, &ready, v.why, sizeof(v.why)) != 0)
      v.outcome = -1;
    else if (ready)
      v.outcome = 1, v.type = acc.h.type;
    else
      usleep(1000);
  }
  conn_close(&acc);
  close(sv[1]);
  return v;
}

int main(void) {
  setenv("XCCL_TLS", "1", 1); /* before the configuration is first read */
  unsetenv("XCCL_TLS_CERT");
  CHECK(bs_random(secret, sizeof(secret)) == 0, "no random bytes for the secret");
  uint8_t stranger[BS_SECRET_BYTES], other_nonce[BS_NONCE_BYTES];
  memcpy(stranger, secret, sizeof(stranger));
  stranger[0] ^= 1;
  memset(other_nonce, 0x33, sizeof(other_nonce));

  verdict_t v = notice(BS_FAIL, secret, NULL);
  CHECK(v.outcome == 1 && v.type == BS_FAIL, "an authentic notice was not taken (outcome %d): %s", v.outcome, v.why);

  v = notice(BS_FAIL, stranger, NULL);
  CHECK(v.outcome == -1 && strstr(v.why, "failed authentication"),
        "a notice under another secret was not refused as unauthentic (outcome %d): %s", v.outcome, v.why);
  printf("forged notice: %s\n", v.why);

  v = notice(BS_FAIL, secret, other_nonce);
  CHECK(v.outcome == -1 && strstr(v.why, "failed authentication"),
        "a notice under another nonce was not refused (outcome %d): %s", v.outcome, v.why);

  v = notice(BS_HELLO, secret, NULL);
  CHECK(v.outcome == -1 && strstr(v.why, "only a notice is taken in clear"),
        "a plaintext hello was taken where TLS runs (outcome %d): %s", v.outcome, v.why);
  return test_finish("test_bootstrap_notice");
}
