/*
 * xccl-stuck — reads the in-flight state dumps of all ranks of a job (format:
 * src/observe/dump.h, JSON) and names what they wait on.
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
 * bad input (a malformed dump is named with its file).
 *
 * A directory contributes its files named xccl-*.dump. Dumps of several
 * communicators (the file names carry their ids): the one written last is
 * read, unless --comm ID picks one or --all reads each.
 *
 * This file holds the analysis: the wait-for graph, its components, the
 * verdict and table, and main. Finding and reading the dumps is in
 * xccl_stuck_parse.c.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xccl_stuck.h"

#define LIST_SHOWN 16 /* ranks printed in a list before "... (N in all)" */

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
  int *index = stuck_xcalloc((size_t)n, sizeof(int)), *low = stuck_xcalloc((size_t)n, sizeof(int));
  int *onstack = stuck_xcalloc((size_t)n, sizeof(int)), *stack = stuck_xcalloc((size_t)n, sizeof(int));
  int *call = stuck_xcalloc((size_t)n, sizeof(int)), *edge = stuck_xcalloc((size_t)n, sizeof(int));
  g->scc = stuck_xcalloc((size_t)n, sizeof(int));
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
  g->csize = stuck_xcalloc((size_t)nscc, sizeof(int));
  for (int v = 0; v < n; v++) g->csize[g->scc[v]]++;
  g->terminal = stuck_xcalloc((size_t)nscc, sizeof(int));
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
      stuck_die(2, "%s: comm.nranks is %d, but %s says %d for the same communicator %016" PRIx64, ds[i]->file,
                ds[i]->nranks, ds[0]->file, nranks, ds[0]->id);
  graph_t g = {.nranks = nranks};
  g.by_rank = stuck_xcalloc((size_t)nranks, sizeof(*g.by_rank));
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
  g.pid = stuck_xcalloc((size_t)nranks, sizeof(long));
  g.host = stuck_xcalloc((size_t)nranks, sizeof(char *));
  for (int r = 0; r < nranks; r++) g.pid[r] = -1;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < ds[i]->npeers; k++) {
      const peer_t *p = &ds[i]->peers[k];
      if (p->rank < nranks && !g.by_rank[p->rank]) g.pid[p->rank] = p->pid, g.host[p->rank] = p->host;
    }
  for (int r = 0; r < nranks; r++)
    if (g.by_rank[r]) g.pid[r] = g.by_rank[r]->pid, g.host[r] = g.by_rank[r]->host;
  /* The wait-for graph, both ways. */
  g.off = stuck_xcalloc((size_t)nranks + 1, sizeof(int));
  g.roff = stuck_xcalloc((size_t)nranks + 1, sizeof(int));
  int nedges = 0, tmp[MAX_WAITS + 1];
  for (int r = 0; r < nranks; r++) nedges += waits_of(g.by_rank[r], tmp);
  g.out = stuck_xcalloc((size_t)nedges, sizeof(int));
  g.in = stuck_xcalloc((size_t)nedges, sizeof(int));
  for (int r = 0, e = 0; r < nranks; r++) {
    g.off[r] = e;
    e += waits_of(g.by_rank[r], g.out + e);
    g.off[r + 1] = e;
  }
  for (int e = 0; e < nedges; e++) g.roff[g.out[e] + 1]++;
  for (int r = 0; r < nranks; r++) g.roff[r + 1] += g.roff[r];
  int *fill = stuck_xcalloc((size_t)nranks, sizeof(int));
  for (int v = 0; v < nranks; v++)
    for (int e = g.off[v]; e < g.off[v + 1]; e++) g.in[g.roff[g.out[e]] + fill[g.out[e]]++] = v;
  free(fill);
  g.queue = stuck_xcalloc((size_t)nranks, sizeof(int));
  graph_scc(&g);
  /* Culprits: terminal components that others wait on, and cycles. Count
   * the waiters of those most waited on directly, name the most waited on. */
  int *direct = stuck_xcalloc((size_t)g.nscc, sizeof(int));
  for (int v = 0; v < nranks; v++)
    for (int e = g.off[v]; e < g.off[v + 1]; e++)
      if (g.scc[g.out[e]] != g.scc[v]) direct[g.scc[g.out[e]]]++;
  pair_t *cand = stuck_xcalloc((size_t)g.nscc, sizeof(*cand));
  int ncand = 0;
  for (int c = 0; c < g.nscc; c++)
    if (g.terminal[c] && (direct[c] > 0 || g.csize[c] >= 2)) cand[ncand++] = (pair_t){c, direct[c]};
  qsort(cand, (size_t)ncand, sizeof(*cand), cmp_pair);
  int counted = ncand < MAX_CANDIDATES ? ncand : MAX_CANDIDATES;
  char *mark = stuck_xcalloc((size_t)nranks, 1);
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
      if (++i >= argc) stuck_die(2, "--comm needs a communicator id (16 hex digits, as in the file names)");
      size_t n = strlen(argv[i]);
      if (n == 0 || n > 16 || strspn(argv[i], "0123456789abcdefABCDEF") != n)
        stuck_die(2, "--comm %s is not a communicator id (16 hex digits, as in the file names)", argv[i]);
      want = strtoull(argv[i], NULL, 16);
      have_comm = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      stuck_die(2, "unknown option %s; see xccl-stuck --help", argv[i]);
    } else {
      stuck_add_path(&ds, argv[i]);
      npaths++;
    }
  }
  if (!npaths) {
    usage(stderr);
    return 2;
  }
  /* Communicators, newest first. */
  uint64_t *ids = stuck_xcalloc((size_t)ds.n, sizeof(uint64_t));
  double *newest = stuck_xcalloc((size_t)ds.n, sizeof(double));
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
  dump_t **group = stuck_xcalloc((size_t)ds.n, sizeof(*group));
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
  if (have_comm && !analysed) stuck_die(2, "no dump of communicator %016" PRIx64 " in the input", want);
  if (!all && !have_comm && nids > 1)
    printf("note: dumps of %d other communicator(s) were left out (--all reads them all)\n", nids - 1);
  for (int i = 0; i < ds.n; i++) stuck_dump_free(&ds.v[i]);
  free(ds.v), free(ids), free(newest), free(group);
  return verdicts ? 0 : 1;
}
