/*
 * xccl-run — starts N local ranks of a program, ready for xcclCommInitFromEnv.
 *
 *   xccl-run [options] -n N prog [args...]
 *
 * It makes a unique id (which starts the bootstrap root on a thread of this
 * process, so xccl-run must outlive the ranks' initialisation — it does, since
 * it waits for them) and gives each rank XCCL_UNIQUE_ID, XCCL_RANK,
 * XCCL_NRANKS, XCCL_LOCAL_RANK and XCCL_SOCKET_IFNAME (lo unless set).
 *
 * Process handling: every rank runs in its own process group, so a signal
 * reaches the whole tree a rank starts; ranks get stdin from /dev/null and die
 * with SIGKILL if xccl-run itself is killed (PR_SET_PDEATHSIG). xccl-run waits
 * on a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT) and, with
 * --prefix, on the ranks' output pipes, always with a bounded poll timeout.
 *
 * A closed output pipe (`xccl-run ... | head -3`, once head exits): a rank
 * that writes to it dies of SIGPIPE, perhaps in the middle of connecting to
 * the others, whose output nobody would read either. xccl-run then stops the
 * other ranks at once (SIGTERM, SIGKILL 2 s later: no --grace), says so in one
 * line on stderr and exits 141 (128 + SIGPIPE). With --prefix the ranks write
 * to xccl-run, and xccl-run's own write failing with EPIPE does the same.
 * xccl-run blocks SIGPIPE, so its own writes see EPIPE instead of killing it;
 * ranks start with SIGPIPE unblocked and at its default action, whatever
 * xccl-run inherited.
 *
 * Exit status: 0 when every rank exits 0; 77 when every rank exits 77 (all
 * skipped); otherwise the status of the first rank that failed (exit code, or
 * 128 + signal), where a real failure wins over a skip; 141 when the output
 * pipe was closed (unless a rank had failed first); 124 when --timeout
 * expired; 128 + signal when xccl-run itself was interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xccl.h"

#define MAX_RANKS 1024
#define SKIP_CODE 77
#define KILL_AFTER_TERM_S 2.0 /* SIGTERM, then SIGKILL this much later */
#define DRAIN_S 1.0           /* after the last rank exits, wait this long for pipes to close */
#define POLL_CAP_MS 1000      /* no wait longer than this */
#define LINE_CAP 65536        /* a longer line is cut and printed in pieces */

extern char **environ;

typedef struct {
  int fd;       /* read end of the pipe, -1 once closed */
  int out_fd;   /* where its lines go: 1 or 2 */
  char *buf;    /* a partial line */
  size_t len, cap;
} stream_t;

typedef struct {
  pid_t pid;       /* 0: never started */
  int running;
  int code;        /* exit code, or 128 + signal, once reaped */
  stream_t out[2]; /* stdout, stderr (prefix mode only) */
} rank_t;

typedef struct {
  int nranks;
  int prefix;
  double grace_s;
  double timeout_s; /* 0: none */
  char **argv;
} options_t;

typedef struct {
  options_t opt;
  rank_t *ranks;
  int live;           /* ranks started and not yet reaped */
  int first_fail;     /* first rank that failed with a code other than 77, or -1 */
  int first_skip;     /* first rank that exited 77, or -1 */
  int launch_error;   /* a rank could not be started */
  int stopping;       /* a stop is under way */
  double term_at;     /* when to send SIGTERM (if !term_sent) */
  double kill_at;     /* when to send SIGKILL (if !kill_sent) */
  int term_sent, kill_sent;
  double deadline;    /* --timeout, absolute; 0: none */
  int timed_out;
  int got_signal;     /* a signal that xccl-run itself received */
  int out_broken;     /* our stdout/stderr is gone (EPIPE): drop rank output */
  int pipe_closed;    /* the job's output has no reader: a rank died of SIGPIPE, or out_broken */
  char *scratch;      /* prefixed output being assembled */
  size_t scratch_cap;
} job_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-run [options] -n N prog [args...]\n"
          "Starts N local ranks of prog, set up for xcclCommInitFromEnv.\n"
          "\n"
          "  -n, --nranks N   number of ranks to start, 1..%d (required)\n"
          "  -p, --prefix     prefix each line of each rank's stdout and stderr with \"[rank] \"\n"
          "      --grace S    when a rank fails, give the others S seconds to finish before\n"
          "                   SIGTERM (and SIGKILL %g s later); default 5\n"
          "      --timeout S  stop all ranks after S seconds and exit 124; default: no limit\n"
          "  -h, --help       show this help\n"
          "\n"
          "Each rank gets XCCL_UNIQUE_ID, XCCL_RANK, XCCL_NRANKS, XCCL_LOCAL_RANK and\n"
          "XCCL_SOCKET_IFNAME (lo unless already set), and stdin from /dev/null.\n"
          "Exit status: 0 if all ranks exit 0, 77 if all exit 77 (skipped), 124 on\n"
          "--timeout, else the status of the first rank that failed (128+signal if killed).\n"
          "When the output pipe closes (a rank dies of SIGPIPE), the others are stopped at\n"
          "once, without the grace, and the exit status is 141.\n",
          MAX_RANKS, KILL_AFTER_TERM_S);
}

