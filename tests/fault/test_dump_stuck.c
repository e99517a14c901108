/*
 * test_dump_stuck.c — xccl-stuck on made-up dumps (the format of
 * src/core/dump.h): the verdicts (a rank with no dump, an idle rank, a link
 * whose two ends wait on each other, a longer cycle, nothing stuck), a clear
 * message naming file and line for each kind of malformed input, and random
 * mutations of a valid dump that must never crash it. Also the parser of
 * XCCL_DUMP_SIGNAL values.
 *
 *   test_dump_stuck XCCL_STUCK
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm_dump.h"
#include "test_util.h"

static const char *stuck_exe;
static char tmp[64];

typedef struct {
  int code; /* exit status; 128 + signal when killed */
  char out[8192], err[4096];
} result_t;

static void slurp(const char *path, char *buf, size_t len) {
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = '\0';
  fclose(f);
}

/* Runs xccl-stuck with args (NULL-terminated), at most 20 s. */
static void run_stuck(result_t *r, const char *const *args) {
  char out[128], err[128];
  snprintf(out, sizeof(out), "%s/stdout", tmp);
  snprintf(err, sizeof(err), "%s/stderr", tmp);
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    const char *argv[16] = {stuck_exe};
    for (int i = 0; args[i] && i < 14; i++) argv[i + 1] = args[i];
    execv(stuck_exe, (char *const *)argv);
    _exit(127);
  }
  int st = 0;
  for (int waited = 0;; waited++) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    if (waited == 2000) kill(pid, SIGKILL); /* 20 s: it hangs */
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  r->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  slurp(out, r->out, sizeof(r->out));
  slurp(err, r->err, sizeof(r->err));
}

static void put_file(const char *dir, const char *name, const char *text, size_t len) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "create %s: %s", path, strerror(errno));
  if (!f) return;
  fwrite(text, 1, len, f);
  fclose(f);
}

/* A fresh directory under tmp. */
static void fresh_dir(char *dir, size_t len, const char *name) {
  snprintf(dir, len, "%s/%s", tmp, name);
  char cmd[300];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0, "rm %s", dir);
  CHECK(mkdir(dir, 0755) == 0, "mkdir %s: %s", dir, strerror(errno));
}

/* The dump of rank r of n in communicator 00000000000000ab. run: idle,
 * running or failed. waits: "2r 1s" = data from 2, room at 1. */
static void make_dump(char *buf, size_t len, int r, int n, const char *run, const char *waits) {
  int o = snprintf(buf, len,
                   "# made up by test_dump_stuck\n"
                   "xccl-dump version=1\n"
                   "process host=h%d pid=%d reason=signal realtime=1000.%09d monotonic=50.000000000\n"
                   "comm id=00000000000000ab rank=%d nranks=%d prev=%d next=%d\n"
                   "state run=%s done=3 waits=%d torn=0\n",
                   r, 4000 + r, r, r, n, (r + n - 1) % n, (r + 1) % n, run, (int)(strlen(waits) + 1) / 3);
  if (strcmp(run, "idle") != 0)
    o += snprintf(buf + o, len - (size_t)o,
                  "op name=allreduce seq=4 count=1024 type=float32 redop=sum algo=ring root=-1 peer=-1 nops=1 "
                  "started=45.0\n");
  for (const char *w = waits; *w; w += w[2] ? 3 : 2) {
    int p = w[0] - '0';
    o += snprintf(buf + o, len - (size_t)o,
                  "wait peer=%d dir=%s channel=0 step=7 loop=0 action=2 item=0 since=45.5 since_realtime=995.5\n", p,
                  w[1] == 'r' ? "recv" : "send");
    o += snprintf(buf + o, len - (size_t)o, "peer rank=%d pid=%d host=h%d\n", p, 4000 + p, p);
    if (!w[2]) break;
  }
  snprintf(buf + o, len - (size_t)o, "end\n");
}

/* Writes the dumps of ranks [0, n) of a job into a fresh directory; spec[r]
 * is "run:waits", or NULL for a rank without a dump. */
