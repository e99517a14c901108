/*
 * comm_dump.c — in-flight state dumps (comm_dump.h): the records, the writer (safe
 * in a signal handler: it formats by hand and uses only open/write/rename),
 * and the XCCL_DUMP_SIGNAL handler.
 */
#include "comm_dump.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "reduce.h"
#include "tuning.h"

/* Records live in a static pool, never freed, so the signal handler cannot
 * read freed memory; a process with more live communicators than this gets
 * heap records that only timeouts dump. */
#define DUMP_POOL 64
#define DUMP_BUF_BYTES 8192
#define DUMP_PATH_MAX 600

enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_LIVE };

struct dump_slot {
  _Atomic int live; /* SLOT_*: the handler dumps LIVE slots only */
  int heap;         /* not in the pool */
  kern_state_t state;
  /* Fixed while LIVE: */
  uint64_t id;
  int rank, nranks, prev, next; /* channel 0's neighbours, the header's prev= and next= */
  int nchannels;
  int chan_prev[XCCL_MAX_CHANNELS], chan_next[XCCL_MAX_CHANNELS]; /* each channel's own (issue 24) */
  const comm_peer_info_t *peers;                                  /* the communicator's, unchanged after init */
  char host[COMM_HOST_BYTES];
  /* The first failure, set once before `failed` (release): */
  _Atomic int failed;
  int fail_here; /* fail is this communicator's; 0: another of its group failed */
  kern_failure_t fail;
  char fail_msg[ERR_MSG_MAX];
};
typedef struct dump_slot dump_slot_t;

static dump_slot_t dump_pool[DUMP_POOL];
static _Atomic int dump_readers; /* signal handlers walking the pool */

/* Set once (dump_setup) before any slot is live: */
static char dump_dir[DUMP_PATH_MAX - 64];
static int dump_on;          /* XCCL_DUMP_DIR names a directory */
static int dump_log_fd = -1; /* where the handler logs (stderr or XCCL_DEBUG_FILE); -1: WARN off */
static int dump_sig;
static struct sigaction dump_old_action;
static pthread_once_t dump_once = PTHREAD_ONCE_INIT;

/* ---- Formatting without stdio (async-signal-safe) ---- */

typedef struct {
  char *p;
  size_t len, cap;
} dbuf_t;

static void put_s(dbuf_t *b, const char *s) {
  while (*s && b->len < b->cap) b->p[b->len++] = *s++;
}

/* A field value: no spaces, no '=', printable; "-" when empty. */
static void put_word(dbuf_t *b, const char *s) {
  if (!s || !*s) s = "-";
  for (; *s && b->len < b->cap; s++) b->p[b->len++] = (*s <= ' ' || *s > '~' || *s == '=') ? '_' : *s;
}

/* Free text to the end of the line: no line breaks. */
static void put_text(dbuf_t *b, const char *s, size_t max) {
  for (size_t i = 0; s[i] && i < max && b->len < b->cap; i++)
    b->p[b->len++] = (s[i] == '\n' || s[i] == '\r') ? ' ' : s[i];
}

static void put_u(dbuf_t *b, uint64_t v) {
  char t[24];
  int n = 0;
  do t[n++] = (char)('0' + v % 10);
  while ((v /= 10) && n < 24);
  while (n > 0 && b->len < b->cap) b->p[b->len++] = t[--n];
}

