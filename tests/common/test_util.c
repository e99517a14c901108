#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_ANONYMOUS under -std=c11 */
#endif
#include "test_util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

_Atomic int test_failures = 0;
_Atomic int test_checks = 0;

/* Checks run by children of test_run_in_child: a MAP_SHARED page, made on
 * first use; NULL until then. Children run one at a time. */
static int *child_checks;

int test_finish(const char *name) {
  if (test_failures) {
    fprintf(stderr, "%s: FAILED (%d failed checks)\n", name, test_failures);
    return 1;
  }
  printf("%s: OK (%d checks)\n", name, test_checks + (child_checks ? *child_checks : 0));
  return 0;
}

void test_run_in_child(const char *name, void (*prepare)(void), void (*fn)(void)) {
  if (!child_checks) {
    void *page = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
      CHECK(0, "mmap for %s: %s", name, strerror(errno));
      return;
    }
    child_checks = page;
    *child_checks = 0;
  }
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    CHECK(0, "fork for %s: %s", name, strerror(errno));
    return;
  }
  if (pid == 0) {
    if (prepare) prepare();
    test_failures = 0;
    test_checks = 0;
    fn();
    *child_checks += test_checks;
    fflush(stdout);
    fflush(stderr);
    _exit(test_failures ? 1 : 0);
  }
  int status = 0;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  CHECK(w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0, "scenario %s: child status 0x%x", name, status);
}

void test_skip(const char *why) {
  printf("SKIPPED: %s\n", why);
  fflush(stdout);
  exit(TEST_SKIP_CODE);
}

static int test_memalloc(void) {
  const char *v = getenv("TEST_MEMALLOC");
  return v && strcmp(v, "1") == 0;
}

void *test_buf_alloc(size_t bytes) {
  if (!test_memalloc()) return malloc(bytes);
  void *p = NULL;
  return xcclMemAlloc(&p, bytes ? bytes : 1) == xcclSuccess ? p : NULL;
}

void test_buf_free(void *p) {
  if (!test_memalloc())
    free(p);
  else if (p)
    (void)xcclMemFree(p);
}

char *test_read_file(const char *path, size_t *len_p) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  char *s = n >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  fclose(f);
  if (!s) return NULL;
  s[n] = '\0';
  if (len_p) *len_p = (size_t)n;
  return s;
}

int test_wait_file(const char *path, void *buf, size_t len, double wait_s) {
  for (double end = test_now_s() + wait_s; test_now_s() < end; usleep(20000)) {
    size_t got = 0;
    char *b = test_read_file(path, &got);
    int whole = b && got == len;
    if (whole) memcpy(buf, b, len);
    free(b);
    if (whole) return 0;
  }
  return -1;
}

void test_comm_end(xcclComm_t comm) {
  xcclResult_t async;
  XCHECK(xcclCommGetAsyncError(comm, &async));
  CHECK(async == xcclSuccess, "async error %d after a clean run", async);
  XCHECK(xcclCommDestroy(comm));
}

void test_inorder_parents(int lo, int hi, int up, int *parent) {
  if (lo > hi) return;
  int root = lo;
  for (int u = lo; u <= hi; u++)
    if (__builtin_ctz((unsigned)u) > __builtin_ctz((unsigned)root)) root = u;
  parent[root] = up;
  test_inorder_parents(lo, root - 1, root, parent);
  test_inorder_parents(root + 1, hi, root, parent);
}

double test_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

char *test_run_capture(char *const argv[], double limit_s, int *code_p) {
  *code_p = -1;
  int p[2];
  if (pipe(p) != 0) {
    CHECK(0, "pipe: %s", strerror(errno));
    return NULL;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    dup2(p[1], 2);
    close(p[0]);
    close(p[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  size_t len = 0, cap = 1 << 16;
  char *out = malloc(cap);
  double deadline = test_now_s() + limit_s;
  for (;;) { /* until the program and every child of it closed the pipe */
    if (test_now_s() > deadline) {
      CHECK(0, "%s still running after %g s: killed", argv[0], limit_s);
      kill(pid, SIGKILL);
      break;
    }
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    if (poll(&pf, 1, 1000) <= 0) continue;
    char chunk[4096];
    ssize_t n = read(p[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    fwrite(chunk, 1, (size_t)n, stdout);
    fflush(stdout);
    char *grown = out && len + (size_t)n + 1 > cap ? realloc(out, cap *= 2) : out;
    if (!grown) continue; /* out of memory: keep draining, judge nothing */
    out = grown;
    memcpy(out + len, chunk, (size_t)n);
    len += (size_t)n;
  }
  if (out) out[len] = '\0';
  close(p[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  *code_p = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return out;
}

void test_judge_ranks(char *out, int code, int want, int nranks, int dead) {
  CHECK(out != NULL, "no output captured");
  if (!out) return;
  CHECK(code == want, "xccl-run exited %d, expected %d", code, want);
  CHECK(!strstr(out, "Sanitizer") && !strstr(out, "runtime error:"), "a sanitizer reported an error (above)");
  for (int r = 0; r < nranks; r++) {
    if (r == dead) continue;
    char pass[32];
    snprintf(pass, sizeof(pass), "rank %d: PASS", r);
    CHECK(strstr(out, pass) != NULL, "rank %d did not pass (its output is above)", r);
  }
  free(out);
}

int test_allreduce_checked(xcclComm_t comm, int me, size_t count, int it, float weight, const char *what) {
  float *buf = malloc(count * sizeof(float));
  CHECK(buf != NULL, "rank %d: out of memory for %zu floats", me, count);
  if (!buf) return 0;
  for (size_t i = 0; i < count; i++) buf[i] = (float)(me + 1) * (float)((i + (size_t)it) % 7);
  xcclResult_t r = xcclAllReduce(buf, buf, count, xcclFloat32, xcclSum, comm, NULL);
  int ok = r == xcclSuccess;
  CHECK(ok, "rank %d: all-reduce of %zu %s -> %s: %s", me, count, what, xcclGetErrorString(r), xcclGetLastError(comm));
  for (size_t i = 0; ok && i < count; i++)
    if (buf[i] != weight * (float)((i + (size_t)it) % 7)) {
      ok = 0;
      CHECK(0, "rank %d: all-reduce of %zu %s: element %zu is %g, expected %g", me, count, what, i, buf[i],
            weight * (float)((i + (size_t)it) % 7));
    }
  free(buf);
  return ok;
}

void test_expect_size(xcclComm_t comm, int me, int nranks, int rank, const char *what) {
  int n = -1, r = -1;
  CHECK(xcclCommCount(comm, &n) == xcclSuccess && n == nranks, "rank %d: %s has %d ranks, expected %d", me, what, n,
        nranks);
  CHECK(xcclCommUserRank(comm, &r) == xcclSuccess && r == rank, "rank %d: is rank %d of %s, expected %d", me, r, what,
        rank);
}
