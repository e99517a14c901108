/*
 * test_dump_stuck.c — xccl-stuck on made-up dumps (the JSON of
 * src/observe/dump.h): the verdicts (a rank with no dump, an idle rank, a
 * link whose two ends wait on each other, a longer cycle, nothing stuck), a
 * clear message naming the file (and line, for text that is not JSON) for
 * each kind of malformed input (not JSON, cut short, wrong types, missing
 * keys, values out of range, huge numbers), and random mutations of a valid
 * dump that must never crash it. Also the parser of XCCL_DUMP_SIGNAL values
 * and a dump rendered by src/observe/dump.c read back.
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

#include "dump.h"
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

/* The dump of rank r of n in communicator 00000000000000ab, as
 * src/observe/dump.c lays it out (one key per line: the malformed-input
 * tests replace whole lines). run: idle, running or failed. waits: "2r 1s" =
 * data from 2, room at 1. */
static void make_dump(char *buf, size_t len, int r, int n, const char *run, const char *waits) {
  int o = snprintf(buf, len,
                   "{\n"
                   " \"format\": \"xccl-dump\",\n"
                   " \"version\": 2,\n"
                   " \"process\": {\"host\": \"h%d\", \"pid\": %d, \"reason\": \"signal\", \"realtime\": 1000.%09d,"
                   " \"monotonic\": 50.0},\n"
                   " \"comm\": {\"id\": \"00000000000000ab\", \"rank\": %d, \"nranks\": %d, \"prev\": %d, \"next\": %d},\n"
                   " \"state\": {\"run\": \"%s\", \"done\": 3, \"waits\": %d, \"torn\": false},\n",
                   r, 4000 + r, r, r, n, (r + n - 1) % n, (r + 1) % n, run, (int)(strlen(waits) + 1) / 3);
  if (strcmp(run, "idle") != 0)
    o += snprintf(buf + o, len - (size_t)o,
                  " \"op\": {\"name\": \"allreduce\", \"seq\": 4, \"count\": 1024, \"type\": \"float32\", "
                  "\"redop\": \"sum\", \"algo\": \"ring\", \"root\": -1, \"peer\": -1, \"nops\": 1, \"started\": 45.0},\n");
  char peers[1024] = "";
  size_t po = 0;
  o += snprintf(buf + o, len - (size_t)o, " \"waits\": [");
  for (const char *w = waits; *w; w += w[2] ? 3 : 2) {
    int p = w[0] - '0';
    o += snprintf(buf + o, len - (size_t)o,
                  "%s\n  {\"peer\": %d, \"dir\": \"%s\", \"channel\": 0, \"step\": 7, \"loop\": 0, \"action\": 2, "
                  "\"item\": 0, \"since\": 45.5, \"since_realtime\": 995.5}",
                  w == waits ? "" : ",", p, w[1] == 'r' ? "recv" : "send");
    po += (size_t)snprintf(peers + po, sizeof(peers) - po, "%s\n  {\"rank\": %d, \"pid\": %d, \"host\": \"h%d\"}",
                           po ? "," : "", p, 4000 + p, p);
    if (!w[2]) break;
  }
  snprintf(buf + o, len - (size_t)o, "],\n \"peers\": [%s]\n}\n", peers);
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
  insert_before(buf, sizeof(buf), " \"peers\"", " \"gauge\": {\"level\": 3, \"colour\": [\"blue\"]},\n");
  put_file(dir, "a.txt", buf, strlen(buf));
  snprintf(f0, sizeof(f0), "%s/a.txt", dir);
  make_dump(buf, sizeof(buf), 1, 2, "running", "0s");
  insert_before(buf, sizeof(buf), "\"torn\"", "\"future\": \"yes\", ");
  put_file(dir, "b.txt", buf, strlen(buf));
  snprintf(f1, sizeof(f1), "%s/b.txt", dir);
  run_stuck(&r, (const char *[]){f0, f1, NULL});
  first_line(r.out, line, sizeof(line));
  CHECK(r.code == 0 && strstr(line, "stuck: link 0<->1:") == line, "two files (exit %d): %s %s", r.code, line, r.err);

  /* Two communicators: the newest is read, --comm and --all pick. */
  fresh_dir(dir, sizeof(dir), "two");
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, strlen(buf));
  char *id = strstr(buf, "\"00000000000000ab\"");
  memcpy(id, "\"00000000000000cd\"", 18);
  char *rt = strstr(buf, "\"realtime\": 1000.");
  memcpy(rt, "\"realtime\": 2000.", 17);
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
 * tool on it, and expects exit 2 with `where` (the file, and line for text
 * that is not JSON) and `says` in stderr. */
