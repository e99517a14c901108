/*
 * test_tls_stream.c — sock_tls over socket pairs in one process, each case
 * in a child of its own (the TLS contexts are made once per process, from
 * the configuration the child sets):
 *   - a replayed record: the test relays the bytes between the two ends,
 *     delivers one application record, then the same record again; the
 *     reader fails with a sentence, and the data arrives once;
 *   - certificates (XCCL_TLS_CERT/KEY/CA, made here with the openssl
 *     command, in a temporary folder): signed by the CA, the handshake
 *     completes and data crosses; an expired certificate, a missing file,
 *     or a peer signed by another CA are refused with a sentence naming
 *     the host (this one, or the peer) and the file;
 *   - the job binding with certificates: two ends whose certificates the
 *     CA signed but whose keys differ (ranks of two jobs) both fail, each
 *     with a sentence naming its peer and "not this job's secret", well
 *     within the 10 s the test allows (nothing waits for the other);
 *   - sock_tls_events: a client whose handshake waits for the server's
 *     answer asks for POLLIN though the caller would write, and a writer
 *     whose socket is full asks for POLLOUT though the caller would read.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "sock_tls.h"
#include "test_util.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Client and server ends, and the relay's two fds between them. */
typedef struct {
  int cli, cli_relay, srv, srv_relay;
  sock_tls_t *c, *s;
} pair_t;

/* Moves what is waiting from one relay fd to the other; returns the
 * bytes moved, copied into log (of cap bytes) when given. */
static size_t relay(int from, int to, uint8_t *log, size_t cap) {
  uint8_t buf[65536];
  ssize_t n = recv(from, buf, sizeof(buf), 0);
  if (n <= 0) return 0;
  if (log) memcpy(log, buf, (size_t)n < cap ? (size_t)n : cap);
  size_t off = 0;
  while (off < (size_t)n) {
    ssize_t w = send(to, buf + off, (size_t)n - off, MSG_NOSIGNAL);
    if (w > 0) off += (size_t)w;
  }
  return (size_t)n;
}

static void pair_open_keys(pair_t *p, const uint8_t key_c[NET_KEY_BYTES], const uint8_t key_s[NET_KEY_BYTES]) {
  int a[2], b[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b))
    exit(1);
  *p = (pair_t){.cli = a[0], .cli_relay = a[1], .srv = b[0], .srv_relay = b[1]};
  XCHECK(sock_tls_new(p->cli, 0, key_c, "the server end", &p->c));
  XCHECK(sock_tls_new(p->srv, 1, key_s, "the client end", &p->s));
}

static void pair_open(pair_t *p, const uint8_t key[NET_KEY_BYTES]) { pair_open_keys(p, key, key); }

/* Runs both handshakes through the relay; returns the first error (its
 * sentence in err_last), xcclSuccess once both ended, within 10 s. */
static xcclResult_t pair_handshake(pair_t *p) {
  int cdone = 0, sdone = 0;
  double t0 = now_s();
  while (!(cdone && sdone) && now_s() - t0 < 10) {
    if (!cdone) TRY(sock_tls_handshake(p->c, &cdone));
    relay(p->cli_relay, p->srv_relay, NULL, 0);
    if (!sdone) TRY(sock_tls_handshake(p->s, &sdone));
    relay(p->srv_relay, p->cli_relay, NULL, 0);
    usleep(1000);
  }
  return cdone && sdone ? xcclSuccess : err_set(xcclTimeout, LOG_NET, "the handshake took over 10 s");
}

static void pair_close(pair_t *p) {
  sock_tls_free(&p->c);
  sock_tls_free(&p->s);
  close(p->cli), close(p->cli_relay), close(p->srv), close(p->srv_relay);
}

/* Reads up to len bytes on the server end for at most 2 s. */
static xcclResult_t srv_read(pair_t *p, char *buf, size_t len, size_t *off_p) {
  double t0 = now_s();
  xcclResult_t r = xcclSuccess;
  while (r == xcclSuccess && *off_p < len && now_s() - t0 < 2) {
    r = sock_tls_recv_some(p->s, buf, len, off_p);
    usleep(1000);
  }
  return r;
}