static void make_job(char *dir, size_t dirlen, const char *name, int n, const char *const *spec) {
  fresh_dir(dir, dirlen, name);
  for (int r = 0; r < n; r++) {
    if (!spec[r]) continue;
    char run[16], buf[4096], file[64];
    const char *colon = strchr(spec[r], ':');
    snprintf(run, sizeof(run), "%.*s", (int)(colon - spec[r]), spec[r]);
    make_dump(buf, sizeof(buf), r, n, run, colon + 1);
    snprintf(file, sizeof(file), "xccl-00000000000000ab-r%d.dump", r);
    put_file(dir, file, buf, strlen(buf));
  }
}

/* Inserts text in buf (of size len) before the first `before`. */
static void insert_before(char *buf, size_t len, const char *before, const char *text) {
  char *at = strstr(buf, before);
  size_t n = strlen(text), rest = strlen(buf) - (size_t)(at ? at - buf : 0);
  CHECK(at && strlen(buf) + n < len, "cannot insert before '%s'", before);
  if (!at || strlen(buf) + n >= len) return;
  memmove(at + n, at, rest + 1);
  memcpy(at, text, n);
}

static void first_line(const char *text, char *line, size_t len) {
  size_t n = strcspn(text, "\n");
  snprintf(line, len, "%.*s", (int)(n < len ? n : len - 1), text);
}

/* ---- Verdicts ---- */