static void expect_bad(const char *name, const char *what, const char *with, const char *where, const char *says) {
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
  char file[256];
  snprintf(file, sizeof(file), "xccl-00000000000000ab-r0.dump%s", where);
  CHECK(r.code == 2, "%s: exit %d, expected 2 (stdout %s)", name, r.code, r.out);
  CHECK(strstr(r.err, "xccl-stuck: ") == r.err && strstr(r.err, file) != NULL, "%s: stderr does not name %s: %s", name,
        file, r.err);
  CHECK(strstr(r.err, says) != NULL, "%s: stderr does not say '%s': %s", name, says, r.err);
}

static void test_malformed(void) {
  /* Lines: 1 {, 2 format, 3 version, 4 process, 5 comm, 6 state, 7 op, 8 waits, 9 a wait, 10 peers, 11 a peer, 12 }. */
  char dir[128];
  fresh_dir(dir, sizeof(dir), "empty");
  put_file(dir, "xccl-00000000000000ab-r0.dump", "", 0);
  result_t r;
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump: empty"), "empty file: %d %s", r.code, r.err);
  /* Not JSON, or cut short: jansson's sentence, with line and column. */
  expect_bad("not json", "{\n", "xccl-dump version=1\n", ":1:", "'[' or '{' expected");
  expect_bad("cut short", "]\n}\n", "]\n", ":", "the file is cut short");
  expect_bad("after the end", "]\n}\n", "]\n}\n{\"more\": 1}\n", ":13:", "end of file expected");
  expect_bad("second comm", " \"state\"", " \"comm\": {},\n \"state\"", ":6:", "duplicate object key");
  expect_bad("nranks overflow", "\"nranks\": 2", "\"nranks\": 99999999999999999999", ":5:", "too big integer");
  expect_bad("huge seq", "\"seq\": 4", "\"seq\": 184467440737095516169", ":7:", "too big integer");
  expect_bad("huge real", "\"since\": 45.5", "\"since\": 1e400", ":9:", "real number overflow");
  /* JSON, but not a dump: the file and the key's path. */
  expect_bad("format", "\"xccl-dump\"", "\"xccl-dumb\"", ": ", "format is \"xccl-dumb\", not \"xccl-dump\"");
  expect_bad("no format", "\"format\"", "\"formula\"", ": ", "format is missing");
  expect_bad("version", "\"version\": 2", "\"version\": 1", ": ", "version 1: this xccl-stuck reads version 2");
  expect_bad("version type", "\"version\": 2", "\"version\": \"2\"", ": ", "version is a string, not an integer");
  expect_bad("rank not a number", "\"rank\": 0", "\"rank\": \"zero\"", ": ", "comm.rank is a string, not an integer");
  expect_bad("rank a real", "\"rank\": 0", "\"rank\": 0.5", ": ", "comm.rank is a real number, not an integer");
  expect_bad("rank too big", "\"rank\": 0", "\"rank\": 2", ": ", "comm.rank is 2, not below comm.nranks (2)");
  expect_bad("negative pid", "\"pid\": 4000", "\"pid\": -4", ": ", "process.pid is -4, not an integer from 0");
  expect_bad("no comm", "\"comm\"", "\"kommune\"", ": ", "comm is missing");
  expect_bad("comm not an object", "\"comm\": {", "\"comm\": 7, \"c\": {", ": ", "comm is an integer, not an object");
  expect_bad("comm without id", "\"id\": \"00000000000000ab\", ", "", ": ", "comm.id is missing");
  expect_bad("bad id", "\"00000000000000ab\"", "\"xyz\"", ": ", "comm.id is \"xyz\", not a communicator id");
  expect_bad("bad run", "\"run\": \"running\"", "\"run\": \"sleeping\"", ": ", "state.run is \"sleeping\", not");
  expect_bad("torn type", "\"torn\": false", "\"torn\": \"no\"", ": ", "state.torn is a string, not a boolean");
  expect_bad("waits type", "\"waits\": [", "\"waits\": 3, \"w\": [", ": ", "waits is an integer, not an array");
  expect_bad("wait type", "[\n  {\"peer\": 1,", "[\n  7, {\"peer\": 1,", ": ", "waits[0] is an integer, not an object");
  expect_bad("bad dir", "\"dir\": \"recv\"", "\"dir\": \"sideways\"", ": ", "waits[0].dir is \"sideways\", neither");
  expect_bad("peer out of range", "{\"peer\": 1,", "{\"peer\": 7,", ": ", "waits[0].peer is 7, not an integer from 0 to 1");
  expect_bad("wait without peer", "{\"peer\": 1, ", "{", ": ", "waits[0].peer is missing");
  expect_bad("bad time", "\"since\": 45.5", "\"since\": -45.5", ": ", "waits[0].since is -45.5, not a time in seconds");
  expect_bad("time type", "\"since\": 45.5", "\"since\": \"soon\"", ": ", "waits[0].since is a string, not a number");
  expect_bad("fail without kind", " \"peers\"", " \"fail\": {},\n \"peers\"", ": ", "fail.kind is missing");
  expect_bad("peer without rank", "{\"rank\": 1, ", "{", ": ", "peers[0].rank is missing");
  put_file(dir, "xccl-00000000000000ab-r0.dump", "[1, 2]\n", 7);
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump: the top level is an array, not an object"), "array: %d %s", r.code,
        r.err);
  /* Cut in the middle of a key, as a writer that died would leave it (were it not for the rename). */
  char buf[4096];
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  fresh_dir(dir, sizeof(dir), "cut");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, (size_t)(strstr(buf, " \"peers\"") - buf) + 5);
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump:10:") && strstr(r.err, "the file is cut short"), "cut: %d %s", r.code,
        r.err);
  /* A NUL byte on line 6. */
  size_t blen = strlen(buf);
  *strstr(buf, "\"run\"") = '\0';
  fresh_dir(dir, sizeof(dir), "nul");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, blen);
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump:6:"), "NUL byte: %d %s", r.code, r.err);
  /* More waits than a dump has room for; a file larger than a dump can be. */
  static char big[(1 << 20) + 64];
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  char *w = strstr(buf, "[\n  {\"peer\"") + 1;
  size_t o = (size_t)(w - buf);
  memcpy(big, buf, o);
  for (int k = 0; k < 65; k++) o += (size_t)snprintf(big + o, sizeof(big) - o, "{\"peer\": 1, \"dir\": \"recv\"},");
  o += (size_t)snprintf(big + o, sizeof(big) - o, "%s", w);
  fresh_dir(dir, sizeof(dir), "waits");
  put_file(dir, "xccl-00000000000000ab-r0.dump", big, o);
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r0.dump: waits has 66 entries, more than 64"), "65 waits: %d %s", r.code, r.err);
  memset(big, ' ', sizeof(big));
  memcpy(big + sizeof(big) - blen, buf, blen);
  put_file(dir, "xccl-00000000000000ab-r0.dump", big, sizeof(big));
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "larger than 1048576 bytes"), "1 MiB: %d %s", r.code, r.err);

  /* Two dumps of one communicator that disagree on its size. */
  fresh_dir(dir, sizeof(dir), "sizes");
  make_dump(buf, sizeof(buf), 0, 2, "running", "1r");
  put_file(dir, "xccl-00000000000000ab-r0.dump", buf, strlen(buf));
  make_dump(buf, sizeof(buf), 1, 3, "running", "0r");
  put_file(dir, "xccl-00000000000000ab-r1.dump", buf, strlen(buf));
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 2 && strstr(r.err, "r1.dump: comm.nranks is 3, but"), "sizes: %d %s", r.code, r.err);

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
          buf[at] = "{}[]\":,09-e \n"[rand_r(&seed) % 14];
          break; /* JSON's punctuation, a digit */
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

