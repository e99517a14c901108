/*
 * stats.c — XCCL_STATS_FILE: the sources, the Prometheus text, the file
 * (stats.h).
 */
#include "stats.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "log.h"

#define STATS_KEEP_REMOVED 64 /* removed communicators whose last numbers stay in the file */
#define STATS_NAME_BYTES 64

struct stats_source {
  uint64_t comm_id;
  int rank, nranks;
  char name[STATS_NAME_BYTES];
  stats_fill_fn *fill; /* NULL once removed: snap holds its last numbers */
  void *ctx;
  stats_comm_t snap;
  struct stats_source *next;
};

/* The process's sources, in the order they registered, and the file; all
 * under stats_lock but next_due, which stats_tick reads without it. */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static stats_source_t *stats_sources;
static int stats_removed; /* how many of them were removed */
static char stats_path[512];
static int stats_warned; /* a write failed and said so; quiet until one succeeds */
static _Atomic uint64_t stats_next_due = UINT64_MAX;

static const char *const state_names[STATS_NSTATES] = {"ready",  "finalized", "revoked",
                                                       "failed", "aborted",   "destroyed"};

int stats_enabled(void) { return config_str(CFG_STATS_FILE)[0] != '\0'; }

static uint64_t interval_ns(void) { return (uint64_t)(config_double(CFG_STATS_INTERVAL) * 1e9); }

stats_source_t *stats_add(uint64_t comm_id, int rank, int nranks, const char *name, int max_ops, int max_links,
                          stats_fill_fn *fill, void *ctx) {
  if (!stats_enabled()) return NULL;
  stats_source_t *s = calloc(1, sizeof(*s));
  stats_ops_t *ops = calloc((size_t)(max_ops > 0 ? max_ops : 1), sizeof(*ops));
  stats_link_t *links = calloc((size_t)(max_links > 0 ? max_links : 1), sizeof(*links));
  if (!s || !ops || !links) {
    free(s), free(ops), free(links);
    WARN(INIT, "rank %d: out of memory for its XCCL_STATS_FILE record: this communicator is left out of the metrics",
         rank);
    return NULL;
  }
  *s = (stats_source_t){.comm_id = comm_id, .rank = rank, .nranks = nranks, .fill = fill, .ctx = ctx};
  snprintf(s->name, sizeof(s->name), "%s", name ? name : "");
  s->snap = (stats_comm_t){.fail_peer = -1, .ops = ops, .max_ops = max_ops, .links = links, .max_links = max_links};
  pthread_mutex_lock(&stats_lock);
  if (!stats_path[0]) { /* the first communicator names the file */
    log_expand_path(config_str(CFG_STATS_FILE), rank, stats_path, sizeof(stats_path));
    uint64_t every = interval_ns();
    if (every) atomic_store(&stats_next_due, clock_ns() + every);
    INFO(INIT, "rank %d: metrics go to %s (XCCL_STATS_FILE), every %g s%s", rank, stats_path,
         config_double(CFG_STATS_INTERVAL), every ? "" : " (0: at destroy and failure only)");
  }
  stats_source_t **tail = &stats_sources;
  while (*tail) tail = &(*tail)->next;
  *tail = s;
  pthread_mutex_unlock(&stats_lock);
  return s;
}

/* ---- The text ---- */

/* A label value with \, " and newline escaped, as the format wants. */
static void put_escaped(FILE *f, const char *v) {
  for (; *v; v++) {
    if (*v == '\\' || *v == '"')
      fputc('\\', f), fputc(*v, f);
    else if (*v == '\n')
      fputs("\\n", f);
    else
      fputc(*v, f);
  }
}

/* The start of a series: name{comm="...",rank="..." — the caller adds its
 * own labels, then closes with end_series. */
static void begin_series(FILE *f, const char *metric, const stats_source_t *s) {
  fprintf(f, "%s{comm=\"%016llx\",rank=\"%d\"", metric, (unsigned long long)s->comm_id, s->rank);
}