static void test_verdicts(void) {
  char dir[128], line[1024];
  result_t r;
  /* A cascade: 3 waits on 2 (no dump), 0 on 3, 1 on 0. */
  const char *cascade[] = {"failed:3r", "failed:0r", NULL, "failed:2r"};
  make_job(dir, sizeof(dir), "cascade", 4, cascade);
  run_stuck(&r, (const char *[]){dir, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0, "cascade: exit %d (%s)", r.code, r.err);
  CHECK(strstr(line,
               "stuck: rank 2 (pid 4002 on host h2): ranks 0,1,3 wait for it in allreduce #4; it wrote no "
               "dump (stopped or dead)") == line,
        "cascade verdict: %s", line);
  CHECK(strstr(r.out, "no dump") != NULL, "the table shows rank 2 without a dump: %s", r.out);

  /* A rank that never called the operation (idle) is the one. */
  const char *idle[] = {"running:1r", "running:2s", "idle:", "running:2r"};
  make_job(dir, sizeof(dir), "idle", 4, idle);
  run_stuck(&r, (const char *[]){dir, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0 && strstr(line, "stuck: rank 2 (pid 4002 on host h2): ranks 0,1,3 wait for it") == line &&
            strstr(line, "it is in no operation: the last it completed is #3"),
        "idle verdict (exit %d): %s", r.code, line);

  /* A link: 1 waits for data from 2, 2 for room at 1; 0 and 3 wait on them. */
  const char *link[] = {"running:1r", "running:2r", "running:1s", "running:2r"};
  make_job(dir, sizeof(dir), "link", 4, link);
  run_stuck(&r, (const char *[]){dir, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0, "link: exit %d (%s)", r.code, r.err);
  CHECK(strstr(line,
               "stuck: link 1<->2: rank 1 (pid 4001 on host h1) waits for data from 2 and rank 2 (pid 4002 on "
               "host h2) waits for room at 1") == line,
        "link verdict: %s", line);
  CHECK(strstr(line, "ranks 0,3 wait for them") != NULL, "link verdict names the waiters: %s", line);

  /* A longer cycle with nobody outside. */
  const char *cycle[] = {"running:1r", "running:2r", "running:0r"};
  make_job(dir, sizeof(dir), "cycle", 3, cycle);
  run_stuck(&r, (const char *[]){dir, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0 && strstr(line, "stuck: cycle 0->1->2->0: 3 ranks wait on each other") == line,
        "cycle verdict (exit %d): %s", r.code, line);

  /* Nothing waits: no verdict. */
  const char *calm[] = {"idle:", "idle:", "running:"};
  make_job(dir, sizeof(dir), "calm", 3, calm);
  run_stuck(&r, (const char *[]){dir, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 1 && strstr(line, "no verdict: no rank waits on another (3 of 3 ranks wrote dumps)") == line,
        "calm (exit %d): %s", r.code, line);

  /* Files named one by one, and unknown records and fields (a later version's) ignored. */
  char buf[4096], f0[256], f1[256];
  fresh_dir(dir, sizeof(dir), "files");
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  insert_before(buf, sizeof(buf), "end\n", "gauge level=3 colour=blue\n");
  put_file(dir, "a.txt", buf, strlen(buf));
  snprintf(f0, sizeof(f0), "%s/a.txt", dir);
  make_dump(buf, sizeof(buf), 1, 2, "running", "0s");
  insert_before(buf, sizeof(buf), "torn=0", "future=yes ");
  put_file(dir, "b.txt", buf, strlen(buf));
  snprintf(f1, sizeof(f1), "%s/b.txt", dir);
  run_stuck(&r, (const char *[]){f0, f1, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0 && strstr(line, "stuck: link 0<->1:") == line, "two files (exit %d): %s %s", r.code, line, r.err);

  /* Two communicators: the newest is read, --comm and --all pick. */
  fresh_dir(dir, sizeof(dir), "two");
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, strlen(buf));
  char *id = strstr(buf, "id=00000000000000ab");
  memcpy(id, "id=00000000000000cd", 19);
  char *rt = strstr(buf, "realtime=1000.");
  memcpy(rt, "realtime=2000.", 14);
  put_file(dir, "xccl-00000000000000cd-r0.dump", buf, strlen(buf));
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 0 && strstr(r.out, "comm 00000000000000cd: stuck: rank 1") == r.out &&
            strstr(r.out, "dumps of 1 other communicator(s) were left out"),
        "two comms, newest (exit %d): %s", r.code, r.out);
  run_stuck(&r, (const char *[]){"--comm", "ab", dir, NULL});
  CHECK(r.code == 0 && strstr(r.out, "comm 00000000000000ab: stuck: rank 1") == r.out, "--comm ab: %s", r.out);
  run_stuck(&r, (const char *[]){"--all", dir, NULL});
  CHECK(r.code == 0 && strstr(r.out, "comm 00000000000000cd: stuck") && strstr(r.out, "comm 00000000000000ab: stuck"),
        "--all: %s", r.out);
  run_stuck(&r, (const char *[]){"--comm", "ef", dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "no dump of communicator 00000000000000ef"), "--comm ef: %d %s", r.code, r.err);
}

/* ---- Malformed input ---- */

/* Replaces the first `what` in a valid dump of rank 0 by `with`, runs the
 * tool on it, and expects exit 2 with "FILE:LINE:" and `says` in stderr. */
static void expect_bad(const char *name, const char *what, const char *with, int line, const char *says) {
  char dir[128], buf[8192], valid[4096];
  make_dump(valid, sizeof(valid), 0, 2, "running", "1r");
  const char *at = strstr(valid, what);
  CHECK(at != NULL, "%s: '%s' is not in the dump", name, what);
  if (!at) return;
  size_t pre = (size_t)(at - valid);
  int n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)pre, valid, with, at + strlen(what));
  fresh_dir(dir, sizeof(dir), "bad");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, (size_t)n);
  result_t r;
  run_stuck(&r, (const char *[]){dir, NULL});
  char where[256];
  snprintf(where, sizeof(where), "xccl-00000000000000ab-r0.dump:%d: ", line);
  CHECK(r.code == 2, "%s: exit %d, expected 2 (stdout %s)", name, r.code, r.out);
  CHECK(strstr(r.err, where) != NULL, "%s: stderr does not name %s: %s", name, where, r.err);
  CHECK(strstr(r.err, says) != NULL, "%s: stderr does not say '%s': %s", name, says, r.err);
}

static void test_malformed(void) {
  /* Line numbers: 1 comment, 2 version, 3 process, 4 comm, 5 state, 6 op, 7 wait, 8 peer, 9 end. */
  char dir[128];
  fresh_dir(dir, sizeof(dir), "empty");
  put_file(dir, "xccl-00000000000000ab-r0.dump", "", 0);
  result_t r;
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump:1: empty"), "empty file: %d %s", r.code, r.err);
  expect_bad("first line", "xccl-dump version=1", "xccl-dumb version=1", 2, "the first record is not");
  expect_bad("version", "xccl-dump version=1", "xccl-dump version=2", 2, "version 2: this xccl-stuck reads version 1");
  expect_bad("rank not a number", "rank=0", "rank=zero", 4, "rank=zero is not an integer");
  expect_bad("rank too big", "rank=0", "rank=2", 4, "rank=2 is not below nranks=2");
  expect_bad("nranks overflow", "nranks=2", "nranks=99999999999999999999", 4, "is not an integer");
  expect_bad("negative pid", "pid=4000", "pid=-4", 3, "pid=-4 is not an integer");
  expect_bad("no equals", "torn=0", "torn", 5, "'torn' is not a name=value field");
  expect_bad("empty name", "torn=0", "=0", 5, "is not a name=value field");
  expect_bad("bad run", "run=running", "run=sleeping", 5, "run=sleeping is not idle, running or failed");
  expect_bad("bad dir", "dir=recv", "dir=sideways", 7, "dir=sideways is neither recv nor send");
  expect_bad("peer out of range", "wait peer=1", "wait peer=7", 7, "a wait names peer 7 of only 2 ranks");
  expect_bad("wait without peer", "wait peer=1 ", "wait ", 7, "a wait record without peer=");
  expect_bad("bad time", "since=45.5", "since=nan", 7, "since=nan is not a time");
  expect_bad("bad id", "id=00000000000000ab", "id=xyz", 4, "id=xyz is not a communicator id");
  expect_bad("second comm", "state run", "comm id=ab rank=0 nranks=2\nstate run", 5, "a second 'comm' record");
  expect_bad("no comm", "comm id=00000000000000ab rank=0 nranks=2 prev=1 next=1\n", "", 9, "missing the comm record");
  expect_bad("comm without id", "comm id=00000000000000ab ", "comm ", 4, "needs id, rank and nranks");
  expect_bad("no end", "end\n", "", 9, "no end record: the file is cut short");
  expect_bad("after end", "end\n", "end\nwait peer=1\n", 10, "text after the end record");
  expect_bad("leading space", "state run", " state run", 5, "a record starts with a space");
  /* A NUL byte on line 5. */
  char buf[4096];
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  size_t blen = strlen(buf);
  *strstr(buf, "run=") = '\0';
  fresh_dir(dir, sizeof(dir), "nul");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, blen);
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump:5: a NUL byte"), "NUL byte: %d %s", r.code, r.err);
  char longline[6000];
  memset(longline, 'x', sizeof(longline) - 1);
  longline[sizeof(longline) - 1] = '\0';
  expect_bad("long line", "state run", longline, 5, "a line longer than 4096 bytes");

  /* Two dumps of one communicator that disagree on its size. */
  fresh_dir(dir, sizeof(dir), "sizes");
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, strlen(buf));
  make_dump(buf, sizeof(buf), 1, 3, "running", "0r");
  put_file(dir, "xccl-00000000000000ab-r1.dump", buf, strlen(buf));
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r1.dump:4: nranks=3, but"), "sizes: %d %s", r.code, r.err);

  /* A directory without dumps, a path that is not there, no arguments, a bad option. */
  fresh_dir(dir, sizeof(dir), "nothing");
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "no xccl-*.dump files"), "no dumps: %d %s", r.code, r.err);
  run_stuck(&r, (const char *[]){"/nonexistent/xccl", NULL});
  CHECK(r.code == 2 && strstr(r.err, "/nonexistent/xccl: No such file"), "missing path: %d %s", r.code, r.err);
  run_stuck(&r, (const char *[]){NULL});
  CHECK(r.code == 2 && strstr(r.err, "usage"), "no arguments: %d %s", r.code, r.err);
  run_stuck(&r, (const char *[]){"--frobnicate", dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "unknown option --frobnicate"), "bad option: %d %s", r.code, r.err);
}

