/* Checks that an installed xccl can be compiled against, linked and loaded,
 * and that the library loaded is the one the header describes. */
#include <stdio.h>

#include <xccl.h>

int main(void) {
  int version = -1;
  xcclResult_t rc = xcclGetVersion(&version);
  if (rc != xcclSuccess) {
    const char *s = xcclGetErrorString(rc);
    fprintf(stderr, "consumer: xcclGetVersion failed: %d (%s)\n", (int)rc, s ? s : "(null)");
    return 1;
  }
  if (version != XCCL_VERSION_CODE) {
    fprintf(stderr, "consumer: library version %d != header XCCL_VERSION_CODE %d\n", version,
            XCCL_VERSION_CODE);
    return 1;
  }
  const char *ok = xcclGetErrorString(xcclSuccess);
  const char *bad = xcclGetErrorString(xcclInvalidArgument);
  if (ok == NULL || ok[0] == '\0' || bad == NULL || bad[0] == '\0') {
    fprintf(stderr, "consumer: xcclGetErrorString returned NULL or an empty string\n");
    return 1;
  }
  printf("consumer: xccl %d.%d.%d (code %d); xcclSuccess = \"%s\"\n", XCCL_MAJOR, XCCL_MINOR,
         XCCL_PATCH, version, ok);
  return 0;
}
