/* test_stats.c — the metrics writer (src/observe/stats.c) on made-up
 * communicators: the text, label escaping, failed and removed
 * communicators, how many removed ones stay, no temporary left behind; and
 * log_expand_path's conversions. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "stats.h"
#include "test_util.h"

typedef struct {
  int calls;
  stats_state_t state;
  uint64_t allreduces;
} fake_comm_t;

static void fake_fill(void *ctx, stats_comm_t *snap) {
  fake_comm_t *c = ctx;
  c->calls++;
  snap->state = c->state;
  if (c->state == STATS_FAILED) snap->fail_reason = "timeout", snap->fail_peer = 3;
  snap->errors = c->state == STATS_FAILED;
  if (snap->nops < snap->max_ops) snap->ops[snap->nops++] = (stats_ops_t){"allreduce", "ring", c->allreduces};
  if (snap->nlinks < snap->max_links) snap->links[snap->nlinks++] = (stats_link_t){3, "shm", 100, 200};
}

static char dir[] = "/tmp/xccl-test-stats-XXXXXX";
static char path[600];

static char *read_stats(void) {
  char *text = test_read_file(path, NULL);
  CHECK(text != NULL, "no %s", path);
  return text ? text : calloc(1, 1);
}

static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, prefix)); p++) n += p == text || p[-1] == '\n';
  return n;
}

static void test_expand(void) {
  char out[256], host[64] = "", want[512];
  gethostname(host, sizeof(host) - 1);
  log_expand_path("a.%r.%h.%p.%x", 5, out, sizeof(out));
  snprintf(want, sizeof(want), "a.5.%s.%d.%%x", host, (int)getpid());
  CHECK(strcmp(out, want) == 0, "expanded to %s, not %s", out, want);
  log_expand_path("a.%r", -1, out, sizeof(out));
  CHECK(strcmp(out, "a.%r") == 0, "without a rank %%r stays: %s", out);
  log_expand_path("abcdef.%p", 0, out, 8);
  CHECK(strcmp(out, "abcdef.") == 0, "a pid that does not fit is left out: %s", out);
}

static void test_writer(void) {
  fake_comm_t a = {.state = STATS_READY, .allreduces = 3}, b = {.state = STATS_READY, .allreduces = 1};
  stats_source_t *sa = stats_add(0x1234, 7, 8, "my \"comm\"\\x\n", 1, 1, fake_fill, &a);
  stats_source_t *sb = stats_add(0xabcd, 2, 4, NULL, 1, 1, fake_fill, &b);
  CHECK(sa && sb, "stats_add with XCCL_STATS_FILE set");
  if (!sa || !sb) return;
  stats_write();
  char *t = read_stats();
  CHECK(strstr(t, "# TYPE xccl_operations_total counter\n"), "TYPE line:\n%s", t);
  CHECK(strstr(t,
               "xccl_operations_total{comm=\"0000000000001234\",rank=\"7\",collective=\"allreduce\","
               "algorithm=\"ring\"} 3\n"),
        "first communicator's all-reduces:\n%s", t);
  CHECK(strstr(t,
               "xccl_operations_total{comm=\"000000000000abcd\",rank=\"2\",collective=\"allreduce\","
               "algorithm=\"ring\"} 1\n"),
        "second communicator's all-reduces:\n%s", t);
  CHECK(strstr(t, "name=\"my \\\"comm\\\"\\\\x\\n\""), "the name escaped:\n%s", t);
  CHECK(strstr(t, "xccl_bytes_received_total{comm=\"0000000000001234\",rank=\"7\",peer=\"3\",transport=\"shm\"} 200\n"),
        "bytes received:\n%s", t);
  CHECK(strstr(t, "state=\"ready\"} 1\n") && !strstr(t, "xccl_communicator_error{"), "both ready:\n%s", t);
  CHECK(count_lines(t, "# TYPE ") == 9, "9 families:\n%s", t);
  free(t);
  /* a fails, then is aborted: it stays failed, with its error, and is not asked again */
  a.state = STATS_FAILED;
  stats_remove(sa, STATS_ABORTED);
  int calls = a.calls;
  a.allreduces = 99;
  stats_write();
  CHECK(a.calls == calls, "a removed source was filled again");
  t = read_stats();
  CHECK(strstr(t, "xccl_communicator_error{comm=\"0000000000001234\",rank=\"7\",peer=\"3\",reason=\"timeout\"} 1\n"),
        "the failure:\n%s", t);
  CHECK(strstr(t, "comm=\"0000000000001234\",rank=\"7\",state=\"failed\"} 1\n"), "failed, not aborted:\n%s", t);
  CHECK(strstr(t, "algorithm=\"ring\"} 3\n"), "its last numbers kept:\n%s", t);
  free(t);
  stats_remove(sb, STATS_DESTROYED);
  t = read_stats();
  CHECK(strstr(t, "comm=\"000000000000abcd\",rank=\"2\",state=\"destroyed\"} 1\n"), "destroyed:\n%s", t);
  free(t);
  /* removed communicators beyond 64 go, the oldest first */
  fake_comm_t many = {.state = STATS_READY};
  for (int i = 0; i < 70; i++)
    stats_remove(stats_add(0x100 + (uint64_t)i, 0, 1, NULL, 1, 1, fake_fill, &many), STATS_DESTROYED);
  t = read_stats();
  CHECK(count_lines(t, "xccl_communicator_info{") == 64, "%d communicators kept, not 64",
        count_lines(t, "xccl_communicator_info{"));
  CHECK(!strstr(t, "comm=\"0000000000001234\"") && strstr(t, "comm=\"0000000000000145\""), "not the newest kept");
  free(t);
  DIR *d = opendir(dir);
  int others = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    others += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d) closedir(d);
  CHECK(others == 0, "%d temporary files left in %s", others, dir);
}

int main(void) {
  if (!mkdtemp(dir)) test_skip("cannot make a temporary directory");
  char pattern[600];
  snprintf(pattern, sizeof(pattern), "%s/u.%%r.prom", dir);
  snprintf(path, sizeof(path), "%s/u.7.prom", dir); /* the first communicator's rank names the file */
  setenv("XCCL_STATS_FILE", pattern, 1);
  setenv("XCCL_STATS_INTERVAL", "0", 1);
  config_reset_for_test();
  test_expand();
  test_writer();
  unlink(path);
  rmdir(dir);
  return test_finish("stats");
}