/* ---- What src/observe/dump.c writes, read back ---- */

static void test_render(void) {
  static dump_info_t in; /* large */
  memset(&in, 0, sizeof(in));
  in.reason = "timeout";
  snprintf(in.host, sizeof(in.host), "h\xff\"0");                 /* not UTF-8, a quote */
  in.realtime_ns = 1733440000123456789ull, in.monotonic_ns = 50000000000ull;
  in.id = 0xab, in.rank = 0, in.nranks = 2, in.prev = 1, in.next = 1;
  in.run = DUMP_RUN_FAILED, in.done = 3, in.total_waits = 1;
  in.op_name = "allreduce", in.type = "float32", in.redop = NULL, in.algo = "ring";
  in.seq = 4, in.count = UINT64_MAX, in.root = -1, in.op_peer = -1, in.nops = 1, in.started_ns = 45000000000ull;
  in.waits[0] = (dump_wait_t){.peer = 1, .is_recv = 1, .channel = 0, .step = 7, .since_ns = 45500000000ull};
  in.nwaits = 1;
  in.failed = 1, in.fail_kind = "timeout", in.fail = in.waits[0];
  snprintf(in.error, sizeof(in.error), "rank 0: no progress\nfor 3 s \"waiting\"");
  in.peers[0] = (dump_peer_t){.rank = 1, .pid = 4001, .host = "h1"};
  in.npeers = 1;
  char *text = dump_render(&in);
  CHECK(text != NULL, "dump_render failed");
  if (!text) return;
  CHECK(strstr(text, "\"format\": \"xccl-dump\"") && strstr(text, "\"version\": 2") &&
            strstr(text, "\"redop\": null") && strstr(text, "\"id\": \"00000000000000ab\"") &&
            strstr(text, "\"count\": 9223372036854775807") && strstr(text, "\\n"),
        "the rendered dump lacks a key: %s", text);
  char dir[128];
  fresh_dir(dir, sizeof(dir), "render");
  put_file(dir, "xccl-00000000000000ab-r0.dump", text, strlen(text));
  free(text);
  result_t r;
  run_stuck(&r, (const char *[]){dir, NULL});
  CHECK(r.code == 0 && strstr(r.out, "stuck: rank 1") == r.out && strstr(r.out, "allreduce #4 ring"),
        "a rendered dump read back (exit %d): %s %s", r.code, r.out, r.err);
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
  test_render();
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