static void put_i(dbuf_t *b, int64_t v) {
  if (v < 0) {
    put_s(b, "-");
    put_u(b, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u(b, (uint64_t)v);
  }
}

static void put_hex16(dbuf_t *b, uint64_t v) {
  for (int i = 15; i >= 0 && b->len < b->cap; i--) b->p[b->len++] = "0123456789abcdef"[(v >> (4 * i)) & 15];
}

/* Nanoseconds as seconds with 9 decimals. */
static void put_t(dbuf_t *b, uint64_t ns) {
  put_u(b, ns / 1000000000ull);
  put_s(b, ".");
  uint64_t f = ns % 1000000000ull;
  for (uint64_t d = 100000000ull; d > 0 && b->len < b->cap; d /= 10) b->p[b->len++] = (char)('0' + f / d % 10);
}

static uint64_t ts_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *fail_kind_name(kern_fail_kind_t k) {
  switch (k) {
    case KERN_FAIL_TIMEOUT:
      return "timeout";
    case KERN_FAIL_CONN:
      return "conn";
    case KERN_FAIL_ABORT:
      return "abort";
    case KERN_FAIL_PROTOCOL:
      return "protocol";
    case KERN_FAIL_CHECKSUM:
      return "checksum";
    default:
      return "none";
  }
}

/* A wait's peer: ring items name none (-1): their channel's previous rank
 * for data, its next for room. */
static int resolve_peer(const dump_slot_t *d, int peer, int is_recv, int channel) {
  if (peer >= 0) return peer;
  if (channel >= 0 && channel < d->nchannels) return is_recv ? d->chan_prev[channel] : d->chan_next[channel];
  return is_recv ? d->prev : d->next;
}

static void put_where(dbuf_t *b, const dump_slot_t *d, int peer, int is_recv, int channel, uint64_t step, uint64_t loop,
                      int action, int item) {
  put_s(b, " peer="), put_i(b, resolve_peer(d, peer, is_recv, channel));
  put_s(b, is_recv ? " dir=recv" : " dir=send");
  put_s(b, " channel="), put_i(b, channel);
  put_s(b, " step="), put_u(b, step);
  put_s(b, " loop="), put_u(b, loop);
  put_s(b, " action="), put_i(b, action);
  put_s(b, " item="), put_i(b, item);
}

/* Lays d's dump out in b; the last line is always "end". */
static void dump_format(dump_slot_t *d, const char *reason, dbuf_t *b) {
  kern_state_copy_t s;
  kern_state_snapshot(&d->state, &s);
  uint64_t rt = ts_ns(CLOCK_REALTIME), mono = ts_ns(CLOCK_MONOTONIC);
  size_t cap = b->cap;
  b->cap = cap - 8; /* room for "end\n" whatever comes before */
  put_s(b, "# xccl in-flight state (format: src/core/dump.h); read the dumps of all ranks with xccl-stuck\n");
  put_s(b, "xccl-dump version="), put_u(b, DUMP_FORMAT_VERSION);
  put_s(b, "\nprocess host="), put_word(b, d->host);
  put_s(b, " pid="), put_i(b, (int64_t)getpid());
  put_s(b, " reason="), put_word(b, reason);
  put_s(b, " realtime="), put_t(b, rt);
  put_s(b, " monotonic="), put_t(b, mono);
  put_s(b, "\ncomm id="), put_hex16(b, d->id);
  put_s(b, " rank="), put_i(b, d->rank);
  put_s(b, " nranks="), put_i(b, d->nranks);
  put_s(b, " prev="), put_i(b, d->prev);
  put_s(b, " next="), put_i(b, d->next);
  int failed = atomic_load_explicit(&d->failed, memory_order_acquire);
  static const char *const run_names[] = {"idle", "running", "failed"};
  int run = s.run_state >= 0 && s.run_state <= KERN_STATE_FAILED ? s.run_state : KERN_STATE_RUNNING;
  put_s(b, "\nstate run="), put_s(b, run_names[run]);
  put_s(b, " done="), put_u(b, s.done_seq);
  put_s(b, " waits="), put_i(b, run == KERN_STATE_IDLE ? 0 : s.nwaits);
  put_s(b, " torn="), put_i(b, s.torn);
  if (run != KERN_STATE_IDLE) {
    put_s(b, "\nop name="), put_word(b, s.op_name);
    put_s(b, " seq="), put_u(b, s.seq);
    put_s(b, " count="), put_u(b, s.count);
    put_s(b, " type="), put_word(b, kern_type_name((xcclDataType_t)s.type));
    put_s(b, " redop="), put_word(b, s.redop >= 0 && s.redop < xcclNumOps ? kern_op_name((xcclRedOp_t)s.redop) : "-");
    put_s(b, " algo="), put_word(b, s.algo >= 0 && s.algo < ALGO_COUNT ? algo_name((algo_t)s.algo) : "-");
    put_s(b, " root="), put_i(b, s.root);
    put_s(b, " peer="), put_i(b, s.peer);
    put_s(b, " nops="), put_i(b, s.nops);
    put_s(b, " started="), put_t(b, s.nwaits > 0 ? s.start_ns : 0); /* set when it first waited */
  }
  int nw = run == KERN_STATE_IDLE ? 0 : s.nwaits < KERN_STATE_WAITS ? s.nwaits : KERN_STATE_WAITS;
  int named[KERN_STATE_WAITS + 3], nnamed = 0;
  for (int k = 0; k < nw; k++) {
    uint64_t since = s.waits[k].since_ns;
    put_s(b, "\nwait");
    put_where(b, d, s.waits[k].peer, s.waits[k].is_recv, s.waits[k].channel, s.waits[k].step, s.waits[k].loop,
              s.waits[k].action, s.waits[k].item);
    put_s(b, " since="), put_t(b, since);
    put_s(b, " since_realtime="), put_t(b, rt - (mono > since ? mono - since : 0));
    named[nnamed++] = resolve_peer(d, s.waits[k].peer, s.waits[k].is_recv, s.waits[k].channel);
  }
  if (failed) {
    const kern_failure_t *f = &d->fail;
    if (d->fail_here) {
      put_s(b, "\nfail kind="), put_s(b, fail_kind_name(f->kind));
      put_where(b, d, f->peer, f->waiting_on_recv, f->channel, f->step, f->loop, f->action, f->item);
      named[nnamed++] = resolve_peer(d, f->peer, f->waiting_on_recv, f->channel);
    } else {
      put_s(b, "\nfail kind=other"); /* another communicator of its group failed */
    }
    put_s(b, "\nerror "), put_text(b, d->fail_msg, ERR_MSG_MAX);
  }
  named[nnamed++] = d->prev;
  named[nnamed++] = d->next;
  for (int k = 0; k < nnamed; k++) {
    int p = named[k], dup = p < 0 || p >= d->nranks || p == d->rank;
    for (int j = 0; j < k && !dup; j++) dup = named[j] == p;
    if (dup || !d->peers) continue;
    put_s(b, "\npeer rank="), put_i(b, p);
    put_s(b, " pid="), put_u(b, d->peers[p].pid);
    put_s(b, " host="), put_word(b, d->peers[p].host);
  }
  b->cap = cap; /* the 8 bytes kept back hold the last newline and "end" */
  put_s(b, "\nend\n");
}

/* DIR/xccl-<id>-r<rank>.dump into path. */
static void dump_path(const dump_slot_t *d, char *path, size_t len) {
  dbuf_t b = {path, 0, len - 1};
  put_s(&b, dump_dir);
  put_s(&b, "/xccl-");
  put_hex16(&b, d->id);
  put_s(&b, "-r");
  put_i(&b, d->rank);
  put_s(&b, ".dump");
  path[b.len] = '\0';
}

/* Writes d's dump (path filled in). 0, or the errno of what failed.
 * Async-signal-safe. */
static int dump_write(dump_slot_t *d, const char *reason, char *path, size_t pathlen) {
  char buf[DUMP_BUF_BYTES], tmp[DUMP_PATH_MAX + 48];
  dump_path(d, path, pathlen);
  /* A private temporary name (thread and caller), renamed into place: a
   * reader sees the old file or the new one, never a mix. */
  dbuf_t t = {tmp, 0, sizeof(tmp) - 1};
  put_s(&t, path);
  put_s(&t, ".");
  put_i(&t, (int64_t)syscall(SYS_gettid));
  put_s(&t, ".");
  put_s(&t, reason);
  put_s(&t, ".tmp");
  tmp[t.len] = '\0';
  dbuf_t b = {buf, 0, sizeof(buf)};
  dump_format(d, reason, &b);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  int err = 0;
  for (size_t off = 0; off < b.len && !err;) {
    ssize_t w = write(fd, buf + off, b.len - off);
    if (w > 0)
      off += (size_t)w;
    else if (w < 0 && errno == EINTR)
      continue;
    else
      err = w < 0 ? errno : EIO;
  }
  if (close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err) unlink(tmp);
  return err;
}

/* ---- The signal handler ---- */

static void dump_handler(int sig, siginfo_t *si, void *uc) {
  int saved = errno;
  atomic_fetch_add(&dump_readers, 1);
  for (int i = 0; i < DUMP_POOL; i++) {
    dump_slot_t *d = &dump_pool[i];
    if (atomic_load(&d->live) != SLOT_LIVE) continue;
    char path[DUMP_PATH_MAX], line[DUMP_PATH_MAX + 256];
    int err = dump_write(d, "signal", path, sizeof(path));
    if (dump_log_fd < 0) continue;
    /* The log line, in log.c's layout (which uses stdio, not allowed here). */
    dbuf_t b = {line, 0, sizeof(line) - 1};
    put_s(&b, d->host), put_s(&b, ":"), put_i(&b, (int64_t)getpid());
    put_s(&b, ":"), put_i(&b, (int64_t)syscall(SYS_gettid));
    put_s(&b, " xccl WARN COLL dump.c rank "), put_i(&b, d->rank);
    if (err) {
      put_s(&b, ": signal "), put_i(&b, sig), put_s(&b, " (XCCL_DUMP_SIGNAL): could not write the in-flight state to ");
      put_s(&b, path), put_s(&b, ": errno "), put_i(&b, err);
    } else {
      put_s(&b, ": signal "), put_i(&b, sig), put_s(&b, " (XCCL_DUMP_SIGNAL): in-flight state written to ");
      put_s(&b, path);
    }
    line[b.len++] = '\n';
    ssize_t w = write(dump_log_fd, line, b.len);
    (void)w;
  }
  atomic_fetch_sub(&dump_readers, 1);
  if (dump_old_action.sa_flags & SA_SIGINFO) {
    if (dump_old_action.sa_sigaction) dump_old_action.sa_sigaction(sig, si, uc);
  } else if (dump_old_action.sa_handler != SIG_DFL && dump_old_action.sa_handler != SIG_IGN) {
    dump_old_action.sa_handler(sig);
  }
  errno = saved;
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

/* The log file the handler writes to: stderr, or XCCL_DEBUG_FILE expanded
 * as log.c does (log_expand_path) and opened for appending. */
static int dump_open_log(void) {
  if (!log_enabled(LOG_WARN, LOG_COLL)) return -1;
  const char *pattern = config_str(CFG_DEBUG_FILE);
  if (!*pattern) return STDERR_FILENO;
  char path[512];
  log_expand_path(pattern, -1, path, sizeof(path));
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  return fd >= 0 ? fd : STDERR_FILENO;
}

/* Once per process: where dumps go, and the signal handler. */
static void dump_setup(void) {
  const char *dir = config_str(CFG_DUMP_DIR);
  if (*dir && strcasecmp(dir, "none") != 0) {
    struct stat st;
    if (stat(dir, &st) != 0 && errno == ENOENT) (void)mkdir(dir, 0755);
    const char *why = NULL;
    if (strlen(dir) >= sizeof(dump_dir))
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
      snprintf(dump_dir, sizeof(dump_dir), "%s", dir), dump_on = 1;
  }
  char why[256];
  int sig = 0;
  if (dump_parse_signal(config_str(CFG_DUMP_SIGNAL), &sig, why, sizeof(why)) != 0) {
    WARN(INIT, "%s; no dumps on a signal", why);
    return;
  }
  if (!sig || !dump_on) return;
  dump_log_fd = dump_open_log();
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = dump_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, &dump_old_action) != 0) {
    WARN(INIT, "XCCL_DUMP_SIGNAL: cannot install a handler for signal %d: %s", sig, strerror(errno));
    return;
  }
  dump_sig = sig;
  INFO(INIT, "XCCL_DUMP_SIGNAL: signal %d (%s) writes the in-flight state of every communicator to %s", sig,
       strsignal(sig), dump_dir);
}

