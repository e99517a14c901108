/*
 * xccl-stuck — reads the in-flight state dumps of all ranks of a job (format:
 * src/core/dump.h) and names what they wait on.
 *
 *   xccl-stuck [--all] [--comm ID] DIR_OR_FILE...
 *
 * Each dump says whom its rank waits on (data from a peer, or room at it).
 * Those waits are the edges of a wait-for graph over the ranks; what everyone
 * transitively waits on is a part of the graph that waits on nothing outside
 * itself (a terminal strongly connected component):
 *   - one rank: the root cause. A rank that wrote no dump while others wait
 *     on it is stopped or dead; one that dumped may be idle (it never called
 *     the operation) or busy elsewhere.
 *   - two ranks waiting on each other (A waits for data from B, B for room at
 *     A), both alive: the link between them.
 *   - more ranks in a cycle: each waits on the next.
 * This names the cause of a cascade: the neighbour of a stopped rank times out
 * naming it, but ranks further away time out naming their own neighbours.
 *
 * Output: one verdict line ("stuck: ..."; "no verdict: ..." when nothing
 * waits), then a table of the ranks. Exit status: 0 verdict found, 1 none, 2
 * bad input (a malformed dump is named with its file and line).
 *
 * A directory contributes its files named xccl-*.dump. Dumps of several
 * communicators (the file names carry their ids): the one written last is
 * read, unless --comm ID picks one or --all reads each.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES (1 << 20)
#define MAX_LINE_BYTES 4096
#define MAX_WAITS 64
#define MAX_RANKS (1 << 22)
#define LIST_SHOWN 16 /* ranks printed in a list before "... (N in all)" */

enum { RUN_IDLE, RUN_RUNNING, RUN_FAILED };

typedef struct {
  int peer, is_recv, channel, action, item;
  int line; /* in its file, for messages */
  uint64_t step, loop;
  double since; /* monotonic; < 0: unknown */
} wait_t;

typedef struct {
  int rank;
  long pid;
  char host[64];
} peer_t;

typedef struct {
  char *file;
  int line_of_comm; /* for messages about inconsistent files */
  char host[64], reason[16];
  long pid;
  double realtime, monotonic;
  uint64_t id;
  int rank, nranks, prev, next;
  int run, torn, total_waits;
  uint64_t done;
  int has_op;
  char op_name[32], type[16], redop[16], algo[16];
  uint64_t seq, count;
  int root, op_peer, nops;
  wait_t waits[MAX_WAITS];
  int nwaits;
  int has_fail;
  char fail_kind[16];
  wait_t fail;
  char error[1100];
  peer_t *peers;
  int npeers;
  int superseded; /* an newer dump of the same rank was given */
} dump_t;

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "xccl-stuck: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(code);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) die(2, "out of memory");
  return p;
}

/* ---- Parsing ---- */

typedef struct {
  const char *file;
  int line;
} where_t;

static void bad(const where_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void bad(const where_t *w, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "xccl-stuck: %s:%d: ", w->file, w->line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (not a well-formed xccl dump; see src/core/dump.h)\n");
  exit(2);
}

static int64_t parse_int(const where_t *w, const char *name, const char *v, int64_t lo, int64_t hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (!*v || *end || errno || x < lo || x > hi)
    bad(w, "%s=%s is not an integer from %" PRId64 " to %" PRId64, name, v, lo, hi);
  return x;
}

static uint64_t parse_u64(const where_t *w, const char *name, const char *v) {
  char *end;
  errno = 0;
  if (!isdigit((unsigned char)*v)) bad(w, "%s=%s is not a non-negative integer", name, v);
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || errno) bad(w, "%s=%s is not a non-negative integer below 2^64", name, v);
  return x;
}

static double parse_time(const where_t *w, const char *name, const char *v) {
  char *end;
  if (!isdigit((unsigned char)*v)) bad(w, "%s=%s is not a time in seconds", name, v);
  double x = strtod(v, &end);
  if (*end || !isfinite(x) || x < 0) bad(w, "%s=%s is not a time in seconds", name, v);
  return x;
}

static uint64_t parse_hex(const where_t *w, const char *name, const char *v) {
  size_t n = strlen(v);
  if (n == 0 || n > 16 || strspn(v, "0123456789abcdefABCDEF") != n)
    bad(w, "%s=%s is not a communicator id (1 to 16 hex digits)", name, v);
  return strtoull(v, NULL, 16);
}

static void copy_word(char *dst, size_t len, const char *v) { snprintf(dst, len, "%s", v); }

static int parse_dir(const where_t *w, const char *v) {
  if (strcmp(v, "recv") == 0) return 1;
  if (strcmp(v, "send") == 0) return 0;
  bad(w, "dir=%s is neither recv nor send", v);
}

