/*
 * log.h — level x subsystem logging for every layer of xccl.
 *
 * XCCL_DEBUG=VERSION|WARN|INFO|TRACE picks the level (default: WARN),
 * XCCL_DEBUG_SUBSYS=INIT,NET,... the subsystems (default: all; ^X excludes),
 * XCCL_DEBUG_FILE=path where %h is the host name and %p the pid (default:
 * stderr). Each line starts with "host:pid:tid xccl LEVEL SUBSYS". The log
 * macros keep errno intact. TRACE lines compile out unless XCCL_ENABLE_TRACE.
 */
#ifndef XCCL_BASE_LOG_H
#define XCCL_BASE_LOG_H

#include <stdarg.h>
#include <stddef.h>

typedef enum {
  LOG_NONE = 0,
  LOG_VERSION = 1,
  LOG_WARN = 2,
  LOG_INFO = 3,
  LOG_TRACE = 4
} log_level_t;

typedef enum {
  LOG_INIT = 1 << 0,
  LOG_COLL = 1 << 1,
  LOG_NET = 1 << 2,
  LOG_PROXY = 1 << 3,
  LOG_BOOTSTRAP = 1 << 4,
  LOG_TOPO = 1 << 5,
  LOG_ENV = 1 << 6,
  LOG_ALL = ~0
} log_subsys_t;

/* The three log settings and the variable each came from (XCCL_DEBUG or its
 * alias NCCL_DEBUG, ...), which the warnings about a bad value name. */
typedef struct {
  const char *level, *level_var;
  const char *subsys, *subsys_var;
  const char *file, *file_var;
} log_settings_t;

/*
 * Applies the log settings; called by config_load and xcclResetDebugInit.
 * Safe while other threads log: the level and subsystems change atomically,
 * and the file is swapped under the lock every write holds, so the old file
 * is closed only when no write uses it. A line being written while the
 * settings change goes out under the old ones. A bad value gets a note on
 * stderr naming its variable and the default is used.
 */
void log_configure(const log_settings_t *settings);

/*
 * Expands a file name pattern of XCCL_DEBUG_FILE's kind into out (outlen
 * bytes, always terminated): %h becomes the host name, %p the pid, and %r
 * the rank when rank >= 0 (with rank < 0 "%r" stays as it is). A name that
 * does not fit is cut before the conversion that overflows. Returns the
 * length written. Any thread; not async-signal-safe (gethostname, snprintf).
 */
size_t log_expand_path(const char *pattern, int rank, char *out, size_t outlen);

int log_enabled(log_level_t level, int subsys);
/* Like log_enabled without loading the configuration: for config.c itself. */
int log_enabled_configured(log_level_t level, int subsys);
void log_write(log_level_t level, int subsys, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define XLOG(level, subsys, ...)                                            \
  do {                                                                      \
    if (log_enabled((level), (subsys)))                                     \
      log_write((level), (subsys), __FILE__, __LINE__, __VA_ARGS__);        \
  } while (0)

#define WARN(subsys, ...) XLOG(LOG_WARN, LOG_##subsys, __VA_ARGS__)
#define INFO(subsys, ...) XLOG(LOG_INFO, LOG_##subsys, __VA_ARGS__)
#ifdef XCCL_ENABLE_TRACE
#define TRACE(subsys, ...) XLOG(LOG_TRACE, LOG_##subsys, __VA_ARGS__)
#else
#define TRACE(subsys, ...) do { } while (0)
#endif

#endif
