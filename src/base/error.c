#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static _Thread_local char err_buf[ERR_MSG_MAX];
static _Thread_local int err_quiet_depth;

xcclResult_t err_set(xcclResult_t res, int subsys, const char *fmt, ...) {
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err_buf, sizeof(err_buf), fmt, ap);
  va_end(ap);
  if (err_quiet_depth == 0) XLOG(LOG_WARN, subsys, "%s", err_buf);
  errno = saved;
  return res;
}

xcclResult_t err_prefix(xcclResult_t res, const char *fmt, ...) {
  int saved = errno;
  char head[ERR_MSG_MAX], old[ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof(head), fmt, ap);
  va_end(ap);
  memcpy(old, err_buf, sizeof(old));
  snprintf(err_buf, sizeof(err_buf), "%s: %s", head, old);
  errno = saved;
  return res;
}

const char *err_last(void) { return err_buf; }

void err_clear(void) { err_buf[0] = '\0'; }

void err_quiet(int on) { err_quiet_depth += on ? 1 : -1; }

const char *xcclGetErrorString(xcclResult_t result) {
  switch (result) {
    case xcclSuccess:
      return "no error";
    case xcclUnhandledCudaError:
      return "unhandled cuda error (run with XCCL_DEBUG=INFO for details)";
    case xcclSystemError:
      return "unhandled system error (run with XCCL_DEBUG=INFO for details)";
    case xcclInternalError:
      return "internal error - please report this issue to the xccl developers";
    case xcclInvalidArgument:
      return "invalid argument (run with XCCL_DEBUG=WARN for details)";
    case xcclInvalidUsage:
      return "invalid usage (run with XCCL_DEBUG=WARN for details)";
    case xcclRemoteError:
      return "remote process exited or there was a network error";
    case xcclInProgress:
      return "xccl operation in progress";
    case xcclTimeout:
      return "operation timed out (XCCL_TIMEOUT)";
    default:
      return "unknown result code";
  }
}
