#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* MAP_ANONYMOUS under -std=c11 */
#endif
#include "test_util.h"

#include <errno.h>
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
