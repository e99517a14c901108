/*
 * xccl_stuck_parse.c — the input side of xccl-stuck: finds the dump files
 * named on the command line (a directory gives its xccl-*.dump files), reads
 * each with jansson and checks it against the JSON of src/observe/dump.h into
 * a dump_t. A malformed dump is named with its file (and, for text that is
 * not JSON, the line and column), and ends the program.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xccl_stuck.h"

#define MAX_FILE_BYTES (1 << 20)
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

/* The first error met wins; later checks see `failed` and take defaults, so
 * nothing after an error reads what it did not check. */
typedef struct {
  const char *file;
  char *why;
  size_t whylen;
  int failed;
} reader_t;

static void bad(reader_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(reader_t *r, const char *fmt, ...) {
  if (r->failed) return;
  r->failed = 1;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(r->why, r->whylen, "%s: %s (not a well-formed xccl dump; see src/observe/dump.h)", r->file, msg);
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
    case JSON_OBJECT:
      return "an object";
    case JSON_ARRAY:
      return "an array";
    case JSON_STRING:
      return "a string";
    case JSON_INTEGER:
      return "an integer";
    case JSON_REAL:
      return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
      return "a boolean";
    default:
      return "null";
  }
}

/* obj's member key (path names obj in messages) when it has the type want;
 * NULL when absent (an error if required) or of another type (an error). */
static json_t *member(reader_t *r, json_t *obj, const char *path, const char *key, json_type want, int required) {
  static const char *const wanted[] = {"an object", "an array", "a string", "an integer", "a number", "a boolean",
                                       "a boolean", "null"};
  json_t *v = obj ? json_object_get(obj, key) : NULL;
  int ok = v && (json_typeof(v) == want || (want == JSON_REAL && json_is_integer(v)) ||
                 (want == JSON_TRUE && json_is_boolean(v)));
  if (v && !ok)
    bad(r, "%s%s%s is %s, not %s", path, *path ? "." : "", key, type_name(v), wanted[want]);
  else if (!v && required && obj)
    bad(r, "%s%s%s is missing", path, *path ? "." : "", key);
  return ok && !r->failed ? v : NULL;
}

static int64_t get_int(reader_t *r, json_t *obj, const char *path, const char *key, int64_t lo, int64_t hi,
                       int64_t def, int required) {
  json_t *v = member(r, obj, path, key, JSON_INTEGER, required);
  if (!v) return def;
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) {
    bad(r, "%s%s%s is %" JSON_INTEGER_FORMAT ", not an integer from %" PRId64 " to %" PRId64, path, *path ? "." : "",
        key, x, lo, hi);
    return def;
  }
  return x;
}

static uint64_t get_count(reader_t *r, json_t *obj, const char *path, const char *key) {
  return (uint64_t)get_int(r, obj, path, key, 0, INT64_MAX, 0, 0);
}

/* Seconds: a finite number, not negative; def when absent. */
static double get_time(reader_t *r, json_t *obj, const char *path, const char *key, double def) {
  json_t *v = member(r, obj, path, key, JSON_REAL, 0);
  if (!v) return def;
  double x = json_number_value(v);
  if (!isfinite(x) || x < 0) {
    bad(r, "%s.%s is %g, not a time in seconds", path, key, x);
    return def;
  }
  return x;
}

/* A string into dst; null (where allowed) and absence give def. */
static const char *get_str(reader_t *r, json_t *obj, const char *path, const char *key, char *dst, size_t len,
                           const char *def, int required) {
  json_t *v = obj ? json_object_get(obj, key) : NULL;
  v = v && json_is_null(v) && def ? NULL : member(r, obj, path, key, JSON_STRING, required);
  snprintf(dst, len, "%s", v ? json_string_value(v) : def ? def : "");
  return v ? json_string_value(v) : NULL;
}

/* A wait or the failure (path: "waits[3]", "fail"). */
static void get_where(reader_t *r, json_t *o, const char *path, wait_t *w, int nranks) {
  char dir[16];
  w->peer = (int)get_int(r, o, path, "peer", 0, nranks - 1, -1, 1);
  get_str(r, o, path, "dir", dir, sizeof(dir), NULL, 1);
  if (!r->failed && strcmp(dir, "recv") != 0 && strcmp(dir, "send") != 0)
    bad(r, "%s.dir is \"%s\", neither \"recv\" nor \"send\"", path, dir);
  w->is_recv = strcmp(dir, "recv") == 0;
  w->channel = (int)get_int(r, o, path, "channel", -1, 1 << 20, 0, 0);
  w->step = get_count(r, o, path, "step");
  w->loop = get_count(r, o, path, "loop");
  w->action = (int)get_int(r, o, path, "action", -1, INT32_MAX, -1, 0);
  w->item = (int)get_int(r, o, path, "item", -1, INT32_MAX, -1, 0);
  w->since = get_time(r, o, path, "since", -1);
}