static void end_series_u64(FILE *f, uint64_t v) { fprintf(f, "} %llu\n", (unsigned long long)v); }

static void family(FILE *f, const char *metric, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", metric, help, metric, type);
}

static void render_info(FILE *f) {
  family(f, "xccl_communicator_info", "gauge", "A communicator of this process: its size and name.");
  for (const stats_source_t *s = stats_sources; s; s = s->next) {
    begin_series(f, "xccl_communicator_info", s);
    fprintf(f, ",nranks=\"%d\"", s->nranks);
    if (s->name[0]) fputs(",name=\"", f), put_escaped(f, s->name), fputc('"', f);
    end_series_u64(f, 1);
  }
  family(f, "xccl_communicator_state", "gauge",
         "1 for the state the communicator is in (ready, finalized, revoked, failed, aborted, destroyed), 0 for "
         "the others.");
  for (const stats_source_t *s = stats_sources; s; s = s->next)
    for (int st = 0; st < STATS_NSTATES; st++) {
      begin_series(f, "xccl_communicator_state", s);
      fprintf(f, ",state=\"%s\"", state_names[st]);
      end_series_u64(f, s->snap.state == (stats_state_t)st);
    }
  family(f, "xccl_communicator_error", "gauge",
         "1 while the communicator has failed: why, and the peer the failure names (unknown when none).");
  for (const stats_source_t *s = stats_sources; s; s = s->next) {
    if (s->snap.state != STATS_FAILED) continue;
    begin_series(f, "xccl_communicator_error", s);
    if (s->snap.fail_peer >= 0)
      fprintf(f, ",peer=\"%d\"", s->snap.fail_peer);
    else
      fputs(",peer=\"unknown\"", f);
    fprintf(f, ",reason=\"%s\"", s->snap.fail_reason ? s->snap.fail_reason : "error");
    end_series_u64(f, 1);
  }
}

static void render_traffic(FILE *f) {
  family(f, "xccl_operations_total", "counter", "Operations called, by collective and the algorithm that ran it.");
  for (const stats_source_t *s = stats_sources; s; s = s->next)
    for (int i = 0; i < s->snap.nops; i++) {
      begin_series(f, "xccl_operations_total", s);
      fprintf(f, ",collective=\"%s\",algorithm=\"%s\"", s->snap.ops[i].collective, s->snap.ops[i].algorithm);
      end_series_u64(f, s->snap.ops[i].count);
    }
  static const char *const dir_metric[2] = {"xccl_bytes_sent_total", "xccl_bytes_received_total"};
  static const char *const dir_help[2] = {"Bytes sent to a peer, by the transport that carried them.",
                                          "Bytes received from a peer, by the transport that carried them."};
  for (int dir = 0; dir < 2; dir++) {
    family(f, dir_metric[dir], "counter", dir_help[dir]);
    for (const stats_source_t *s = stats_sources; s; s = s->next)
      for (int i = 0; i < s->snap.nlinks; i++) {
        const stats_link_t *l = &s->snap.links[i];
        begin_series(f, dir_metric[dir], s);
        fprintf(f, ",peer=\"%d\",transport=\"%s\"", l->peer, l->transport);
        end_series_u64(f, dir ? l->received : l->sent);
      }
  }
  family(f, "xccl_wait_seconds_total", "counter", "Seconds callers spent stalled in operations, waiting for peers.");
  for (const stats_source_t *s = stats_sources; s; s = s->next) {
    begin_series(f, "xccl_wait_seconds_total", s);
    fprintf(f, "} %.9f\n", s->snap.wait_s);
  }
  family(f, "xccl_errors_total", "counter", "Calls on the communicator that returned an error.");
  for (const stats_source_t *s = stats_sources; s; s = s->next)
    begin_series(f, "xccl_errors_total", s), end_series_u64(f, s->snap.errors);
  family(f, "xccl_timeouts_total", "counter", "Operations that failed after XCCL_TIMEOUT without progress.");
  for (const stats_source_t *s = stats_sources; s; s = s->next)
    begin_series(f, "xccl_timeouts_total", s), end_series_u64(f, s->snap.timeouts);
}

