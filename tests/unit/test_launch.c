/*
 * test_launch.c — the pieces of xcclCommInitFromEnv's launcher support that
 * do not need a launcher (src/launch/launch*.c; the real launchers are in
 * tests/launch):
 *  - Slurm hostlist expressions: counts, every host in order, and refusals;
 *  - the Slurm root port: in its documented range, the same for the same job
 *    step and call, another for the next call and (nearly always) step;
 *  - torchrun's agent store: the key names; an unreachable store fails within
 *    XCCL_TIMEOUT naming the store; a store that speaks torch 2.x's protocol
 *    (an imitation here, from the protocol as launch_torchrun.c describes it)
 *    is detected and used by a one-rank job;
 *  - Slurm environments: one-rank job through the derived root, and the
 *    messages for ids that are not numbers, a bad node list, and task 0 off
 *    the first node.
 * Environment scenarios run in fork()ed children (config is read once).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "launch.h"
#include "test_util.h"
#include "xccl.h"

/* ---- Hostlists ---- */

static void test_hostlist(void) {
  static const struct {
    const char *list;
    const char *hosts[8];
  } ok[] = {
      {"vm", {"vm"}},
      {"node[01-03,7],gpu5", {"node01", "node02", "node03", "node7", "gpu5"}},
      {"rack[1-2]-n[1-3]", {"rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"}},
      {"a,b,c", {"a", "b", "c"}},
      {"n[8-11]", {"n8", "n9", "n10", "n11"}},
      {"n[098-101]x", {"n098x", "n099x", "n100x", "n101x"}},
      {"c[5]", {"c5"}},
  };
  char why[256], host[64];
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    int want = 0;
    while (want < 8 && ok[i].hosts[want]) want++;
    int n = launch_hostlist_count(ok[i].list, why, sizeof(why));
    CHECK(n == want, "'%s': %d hosts, want %d (%s)", ok[i].list, n, want, n < 0 ? why : "");
    for (int k = 0; k < want; k++) {
      int r = launch_hostlist_nth(ok[i].list, k, host, sizeof(host), why, sizeof(why));
      CHECK(r == 0 && strcmp(host, ok[i].hosts[k]) == 0, "'%s' host %d: '%s', want '%s' (%s)", ok[i].list, k,
            r == 0 ? host : "(none)", ok[i].hosts[k], r ? why : "");
    }
    CHECK(launch_hostlist_nth(ok[i].list, want, host, sizeof(host), why, sizeof(why)) == -1 && why[0],
          "'%s' has no host %d, yet no error", ok[i].list, want);
  }
  static const char *bad[] = {"", "n[", "n]", "n[3-1]", "n[a-b]", "a,,b", "n[1-2", "n[]", "n[1,]", "x]y[1]", "n[1-]"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    why[0] = '\0';
    int n = launch_hostlist_count(bad[i], why, sizeof(why));
    CHECK(n == -1 && why[0], "'%s' is no hostlist, yet it counts %d", bad[i], n);
  }
  CHECK(launch_hostlist_count(NULL, why, sizeof(why)) == -1, "a NULL list counts");
  CHECK(launch_hostlist_count("n[0-99999999]", why, sizeof(why)) == -1, "a list of 10^8 hosts counts");
}

/* ---- Ports ---- */

static void test_port(void) {
  const int span = LAUNCH_SLURM_PORT_MAX - LAUNCH_SLURM_PORT_MIN + 1;
  CHECK(LAUNCH_SLURM_PORT_MAX < 29500 || LAUNCH_SLURM_PORT_MIN > 29500, "the range holds torch's 29500");
  CHECK(LAUNCH_SLURM_PORT_MAX < 32768, "the range reaches Linux's ephemeral ports");
  static char seen[65536];
  int distinct = 0;
  for (uint64_t job = 1; job < 2000000; job += 9973)
    for (uint64_t step = 0; step < 4; step++) {
      uint16_t p = launch_slurm_port(job, step, 0);
      CHECK(p >= LAUNCH_SLURM_PORT_MIN && p <= LAUNCH_SLURM_PORT_MAX, "job %llu step %llu: port %u out of range",
            (unsigned long long)job, (unsigned long long)step, p);
      CHECK(launch_slurm_port(job, step, 0) == p, "the port is not a function of job and step");
      uint16_t next = launch_slurm_port(job, step, 1);
      CHECK(next == LAUNCH_SLURM_PORT_MIN + (p - LAUNCH_SLURM_PORT_MIN + 1) % span, "call 1 of job %llu: port %u after %u",
            (unsigned long long)job, next, p);
    }
  memset(seen, 0, sizeof(seen));
  for (uint64_t step = 0; step < 100; step++) {
    uint16_t p = launch_slurm_port(4242, step, 0);
    distinct += !seen[p];
    seen[p] = 1;
  }
  CHECK(distinct >= 97, "100 steps of one job share ports: only %d distinct", distinct);
}