/* The fields of a wait or fail record. */
static void wait_field(const where_t *w, wait_t *x, const char *k, const char *v) {
  if (strcmp(k, "peer") == 0)
    x->peer = (int)parse_int(w, k, v, 0, MAX_RANKS - 1);
  else if (strcmp(k, "dir") == 0)
    x->is_recv = parse_dir(w, v);
  else if (strcmp(k, "channel") == 0)
    x->channel = (int)parse_int(w, k, v, -1, 1 << 20);
  else if (strcmp(k, "step") == 0)
    x->step = parse_u64(w, k, v);
  else if (strcmp(k, "loop") == 0)
    x->loop = parse_u64(w, k, v);
  else if (strcmp(k, "action") == 0)
    x->action = (int)parse_int(w, k, v, -1, INT32_MAX);
  else if (strcmp(k, "item") == 0)
    x->item = (int)parse_int(w, k, v, -1, INT32_MAX);
  else if (strcmp(k, "since") == 0)
    x->since = parse_time(w, k, v);
}

enum { REC_PROCESS, REC_COMM, REC_STATE, REC_OP, REC_WAIT, REC_FAIL, REC_PEER, REC_OTHER };

static int record_kind(const char *kw) {
  static const char *const names[] = {"process", "comm", "state", "op", "wait", "fail", "peer"};
  for (int i = 0; i < REC_OTHER; i++)
    if (strcmp(kw, names[i]) == 0) return i;
  return REC_OTHER;
}

/* One record line (not version, error, end or a comment). seen: singleton
 * records met so far. */
static void parse_record(const where_t *w, dump_t *d, char *line, unsigned *seen) {
  char *save = NULL, *kw = strtok_r(line, " ", &save);
  int kind = record_kind(kw);
  if (kind == REC_OTHER) return; /* a later version's record */
  if (kind <= REC_OP || kind == REC_FAIL) {
    if (*seen & (1u << kind)) bad(w, "a second '%s' record", kw);
    *seen |= 1u << kind;
  }
  wait_t wt = {.peer = -1, .since = -1, .line = w->line};
  peer_t pr = {.rank = -1, .pid = -1};
  int has_peer = 0, has_rank = 0, has_nranks = 0, has_id = 0;
  if (kind == REC_WAIT && d->nwaits >= MAX_WAITS) bad(w, "more than %d wait records", MAX_WAITS);
  for (char *tok; (tok = strtok_r(NULL, " ", &save));) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok) bad(w, "'%.40s' is not a name=value field", tok);
    *eq = '\0';
    const char *k = tok, *v = eq + 1;
    switch (kind) {
      case REC_PROCESS:
        if (strcmp(k, "host") == 0)
          copy_word(d->host, sizeof(d->host), v);
        else if (strcmp(k, "pid") == 0)
          d->pid = (long)parse_int(w, k, v, 0, INT32_MAX);
        else if (strcmp(k, "reason") == 0)
          copy_word(d->reason, sizeof(d->reason), v);
        else if (strcmp(k, "realtime") == 0)
          d->realtime = parse_time(w, k, v);
        else if (strcmp(k, "monotonic") == 0)
          d->monotonic = parse_time(w, k, v);
        break;
      case REC_COMM:
        if (strcmp(k, "id") == 0)
          d->id = parse_hex(w, k, v), has_id = 1;
        else if (strcmp(k, "rank") == 0)
          d->rank = (int)parse_int(w, k, v, 0, MAX_RANKS - 1), has_rank = 1;
        else if (strcmp(k, "nranks") == 0)
          d->nranks = (int)parse_int(w, k, v, 1, MAX_RANKS), has_nranks = 1;
        else if (strcmp(k, "prev") == 0)
          d->prev = (int)parse_int(w, k, v, 0, MAX_RANKS - 1);
        else if (strcmp(k, "next") == 0)
          d->next = (int)parse_int(w, k, v, 0, MAX_RANKS - 1);
        break;
      case REC_STATE:
        if (strcmp(k, "run") == 0) {
          if (strcmp(v, "idle") == 0)
            d->run = RUN_IDLE;
          else if (strcmp(v, "running") == 0)
            d->run = RUN_RUNNING;
          else if (strcmp(v, "failed") == 0)
            d->run = RUN_FAILED;
          else
            bad(w, "run=%s is not idle, running or failed", v);
        } else if (strcmp(k, "done") == 0) {
          d->done = parse_u64(w, k, v);
        } else if (strcmp(k, "waits") == 0) {
          d->total_waits = (int)parse_int(w, k, v, 0, INT32_MAX);
        } else if (strcmp(k, "torn") == 0) {
          d->torn = (int)parse_int(w, k, v, 0, 1);
        }
        break;
      case REC_OP:
        d->has_op = 1;
        if (strcmp(k, "name") == 0)
          copy_word(d->op_name, sizeof(d->op_name), v);
        else if (strcmp(k, "seq") == 0)
          d->seq = parse_u64(w, k, v);
        else if (strcmp(k, "count") == 0)
          d->count = parse_u64(w, k, v);
        else if (strcmp(k, "type") == 0)
          copy_word(d->type, sizeof(d->type), v);
        else if (strcmp(k, "redop") == 0)
          copy_word(d->redop, sizeof(d->redop), v);
        else if (strcmp(k, "algo") == 0)
          copy_word(d->algo, sizeof(d->algo), v);
        else if (strcmp(k, "root") == 0)
          d->root = (int)parse_int(w, k, v, -1, MAX_RANKS - 1);
        else if (strcmp(k, "peer") == 0)
          d->op_peer = (int)parse_int(w, k, v, -1, MAX_RANKS - 1);
        else if (strcmp(k, "nops") == 0)
          d->nops = (int)parse_int(w, k, v, 0, INT32_MAX);
        break;
      case REC_WAIT:
        if (strcmp(k, "peer") == 0) has_peer = 1;
        wait_field(w, &wt, k, v);
        break;
      case REC_FAIL:
        if (strcmp(k, "kind") == 0) copy_word(d->fail_kind, sizeof(d->fail_kind), v);
        if (strcmp(k, "peer") == 0) has_peer = 1;
        wait_field(w, &wt, k, v);
        break;
      case REC_PEER:
        if (strcmp(k, "rank") == 0)
          pr.rank = (int)parse_int(w, k, v, 0, MAX_RANKS - 1);
        else if (strcmp(k, "pid") == 0)
          pr.pid = (long)parse_int(w, k, v, 0, INT32_MAX);
        else if (strcmp(k, "host") == 0)
          copy_word(pr.host, sizeof(pr.host), v);
        break;
    }
  }
  if (kind == REC_COMM) {
    if (!has_id || !has_rank || !has_nranks) bad(w, "the comm record needs id, rank and nranks");
    if (d->rank >= d->nranks) bad(w, "rank=%d is not below nranks=%d", d->rank, d->nranks);
    if (d->prev >= d->nranks || d->next >= d->nranks) bad(w, "prev or next is not below nranks=%d", d->nranks);
    d->line_of_comm = w->line;
  } else if (kind == REC_WAIT) {
    if (!has_peer) bad(w, "a wait record without peer=");
    d->waits[d->nwaits++] = wt;
  } else if (kind == REC_FAIL) {
    d->has_fail = 1;
    d->fail = wt;
    if (!has_peer) d->fail.peer = -1; /* kind=other: no place */
  } else if (kind == REC_PEER) {
    if (pr.rank < 0) bad(w, "a peer record without rank=");
    peer_t *np = realloc(d->peers, sizeof(*np) * (size_t)(d->npeers + 1));
    if (!np) die(2, "out of memory");
    d->peers = np;
    d->peers[d->npeers++] = pr;
  }
}

