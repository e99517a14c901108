/*
 * dump_signal.c — where dumps go (XCCL_DUMP_DIR) and XCCL_DUMP_SIGNAL: the
 * handler, which only writes a byte to a pipe (async-signal-safe), and the
 * watcher thread that reads the pipe and has the dumps written (dump.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "dump.h"
#include "log.h"
#include "thread.h"

/* Set once (dump_setup) before any dump is written: */
static char dump_dir_path[3800];
static int dump_on; /* XCCL_DUMP_DIR names a usable directory */
static int dump_pipe[2] = {-1, -1};
static struct sigaction dump_old_action;
static void (*dump_all_fn)(const char *reason);
static pthread_mutex_t dump_start_lock = PTHREAD_MUTEX_INITIALIZER;
static int dump_started;

const char *dump_dir(void) { return dump_on ? dump_dir_path : NULL; }

/* Async-signal-safe: one write(2) to a non-blocking pipe (a full pipe
 * already holds a wake-up), then the handler that was there before. */
static void dump_handler(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  char b = 's';
  ssize_t w = write(dump_pipe[1], &b, 1);
  (void)w;
  if (dump_old_action.sa_flags & SA_SIGINFO) {
    if (dump_old_action.sa_sigaction) dump_old_action.sa_sigaction(sig, si, uc);
  } else if (dump_old_action.sa_handler != SIG_DFL && dump_old_action.sa_handler != SIG_IGN) {
    dump_old_action.sa_handler(sig);
  }
  errno = saved;
}

/* The watcher: one pass of dump_all per wake-up (several signals that came
 * while it wrote give one more pass). Lives as long as the process. */
static void *dump_watch(void *arg) {
  (void)arg;
  for (;;) {
    char buf[64];
    ssize_t n = read(dump_pipe[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      WARN(COLL, "XCCL_DUMP_SIGNAL: the watcher's pipe failed (%s): no more dumps on the signal",
           n < 0 ? strerror(errno) : "closed");
      return NULL;
    }
    dump_all_fn("signal");
  }
}

int dump_parse_signal(const char *text, int *sig_p, char *why, size_t whylen) {
  static const struct {
    const char *name;
    int sig;
  } names[] = {{"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"USR1", SIGUSR1}, {"USR2", SIGUSR2},
               {"PIPE", SIGPIPE},     {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CONT", SIGCONT}, {"TSTP", SIGTSTP},
               {"TTIN", SIGTTIN},     {"TTOU", SIGTTOU}, {"URG", SIGURG},     {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
               {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},     {"PWR", SIGPWR},
               {"KILL", SIGKILL},     {"STOP", SIGSTOP}};
  const char *s = text ? text : "";
  if (!*s || strcasecmp(s, "off") == 0 || strcmp(s, "0") == 0) return *sig_p = 0, 0;
  int sig = -1;
  if (*s >= '0' && *s <= '9') {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == '\0' && v > 0 && v <= SIGRTMAX) sig = (int)v;
  } else {
    const char *n = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && sig < 0; i++)
      if (strcasecmp(n, names[i].name) == 0) sig = names[i].sig;
  }
  if (sig < 0) {
    snprintf(why, whylen, "XCCL_DUMP_SIGNAL=%s is not a signal: give a name (USR1, USR2, ...) or a number from 1 to %d",
             s, SIGRTMAX);
    return -1;
  }
  if (sig == SIGKILL || sig == SIGSTOP) {
    snprintf(why, whylen, "XCCL_DUMP_SIGNAL=%s: signal %d cannot be caught; use USR1 or USR2", s, sig);
    return -1;
  }
  *sig_p = sig;
  return 0;
}

/* XCCL_DUMP_DIR: made when missing; dumps stay off with a WARN when it is
 * not a writable directory. */
static void dump_setup_dir(void) {
  const char *dir = config_str(CFG_DUMP_DIR);
  if (!*dir || strcasecmp(dir, "none") == 0) return;
  struct stat st;
  if (stat(dir, &st) != 0 && errno == ENOENT) (void)mkdir(dir, 0755);
  const char *why = NULL;
  if (strlen(dir) >= sizeof(dump_dir_path))
    why = "the path is too long";
  else if (stat(dir, &st) != 0)
    why = strerror(errno);
  else if (!S_ISDIR(st.st_mode))
    why = "not a directory";
  else if (access(dir, W_OK | X_OK) != 0)
    why = strerror(errno);
  if (why)
    WARN(INIT, "XCCL_DUMP_DIR=%s: %s: in-flight state dumps (on timeouts, XCCL_DUMP_SIGNAL) are off", dir, why);
  else
    snprintf(dump_dir_path, sizeof(dump_dir_path), "%s", dir), dump_on = 1;
}

/* The pipe and the watcher first, so that the handler never meets a
 * missing reader; then the handler. */
static void dump_setup_signal(void) {
  char why[256];
  int sig = 0;
  if (dump_parse_signal(config_str(CFG_DUMP_SIGNAL), &sig, why, sizeof(why)) != 0) {
    WARN(INIT, "%s; no dumps on a signal", why);
    return;
  }
  if (!sig || !dump_on) return;
  if (pipe2(dump_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    WARN(INIT, "XCCL_DUMP_SIGNAL: cannot make the watcher's pipe: %s; no dumps on a signal", strerror(errno));
    return;
  }
  int fl = fcntl(dump_pipe[0], F_GETFL); /* the watcher blocks; the handler must not */
  if (fl < 0 || fcntl(dump_pipe[0], F_SETFL, fl & ~O_NONBLOCK) != 0 ||
      thread_start_detached(dump_watch, NULL) != 0) {
    WARN(INIT, "XCCL_DUMP_SIGNAL: cannot start the dump watcher thread; no dumps on a signal");
    close(dump_pipe[0]), close(dump_pipe[1]);
    return;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = dump_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &dump_old_action) != 0) {
    WARN(INIT, "XCCL_DUMP_SIGNAL: cannot install a handler for signal %d: %s", sig, strerror(errno));
    return; /* the watcher waits on a pipe nobody writes: harmless */
  }
  INFO(INIT, "XCCL_DUMP_SIGNAL: signal %d (%s) writes the in-flight state of every communicator to %s", sig,
       strsignal(sig), dump_dir_path);
}

void dump_start(void (*dump_all)(const char *reason)) {
  pthread_mutex_lock(&dump_start_lock); /* also orders the settings before every caller's dump_dir */
  if (!dump_started) {
    dump_all_fn = dump_all; /* before the watcher starts */
    dump_setup_dir();
    dump_setup_signal();
    dump_started = 1;
  }
  pthread_mutex_unlock(&dump_start_lock);
}