/* ---- Records ---- */

xcclResult_t dump_register(struct xcclComm *comm, uint64_t comm_id) {
  pthread_once(&dump_once, dump_setup);
  dump_slot_t *d = NULL;
  for (int i = 0; i < DUMP_POOL && !d; i++) {
    int expect = SLOT_FREE;
    if (atomic_compare_exchange_strong(&dump_pool[i].live, &expect, SLOT_CLAIMED)) d = &dump_pool[i];
  }
  if (!d) {
    if (!(d = calloc(1, sizeof(*d)))) return err_set(xcclSystemError, LOG_INIT, "out of memory for a state record");
    d->heap = 1;
    INFO(INIT, "rank %d: more than %d communicators in this process: XCCL_DUMP_SIGNAL does not dump this one",
         comm->rank, DUMP_POOL);
  }
  memset(&d->state, 0, sizeof(d->state));
  atomic_store(&d->failed, 0);
  d->id = comm_id;
  d->rank = comm->rank;
  d->nranks = comm->nranks;
  d->prev = comm->prev;
  d->next = comm->next;
  d->nchannels = comm->channels ? comm->nchannels : 0;
  for (int c = 0; c < d->nchannels; c++)
    d->chan_prev[c] = comm->channels[c].prev, d->chan_next[c] = comm->channels[c].next;
  d->peers = comm->peers;
  snprintf(d->host, sizeof(d->host), "%s", comm->peers ? comm->peers[comm->rank].host : "");
  comm->dump = d;
  comm->env.state = &d->state;
  if (!d->heap) atomic_store(&d->live, SLOT_LIVE);
  return xcclSuccess;
}

