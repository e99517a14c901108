#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

/* Read by every log macro on any thread, changed by log_configure. */
static _Atomic int log_level = LOG_WARN;
static _Atomic int log_mask = LOG_ALL;
/* log_file and log_host change and are used only under log_lock. */
static FILE *log_file;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_host[64];

static const struct {
  const char *name;
  int bit;
} log_subsystems[] = {
    {"INIT", LOG_INIT}, {"COLL", LOG_COLL}, {"NET", LOG_NET},   {"PROXY", LOG_PROXY},
    {"BOOTSTRAP", LOG_BOOTSTRAP}, {"TOPO", LOG_TOPO}, {"ENV", LOG_ENV}, {"ALL", LOG_ALL},
};

static const char *subsys_name(int subsys) {
  for (size_t i = 0; i < sizeof(log_subsystems) / sizeof(log_subsystems[0]); i++)
    if (log_subsystems[i].bit == subsys) return log_subsystems[i].name;
  return "?";
}

static int parse_level(const char *s) {
  static const char *names[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
  for (int i = 0; i < 5; i++)
    if (strcasecmp(s, names[i]) == 0) return i;
  return -1;
}

static int parse_subsys(const char *s, const char *var) {
  int invert = s[0] == '^';
  int mask = 0;
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", s + invert);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int found = 0;
    for (size_t i = 0; i < sizeof(log_subsystems) / sizeof(log_subsystems[0]); i++) {
      if (strcasecmp(tok, log_subsystems[i].name) == 0) {
        mask |= log_subsystems[i].bit;
        found = 1;
      }
    }
    if (!found) fprintf(stderr, "xccl WARN %s: unknown subsystem '%s' ignored\n", var, tok);
  }
  return invert ? ~mask : mask;
}

size_t log_expand_path(const char *pattern, int rank, char *out, size_t outlen) {
  if (outlen == 0) return 0;
  char host[64] = "";
  gethostname(host, sizeof(host) - 1);
  size_t o = 0;
  for (const char *p = pattern; *p && o + 1 < outlen; p++) {
    int n = -2; /* -2: not a conversion */
    if (p[0] == '%' && p[1] == 'h')
      n = snprintf(out + o, outlen - o, "%s", host);
    else if (p[0] == '%' && p[1] == 'p')
      n = snprintf(out + o, outlen - o, "%d", (int)getpid());
    else if (p[0] == '%' && p[1] == 'r' && rank >= 0)
      n = snprintf(out + o, outlen - o, "%d", rank);
    if (n == -2) {
      out[o++] = *p;
      continue;
    }
    if (n < 0 || (size_t)n >= outlen - o) break;
    o += (size_t)n;
    p++;
  }
  out[o] = '\0';
  return o;
}

void log_configure(const log_settings_t *c) {
  char host[sizeof(log_host)] = "";
  gethostname(host, sizeof(host) - 1);
  int lv = parse_level(c->level);
  if (lv < 0)
    fprintf(stderr, "xccl WARN %s=%s is not NONE, VERSION, WARN, INFO or TRACE; using WARN\n", c->level_var,
            c->level);
  int mask = parse_subsys(c->subsys, c->subsys_var);
  FILE *f = NULL;
  if (c->file && *c->file) {
    char path[512];
    log_expand_path(c->file, -1, path, sizeof(path));
    f = fopen(path, "a");
    if (!f)
      fprintf(stderr, "xccl WARN %s=%s: cannot open %s: %s; logging to stderr\n", c->file_var, c->file, path,
              strerror(errno));
  }
  pthread_mutex_lock(&log_lock);
  memcpy(log_host, host, sizeof(log_host));
  FILE *old = log_file;
  log_file = f;
  if (old) fclose(old); /* every write holds log_lock: none is using it now */
  atomic_store_explicit(&log_level, lv < 0 ? LOG_WARN : lv, memory_order_relaxed);
  atomic_store_explicit(&log_mask, mask, memory_order_relaxed);
  pthread_mutex_unlock(&log_lock);
}

int log_enabled_configured(log_level_t level, int subsys) {
  return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed) &&
         (subsys & atomic_load_explicit(&log_mask, memory_order_relaxed));
}

int log_enabled(log_level_t level, int subsys) {
  config_load();
  return log_enabled_configured(level, subsys);
}

void log_write(log_level_t level, int subsys, const char *file, int line, const char *fmt, ...) {
  static const char *lvnames[] = {"NONE", "VERSION", "WARN", "INFO", "TRACE"};
  int saved = errno;
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  const char *base = strrchr(file, '/');
  pthread_mutex_lock(&log_lock);
  FILE *out = log_file ? log_file : stderr;
  fprintf(out, "%s:%d:%ld xccl %s %s %s:%d %s\n", log_host, (int)getpid(), (long)syscall(SYS_gettid),
          lvnames[level], subsys_name(subsys), base ? base + 1 : file, line, msg);
  fflush(out);
  pthread_mutex_unlock(&log_lock);
  errno = saved;
}