static int parse_seconds(const char *opt, const char *text, int allow_zero, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !isfinite(v) || v < 0 || (!allow_zero && v == 0) ||
      v > 1e7) {
    fprintf(stderr, "xccl-run: %s needs a number of seconds%s, not '%s'\n", opt,
            allow_zero ? " (0 or more)" : " (more than 0)", text);
    return -1;
  }
  *out = v;
  return 0;
}

/* Returns 0 to go on, 1 when the caller should exit 0 (help), -1 on error. */
static int parse_args(int argc, char **argv, options_t *o) {
  enum { OPT_GRACE = 1000, OPT_TIMEOUT };
  static const struct option longopts[] = {
      {"nranks", required_argument, NULL, 'n'}, {"prefix", no_argument, NULL, 'p'},
      {"grace", required_argument, NULL, OPT_GRACE}, {"timeout", required_argument, NULL, OPT_TIMEOUT},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  memset(o, 0, sizeof(*o));
  o->grace_s = 5.0;
  int c;
  opterr = 0;
  /* '+': stop at the first non-option, which is the program to run. */
  while ((c = getopt_long(argc, argv, "+:n:ph", longopts, NULL)) != -1) {
    switch (c) {
    case 'n': {
      char *end = NULL;
      errno = 0;
      long v = strtol(optarg, &end, 10);
      if (errno != 0 || end == optarg || *end != '\0' || v < 1 || v > MAX_RANKS) {
        fprintf(stderr, "xccl-run: -n needs a number of ranks from 1 to %d, not '%s'\n", MAX_RANKS,
                optarg);
        return -1;
      }
      o->nranks = (int)v;
      break;
    }
    case 'p': o->prefix = 1; break;
    case OPT_GRACE:
      if (parse_seconds("--grace", optarg, 1, &o->grace_s) != 0) return -1;
      break;
    case OPT_TIMEOUT:
      if (parse_seconds("--timeout", optarg, 0, &o->timeout_s) != 0) return -1;
      break;
    case 'h': usage(stdout); return 1;
    case ':':
      fprintf(stderr, "xccl-run: option '%s' needs a value; see xccl-run --help\n", argv[optind - 1]);
      return -1;
    default:
      fprintf(stderr, "xccl-run: unknown option '%s'; see xccl-run --help\n", argv[optind - 1]);
      return -1;
    }
  }
  if (o->nranks == 0) {
    fprintf(stderr, "xccl-run: -n N is required (the number of ranks to start); see xccl-run --help\n");
    return -1;
  }
  if (optind >= argc) {
    fprintf(stderr, "xccl-run: no program given; usage: xccl-run [options] -n N prog [args...]\n");
    return -1;
  }
  o->argv = argv + optind;
  return 0;
}

/* ---- Output ------------------------------------------------------------ */

static void output_gone(job_t *job, int rank);

static void write_all(job_t *job, int fd, const char *p, size_t n) {
  while (n > 0 && !job->out_broken) {
    ssize_t w = write(fd, p, n);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      struct pollfd pfd = {.fd = fd, .events = POLLOUT};
      (void)poll(&pfd, 1, 100);
    } else {
      job->out_broken = 1; /* EPIPE or similar: nobody reads our output any more */
      if (errno == EPIPE) output_gone(job, -1);
    }
  }
}