static void get_comm(reader_t *r, json_t *root, dump_t *d) {
  json_t *c = member(r, root, "", "comm", JSON_OBJECT, 1);
  char id[32];
  get_str(r, c, "comm", "id", id, sizeof(id), NULL, 1);
  size_t n = strlen(id);
  if (!r->failed && (n == 0 || n > 16 || strspn(id, "0123456789abcdefABCDEF") != n))
    bad(r, "comm.id is \"%s\", not a communicator id (1 to 16 hex digits)", id);
  d->id = r->failed ? 0 : strtoull(id, NULL, 16);
  d->nranks = (int)get_int(r, c, "comm", "nranks", 1, MAX_RANKS, 1, 1);
  d->rank = (int)get_int(r, c, "comm", "rank", 0, MAX_RANKS - 1, 0, 1);
  d->prev = (int)get_int(r, c, "comm", "prev", 0, MAX_RANKS - 1, 0, 0);
  d->next = (int)get_int(r, c, "comm", "next", 0, MAX_RANKS - 1, 0, 0);
  if (!r->failed && d->rank >= d->nranks) bad(r, "comm.rank is %d, not below comm.nranks (%d)", d->rank, d->nranks);
  if (!r->failed && (d->prev >= d->nranks || d->next >= d->nranks))
    bad(r, "comm.prev or comm.next is not below comm.nranks (%d)", d->nranks);
}

static void get_state(reader_t *r, json_t *root, dump_t *d) {
  json_t *s = member(r, root, "", "state", JSON_OBJECT, 1);
  char run[16];
  get_str(r, s, "state", "run", run, sizeof(run), "running", 0);
  d->run = strcmp(run, "idle") == 0 ? RUN_IDLE : strcmp(run, "failed") == 0 ? RUN_FAILED : RUN_RUNNING;
  if (!r->failed && strcmp(run, "idle") != 0 && strcmp(run, "running") != 0 && strcmp(run, "failed") != 0)
    bad(r, "state.run is \"%s\", not \"idle\", \"running\" or \"failed\"", run);
  d->done = get_count(r, s, "state", "done");
  d->total_waits = (int)get_int(r, s, "state", "waits", 0, INT32_MAX, 0, 0);
  json_t *torn = member(r, s, "state", "torn", JSON_TRUE, 0);
  d->torn = torn && json_is_true(torn);
}

static void get_op(reader_t *r, json_t *root, dump_t *d) {
  json_t *op = member(r, root, "", "op", JSON_OBJECT, 0);
  if (!op) return;
  d->has_op = 1;
  get_str(r, op, "op", "name", d->op_name, sizeof(d->op_name), "?", 0);
  d->seq = get_count(r, op, "op", "seq");
  d->count = get_count(r, op, "op", "count");
  get_str(r, op, "op", "type", d->type, sizeof(d->type), "-", 0);
  get_str(r, op, "op", "redop", d->redop, sizeof(d->redop), "-", 0);
  get_str(r, op, "op", "algo", d->algo, sizeof(d->algo), "-", 0);
  d->root = (int)get_int(r, op, "op", "root", -1, MAX_RANKS - 1, -1, 0);
  d->op_peer = (int)get_int(r, op, "op", "peer", -1, MAX_RANKS - 1, -1, 0);
  d->nops = (int)get_int(r, op, "op", "nops", 0, INT32_MAX, 0, 0);
}

