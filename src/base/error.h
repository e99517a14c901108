/*
 * error.h — how a failure travels: the function that first sees it records a
 * sentence with err_set() (what, where, who, the OS or peer's reason) and
 * returns an xcclResult_t; callers add context with err_prefix() only when
 * they know something the callee did not (the operation, the peer's rank).
 * The sentence lives in thread-local storage; the public API copies it into
 * the communicator when there is one.
 */
#ifndef XCCL_BASE_ERROR_H
#define XCCL_BASE_ERROR_H

#include "xccl.h"

#define ERR_MSG_MAX 1024

/* Records fmt as this thread's last error, logs it at WARN under subsys, and
 * returns res so that `return err_set(...)` reads naturally. Keeps errno. */
xcclResult_t err_set(xcclResult_t res, int subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "fmt: " in front of this thread's last error. Returns res. */
xcclResult_t err_prefix(xcclResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

const char *err_last(void);
void err_clear(void);

/* err_quiet(1) ... err_quiet(0): errors are recorded but not logged, for
 * attempts that are expected to fail and will be retried. Nests. */
void err_quiet(int on);

/* Evaluates expr once; on error, returns it from the calling function. */
#define TRY(expr)                                 \
  do {                                            \
    xcclResult_t try_res_ = (expr);               \
    if (try_res_ != xcclSuccess) return try_res_; \
  } while (0)

/* Evaluates expr once; on error, stores it in `res` and jumps to label. */
#define TRY_GOTO(expr, label)      \
  do {                             \
    res = (expr);                  \
    if (res != xcclSuccess) goto label; \
  } while (0)

#endif