/* ---- Random mutations: exit 0, 1 or 2, never a crash or a hang ---- */

static void test_mutations(void) {
  char dir[128], base[4096], buf[8192];
  const char *link[] = {"running:1r", "running:2r", "running:1s", "running:2r"};
  make_job(dir, sizeof(dir), "fuzz", 4, link);
  make_dump(base, sizeof(base), 1, 4, "failed", "2r 0s");
  size_t len = strlen(base);
  unsigned seed = 12345;
  int codes[3] = {0};
  for (int iter = 0; iter < 400; iter++) {
    memcpy(buf, base, len);
    size_t n = len;
    int edits = 1 + (int)(rand_r(&seed) % 4);
    for (int e = 0; e < edits; e++) {
      size_t at = n ? (size_t)rand_r(&seed) % n : 0;
      switch (rand_r(&seed) % 6) {
        case 0:
          buf[at] = (char)(rand_r(&seed) % 256);
          break; /* any byte */
        case 1:
          buf[at] = "= \n0-9x#"[rand_r(&seed) % 8];
          break; /* a separator or digit */
        case 2:
          n = at;
          break; /* cut short */
        case 3:  /* drop a byte */
          if (n) memmove(buf + at, buf + at + 1, n - at - 1), n--;
          break;
        case 4: /* a line again */
          if (n + 80 < sizeof(buf)) {
            size_t s = at;
            while (s > 0 && buf[s - 1] != '\n') s--;
            size_t l = strcspn(buf + s, "\n") + 1;
            if (s + l <= n && n + l < sizeof(buf)) memmove(buf + s + l, buf + s, n - s), n += l;
          }
          break;
        default: /* a big number */
          if (n + 30 < sizeof(buf)) {
            memmove(buf + at + 21, buf + at, n - at);
            memcpy(buf + at, "184467440737095516169", 21);
            n += 21;
          }
      }
    }
    put_file(dir, "xccl-00000000000000ab-r1.dump", buf, n);
    result_t r;
    run_stuck(&r, (const char *[]){dir, NULL});
    CHECK(r.code == 0 || r.code == 1 || r.code == 2, "mutation %d: exit %d (a crash?); input kept in %s/xccl-*-r1.dump",
          iter, r.code, dir);
    if (r.code < 0 || r.code > 2) return;
    if (r.code == 2)
      CHECK(strstr(r.err, "xccl-stuck: ") == r.err, "mutation %d: an error without the tool's name: %s", iter, r.err);
    codes[r.code]++;
  }
  printf("mutations: %d verdicts, %d without, %d refused\n", codes[0], codes[1], codes[2]);
  CHECK(codes[2] > 0 && codes[0] + codes[1] > 0, "the mutations never reached one of the outcomes");
}