static void get_lists(reader_t *r, json_t *root, dump_t *d) {
  json_t *waits = member(r, root, "", "waits", JSON_ARRAY, 0);
  size_t nw = waits ? json_array_size(waits) : 0;
  if (nw > MAX_WAITS) bad(r, "waits has %zu entries, more than %d", nw, MAX_WAITS);
  for (size_t k = 0; k < nw && !r->failed; k++) {
    char path[32];
    snprintf(path, sizeof(path), "waits[%zu]", k);
    json_t *o = json_array_get(waits, k);
    if (!json_is_object(o)) bad(r, "%s is %s, not an object", path, type_name(o));
    wait_t w = {.peer = -1, .since = -1};
    get_where(r, o, path, &w, d->nranks);
    if (!r->failed) d->waits[d->nwaits++] = w;
  }
  json_t *fail = member(r, root, "", "fail", JSON_OBJECT, 0);
  if (fail) {
    d->has_fail = 1;
    d->fail = (wait_t){.peer = -1, .since = -1};
    get_str(r, fail, "fail", "kind", d->fail_kind, sizeof(d->fail_kind), NULL, 1);
    if (strcmp(d->fail_kind, "other") != 0) get_where(r, fail, "fail", &d->fail, d->nranks);
  }
  get_str(r, root, "", "error", d->error, sizeof(d->error), "", 0);
  json_t *peers = member(r, root, "", "peers", JSON_ARRAY, 0);
  size_t np = peers ? json_array_size(peers) : 0;
  if (np > 0 && !r->failed) d->peers = stuck_xcalloc(np, sizeof(*d->peers));
  for (size_t k = 0; k < np && !r->failed; k++) {
    char path[32];
    snprintf(path, sizeof(path), "peers[%zu]", k);
    json_t *o = json_array_get(peers, k);
    if (!json_is_object(o)) bad(r, "%s is %s, not an object", path, type_name(o));
    peer_t *p = &d->peers[d->npeers];
    p->rank = (int)get_int(r, o, path, "rank", 0, MAX_RANKS - 1, -1, 1);
    p->pid = (long)get_int(r, o, path, "pid", 0, INT32_MAX, -1, 0);
    get_str(r, o, path, "host", p->host, sizeof(p->host), "?", 0);
    if (!r->failed) d->npeers++;
  }
}

void stuck_dump_free(dump_t *d) {
  free(d->file);
  free(d->peers);
  d->file = NULL, d->peers = NULL, d->npeers = 0;
}

int stuck_parse_dump(const char *file, const char *text, size_t len, dump_t *d, char *why, size_t whylen) {
  reader_t r = {file, why, whylen, 0};
  memset(d, 0, sizeof(*d));
  d->pid = -1;
  d->root = d->op_peer = -1;
  size_t blank = 0;
  while (blank < len && text[blank] && strchr(" \t\r\n", text[blank])) blank++;
  if (blank == len) {
    snprintf(why, whylen, "%s: empty: no JSON (not a well-formed xccl dump; see src/observe/dump.h)", file);
    return -1;
  }
  json_error_t err;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
  if (!root) {
    snprintf(why, whylen, "%s:%d:%d: %s%s (not a well-formed xccl dump; see src/observe/dump.h)", file, err.line,
             err.column, err.text,
             (size_t)err.position >= len ? ": the file is cut short (its writer died or the disk filled?)" : "");
    return -1;
  }
  if (!json_is_object(root)) bad(&r, "the top level is %s, not an object", type_name(root));
  char format[32];
  get_str(&r, root, "", "format", format, sizeof(format), NULL, 1);
  if (!r.failed && strcmp(format, "xccl-dump") != 0) bad(&r, "format is \"%s\", not \"xccl-dump\"", format);
  int version = (int)get_int(&r, root, "", "version", 1, 1000, 0, 1);
  if (!r.failed && version != 2) bad(&r, "version %d: this xccl-stuck reads version 2", version);
  json_t *proc = member(&r, root, "", "process", JSON_OBJECT, 1);
  get_str(&r, proc, "process", "host", d->host, sizeof(d->host), "?", 0);
  d->pid = (long)get_int(&r, proc, "process", "pid", 0, INT32_MAX, -1, 0);
  get_str(&r, proc, "process", "reason", d->reason, sizeof(d->reason), "?", 0);
  d->realtime = get_time(&r, proc, "process", "realtime", 0);
  d->monotonic = get_time(&r, proc, "process", "monotonic", 0);
  get_comm(&r, root, d);
  get_state(&r, root, d);
  get_op(&r, root, d);
  get_lists(&r, root, d);
  json_decref(root);
  if (!r.failed) d->file = strdup(file);
  if (!r.failed && !d->file) stuck_die(2, "out of memory");
  if (r.failed) stuck_dump_free(d);
  return r.failed ? -1 : 0;
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
  char why[1024];
  if (stuck_parse_dump(path, buf, n, d, why, sizeof(why)) != 0) stuck_die(2, "%s", why);
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
