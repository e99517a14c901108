/*
 * dump.c — an in-flight state dump as JSON (dump.h's format, through
 * jansson) and its file: a private temporary name, then a rename. Not for a
 * signal handler (dump_signal.c hands signals to a thread).
 */
#include "dump.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Seconds, for people's tools; 16 digits keep the realtime's microseconds. */
#define DUMP_JSON_FLAGS (JSON_INDENT(1) | JSON_REAL_PRECISION(16))

static json_t *seconds(uint64_t ns) { return json_real((double)ns / 1e9); }

/* Counters are unsigned 64-bit; JSON integers through jansson are signed. */
static json_t *count(uint64_t v) { return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v); }

/* A string, or null. Text that is not UTF-8 (a host name, an error quoting
 * bytes) is written with its other bytes as '?'. */
static json_t *text(const char *s) {
  if (!s) return json_null();
  json_t *j = json_string(s);
  if (j) return j;
  size_t n = strlen(s);
  char *copy = malloc(n + 1);
  if (!copy) return NULL;
  for (size_t i = 0; i <= n; i++) copy[i] = (s[i] & 0x80) ? '?' : s[i];
  j = json_string(copy);
  free(copy);
  return j;
}

/* The fields a wait and a failure share. */
static int put_where(json_t *o, const dump_wait_t *w) {
  return json_object_set_new(o, "peer", json_integer(w->peer)) |
         json_object_set_new(o, "dir", json_string(w->is_recv ? "recv" : "send")) |
         json_object_set_new(o, "channel", json_integer(w->channel)) |
         json_object_set_new(o, "step", count(w->step)) | json_object_set_new(o, "loop", count(w->loop)) |
         json_object_set_new(o, "action", json_integer(w->action)) |
         json_object_set_new(o, "item", json_integer(w->item));
}