static void parse_dump(const char *file, const char *text, size_t len, dump_t *d) {
  where_t w = {file, 0};
  if (memchr(text, '\0', len)) {
    w.line = 1;
    for (const char *p = text; *p; p++) w.line += *p == '\n';
    bad(&w, "a NUL byte: binary data");
  }
  memset(d, 0, sizeof(*d));
  d->pid = -1;
  d->root = d->op_peer = -1;
  unsigned seen = 0;
  int version = 0, ended = 0;
  char line[MAX_LINE_BYTES + 1];
  for (size_t pos = 0; pos < len;) {
    const char *nl = memchr(text + pos, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
    w.line++;
    if (n > MAX_LINE_BYTES) bad(&w, "a line longer than %d bytes", MAX_LINE_BYTES);
    memcpy(line, text + pos, n);
    line[n] = '\0';
    pos += n + (nl ? 1 : 0);
    if (n && line[n - 1] == '\r') line[--n] = '\0';
    if (n == 0 || line[0] == '#') continue;
    if (ended) bad(&w, "text after the end record");
    if (!version) {
      if (strncmp(line, "xccl-dump version=", 18) != 0) bad(&w, "the first record is not 'xccl-dump version=N'");
      version = (int)parse_int(&w, "version", line + 18, 1, 1000);
      if (version != 1) bad(&w, "version %d: this xccl-stuck reads version 1", version);
      continue;
    }
    if (strcmp(line, "end") == 0 || strncmp(line, "end ", 4) == 0) {
      ended = 1;
    } else if (strncmp(line, "error ", 6) == 0 || strcmp(line, "error") == 0) {
      copy_word(d->error, sizeof(d->error), n > 6 ? line + 6 : "");
    } else if (line[0] == ' ') {
      bad(&w, "a record starts with a space");
    } else {
      parse_record(&w, d, line, &seen);
    }
  }
  w.line++;
  if (!version) bad(&w, "empty: no 'xccl-dump version=1' record");
  if (!ended) bad(&w, "no end record: the file is cut short (its writer died or the disk filled?)");
  const unsigned need = (1u << REC_PROCESS) | (1u << REC_COMM) | (1u << REC_STATE);
  if ((seen & need) != need)
    bad(&w, "missing the %s record",
        !(seen & (1u << REC_PROCESS)) ? "process"
        : !(seen & (1u << REC_COMM))  ? "comm"
                                      : "state");
  for (int k = 0; k <= d->nwaits; k++) { /* peers against nranks, whichever record came first */
    const wait_t *x = k < d->nwaits ? &d->waits[k] : d->has_fail ? &d->fail : NULL;
    if (!x || x->peer < d->nranks) continue;
    w.line = x->line;
    bad(&w, "%s names peer %d of only %d ranks", k < d->nwaits ? "a wait" : "fail", x->peer, d->nranks);
  }
  d->file = strdup(file);
  if (!d->file) die(2, "out of memory");
}

static void read_dump(const char *path, dump_t *d) {
  FILE *f = fopen(path, "rb");
  if (!f) die(2, "cannot open %s: %s", path, strerror(errno));
  char *buf = xcalloc(1, MAX_FILE_BYTES + 1);
  size_t n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) die(2, "cannot read %s", path);
  if (n > MAX_FILE_BYTES) die(2, "%s: larger than %d bytes: not an xccl dump", path, MAX_FILE_BYTES);
  parse_dump(path, buf, n, d);
  free(buf);
}

