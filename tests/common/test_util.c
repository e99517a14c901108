#include "test_util.h"

_Atomic int test_failures = 0;

int test_finish(const char *name, int checks_run) {
  if (test_failures) {
    fprintf(stderr, "%s: FAILED (%d failed checks)\n", name, test_failures);
    return 1;
  }
  printf("%s: OK (%d checks)\n", name, checks_run);
  return 0;
}

void test_skip(const char *why) {
  printf("SKIPPED: %s\n", why);
  fflush(stdout);
  exit(TEST_SKIP_CODE);
}