static json_t *build(const dump_info_t *in) {
  static const char *const runs[] = {"idle", "running", "failed"};
  json_t *root = json_object(), *process = json_object(), *comm = json_object(), *state = json_object();
  json_t *waits = json_array(), *peers = json_array();
  char id[17];
  snprintf(id, sizeof(id), "%016llx", (unsigned long long)in->id);
  int bad = !root || !process || !comm || !state || !waits || !peers;
  bad |= json_object_set_new(root, "format", json_string("xccl-dump"));
  bad |= json_object_set_new(root, "version", json_integer(DUMP_FORMAT_VERSION));
  bad |= json_object_set_new(process, "host", text(in->host));
  bad |= json_object_set_new(process, "pid", json_integer(getpid()));
  bad |= json_object_set_new(process, "reason", text(in->reason));
  bad |= json_object_set_new(process, "realtime", seconds(in->realtime_ns));
  bad |= json_object_set_new(process, "monotonic", seconds(in->monotonic_ns));
  bad |= json_object_set(root, "process", process);
  bad |= json_object_set_new(comm, "id", json_string(id));
  bad |= json_object_set_new(comm, "rank", json_integer(in->rank));
  bad |= json_object_set_new(comm, "nranks", json_integer(in->nranks));
  bad |= json_object_set_new(comm, "prev", json_integer(in->prev));
  bad |= json_object_set_new(comm, "next", json_integer(in->next));
  bad |= json_object_set(root, "comm", comm);
  int run = in->run >= DUMP_RUN_IDLE && in->run <= DUMP_RUN_FAILED ? (int)in->run : DUMP_RUN_RUNNING;
  bad |= json_object_set_new(state, "run", json_string(runs[run]));
  bad |= json_object_set_new(state, "done", count(in->done));
  bad |= json_object_set_new(state, "waits", json_integer(run == DUMP_RUN_IDLE ? 0 : in->total_waits));
  bad |= json_object_set_new(state, "torn", json_boolean(in->torn));
  bad |= json_object_set(root, "state", state);
  if (run != DUMP_RUN_IDLE) {
    json_t *op = json_object();
    bad |= !op;
    bad |= json_object_set_new(op, "name", text(in->op_name ? in->op_name : "?"));
    bad |= json_object_set_new(op, "seq", count(in->seq));
    bad |= json_object_set_new(op, "count", count(in->count));
    bad |= json_object_set_new(op, "type", text(in->type));
    bad |= json_object_set_new(op, "redop", text(in->redop));
    bad |= json_object_set_new(op, "algo", text(in->algo));
    bad |= json_object_set_new(op, "root", json_integer(in->root));
    bad |= json_object_set_new(op, "peer", json_integer(in->op_peer));
    bad |= json_object_set_new(op, "nops", json_integer(in->nops));
    bad |= json_object_set_new(op, "started", seconds(in->started_ns));
    bad |= json_object_set_new(root, "op", op);
  }
  for (int k = 0; k < in->nwaits && k < DUMP_WAITS && run != DUMP_RUN_IDLE; k++) {
    const dump_wait_t *w = &in->waits[k];
    uint64_t ago = in->monotonic_ns > w->since_ns ? in->monotonic_ns - w->since_ns : 0;
    json_t *o = json_object();
    bad |= !o || put_where(o, w);
    bad |= json_object_set_new(o, "since", seconds(w->since_ns));
    bad |= json_object_set_new(o, "since_realtime", seconds(in->realtime_ns - (in->realtime_ns > ago ? ago : 0)));
    bad |= json_array_append_new(waits, o);
  }
  bad |= json_object_set(root, "waits", waits);
  if (in->failed) {
    json_t *f = json_object();
    bad |= !f || json_object_set_new(f, "kind", json_string(in->fail_kind ? in->fail_kind : "other"));
    if (in->fail_kind) bad |= put_where(f, &in->fail);
    bad |= json_object_set_new(root, "fail", f);
    bad |= json_object_set_new(root, "error", text(in->error));
  }
  for (int k = 0; k < in->npeers && k < DUMP_PEERS; k++) {
    json_t *o = json_object();
    bad |= !o || json_object_set_new(o, "rank", json_integer(in->peers[k].rank));
    bad |= json_object_set_new(o, "pid", count(in->peers[k].pid));
    bad |= json_object_set_new(o, "host", text(in->peers[k].host));
    bad |= json_array_append_new(peers, o);
  }
  bad |= json_object_set(root, "peers", peers);
  json_decref(process), json_decref(comm), json_decref(state), json_decref(waits), json_decref(peers);
  if (bad) json_decref(root), root = NULL;
  return root;
}

char *dump_render(const dump_info_t *info) {
  json_t *root = build(info);
  if (!root) return NULL;
  char *body = json_dumps(root, DUMP_JSON_FLAGS);
  json_decref(root);
  if (!body) return NULL;
  size_t n = strlen(body);
  char *out = realloc(body, n + 2);
  if (!out) {
    free(body);
    return NULL;
  }
  out[n] = '\n', out[n + 1] = '\0';
  return out;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    p += w, n -= (size_t)w;
  }
  return 0;
}

int dump_write(const dump_info_t *info, char *path, size_t pathlen) {
  const char *dir = dump_dir();
  snprintf(path, pathlen, "%s/xccl-%016llx-r%d.dump", dir ? dir : "", (unsigned long long)info->id, info->rank);
  if (!dir) return ENOENT;
  /* A private temporary name (thread and reason), renamed into place: a
   * reader sees the old file or the new one, never a mix. */
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.%ld.%s.tmp", path, (long)syscall(SYS_gettid), info->reason ? info->reason : "");
  char *body = dump_render(info);
  if (!body) return ENOMEM;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  int err = fd < 0 ? errno : write_all(fd, body, strlen(body));
  free(body);
  if (fd >= 0 && close(fd) != 0 && !err) err = errno;
  if (!err && rename(tmp, path) != 0) err = errno;
  if (err && fd >= 0) unlink(tmp);
  return err;
}