static int reserve(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 256;
  while (ncap < need) ncap *= 2;
  char *nb = realloc(*buf, ncap);
  if (!nb) return -1;
  *buf = nb;
  *cap = ncap;
  return 0;
}

/* Prints the lines in s->buf that are complete (all of it when `all`, adding
 * a final newline), each behind "[rank] ", in one write. */
static void stream_emit(job_t *job, int rank, stream_t *s, int all) {
  char tag[16];
  int taglen = snprintf(tag, sizeof(tag), "[%d] ", rank);
  size_t done = 0, outlen = 0;
  while (done < s->len) {
    const char *nl = memchr(s->buf + done, '\n', s->len - done);
    size_t linelen;
    int add_nl = 0;
    if (nl) {
      linelen = (size_t)(nl - (s->buf + done)) + 1;
    } else if (all || s->len - done >= LINE_CAP) {
      linelen = s->len - done < LINE_CAP ? s->len - done : LINE_CAP;
      add_nl = 1;
    } else {
      break;
    }
    if (reserve(&job->scratch, &job->scratch_cap, outlen + (size_t)taglen + linelen + 1) != 0) break;
    memcpy(job->scratch + outlen, tag, (size_t)taglen);
    memcpy(job->scratch + outlen + taglen, s->buf + done, linelen);
    outlen += (size_t)taglen + linelen;
    if (add_nl) job->scratch[outlen++] = '\n';
    done += linelen;
  }
  if (outlen > 0) write_all(job, s->out_fd, job->scratch, outlen);
  if (done == s->len || all) {
    s->len = 0;
  } else if (done > 0) {
    memmove(s->buf, s->buf + done, s->len - done);
    s->len -= done;
  }
}

static void stream_close(job_t *job, int rank, stream_t *s) {
  if (s->fd < 0) return;
  close(s->fd);
  s->fd = -1;
  stream_emit(job, rank, s, 1);
  free(s->buf);
  s->buf = NULL;
  s->len = s->cap = 0;
}

/* Reads what the pipe has (once); closes it at EOF or error. */
static void stream_read(job_t *job, int rank, stream_t *s) {
  char chunk[16384];
  ssize_t n = read(s->fd, chunk, sizeof(chunk));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    stream_close(job, rank, s);
    return;
  }
  if (reserve(&s->buf, &s->cap, s->len + (size_t)n) != 0) {
    stream_emit(job, rank, s, 1); /* out of memory: print what we have, unprefixed rest */
    write_all(job, s->out_fd, chunk, (size_t)n);
    return;
  }
  memcpy(s->buf + s->len, chunk, (size_t)n);
  s->len += (size_t)n;
  stream_emit(job, rank, s, 0);
}

/* ---- Stopping ---------------------------------------------------------- */

static void signal_ranks(job_t *job, int sig) {
  for (int i = 0; i < job->opt.nranks; i++) {
    rank_t *r = &job->ranks[i];
    if (!r->running) continue;
    /* The rank's whole process group; if it has none yet, the rank alone. */
    if (kill(-r->pid, sig) != 0 && errno == ESRCH) (void)kill(r->pid, sig);
  }
}

/* Schedules SIGTERM `delay` seconds from now (unless one is due sooner). */
static void begin_stop(job_t *job, double delay) {
  double t = now_s() + delay;
  if (!job->stopping || (!job->term_sent && t < job->term_at)) {
    job->term_at = t;
    job->kill_at = t + KILL_AFTER_TERM_S;
  }
  job->stopping = 1;
}

static void run_stop_timers(job_t *job) {
  if (!job->stopping || job->live == 0) return;
  double t = now_s();
  if (!job->term_sent && t >= job->term_at) {
    signal_ranks(job, SIGTERM);
    job->term_sent = 1;
    job->kill_at = t + KILL_AFTER_TERM_S;
  }
  if (job->term_sent && !job->kill_sent && t >= job->kill_at) {
    signal_ranks(job, SIGKILL);
    job->kill_sent = 1;
  }
}