/* ---- Input ---- */

typedef struct {
  dump_t *v;
  int n, cap;
} dumps_t;

static dump_t *dumps_add(dumps_t *ds) {
  if (ds->n == ds->cap) {
    int cap = ds->cap ? 2 * ds->cap : 16;
    dump_t *v = realloc(ds->v, sizeof(*v) * (size_t)cap);
    if (!v) die(2, "out of memory");
    ds->v = v;
    ds->cap = cap;
  }
  return &ds->v[ds->n++];
}

static int is_dump_name(const char *name) {
  size_t n = strlen(name);
  return n > 10 && strncmp(name, "xccl-", 5) == 0 && strcmp(name + n - 5, ".dump") == 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void add_path(dumps_t *ds, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) die(2, "%s: %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    read_dump(path, dumps_add(ds));
    return;
  }
  DIR *dir = opendir(path);
  if (!dir) die(2, "cannot open directory %s: %s", path, strerror(errno));
  char **names = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (!is_dump_name(e->d_name)) continue;
    char **nn = realloc(names, sizeof(*nn) * (size_t)(n + 1));
    if (!nn) die(2, "out of memory");
    names = nn;
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = xcalloc(1, len);
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(dir);
  if (n == 0) die(2, "%s: no xccl-*.dump files (is XCCL_DUMP_DIR somewhere else?)", path);
  qsort(names, (size_t)n, sizeof(*names), cmp_str);
  for (int i = 0; i < n; i++) {
    read_dump(names[i], dumps_add(ds));
    free(names[i]);
  }
  free(names);
}

/* ---- Analysis of one communicator ---- */

/* Every step is linear in ranks + waits, or that times a small constant
 * (MAX_CANDIDATES, MAX_VERDICTS): a job of a million ranks is read at once. */
#define MAX_CANDIDATES 64 /* components whose waiters are counted */
#define MAX_VERDICTS 8    /* components named in the verdict */

typedef struct {
  int nranks;
  dump_t **by_rank; /* NULL: no dump */
  long *pid;        /* per rank, from its dump or another's peer record; -1: unknown */
  const char **host;
  /* Edges r -> peer waited on: out[off[r] .. off[r+1]); reversed: in[roff[r] .. roff[r+1]) */
  int *off, *out, *roff, *in;
  int nscc;
  int *scc;      /* component of each rank */
  int *csize;    /* per component: ranks in it */
  int *terminal; /* per component: waits on nothing outside */
  int *queue;    /* scratch for waiters_of */
} graph_t;

static const char *host_of(const graph_t *g, int r, long *pid_p) {
  *pid_p = g->pid[r];
  return g->host[r];
}

/* The peers a dump's rank waits on (distinct), into out; returns how many. */
static int waits_of(const dump_t *d, int *out) {
  int n = 0;
  if (!d || d->run == RUN_IDLE) return 0;
  for (int k = 0; k <= d->nwaits; k++) {
    int p = k < d->nwaits ? d->waits[k].peer : d->has_fail ? d->fail.peer : -1;
    int dup = p < 0 || p == d->rank;
    for (int j = 0; j < n && !dup; j++) dup = out[j] == p;
    if (!dup) out[n++] = p;
  }
  return n;
}

/* Tarjan's strongly connected components, without recursion. */
static void graph_scc(graph_t *g) {
  int n = g->nranks, idx = 0, nscc = 0, sp = 0, cp = 0;
  int *index = xcalloc((size_t)n, sizeof(int)), *low = xcalloc((size_t)n, sizeof(int));
  int *onstack = xcalloc((size_t)n, sizeof(int)), *stack = xcalloc((size_t)n, sizeof(int));
  int *call = xcalloc((size_t)n, sizeof(int)), *edge = xcalloc((size_t)n, sizeof(int));
  g->scc = xcalloc((size_t)n, sizeof(int));
  for (int i = 0; i < n; i++) index[i] = -1;
  for (int s = 0; s < n; s++) {
    if (index[s] >= 0) continue;
    call[cp++] = s;
    index[s] = low[s] = idx++;
    stack[sp++] = s, onstack[s] = 1;
    edge[s] = g->off[s];
    while (cp > 0) {
      int v = call[cp - 1];
      if (edge[v] < g->off[v + 1]) {
        int w = g->out[edge[v]++];
        if (index[w] < 0) {
          index[w] = low[w] = idx++;
          stack[sp++] = w, onstack[w] = 1;
          edge[w] = g->off[w];
          call[cp++] = w;
        } else if (onstack[w] && index[w] < low[v]) {
          low[v] = index[w];
        }
        continue;
      }
      if (low[v] == index[v]) {
        int w;
        do {
          w = stack[--sp];
          onstack[w] = 0;
          g->scc[w] = nscc;
        } while (w != v);
        nscc++;
      }
      cp--;
      if (cp > 0 && low[v] < low[call[cp - 1]]) low[call[cp - 1]] = low[v];
    }
  }
  g->nscc = nscc;
  g->csize = xcalloc((size_t)nscc, sizeof(int));
  for (int v = 0; v < n; v++) g->csize[g->scc[v]]++;
  g->terminal = xcalloc((size_t)nscc, sizeof(int));
  for (int c = 0; c < nscc; c++) g->terminal[c] = 1;
  for (int v = 0; v < n; v++)
    for (int e = g->off[v]; e < g->off[v + 1]; e++)
      if (g->scc[g->out[e]] != g->scc[v]) g->terminal[g->scc[v]] = 0;
  free(index), free(low), free(onstack), free(stack), free(call), free(edge);
}