static int case_replay(void) {
  uint8_t key[NET_KEY_BYTES], record[4096];
  memset(key, 0x5a, sizeof(key));
  pair_t p;
  pair_open(&p, key);
  XCHECK(pair_handshake(&p));
  static const char msg[] = "one record, to be delivered once";
  size_t off = 0;
  XCHECK(sock_tls_send_some(p.c, msg, sizeof(msg), &off));
  usleep(10000);
  size_t n = relay(p.cli_relay, p.srv_relay, record, sizeof(record));
  CHECK(n > sizeof(msg) && n <= sizeof(record), "the record has %zu bytes", n);
  char got[sizeof(msg)];
  size_t goff = 0;
  XCHECK(srv_read(&p, got, sizeof(got), &goff));
  CHECK(goff == sizeof(msg) && memcmp(got, msg, sizeof(msg)) == 0, "the first record did not arrive whole");
  if (send(p.srv_relay, record, n, MSG_NOSIGNAL) != (ssize_t)n) CHECK(0, "could not replay the record");
  goff = 0;
  err_quiet(1);
  xcclResult_t r = srv_read(&p, got, sizeof(got), &goff);
  err_quiet(0);
  CHECK(r != xcclSuccess, "the replayed record was taken (%zu bytes delivered)", goff);
  CHECK(goff == 0, "the replayed record delivered %zu bytes again", goff);
  CHECK(strstr(err_last(), "the client end") && strstr(err_last(), "corrupt or forged"),
        "the refusal does not name the peer and say the stream is forged: %s", err_last());
  printf("replayed record: %s\n", err_last());
  pair_close(&p);
  return test_finish("test_tls_stream replay");
}

static const char *dir;

static void use_certs(const char *cert, const char *key, const char *ca) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, cert);
  setenv("XCCL_TLS_CERT", path, 1);
  snprintf(path, sizeof(path), "%s/%s", dir, key);
  setenv("XCCL_TLS_KEY", path, 1);
  snprintf(path, sizeof(path), "%s/%s", dir, ca);
  setenv("XCCL_TLS_CA", path, 1);
}

static int case_cert_good(void) {
  uint8_t key[NET_KEY_BYTES] = {0};
  use_certs("rank.pem", "rank.key", "ca.pem");
  pair_t p;
  pair_open(&p, key);
  XCHECK(pair_handshake(&p));
  static const char msg[] = "over certificates";
  size_t off = 0, goff = 0;
  char got[sizeof(msg)];
  XCHECK(sock_tls_send_some(p.c, msg, sizeof(msg), &off));
  usleep(10000);
  relay(p.cli_relay, p.srv_relay, NULL, 0);
  XCHECK(srv_read(&p, got, sizeof(got), &goff));
  CHECK(goff == sizeof(msg) && memcmp(got, msg, sizeof(msg)) == 0, "the data did not cross");
  pair_close(&p);
  return test_finish("test_tls_stream certificates");
}

/* Ranks of two jobs under one CA: the handshake completes, the binding
 * fails on both ends. Each end is stepped until it fails or ends. */
static int case_cert_other_job(void) {
  uint8_t key_c[NET_KEY_BYTES], key_s[NET_KEY_BYTES];
  memset(key_c, 0x11, sizeof(key_c));
  memset(key_s, 0x22, sizeof(key_s));
  use_certs("rank.pem", "rank.key", "ca.pem");
  pair_t p;
  pair_open_keys(&p, key_c, key_s);
  int cdone = 0, sdone = 0;
  xcclResult_t rc = xcclSuccess, rs = xcclSuccess;
  char wc[1024] = "", ws[1024] = "";
  double t0 = now_s();
  err_quiet(1);
  while (!((cdone || rc) && (sdone || rs)) && now_s() - t0 < 10) {
    if (!cdone && !rc && (rc = sock_tls_handshake(p.c, &cdone)) != xcclSuccess) snprintf(wc, sizeof(wc), "%s", err_last());
    relay(p.cli_relay, p.srv_relay, NULL, 0);
    if (!sdone && !rs && (rs = sock_tls_handshake(p.s, &sdone)) != xcclSuccess) snprintf(ws, sizeof(ws), "%s", err_last());
    relay(p.srv_relay, p.cli_relay, NULL, 0);
    usleep(1000);
  }
  err_quiet(0);
  double took = now_s() - t0;
  CHECK(rc != xcclSuccess && !cdone, "the client end took a peer of another job (done %d)", cdone);
  CHECK(rs != xcclSuccess && !sdone, "the server end took a peer of another job (done %d)", sdone);
  CHECK(strstr(wc, "the server end") && strstr(wc, "not this job's secret"), "client's sentence: %s", wc);
  CHECK(strstr(ws, "the client end") && strstr(ws, "not this job's secret"), "server's sentence: %s", ws);
  CHECK(took < 5, "the refusal took %.1f s", took);
  printf("another job, client side: %s\nanother job, server side: %s\n", wc, ws);
  pair_close(&p);
  return test_finish("test_tls_stream another job");
}