/* ---- The file ---- */

/* Writes len bytes of text to stats_path through a temporary in its
 * directory and a rename; 0, or -1 with errno and *what (the step that
 * failed) set. */
static int write_atomically(const char *text, size_t len, const char **what) {
  char dir[sizeof(stats_path)], base[sizeof(stats_path)], tmp[sizeof(stats_path) + 16];
  snprintf(dir, sizeof(dir), "%s", stats_path);
  snprintf(base, sizeof(base), "%s", stats_path);
  snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dirname(dir), basename(base));
  *what = "cannot create a temporary file beside it";
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  int rc = fchmod(fd, 0644); /* mkstemp's 0600 would keep a collector running as another user out */
  for (size_t off = 0; rc == 0 && off < len;) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      rc = -1, *what = "cannot write it";
    else
      off += (size_t)n;
  }
  if (close(fd) != 0 && rc == 0) rc = -1, *what = "cannot write it";
  if (rc == 0 && rename(tmp, stats_path) != 0) rc = -1, *what = "cannot rename the temporary file over it";
  if (rc != 0) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
  }
  return rc;
}

/* Fills every live source, renders them all and writes the file. */
static void write_locked(void) {
  for (stats_source_t *s = stats_sources; s; s = s->next) {
    if (!s->fill) continue;
    s->snap.nops = s->snap.nlinks = 0;
    s->fill(s->ctx, &s->snap);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    WARN(INIT, "XCCL_STATS_FILE=%s: out of memory for the metrics' text: not written", stats_path);
    return;
  }
  render_info(f);
  render_traffic(f);
  const char *what = "";
  if (fclose(f) != 0) {
    WARN(INIT, "XCCL_STATS_FILE=%s: out of memory for the metrics' text: not written", stats_path);
  } else if (write_atomically(text, len, &what) != 0) {
    if (!stats_warned)
      WARN(INIT, "XCCL_STATS_FILE=%s: %s: %s (errno %d); the job goes on without metrics until a write succeeds",
           stats_path, what, strerror(errno), errno);
    stats_warned = 1;
  } else {
    stats_warned = 0;
  }
  free(text);
  uint64_t every = interval_ns();
  if (every) atomic_store(&stats_next_due, clock_ns() + every);
}

void stats_tick(void *arg) {
  (void)arg;
  if (clock_ns() < atomic_load_explicit(&stats_next_due, memory_order_relaxed)) return;
  if (pthread_mutex_trylock(&stats_lock) != 0) return; /* another thread is writing it */
  if (stats_path[0] && clock_ns() >= atomic_load(&stats_next_due)) write_locked();
  pthread_mutex_unlock(&stats_lock);
}

void stats_write(void) {
  pthread_mutex_lock(&stats_lock);
  if (stats_path[0]) write_locked();
  pthread_mutex_unlock(&stats_lock);
}

/* Frees the oldest removed sources beyond STATS_KEEP_REMOVED. */
static void trim_removed_locked(void) {
  for (stats_source_t **p = &stats_sources; *p && stats_removed > STATS_KEEP_REMOVED;) {
    stats_source_t *s = *p;
    if (s->fill) {
      p = &s->next;
      continue;
    }
    *p = s->next;
    free(s->snap.ops), free(s->snap.links), free(s);
    stats_removed--;
  }
}

void stats_remove(stats_source_t *source, stats_state_t state) {
  if (!source) return;
  pthread_mutex_lock(&stats_lock);
  source->snap.nops = source->snap.nlinks = 0;
  source->fill(source->ctx, &source->snap);
  source->fill = NULL, source->ctx = NULL;
  if (source->snap.state != STATS_FAILED) source->snap.state = state;
  stats_removed++;
  trim_removed_locked();
  write_locked();
  pthread_mutex_unlock(&stats_lock);
}