static void describe_status(int status, char *buf, size_t len) {
  if (WIFEXITED(status)) {
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
  } else if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    snprintf(buf, len, "killed by signal %d (%s)%s", sig, strsignal(sig),
             WCOREDUMP(status) ? ", core dumped" : "");
  } else {
    snprintf(buf, len, "ended with wait status 0x%x", (unsigned)status);
  }
}

/* The job's output has no reader any more: rank's SIGPIPE death (rank >= 0)
 * or our own EPIPE (-1) says so. Nothing the ranks print can be seen, and a
 * rank killed while connecting leaves the others failing or waiting, so
 * they are all stopped now, without the grace. Said once. */
static void output_gone(job_t *job, int rank) {
  if (job->pipe_closed || job->got_signal || job->timed_out || job->launch_error) return;
  job->pipe_closed = 1;
  char who[96] = "";
  if (rank >= 0)
    snprintf(who, sizeof(who), " (rank %d, pid %d, was killed by SIGPIPE)", rank, (int)job->ranks[rank].pid);
  if (job->live > 0) {
    fprintf(stderr, "xccl-run: the output pipe was closed%s; stopping the job's %d %srank(s) now\n", who,
            job->live, rank >= 0 ? "other " : "");
    begin_stop(job, 0);
  } else {
    fprintf(stderr, "xccl-run: the output pipe was closed%s; the job has stopped\n", who);
  }
}

static void on_rank_exit(job_t *job, int i, int status) {
  rank_t *r = &job->ranks[i];
  r->running = 0;
  job->live--;
  r->code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  if (r->code == 0) return;
  /* Ranks that end because we stopped them for a timeout, a signal or a
   * launch error are consequences, not causes. */
  if (job->timed_out || job->got_signal || job->launch_error || job->pipe_closed) return;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) {
    output_gone(job, i);
    return;
  }
  int first = job->first_fail < 0 && job->first_skip < 0;
  if (r->code == SKIP_CODE) {
    if (job->first_skip < 0) job->first_skip = i;
  } else if (job->first_fail < 0) {
    job->first_fail = i;
    char why[128];
    describe_status(status, why, sizeof(why));
    if (first && job->live > 0)
      fprintf(stderr, "xccl-run: rank %d (pid %d) %s; stopping the others after %g s grace\n", i,
              (int)r->pid, why, job->opt.grace_s);
    else if (job->first_skip >= 0)
      fprintf(stderr, "xccl-run: rank %d (pid %d) %s, after rank %d had exited %d (skipped)\n", i,
              (int)r->pid, why, job->first_skip, SKIP_CODE);
    else
      fprintf(stderr, "xccl-run: rank %d (pid %d) %s\n", i, (int)r->pid, why);
  }
  if (first && job->live > 0) begin_stop(job, job->opt.grace_s);
}

static void reap(job_t *job) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return; /* 0: none ready; -1: ECHILD or EINTR */
    for (int i = 0; i < job->opt.nranks; i++) {
      if (job->ranks[i].running && job->ranks[i].pid == pid) {
        on_rank_exit(job, i, status);
        break;
      }
    }
  }
}

static void on_signal(job_t *job, int sig) {
  if (sig == SIGCHLD) {
    reap(job);
    return;
  }
  if (job->got_signal) { /* a second one: no more patience */
    signal_ranks(job, SIGKILL);
    job->kill_sent = job->term_sent = 1;
    return;
  }
  job->got_signal = sig;
  fprintf(stderr, "xccl-run: received signal %d (%s); passing it to the ranks\n", sig, strsignal(sig));
  signal_ranks(job, sig);
  job->stopping = 1;
  job->term_sent = 1;
  job->kill_at = now_s() + KILL_AFTER_TERM_S;
}

/* ---- Starting ---------------------------------------------------------- */

static const char *const rank_vars[] = {"XCCL_UNIQUE_ID=", "XCCL_RANK=", "XCCL_NRANKS=",
                                        "XCCL_LOCAL_RANK="};
