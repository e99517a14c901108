/*
 * xccl_stuck_parse.c — the input side of xccl-stuck: finds the dump files
 * named on the command line (a directory gives its xccl-*.dump files), reads
 * each and checks it against the format of src/core/dump.h into a dump_t.
 * A malformed dump is named with its file and line, and ends the program.
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

#include "xccl_stuck.h"

#define MAX_FILE_BYTES (1 << 20)
#define MAX_LINE_BYTES 4096
#define MAX_RANKS (1 << 22)

void stuck_die(int code, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "xccl-stuck: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  exit(code);
}

void *stuck_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) stuck_die(2, "out of memory");
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
    if (!np) stuck_die(2, "out of memory");
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
  if (!d->file) stuck_die(2, "out of memory");
}

static void read_dump(const char *path, dump_t *d) {
  FILE *f = fopen(path, "rb");
  if (!f) stuck_die(2, "cannot open %s: %s", path, strerror(errno));
  char *buf = stuck_xcalloc(1, MAX_FILE_BYTES + 1);
  size_t n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) stuck_die(2, "cannot read %s", path);
  if (n > MAX_FILE_BYTES) stuck_die(2, "%s: larger than %d bytes: not an xccl dump", path, MAX_FILE_BYTES);
  parse_dump(path, buf, n, d);
  free(buf);
}

/* ---- Input ---- */

static dump_t *dumps_add(dumps_t *ds) {
  if (ds->n == ds->cap) {
    int cap = ds->cap ? 2 * ds->cap : 16;
    dump_t *v = realloc(ds->v, sizeof(*v) * (size_t)cap);
    if (!v) stuck_die(2, "out of memory");
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

void stuck_add_path(dumps_t *ds, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) stuck_die(2, "%s: %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    read_dump(path, dumps_add(ds));
    return;
  }
  DIR *dir = opendir(path);
  if (!dir) stuck_die(2, "cannot open directory %s: %s", path, strerror(errno));
  char **names = NULL;
  int n = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (!is_dump_name(e->d_name)) continue;
    char **nn = realloc(names, sizeof(*nn) * (size_t)(n + 1));
    if (!nn) stuck_die(2, "out of memory");
    names = nn;
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = stuck_xcalloc(1, len);
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(dir);
  if (n == 0) stuck_die(2, "%s: no xccl-*.dump files (is XCCL_DUMP_DIR somewhere else?)", path);
  qsort(names, (size_t)n, sizeof(*names), cmp_str);
  for (int i = 0; i < n; i++) {
    read_dump(names[i], dumps_add(ds));
    free(names[i]);
  }
  free(names);
}