/* Ranks outside component c that wait on it, directly or through others:
 * mark[r] = 1 for them (mark[r] = 2 for c's own). Returns how many. */
static int waiters_of(const graph_t *g, int c, char *mark) {
  int n = g->nranks, head = 0, tail = 0, count = 0;
  memset(mark, 0, (size_t)n);
  for (int v = 0; v < n; v++)
    if (g->scc[v] == c) mark[v] = 2, g->queue[tail++] = v;
  while (head < tail) { /* breadth first over the reversed edges */
    int w = g->queue[head++];
    for (int e = g->roff[w]; e < g->roff[w + 1]; e++) {
      int v = g->in[e];
      if (mark[v]) continue;
      mark[v] = 1, count++;
      g->queue[tail++] = v;
    }
  }
  for (int v = 0; v < n; v++) mark[v] = mark[v] == 1;
  return count;
}

/* "0,1,3" (the first LIST_SHOWN, then "... (N in all)"). */
static void rank_list(char *buf, size_t len, const char *mark, int n, int count) {
  size_t o = 0;
  int shown = 0;
  buf[0] = '\0';
  for (int r = 0; r < n && o < len; r++) {
    if (!mark[r]) continue;
    if (shown == LIST_SHOWN) {
      snprintf(buf + o, len - o, ",... (%d in all)", count);
      return;
    }
    int k = snprintf(buf + o, len - o, "%s%d", shown ? "," : "", r);
    if (k < 0) return;
    o += (size_t)k;
    shown++;
  }
}

static void rank_desc(const graph_t *g, int r, char *buf, size_t len) {
  long pid;
  const char *host = host_of(g, r, &pid);
  if (host && pid >= 0)
    snprintf(buf, len, "rank %d (pid %ld on host %s)", r, pid, host);
  else
    snprintf(buf, len, "rank %d", r);
}

static const char *wait_words(const dump_t *d, int peer) {
  for (int k = 0; d && k < d->nwaits; k++)
    if (d->waits[k].peer == peer) return d->waits[k].is_recv ? "waits for data from" : "waits for room at";
  if (d && d->has_fail && d->fail.peer == peer) return d->fail.is_recv ? "waits for data from" : "waits for room at";
  return "waits on";
}

/* The operation most waiting ranks are in, for messages: "allreduce #4". */
static void common_op(const graph_t *g, const char *mark, char *buf, size_t len) {
  buf[0] = '\0';
  for (int r = 0; r < g->nranks; r++) {
    const dump_t *d = g->by_rank[r];
    if (mark[r] && d && d->has_op) {
      snprintf(buf, len, "%s #%" PRIu64, d->op_name, d->seq);
      return;
    }
  }
}