void dump_unregister(struct xcclComm *comm) {
  dump_slot_t *d = comm->dump;
  if (!d) return;
  comm->env.state = NULL;
  comm->dump = NULL;
  if (d->heap) {
    free(d);
    return;
  }
  atomic_store(&d->live, SLOT_CLAIMED); /* no new handler starts on it */
  uint64_t deadline = clock_deadline(1.0);
  while (atomic_load(&dump_readers) > 0 && !clock_expired(deadline)) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&d->live, SLOT_FREE);
}

/* Adds a wait on peer for connection set-up (once per peer and direction). */
static void connect_wait(kern_state_t *s, int peer, int is_recv, uint64_t now) {
  int k = atomic_load_explicit(&s->nwaits, memory_order_relaxed);
  for (int j = 0; j < k && j < KERN_STATE_WAITS; j++)
    if (atomic_load_explicit(&s->waits[j].peer, memory_order_relaxed) == peer &&
        atomic_load_explicit(&s->waits[j].is_recv, memory_order_relaxed) == is_recv)
      return;
  if (k < KERN_STATE_WAITS) {
    kern_wait_t *e = &s->waits[k];
    atomic_store_explicit(&e->item, -1, memory_order_release);
    atomic_store_explicit(&e->peer, peer, memory_order_release);
    atomic_store_explicit(&e->channel, -1, memory_order_release);
    atomic_store_explicit(&e->is_recv, is_recv, memory_order_release);
    atomic_store_explicit(&e->action, -1, memory_order_release);
    atomic_store_explicit(&e->loop, 0, memory_order_release);
    atomic_store_explicit(&e->step, 0, memory_order_release);
    atomic_store_explicit(&e->since_ns, now, memory_order_release);
  }
  atomic_store_explicit(&s->nwaits, k + 1, memory_order_release);
}