#define N_RANK_VARS 4

/* A copy of environ without the per-rank variables, with N_RANK_VARS + 1
 * free slots at the end (filled per rank, then NULL). */
static char **base_env(size_t *nbase) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + N_RANK_VARS + 1, sizeof(char *));
  if (!env) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int ours = 0;
    for (int v = 0; v < N_RANK_VARS; v++)
      if (strncmp(environ[i], rank_vars[v], strlen(rank_vars[v])) == 0) ours = 1;
    if (!ours) env[k++] = environ[i];
  }
  *nbase = k;
  return env;
}

/* Async-signal-safe error output for the child between fork and exec. */
static void child_fail(const char *prefix, int err) {
  char num[16];
  int k = (int)sizeof(num);
  unsigned v = (unsigned)err;
  num[--k] = '\0';
  do {
    num[--k] = (char)('0' + v % 10);
    v /= 10;
  } while (v && k > 0);
  const char *what = err == ENOENT ? "no such file or directory (check the path or PATH)"
                     : err == EACCES ? "permission denied (is it executable?)"
                     : err == ENOEXEC ? "not an executable format"
                                      : "errno ";
  ssize_t ignored = write(2, prefix, strlen(prefix));
  ignored = write(2, what, strlen(what));
  if (err != ENOENT && err != EACCES && err != ENOEXEC) ignored = write(2, num + k, strlen(num + k));
  ignored = write(2, "\n", 1);
  (void)ignored;
}

static int start_rank(job_t *job, int i, char **env, const sigset_t *child_mask, int devnull,
                      const char *fail_msg) {
  rank_t *r = &job->ranks[i];
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  if (job->opt.prefix) {
    for (int s = 0; s < 2; s++) {
      if (pipe2(pipes[s], O_CLOEXEC) != 0) {
        fprintf(stderr, "xccl-run: cannot start rank %d: pipe: %s\n", i, strerror(errno));
        for (int t = 0; t < s; t++) close(pipes[t][0]), close(pipes[t][1]);
        return -1;
      }
    }
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "xccl-run: cannot start rank %d: fork: %s\n", i, strerror(errno));
    for (int s = 0; s < 2; s++)
      if (pipes[s][0] >= 0) close(pipes[s][0]), close(pipes[s][1]);
    return -1;
  }
  if (pid == 0) {
    /* Child: only async-signal-safe calls until exec. */
    (void)setpgid(0, 0);
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL); /* xccl-run is already gone */
    if (dup2(devnull, 0) < 0) _exit(126);
    if (job->opt.prefix && (dup2(pipes[0][1], 1) < 0 || dup2(pipes[1][1], 2) < 0)) _exit(126);
    /* A rank dies of a closed pipe, as a program does, whatever xccl-run inherited. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigset_t mask = *child_mask;
    (void)sigaction(SIGPIPE, &dfl, NULL);
    (void)sigdelset(&mask, SIGPIPE);
    (void)sigprocmask(SIG_SETMASK, &mask, NULL);
    execvpe(job->opt.argv[0], job->opt.argv, env);
    int err = errno;
    child_fail(fail_msg, err);
    _exit(err == ENOENT ? 127 : 126);
  }
  (void)setpgid(pid, pid); /* also here, so the group exists before we might signal it */
  r->pid = pid;
  r->running = 1;
  job->live++;
  if (job->opt.prefix) {
    for (int s = 0; s < 2; s++) {
      close(pipes[s][1]);
      (void)fcntl(pipes[s][0], F_SETFL, fcntl(pipes[s][0], F_GETFL) | O_NONBLOCK);
      r->out[s].fd = pipes[s][0];
      r->out[s].out_fd = s + 1;
    }
  }
  return 0;
}

/* ---- Main loop --------------------------------------------------------- */

static int open_streams(const job_t *job) {
  int n = 0;
  for (int i = 0; i < job->opt.nranks; i++)
    for (int s = 0; s < 2; s++) n += job->ranks[i].out[s].fd >= 0;
  return n;
}