/* Describes component c, waited on by the `count` ranks in mark. */
static void describe(const graph_t *g, int c, const char *mark, int count, char *buf, size_t len) {
  int n = g->nranks, first = -1, size = 0;
  for (int r = 0; r < n; r++)
    if (g->scc[r] == c) size++, first = first < 0 ? r : first;
  char who[600] = "", op[80];
  rank_list(who, sizeof(who), mark, n, count);
  common_op(g, mark, op, sizeof(op));
  char waiting[800] = ""; /* "ranks 1,3 wait for it in allreduce #4" */
  if (count)
    snprintf(waiting, sizeof(waiting), "rank%s %s wait%s for %s%s%s", count > 1 ? "s" : "", who, count > 1 ? "" : "s",
             size > 1 ? "them" : "it", op[0] ? " in " : "", op);
  if (size == 1) {
    const dump_t *d = g->by_rank[first];
    char desc[200], why[1400];
    rank_desc(g, first, desc, sizeof(desc));
    if (!d)
      snprintf(why, sizeof(why), "it wrote no dump (stopped or dead)");
    else if (d->run == RUN_IDLE)
      snprintf(why, sizeof(why),
               "it is in no operation: the last it completed is #%" PRIu64 " (it did not call the next?)", d->done);
    else if (d->run == RUN_FAILED)
      snprintf(why, sizeof(why), "it failed and waits on no one: %s", d->error[0] ? d->error : "(no message)");
    else
      snprintf(why, sizeof(why),
               "it runs %s #%" PRIu64
               " but waits on no one (busy outside the wait, or dumped "
               "before it began to wait)",
               d->op_name, d->seq);
    snprintf(buf, len, "%s: %s; %s", desc, waiting, why);
    return;
  }
  if (size == 2) {
    int second = -1;
    for (int r = first + 1; r < n && second < 0; r++)
      if (g->scc[r] == c) second = r;
    char da[200], db[200];
    rank_desc(g, first, da, sizeof(da));
    rank_desc(g, second, db, sizeof(db));
    snprintf(buf, len,
             "link %d<->%d: %s %s %d and %s %s %d; both alive (both wrote dumps): the link between them "
             "lost a message or stalled%s%s",
             first, second, da, wait_words(g->by_rank[first], second), second, db,
             wait_words(g->by_rank[second], first), first, count ? "; " : "", waiting);
    return;
  }
  /* A longer cycle: follow one edge inside the component from the first rank. */
  char cyc[600] = "";
  size_t o = 0;
  int v = first, steps = 0;
  do {
    int k = snprintf(cyc + o, sizeof(cyc) - o, "%d->", v);
    if (k < 0 || (size_t)k >= sizeof(cyc) - o) break;
    o += (size_t)k;
    int nextv = -1;
    for (int e = g->off[v]; e < g->off[v + 1] && nextv < 0; e++)
      if (g->scc[g->out[e]] == c) nextv = g->out[e];
    v = nextv;
  } while (v >= 0 && v != first && ++steps < LIST_SHOWN);
  if (o < sizeof(cyc)) snprintf(cyc + o, sizeof(cyc) - o, v == first ? "%d" : "...", first);
  snprintf(buf, len, "cycle %s: %d ranks wait on each other, all alive (a deadlock, or messages lost)%s%s", cyc, size,
           count ? "; " : "", waiting);
}

static void format_age(char *buf, size_t len, const dump_t *d, double since) {
  if (since >= 0 && d->monotonic >= since)
    snprintf(buf, len, " for %.1f s", d->monotonic - since);
  else
    buf[0] = '\0';
}

static void print_row(const graph_t *g, int r) {
  const dump_t *d = g->by_rank[r];
  long pid;
  const char *host = host_of(g, r, &pid);
  char pids[24] = "?";
  if (pid >= 0) snprintf(pids, sizeof(pids), "%ld", pid);
  if (!d) {
    printf("%5d  %-8s %-12.12s %-8s %s\n", r, pids, host ? host : "?", "-", "no dump");
    return;
  }
  static const char *const runs[] = {"idle", "running", "failed"};
  char op[96] = "-", waits[1024] = "";
  if (d->has_op && d->run != RUN_IDLE)
    snprintf(op, sizeof(op), "%s #%" PRIu64 " %s", d->op_name, d->seq, strcmp(d->algo, "-") ? d->algo : "");
  else
    snprintf(op, sizeof(op), "(after #%" PRIu64 ")", d->done);
  /* One entry per peer and direction: the longest wait of its items. */
  size_t o = 0;
  int shown = 0, nw = d->run == RUN_IDLE ? 0 : d->nwaits;
  for (int i = 0; i <= nw && o < sizeof(waits); i++) {
    const wait_t *x = i < nw ? &d->waits[i] : nw == 0 && d->has_fail && d->fail.peer >= 0 ? &d->fail : NULL;
    int dup = !x;
    for (int j = 0; j < i && !dup; j++) dup = d->waits[j].peer == x->peer && d->waits[j].is_recv == x->is_recv;
    if (dup) continue;
    double since = x->since;
    int connecting = x->channel == -1 && i < nw;
    for (int j = i + 1; j < nw; j++)
      if (d->waits[j].peer == x->peer && d->waits[j].is_recv == x->is_recv && d->waits[j].since >= 0 &&
          (since < 0 || d->waits[j].since < since))
        since = d->waits[j].since;
    char age[32];
    format_age(age, sizeof(age), d, since);
    int k = snprintf(waits + o, sizeof(waits) - o, "%s%s %d%s%s", shown++ ? ", " : "",
                     x->is_recv ? "data from" : "room at", x->peer, connecting ? " (connecting)" : "", age);
    if (k < 0) break;
    o += (size_t)k;
  }
  if (d->total_waits > d->nwaits && o < sizeof(waits))
    snprintf(waits + o, sizeof(waits) - o, " (+%d more items)", d->total_waits - d->nwaits);
  printf("%5d  %-8s %-12.12s %-8.8s %-8s %-24.24s %s%s\n", r, pids, host ? host : "?", d->reason, runs[d->run], op,
         shown ? waits : "-", d->torn ? " (torn read)" : "");
}

/* A component and how much it is waited on, for sorting: most first, then in the order found. */
typedef struct {
  int c, score;
} pair_t;

static int cmp_pair(const void *a, const void *b) {
  const pair_t *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return x->c < y->c ? -1 : x->c > y->c;
}