static void test_signal_names(void) {
  char why[256];
  int sig = -1;
  CHECK(dump_parse_signal("USR1", &sig, why, sizeof(why)) == 0 && sig == SIGUSR1, "USR1");
  CHECK(dump_parse_signal("sigusr2", &sig, why, sizeof(why)) == 0 && sig == SIGUSR2, "sigusr2");
  CHECK(dump_parse_signal("10", &sig, why, sizeof(why)) == 0 && sig == 10, "10");
  CHECK(dump_parse_signal("0", &sig, why, sizeof(why)) == 0 && sig == 0, "0 is off");
  CHECK(dump_parse_signal("", &sig, why, sizeof(why)) == 0 && sig == 0, "empty is off");
  CHECK(dump_parse_signal("USR3", &sig, why, sizeof(why)) != 0 && strstr(why, "XCCL_DUMP_SIGNAL=USR3 is not a signal"),
        "USR3: %s", why);
  CHECK(dump_parse_signal("KILL", &sig, why, sizeof(why)) != 0 && strstr(why, "cannot be caught"), "KILL: %s", why);
  CHECK(dump_parse_signal("10x", &sig, why, sizeof(why)) != 0, "10x");
  CHECK(dump_parse_signal("99999", &sig, why, sizeof(why)) != 0, "99999");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_dump_stuck XCCL_STUCK\n");
    return 2;
  }
  stuck_exe = argv[1];
  snprintf(tmp, sizeof(tmp), "/tmp/xccl-stuck-test-XXXXXX");
  CHECK(mkdtemp(tmp) != NULL, "mkdtemp: %s", strerror(errno));
  test_signal_names();
  test_verdicts();
  test_malformed();
  test_mutations();
  if (test_failures == 0) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0, "rm %s", tmp);
  }
  return test_finish("dump stuck");
}