static void test_store_key(void) {
  char key[512];
  launch_torch_store_key("none", "0", "arrivals", key, sizeof(key));
  CHECK(strcmp(key, "xccl/none/0/arrivals") == 0, "key '%s'", key);
  launch_torch_store_key("job 7", "2", "3/unique_id", key, sizeof(key));
  CHECK(strcmp(key, "xccl/job 7/2/3/unique_id") == 0, "key '%s'", key);
}

/* ---- Environments (children) ---- */

static void clear_env(void) {
  static const char *vars[] = {"XCCL_RANK", "XCCL_NRANKS", "XCCL_ROOT", "XCCL_UNIQUE_ID", "XCCL_SECRET", "RANK",
                               "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
                               "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID", "SLURM_STEP_ID",
                               "SLURM_STEP_NODELIST", "SLURMD_NODENAME", "PMI_RANK", "PMI_SIZE", "PMIX_RANK",
                               "PMIX_NAMESPACE"};
  for (size_t k = 0; k < sizeof(vars) / sizeof(vars[0]); k++) unsetenv(vars[k]);
  setenv("XCCL_SOCKET_IFNAME", "lo", 1);
}

static int listen_loopback(int *port_p) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8) ||
      getsockname(fd, (struct sockaddr *)&a, &len))
    return -1;
  *port_p = ntohs(a.sin_port);
  return fd;
}

static void expect_fail(xcclResult_t want, const char *word, const char *what) {
  xcclComm_t comm = NULL;
  config_reset_for_test();
  err_clear();
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  const char *m = xcclGetLastError(NULL);
  CHECK(r == want, "%s: %s (%s), want %s", what, xcclGetErrorString(r), m, xcclGetErrorString(want));
  CHECK(strstr(m, word) != NULL, "%s: message '%s' lacks '%s'", what, m, word);
  CHECK(comm == NULL, "%s: a failed call wrote comm", what);
}

static void expect_one_rank_job(const char *what) {
  xcclComm_t comm = NULL;
  config_reset_for_test();
  xcclResult_t r = xcclCommInitFromEnv(&comm);
  CHECK(r == xcclSuccess, "%s: %s: %s", what, xcclGetErrorString(r), xcclGetLastError(NULL));
  if (r != xcclSuccess) return;
  int32_t v[16];
  for (int i = 0; i < 16; i++) v[i] = i;
  CHECK(xcclAllReduce(v, v, 16, xcclInt32, xcclSum, comm, NULL) == xcclSuccess && v[15] == 15, "%s: all-reduce",
        what);
  CHECK(xcclCommDestroy(comm) == xcclSuccess, "%s: destroy", what);
}

/* Nobody at MASTER_PORT: a timeout that names the store. */
static void scenario_store_unreachable(void) {
  clear_env();
  int port = 0, fd = listen_loopback(&port);
  close(fd); /* free again: nothing listens there */
  char p[16], want[64];
  snprintf(p, sizeof(p), "%d", port);
  snprintf(want, sizeof(want), "torchrun's agent store at 127.0.0.1:%d", port);
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", p, 1);
  setenv("XCCL_TIMEOUT", "0.5", 1);
  expect_fail(xcclTimeout, want, "agent store unreachable");
}

/* An imitation of a torch 2.x store: ignores a connection until VALIDATE with
 * the magic; then SET 1, GET 3, ADD 4, CHECK 5, GETNUMKEYS 7. One key, one
 * counter: what a one-rank xcclCommInitFromEnv needs. */
typedef struct {
  int lfd;
  _Atomic int stop;
  int validated_queries, ignored_bytes;
  char key[256];
  uint8_t value[256];
  size_t value_len;
  int64_t counter;
} fake_store_t;

static int read_full(int fd, void *p, size_t n) {
  for (size_t off = 0; off < n;) {
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 5000) <= 0) return -1;
    ssize_t k = read(fd, (char *)p + off, n - off);
    if (k <= 0) return -1;
    off += (size_t)k;
  }
  return 0;
}

static int read_str(int fd, char *buf, size_t cap, size_t *len_p) {
  uint64_t n;
  if (read_full(fd, &n, 8) || n >= cap || read_full(fd, buf, n)) return -1;
  buf[n] = '\0';
  *len_p = n;
  return 0;
}