static int int_in(const int *v, int n, int x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return 1;
  return 0;
}

void dump_connect_begin(struct xcclComm *comm, const group_op_t *ops, int n) {
  kern_state_t *s = comm->env.state;
  uint64_t now = clock_ns();
  kern_state_write_begin(s);
  atomic_store_explicit(&s->nwaits, 0, memory_order_release);
  for (int i = 0; i < n; i++) {
    const group_op_t *op = &ops[i];
    if (op->comm != comm) continue;
    if (op->kind == GROUP_COLL) {
      algo_peers_t p;
      algo_peers_missing(comm, op->coll.algo, &op->coll, &p);
      for (int q = 0; q < ALGO_PEER_SETS; q++) {
        const algo_peer_set_t *ps = &p.set[q];
        for (int k = 0; k < ps->nrecv; k++) connect_wait(s, ps->recv[k], 1, now);
        for (int k = 0; k < ps->nsend; k++) /* a peer it also receives from is there already */
          if (!int_in(ps->recv, ps->nrecv, ps->send[k])) connect_wait(s, ps->send[k], 0, now);
      }
    } else if (op->kind != GROUP_COLL && op->peer != comm->rank) {
      int send = op->kind == GROUP_SEND;
      const comm_p2p_t *p = send ? &comm->p2p_send[COMM_P2P_USER][op->peer] : &comm->p2p_recv[COMM_P2P_USER][op->peer];
      if (!p->ready) connect_wait(s, op->peer, !send, now);
    }
  }
  kern_state_write_end(s);
}

void dump_connect_end(struct xcclComm *comm) {
  kern_state_t *s = comm->env.state;
  kern_state_write_begin(s);
  atomic_store_explicit(&s->nwaits, 0, memory_order_release);
  kern_state_write_end(s);
}

void dump_op_failed(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg) {
  dump_slot_t *d = comm->dump;
  kern_state_t *s = &d->state;
  if (!atomic_load_explicit(&d->failed, memory_order_relaxed)) { /* the first failure is the one to keep */
    d->fail = *f;
    d->fail_here = here;
    snprintf(d->fail_msg, sizeof(d->fail_msg), "%s", msg ? msg : "");
    atomic_store_explicit(&d->failed, 1, memory_order_release);
  }
  kern_state_write_begin(s);
  uint64_t info = atomic_load_explicit(&s->op_info, memory_order_relaxed);
  atomic_store_explicit(&s->op_info, kern_op_info_with_state(info, KERN_STATE_FAILED), memory_order_release);
  kern_state_write_end(s);
  /* A stall is what dumps are for; a usage error or an abort says all in its message. */
  kern_fail_kind_t kind = f->kind;
  if (!dump_on || (kind != KERN_FAIL_TIMEOUT && kind != KERN_FAIL_CONN)) return;
  char path[DUMP_PATH_MAX];
  int err = dump_write(d, kind == KERN_FAIL_TIMEOUT ? "timeout" : "error", path, sizeof(path));
  if (err)
    WARN(COLL, "rank %d: could not write the in-flight state to %s: %s", comm->rank, path, strerror(err));
  else
    WARN(COLL, "rank %d: in-flight state written to %s (xccl-stuck %s names the rank everyone waits on)", comm->rank,
         path, dump_dir);
}