/* Milliseconds until the earliest pending deadline, capped at POLL_CAP_MS. */
static int poll_timeout_ms(const job_t *job, double drain_until) {
  double t = now_s(), next = t + POLL_CAP_MS / 1000.0;
  if (job->live > 0) {
    if (job->stopping && !job->term_sent && job->term_at < next) next = job->term_at;
    if (job->stopping && job->term_sent && !job->kill_sent && job->kill_at < next) next = job->kill_at;
    if (job->deadline > 0 && !job->timed_out && job->deadline < next) next = job->deadline;
  } else if (drain_until < next) {
    next = drain_until;
  }
  double ms = ceil((next - t) * 1000.0);
  return ms < 0 ? 0 : ms > POLL_CAP_MS ? POLL_CAP_MS : (int)ms;
}

static void run_loop(job_t *job, int sfd, struct pollfd *pfds, int *owner) {
  int n = job->opt.nranks;
  double drain_until = 0;
  while (job->live > 0 || open_streams(job) > 0) {
    if (job->live == 0 && drain_until == 0) drain_until = now_s() + DRAIN_S;
    if (job->live == 0 && now_s() >= drain_until) break;
    int k = 0;
    pfds[k++] = (struct pollfd){.fd = sfd, .events = POLLIN};
    for (int i = 0; i < n; i++)
      for (int s = 0; s < 2; s++)
        if (job->ranks[i].out[s].fd >= 0) {
          owner[k] = i * 2 + s;
          pfds[k++] = (struct pollfd){.fd = job->ranks[i].out[s].fd, .events = POLLIN};
        }
    if (poll(pfds, (nfds_t)k, poll_timeout_ms(job, drain_until)) < 0) {
      if (errno != EINTR) {
        fprintf(stderr, "xccl-run: poll: %s; killing the ranks\n", strerror(errno));
        signal_ranks(job, SIGKILL);
        job->launch_error = 1;
        break;
      }
      continue;
    }
    if (pfds[0].revents & POLLIN) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) on_signal(job, (int)si.ssi_signo);
    }
    for (int j = 1; j < k; j++)
      if (pfds[j].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
        stream_read(job, owner[j] / 2, &job->ranks[owner[j] / 2].out[owner[j] % 2]);
    reap(job); /* a SIGCHLD may have been merged with another; waitpid is cheap */
    if (job->live > 0 && job->deadline > 0 && !job->timed_out && now_s() >= job->deadline) {
      job->timed_out = 1;
      fprintf(stderr, "xccl-run: --timeout of %g s expired with %d of %d ranks still running; stopping them\n",
              job->opt.timeout_s, job->live, n);
      begin_stop(job, 0);
    }
    run_stop_timers(job);
  }
  for (int i = 0; i < n; i++)
    for (int s = 0; s < 2; s++) stream_close(job, i, &job->ranks[i].out[s]);
}

static int exit_status(const job_t *job) {
  if (job->got_signal) return 128 + job->got_signal;
  if (job->launch_error) return 1;
  if (job->first_fail >= 0) return job->ranks[job->first_fail].code;
  if (job->pipe_closed) return 128 + SIGPIPE;
  if (job->timed_out) return 124;
  if (job->first_skip >= 0) {
    int skipped = 0;
    for (int i = 0; i < job->opt.nranks; i++) skipped += job->ranks[i].code == SKIP_CODE;
    if (skipped != job->opt.nranks)
      fprintf(stderr,
              "xccl-run: %d of %d ranks exited %d (skipped) and the others exited 0, first rank %d "
              "(pid %d); reporting the job as skipped\n",
              skipped, job->opt.nranks, SKIP_CODE, job->first_skip, (int)job->ranks[job->first_skip].pid);
    return SKIP_CODE;
  }
  return 0;
}