/* Prints the verdict and table for dumps ds[0..n-1] of one communicator. 1 if a verdict was found. */
static int analyse(dump_t **ds, int n, int show_id) {
  int nranks = ds[0]->nranks;
  for (int i = 1; i < n; i++)
    if (ds[i]->nranks != nranks)
      die(2, "%s:%d: nranks=%d, but %s says %d for the same communicator %016" PRIx64, ds[i]->file, ds[i]->line_of_comm,
          ds[i]->nranks, ds[0]->file, nranks, ds[0]->id);
  graph_t g = {.nranks = nranks};
  g.by_rank = xcalloc((size_t)nranks, sizeof(*g.by_rank));
  int superseded = 0;
  for (int i = 0; i < n; i++) {
    dump_t *d = ds[i], **slot = &g.by_rank[d->rank];
    if (*slot && (*slot)->realtime >= d->realtime) {
      d->superseded = 1, superseded++;
      continue;
    }
    if (*slot) (*slot)->superseded = 1, superseded++;
    *slot = d;
  }
  /* pid and host of each rank: its own dump, else what others' peer records say. */
  g.pid = xcalloc((size_t)nranks, sizeof(long));
  g.host = xcalloc((size_t)nranks, sizeof(char *));
  for (int r = 0; r < nranks; r++) g.pid[r] = -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < ds[i]->npeers; k++) {
      const peer_t *p = &ds[i]->peers[k];
      if (p->rank < nranks && !g.by_rank[p->rank]) g.pid[p->rank] = p->pid, g.host[p->rank] = p->host;
    }
  for (int r = 0; r < nranks; r++)
    if (g.by_rank[r]) g.pid[r] = g.by_rank[r]->pid, g.host[r] = g.by_rank[r]->host;
  /* The wait-for graph, both ways. */
  g.off = xcalloc((size_t)nranks + 1, sizeof(int));
  g.roff = xcalloc((size_t)nranks + 1, sizeof(int));
  int nedges = 0, tmp[MAX_WAITS + 1];
  for (int r = 0; r < nranks; r++) nedges += waits_of(g.by_rank[r], tmp);
  g.out = xcalloc((size_t)nedges, sizeof(int));
  g.in = xcalloc((size_t)nedges, sizeof(int));
  for (int r = 0, e = 0; r < nranks; r++) {
    g.off[r] = e;
    e += waits_of(g.by_rank[r], g.out + e);
    g.off[r + 1] = e;
  }
  for (int e = 0; e < nedges; e++) g.roff[g.out[e] + 1]++;
  for (int r = 0; r < nranks; r++) g.roff[r + 1] += g.roff[r];
  int *fill = xcalloc((size_t)nranks, sizeof(int));
  for (int v = 0; v < nranks; v++)
    for (int e = g.off[v]; e < g.off[v + 1]; e++) g.in[g.roff[g.out[e]] + fill[g.out[e]]++] = v;
  free(fill);
  g.queue = xcalloc((size_t)nranks, sizeof(int));
  graph_scc(&g);
  /* Culprits: terminal components that others wait on, and cycles. Count
   * the waiters of those most waited on directly, name the most waited on. */
  int *direct = xcalloc((size_t)g.nscc, sizeof(int));
  for (int v = 0; v < nranks; v++)
    for (int e = g.off[v]; e < g.off[v + 1]; e++)
      if (g.scc[g.out[e]] != g.scc[v]) direct[g.scc[g.out[e]]]++;
  pair_t *cand = xcalloc((size_t)g.nscc, sizeof(*cand));
  int ncand = 0;
  for (int c = 0; c < g.nscc; c++)
    if (g.terminal[c] && (direct[c] > 0 || g.csize[c] >= 2)) cand[ncand++] = (pair_t){c, direct[c]};
  qsort(cand, (size_t)ncand, sizeof(*cand), cmp_pair);
  int counted = ncand < MAX_CANDIDATES ? ncand : MAX_CANDIDATES;
  char *mark = xcalloc((size_t)nranks, 1);
  for (int k = 0; k < counted; k++) cand[k].score = waiters_of(&g, cand[k].c, mark);
  qsort(cand, (size_t)counted, sizeof(*cand), cmp_pair);
  int found = counted < MAX_VERDICTS ? counted : MAX_VERDICTS;
  char line[4096] = "", extra[4096] = "";
  size_t eo = 0;
  for (int k = 0; k < found; k++) {
    char desc[3000];
    waiters_of(&g, cand[k].c, mark);
    describe(&g, cand[k].c, mark, cand[k].score, desc, sizeof(desc));
    if (k == 0) {
      snprintf(line, sizeof(line), "%s", desc);
    } else if (eo < sizeof(extra)) {
      int w = snprintf(extra + eo, sizeof(extra) - eo, "; also %s", desc);
      if (w > 0) eo += (size_t)w;
    }
  }
  if (ncand > found && eo < sizeof(extra)) snprintf(extra + eo, sizeof(extra) - eo, "; and %d more", ncand - found);
  free(direct), free(cand);
  char id[40] = "";
  if (show_id) snprintf(id, sizeof(id), "comm %016" PRIx64 ": ", ds[0]->id);
  if (found) {
    printf("%sstuck: %s%s\n", id, line, extra);
  } else {
    int dumped = 0;
    for (int r = 0; r < nranks; r++) dumped += g.by_rank[r] != NULL;
    printf("%sno verdict: no rank waits on another (%d of %d ranks wrote dumps)\n", id, dumped, nranks);
  }
  printf("%5s  %-8s %-12s %-8s %-8s %-24s %s\n", "rank", "pid", "host", "dump", "state", "operation", "waits on");
  /* Every rank with a dump or waited on; the rest in one line. */
  memset(mark, 0, (size_t)nranks);
  for (int r = 0; r < nranks; r++) {
    int p[MAX_WAITS + 1], np = waits_of(g.by_rank[r], p);
    for (int k = 0; k < np; k++) mark[p[k]] = 1;
  }
  int silent = 0;
  for (int r = 0; r < nranks; r++) {
    if (g.by_rank[r] || mark[r])
      print_row(&g, r);
    else
      silent++;
  }
  if (silent) {
    for (int r = 0; r < nranks; r++) mark[r] = !g.by_rank[r] && !mark[r];
    char list[600];
    rank_list(list, sizeof(list), mark, nranks, silent);
    printf("no dump, and nobody waits on them: rank%s %s\n", silent > 1 ? "s" : "", list);
  }
  if (superseded) printf("note: %d older dump(s) of the same ranks were left out\n", superseded);
  free(mark), free(g.by_rank), free(g.pid), free(g.host), free(g.off), free(g.out), free(g.roff), free(g.in);
  free(g.queue), free(g.scc), free(g.csize), free(g.terminal);
  return found > 0;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-stuck [--all] [--comm ID] DIR_OR_FILE...\n"
          "Reads the in-flight state dumps of a job's ranks (XCCL_DUMP_DIR, default /tmp; written on a\n"
          "timeout and on XCCL_DUMP_SIGNAL) and names the rank, or the link, that everyone waits on.\n"
          "  --comm ID  read the dumps of this communicator (the hex id in the file names)\n"
          "  --all      read every communicator found (default: the one whose dumps are newest)\n"
          "Exit status: 0 a verdict, 1 no verdict, 2 bad input.\n");
}