/* A stream refused with a sentence holding each of want[]. */
static int case_cert_refused(const char *label, const char *cert, const char *ca, const char *want0,
                             const char *want1) {
  uint8_t key[NET_KEY_BYTES] = {0};
  use_certs(cert, "rank.key", ca);
  int a[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a)) return 1;
  sock_tls_t *t = NULL;
  err_quiet(1);
  xcclResult_t r = sock_tls_new(a[0], 0, key, "the server end", &t);
  err_quiet(0);
  if (r == xcclSuccess) { /* made: the refusal must come in the handshake */
    sock_tls_free(&t);
    close(a[0]), close(a[1]);
    pair_t p;
    pair_open(&p, key);
    err_quiet(1);
    r = pair_handshake(&p);
    err_quiet(0);
    pair_close(&p);
  }
  CHECK(r != xcclSuccess, "%s: taken", label);
  CHECK(strstr(err_last(), want0) && strstr(err_last(), want1), "%s: the sentence lacks \"%s\" or \"%s\": %s", label,
        want0, want1, err_last());
  printf("%s: %s\n", label, err_last());
  return test_finish(label);
}

static int make_certs(void) {
  char cmd[4096];
  snprintf(cmd, sizeof(cmd),
           "(cd %s && P='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes' && "
           "openssl req -x509 $P -keyout ca.key -out ca.pem -subj /CN=xccl-test-ca -days 2 && "
           "openssl req -x509 $P -keyout other.key -out other.pem -subj /CN=xccl-other-ca -days 2 && "
           "openssl req $P -keyout rank.key -out rank.csr -subj /CN=xccl-rank && "
           "openssl x509 -req -in rank.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out rank.pem -days 2 && "
           "openssl x509 -req -in rank.csr -CA ca.pem -CAkey ca.key -out expired.pem -days -1 && "
           "openssl x509 -req -in rank.csr -CA other.pem -CAkey other.key -CAcreateserial -out stranger.pem -days 2)",
           dir);
  strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
  return system(cmd) == 0 ? 0 : -1;
}

typedef int (*case_fn)(void);

static int run_child(case_fn fn) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int rc = fn();
    fflush(stdout);
    _exit(rc);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return 1;
  return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int case_events(void) {
  uint8_t key[NET_KEY_BYTES];
  memset(key, 0x5a, sizeof(key));
  pair_t p;
  pair_open(&p, key);
  int done = 0;
  XCHECK(sock_tls_handshake(p.c, &done)); /* ClientHello out; the server's answer is next */
  CHECK(!done && sock_tls_events(p.c, POLLOUT) == POLLIN, "a client waiting for the server's hello asks for %d",
        sock_tls_events(p.c, POLLOUT));
  XCHECK(pair_handshake(&p));
  static char big[1 << 20];
  size_t off = 0, before = 1;
  while (off != before && off < sizeof(big)) { /* nothing is relayed: the client's socket fills */
    before = off;
    XCHECK(sock_tls_send_some(p.c, big, sizeof(big), &off));
  }
  CHECK(off < sizeof(big), "a 1 MiB write went whole into a socket nobody reads");
  CHECK(sock_tls_events(p.c, POLLIN) == POLLOUT, "a writer with a full socket asks for %d",
        sock_tls_events(p.c, POLLIN));
  pair_close(&p);
  return test_finish("test_tls_stream poll events");
}

static int case_expired(void) {
  return case_cert_refused("expired certificate", "expired.pem", "ca.pem", "expired.pem", "has expired");
}
static int case_missing(void) {
  return case_cert_refused("missing file", "no-such.pem", "ca.pem", "no-such.pem", "cannot be read");
}
static int case_wrong_ca(void) {
  return case_cert_refused("another CA", "rank.pem", "other.pem", "the server end",
                           "failed verification against XCCL_TLS_CA=");
}

int main(void) {
  int failed = run_child(case_replay);
  failed |= run_child(case_events);
  char tmpl[] = "/tmp/xccl-tls-certs-XXXXXX";
  dir = mkdtemp(tmpl);
  if (!dir || make_certs() != 0) {
    printf("SKIPPED the certificate cases: the openssl command could not make the test certificates\n");
  } else {
    failed |= run_child(case_cert_good);
    failed |= run_child(case_expired);
    failed |= run_child(case_missing);
    failed |= run_child(case_wrong_ca);
    failed |= run_child(case_cert_other_job);
  }
  if (dir) {
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
  }
  printf("test_tls_stream: %s\n", failed ? "FAILED" : "OK");
  return failed;
}