int main(int argc, char **argv) {
  job_t job;
  memset(&job, 0, sizeof(job));
  int pr = parse_args(argc, argv, &job.opt);
  if (pr != 0) return pr > 0 ? 0 : 2;
  int n = job.opt.nranks;
  job.first_fail = job.first_skip = -1;

  /* Signals are blocked before xcclGetUniqueId starts the bootstrap thread,
   * so that thread inherits the mask and only our signalfd sees them. */
  sigset_t blocked, orig;
  sigemptyset(&blocked);
  int watched[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) sigaddset(&blocked, watched[i]);
  sigset_t watch_set = blocked;
  sigaddset(&blocked, SIGPIPE); /* a closed stdout shows up as EPIPE instead */
  if (pthread_sigmask(SIG_BLOCK, &blocked, &orig) != 0) {
    fprintf(stderr, "xccl-run: cannot block signals\n");
    return 1;
  }
  int sfd = signalfd(-1, &watch_set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) {
    fprintf(stderr, "xccl-run: signalfd: %s\n", strerror(errno));
    return 1;
  }
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull < 0) {
    fprintf(stderr, "xccl-run: cannot open /dev/null: %s\n", strerror(errno));
    return 1;
  }

  if (getenv("XCCL_SOCKET_IFNAME") == NULL && setenv("XCCL_SOCKET_IFNAME", "lo", 1) != 0) {
    fprintf(stderr, "xccl-run: cannot set XCCL_SOCKET_IFNAME: %s\n", strerror(errno));
    return 1;
  }
  xcclUniqueId id;
  xcclResult_t res = xcclGetUniqueId(&id);
  if (res != xcclSuccess) {
    fprintf(stderr, "xccl-run: xcclGetUniqueId failed (%s): %s\n", xcclGetErrorString(res),
            xcclGetLastError(NULL));
    return 1;
  }
  char idvar[sizeof("XCCL_UNIQUE_ID=") + 2 * XCCL_UNIQUE_ID_BYTES];
  int off = snprintf(idvar, sizeof(idvar), "XCCL_UNIQUE_ID=");
  for (int i = 0; i < XCCL_UNIQUE_ID_BYTES; i++)
    off += snprintf(idvar + off, sizeof(idvar) - (size_t)off, "%02x", (unsigned char)id.internal[i]);

  size_t nbase = 0;
  char **env = base_env(&nbase);
  job.ranks = calloc((size_t)n, sizeof(rank_t));
  struct pollfd *pfds = calloc((size_t)(1 + 2 * n), sizeof(*pfds));
  int *owner = calloc((size_t)(1 + 2 * n), sizeof(int)); /* rank * 2 + stream, per pfds slot */
  if (!env || !job.ranks || !pfds || !owner) {
    fprintf(stderr, "xccl-run: out of memory\n");
    return 1;
  }
  for (int i = 0; i < n; i++)
    for (int s = 0; s < 2; s++) job.ranks[i].out[s].fd = -1;
  if (job.opt.timeout_s > 0) job.deadline = now_s() + job.opt.timeout_s;

  char fail_msg[512];
  snprintf(fail_msg, sizeof(fail_msg), "xccl-run: cannot run '%.400s': ", job.opt.argv[0]);
  char rank_s[32], nranks_s[32], local_s[32];
  for (int i = 0; i < n && !job.launch_error; i++) {
    snprintf(rank_s, sizeof(rank_s), "XCCL_RANK=%d", i);
    snprintf(nranks_s, sizeof(nranks_s), "XCCL_NRANKS=%d", n);
    snprintf(local_s, sizeof(local_s), "XCCL_LOCAL_RANK=%d", i);
    env[nbase + 0] = idvar;
    env[nbase + 1] = rank_s;
    env[nbase + 2] = nranks_s;
    env[nbase + 3] = local_s;
    env[nbase + 4] = NULL;
    if (start_rank(&job, i, env, &orig, devnull, fail_msg) != 0) {
      job.launch_error = 1;
      if (job.live > 0) fprintf(stderr, "xccl-run: stopping the %d ranks already started\n", job.live);
      begin_stop(&job, 0);
    }
    /* A signal while starting stops the launch; a rank that fails early
     * only starts the grace period, as it would later. */
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) on_signal(&job, (int)si.ssi_signo);
    if (job.got_signal || job.pipe_closed) break; /* nothing more to start for */
  }
  run_loop(&job, sfd, pfds, owner);
  int code = exit_status(&job);
  free(env);
  free(job.ranks);
  free(job.scratch);
  free(pfds);
  free(owner);
  close(devnull);
  close(sfd);
  return code;
}