int main(int argc, char **argv) {
  dumps_t ds = {0};
  int all = 0, have_comm = 0, npaths = 0;
  uint64_t want = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--all") == 0) {
      all = 1;
    } else if (strcmp(argv[i], "--comm") == 0) {
      if (++i >= argc) die(2, "--comm needs a communicator id (16 hex digits, as in the file names)");
      size_t n = strlen(argv[i]);
      if (n == 0 || n > 16 || strspn(argv[i], "0123456789abcdefABCDEF") != n)
        die(2, "--comm %s is not a communicator id (16 hex digits, as in the file names)", argv[i]);
      want = strtoull(argv[i], NULL, 16);
      have_comm = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      die(2, "unknown option %s; see xccl-stuck --help", argv[i]);
    } else {
      add_path(&ds, argv[i]);
      npaths++;
    }
  }
  if (!npaths) {
    usage(stderr);
    return 2;
  }
  /* Communicators, newest first. */
  uint64_t *ids = xcalloc((size_t)ds.n, sizeof(uint64_t));
  double *newest = xcalloc((size_t)ds.n, sizeof(double));
  int nids = 0;
  for (int i = 0; i < ds.n; i++) {
    int k = 0;
    while (k < nids && ids[k] != ds.v[i].id) k++;
    if (k == nids)
      ids[nids] = ds.v[i].id, newest[nids++] = ds.v[i].realtime;
    else if (ds.v[i].realtime > newest[k])
      newest[k] = ds.v[i].realtime;
  }
  for (int a = 0; a < nids; a++)
    for (int b = a + 1; b < nids; b++)
      if (newest[b] > newest[a]) {
        uint64_t ti = ids[a];
        double tn = newest[a];
        ids[a] = ids[b], newest[a] = newest[b], ids[b] = ti, newest[b] = tn;
      }
  dump_t **group = xcalloc((size_t)ds.n, sizeof(*group));
  int verdicts = 0, analysed = 0;
  for (int k = 0; k < nids; k++) {
    if (have_comm ? ids[k] != want : (!all && k > 0)) continue;
    int n = 0;
    for (int i = 0; i < ds.n; i++)
      if (ds.v[i].id == ids[k]) group[n++] = &ds.v[i];
    if (analysed) printf("\n");
    verdicts += analyse(group, n, all || nids > 1);
    analysed++;
  }
  if (have_comm && !analysed) die(2, "no dump of communicator %016" PRIx64 " in the input", want);
  if (!all && !have_comm && nids > 1)
    printf("note: dumps of %d other communicator(s) were left out (--all reads them all)\n", nids - 1);
  for (int i = 0; i < ds.n; i++) free(ds.v[i].file), free(ds.v[i].peers);
  free(ds.v), free(ids), free(newest), free(group);
  return verdicts ? 0 : 1;
}