static void fake_serve(fake_store_t *fs, int fd) {
  int validated = 0;
  uint8_t cmd;
  char key[256];
  size_t klen;
  while (read_full(fd, &cmd, 1) == 0) {
    if (!validated) {
      uint32_t magic = 0;
      if (cmd == 0 && read_full(fd, &magic, 4) == 0 && magic == 0x3C85F7CEu) validated = 1;
      else fs->ignored_bytes++;
      continue;
    }
    fs->validated_queries++;
    if (cmd == 1 && read_str(fd, fs->key, sizeof(fs->key), &klen) == 0) { /* SET */
      if (read_str(fd, (char *)fs->value, sizeof(fs->value), &fs->value_len)) return;
    } else if (cmd == 4 && read_str(fd, key, sizeof(key), &klen) == 0) { /* ADD */
      int64_t add;
      if (read_full(fd, &add, 8)) return;
      fs->counter += add;
      if (write(fd, &fs->counter, 8) != 8) return;
    } else if (cmd == 7) { /* GETNUMKEYS */
      int64_t n = fs->key[0] ? 2 : 1;
      if (write(fd, &n, 8) != 8) return;
    } else {
      return; /* this imitation serves only what rank 0 sends */
    }
  }
}

static void *fake_main(void *arg) {
  fake_store_t *fs = arg;
  while (!fs->stop) {
    struct pollfd pf = {.fd = fs->lfd, .events = POLLIN};
    if (poll(&pf, 1, 50) <= 0) continue;
    int fd = accept(fs->lfd, NULL, NULL);
    if (fd < 0) continue;
    fake_serve(fs, fd);
    close(fd);
  }
  return NULL;
}

static void scenario_store_v2(void) {
  clear_env();
  static fake_store_t fs;
  int port = 0;
  fs.lfd = listen_loopback(&port);
  CHECK(fs.lfd >= 0, "no loopback listener");
  pthread_t t;
  pthread_create(&t, NULL, fake_main, &fs);
  char p[16];
  snprintf(p, sizeof(p), "%d", port);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  setenv("TORCHELASTIC_RUN_ID", "unit", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", p, 1);
  expect_one_rank_job("torch 2.x store");
  fs.stop = 1;
  pthread_join(t, NULL);
  close(fs.lfd);
  CHECK(fs.ignored_bytes >= 1, "the 1.x probe never reached the store");
  CHECK(strcmp(fs.key, "xccl/unit/0/0/unique_id") == 0, "rank 0 set key '%s'", fs.key);
  CHECK(fs.value_len == XCCL_UNIQUE_ID_BYTES, "the value has %zu bytes", fs.value_len);
  CHECK(fs.counter == 1, "arrivals counted %lld", (long long)fs.counter);
}

static void set_slurm(const char *procid, const char *ntasks, const char *job, const char *step, const char *list) {
  clear_env();
  setenv("SLURM_PROCID", procid, 1);
  setenv("SLURM_NTASKS", ntasks, 1);
  if (job) setenv("SLURM_JOB_ID", job, 1);
  if (step) setenv("SLURM_STEP_ID", step, 1);
  if (list) setenv("SLURM_STEP_NODELIST", list, 1);
}

static void scenario_slurm_job(void) {
  char job[32];
  snprintf(job, sizeof(job), "%d", (int)getpid());
  set_slurm("0", "1", job, "0", "thishost");
  setenv("XCCL_SECRET", "unit", 1);
  expect_one_rank_job("Slurm step of one node");
}

/* (Apart from the job above: its root's thread may still be ending when the
 * configuration is read again, which a test must not race with.) */
static void scenario_slurm_errors(void) {
  set_slurm("1", "2", "77", "batch", "n1");
  expect_fail(xcclInvalidUsage, "are not both numbers", "Slurm step id 'batch'");
  set_slurm("1", "2", "77", "0", "n[1-");
  expect_fail(xcclInvalidUsage, "SLURM_STEP_NODELIST=n[1-", "bad node list");
  set_slurm("0", "2", "77", "0", "a,b");
  setenv("SLURMD_NODENAME", "b", 1);
  expect_fail(xcclInvalidUsage, "task 0 runs on b, not on a", "task 0 off the first node");
}

int main(void) {
  test_hostlist();
  test_port();
  test_store_key();
  test_run_in_child("store unreachable", NULL, scenario_store_unreachable);
  test_run_in_child("store of torch 2.x", NULL, scenario_store_v2);
  test_run_in_child("slurm job", NULL, scenario_slurm_job);
  test_run_in_child("slurm errors", NULL, scenario_slurm_errors);
  return test_finish("test_launch");
}
