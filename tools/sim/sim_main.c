/*
 * xccl-sim — replays xccl's algorithms over a modelled cluster (sim.h) and
 * prints each one's time and bus bandwidth per size, marking the one the
 * tuner (tuning_pick, src/core/tuning.h) would run.
 *
 *   xccl-sim --hosts H (--gpus G | --topo FILE) [--nvlink-gbps N --nic-gbps N
 *            --nvlink-us N --nic-us N --nics N --channels N --max-msgs N]
 *            COLL -b MIN -e MAX [-f F] [--root R] [--algo LIST|all] [--json]
 *
 * --topo FILE makes every host the machine of an hwloc or NCCL topology
 * file (sim_topo.c): GPUs, channels, rail NICs and their speed, a GPU's
 * link inside the host; a flag given, before or after it, wins.
 *
 * Every algorithm xccl-sim replays that serves COLL (algo_serves) gets a row:
 * each replay drives its kernel's items for that collective.
 *
 * Method per row: "event" replays every rank message by message;
 * "symmetric" replays one host of a uniform cluster (sim_ring.c's fold);
 * "extrapolated" replays two smaller sizes whose messages fit --max-msgs and
 * extends the line through them to the size asked (a pipeline's time grows
 * linearly with its pieces once it is full).
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "algo.h"
#include "config.h"
#include "cost.h"
#include "sim.h"
#include "sim_boot.h"
#include "tuning.h"

static const sim_sched_t *const scheds[] = {
#define SIM_SCHED_ENTRY(n) &sim_##n,
    SIM_SCHED_LIST(SIM_SCHED_ENTRY)
#undef SIM_SCHED_ENTRY
};
#define NSCHED ((int)(sizeof(scheds) / sizeof(scheds[0])))

typedef struct {
  sim_cluster_t c;
  coll_kind_t coll;
  size_t minb, maxb;
  double factor;
  int want[NSCHED]; /* 1: replay it; 2: named in --algo */
  int root;         /* --root: broadcast's and reduce's root rank (the others have none and ignore it) */
  int json;
  int bootstrap; /* --bootstrap: init's all-gather instead of a collective */
  double max_msgs;
  size_t ring_slot, peer_slot;
  algo_site_t site; /* what the tuner knows of the cluster (sim_site_make) */
  const char *topo; /* --topo FILE */
  unsigned given;   /* GIVEN_* bits: the flags given, which a --topo file does not override */
  sim_topo_t t;     /* what the file gave */
} opts_t;

enum { GIVEN_GPUS = 1, GIVEN_NICS = 2, GIVEN_CHANNELS = 4, GIVEN_LOCAL_BPS = 8, GIVEN_NIC_BPS = 16 };

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-sim --hosts H (--gpus G | --topo FILE) [options] COLL -b MIN -e MAX [-f F]\n"
          "                [--root R] [--algo LIST|all] [--json]\n"
          "       xccl-sim --hosts H (--gpus G | --topo FILE) [options] --bootstrap [--json]\n"
          "  --topo FILE     every host is the machine of this topology file (hwloc or NCCL XML, as\n"
          "                  XCCL_TOPO_FILE): its GPUs; the channels, and the NICs they use (rails), of\n"
          "                  xccl's planner for a job across hosts; the slowest rail NIC's speed; a GPU's\n"
          "                  link inside the host (its NVLink bandwidth where all GPUs are joined by\n"
          "                  NVLink, else the narrowest GPU-to-GPU path). --gpus N (the file's first N\n"
          "                  GPUs), --nics, --channels, --nic-gbps, --nvlink-gbps and --local-gbps win\n"
          "                  over it, before or after --topo; latencies are the flags' (or defaults)\n"
          "  --bootstrap     init's all-gather of the peer info: a ring of k-1 steps and Bruck's ceil(log2 k) rounds\n"
          "  COLL            allreduce, allgather, reducescatter, broadcast, reduce or alltoall\n"
          "  -b, -e          smallest and largest size in bytes (K, M, G suffixes: powers of 1024)\n"
          "  -f F            size factor between rows (default 2)\n"
          "  --root R        broadcast's and reduce's root rank (default 0; the others ignore it)\n"
          "  --algo LIST     algorithms to replay, comma-separated, or all (default)\n"
          "  --nvlink-gbps N a GPU's link inside a host, Gbit/s per direction (default 3600: 450 GB/s)\n"
          "  --nic-gbps N    a NIC, Gbit/s per direction (default 400)\n"
          "  --nics N        NICs per host (default G, one per GPU; at most G): channel c's NIC is c %% N\n"
          "  --nvlink-us N   latency of a message inside a host, us (default 1)\n"
          "  --nic-us N      latency of a message between hosts, us (default 3)\n"
          "  --msg-us N      a sender's own time per message between hosts, its messages issued one after\n"
          "                  another (the per-message software cost the tuner's alpha holds), us (default 0)\n"
          "  --local-msg-us N  the same inside a host (default 0)\n"
          "  --cores N       cores per host, fractions allowed (default 0: one per GPU); where G > N the\n"
          "                  ranks take turns: every latency gains (G/N - 1) x %.0f us, every bandwidth is\n"
          "                  divided by G/N, as xccl's tuner prices it\n"
          "  --local-gbps N, --local-us N  the same as --nvlink-gbps, --nvlink-us (a host's link: shm, NVLink)\n"
          "  --channels N    ring channels (default G: one per rail)\n"
          "  --window N      slots per connection a sender may fill before the receiver frees one (default %d,\n"
          "                  XCCL_STEPS; 0: unlimited)\n"
          "  --max-msgs N    messages one replay may send before the row is extrapolated (default 1.2e7)\n"
          "  --json          a JSON list of rows {algo, bytes, time_us, busbw, chosen, method, msgs, sim_ms,\n"
          "                  net_bytes (per rank, between hosts), model_us (the algorithm's price in xccl's\n"
          "                  tuner, with this cluster's links; null where the tuner refuses it)}\n"
          "Slot sizes are XCCL_CHUNK_SIZE (ring) and XCCL_ALGO_CHUNK_SIZE (the others), from the environment.\n",
          TUNING_HANDOVER_S * 1e6, XCCL_STEPS);
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return -1;
  double m = 1;
  if (*end == 'K' || *end == 'k') m = 1024.0, end++;
  else if (*end == 'M' || *end == 'm') m = 1024.0 * 1024, end++;
  else if (*end == 'G' || *end == 'g') m = 1024.0 * 1024 * 1024, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  *out = (size_t)(v * m);
  return 0;
}

static int parse_double(const char *s, double lo, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo)) return -1;
  *out = v;
  return 0;
}

static int parse_algos(const char *list, int *want) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", list);
  memset(want, 0, NSCHED * sizeof(int));
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int all = strcasecmp(t, "all") == 0, found = all;
    for (int i = 0; i < NSCHED; i++) {
      if (strcasecmp(t, scheds[i]->name) == 0) want[i] = 2, found = 1;
      if (all && !want[i]) want[i] = 1;
    }
    if (!found) {
      fprintf(stderr, "xccl-sim: --algo: '%s' is not an algorithm xccl-sim replays (", t);
      for (int i = 0; i < NSCHED; i++) fprintf(stderr, "%s%s", i ? ", " : "", scheds[i]->name);
      fprintf(stderr, ", all)\n");
      return -1;
    }
  }
  return 0;
}

/* --topo: the file's figures where no flag gave them. */
static int apply_topo(opts_t *o) {
  if (sim_topo_read(o->topo, o->given & GIVEN_GPUS ? o->c.gpus : 0, &o->t) != 0) return -1;
  o->c.gpus = o->t.gpus;
  if (!(o->given & GIVEN_CHANNELS) && o->t.nchannels > 0) o->c.nchannels = o->t.nchannels;
  if (!(o->given & GIVEN_NICS) && o->t.nics > 0) o->c.nics = o->t.nics;
  if (!(o->given & GIVEN_NIC_BPS) && o->t.nic_bps > 0) o->c.nic_bps = o->t.nic_bps;
  if (!(o->given & GIVEN_LOCAL_BPS) && o->t.local_bps > 0) o->c.nvl_bps = o->t.local_bps;
  return 0;
}

/* The line that says what --topo took from the file (and what flags kept). */
static void topo_say(const opts_t *o, FILE *f) {
  const sim_topo_t *t = &o->t;
  fprintf(f, "# xccl-sim: --topo %s: %d of its %d GPUs per host", o->topo, t->gpus, t->file_gpus);
  if (t->local_bps > 0)
    fprintf(f, ", GPU link %s %.0f Gb/s%s", t->local_kind, t->local_bps * 8 / 1e9,
            o->given & GIVEN_LOCAL_BPS ? " (--nvlink-gbps/--local-gbps kept)" : "");
  if (t->nics > 0)
    fprintf(f, ", %d rail NIC(s) %s of %.0f Gb/s%s%s", t->nics, t->nic_names, t->nic_bps * 8 / 1e9,
            o->given & GIVEN_NICS ? " (--nics kept)" : "", o->given & GIVEN_NIC_BPS ? " (--nic-gbps kept)" : "");
  else
    fprintf(f, ", no NIC (NICs from the flags)");
  fprintf(f, ", %d channel(s)%s\n", t->nchannels, o->given & GIVEN_CHANNELS ? " (--channels kept)" : "");
}

/* --cores: ranks taking turns on too few cores, priced on the links as the
 * tuner prices them (tuning_share_link). */
static void share_cores(sim_cluster_t *c) {
  double f = c->cores > 0 ? c->gpus / c->cores : 1;
  tuning_share_link(f, &c->nvl_lat, &c->nvl_bps);
  tuning_share_link(f, &c->nic_lat, &c->nic_bps);
}

static int parse_args(int argc, char **argv, opts_t *o) {
  int coll = -1;
  *o = (opts_t){.c = {.nvl_bps = 3600e9 / 8, .nvl_lat = 1e-6, .nic_bps = 400e9 / 8, .nic_lat = 3e-6, .window = XCCL_STEPS},
                .minb = 8, .maxb = 8, .factor = 2, .max_msgs = 1.2e7};
  for (int i = 0; i < NSCHED; i++) o->want[i] = 1;
  double v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = a[0] == '-' && strcmp(a, "--json") != 0 && strcmp(a, "--bootstrap") != 0 && strcmp(a, "-h") != 0 &&
                strcmp(a, "--help") != 0;
    if (takes && !val) return fprintf(stderr, "xccl-sim: %s needs a value\n", a), -1;
#define BAD() return fprintf(stderr, "xccl-sim: %s %s: not a valid value\n", a, val), -1
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--json") == 0) {
      o->json = 1;
      continue;
    } else if (strcmp(a, "--bootstrap") == 0) {
      o->bootstrap = 1;
      continue;
    } else if (strcmp(a, "--hosts") == 0) {
      if (parse_double(val, 1, &v) || v > 1 << 20) BAD();
      o->c.hosts = (int)v;
    } else if (strcmp(a, "--gpus") == 0) {
      if (parse_double(val, 1, &v) || v > 1024) BAD();
      o->c.gpus = (int)v;
      o->given |= GIVEN_GPUS;
    } else if (strcmp(a, "--channels") == 0) {
      if (parse_double(val, 1, &v) || v > 32) BAD();
      o->c.nchannels = (int)v;
      o->given |= GIVEN_CHANNELS;
    } else if (strcmp(a, "--nics") == 0) {
      if (parse_double(val, 1, &v) || v > 1024) BAD();
      o->c.nics = (int)v;
      o->given |= GIVEN_NICS;
    } else if (strcmp(a, "--window") == 0) {
      if (parse_double(val, 0, &v) || v > 1 << 20) BAD();
      o->c.window = (int)v;
    } else if (strcmp(a, "--nvlink-gbps") == 0 || strcmp(a, "--local-gbps") == 0) {
      if (parse_double(val, 1e-3, &v)) BAD();
      o->c.nvl_bps = v * 1e9 / 8;
      o->given |= GIVEN_LOCAL_BPS;
    } else if (strcmp(a, "--nic-gbps") == 0) {
      if (parse_double(val, 1e-3, &v)) BAD();
      o->c.nic_bps = v * 1e9 / 8;
      o->given |= GIVEN_NIC_BPS;
    } else if (strcmp(a, "--nvlink-us") == 0 || strcmp(a, "--local-us") == 0) {
      if (parse_double(val, 0, &v)) BAD();
      o->c.nvl_lat = v * 1e-6;
    } else if (strcmp(a, "--nic-us") == 0) {
      if (parse_double(val, 0, &v)) BAD();
      o->c.nic_lat = v * 1e-6;
    } else if (strcmp(a, "--msg-us") == 0) {
      if (parse_double(val, 0, &v)) BAD();
      o->c.msg_s = v * 1e-6;
    } else if (strcmp(a, "--local-msg-us") == 0) {
      if (parse_double(val, 0, &v)) BAD();
      o->c.local_msg_s = v * 1e-6;
    } else if (strcmp(a, "--cores") == 0) {
      if (parse_double(val, 0, &v)) BAD();
      o->c.cores = v;
    } else if (strcmp(a, "--root") == 0) {
      if (parse_double(val, 0, &v) || v > 1 << 24 || v != (double)(int)v) BAD();
      o->root = (int)v;
    } else if (strcmp(a, "--max-msgs") == 0) {
      if (parse_double(val, 1e3, &o->max_msgs)) BAD();
    } else if (strcmp(a, "-b") == 0) {
      if (parse_size(val, &o->minb)) BAD();
    } else if (strcmp(a, "-e") == 0) {
      if (parse_size(val, &o->maxb)) BAD();
    } else if (strcmp(a, "-f") == 0) {
      if (parse_double(val, 1.001, &o->factor)) BAD();
    } else if (strcmp(a, "--algo") == 0) {
      if (parse_algos(val, o->want)) return -1;
    } else if (strcmp(a, "--topo") == 0) {
      o->topo = val;
    } else if (a[0] != '-' && coll < 0) {
      coll = tuning_coll_lookup(a);
      if (coll < 0) return fprintf(stderr, "xccl-sim: '%s' is not a collective\n", a), -1;
      continue;
    } else {
      return fprintf(stderr, "xccl-sim: unknown argument '%s'\n", a), usage(stderr), -1;
    }
#undef BAD
    i++;
  }
  if (o->bootstrap && coll < 0) coll = COLL_ALLREDUCE;
  if (o->topo && apply_topo(o) != 0) return -1;
  if (!o->c.hosts || !o->c.gpus || coll < 0)
    return fprintf(stderr, "xccl-sim: --hosts, --gpus (or --topo) and a collective are needed\n"), usage(stderr), -1;
  if ((double)o->c.hosts * o->c.gpus > 1 << 24) return fprintf(stderr, "xccl-sim: too many ranks\n"), -1;
  if (o->maxb < o->minb) return fprintf(stderr, "xccl-sim: -e is smaller than -b\n"), -1;
  o->coll = (coll_kind_t)coll;
  share_cores(&o->c);
  o->c.nranks = o->c.hosts * o->c.gpus;
  if (o->root >= o->c.nranks)
    return fprintf(stderr, "xccl-sim: --root %d is not a rank of the %d ranks (0 to %d)\n", o->root, o->c.nranks,
                   o->c.nranks - 1),
           -1;
  if (!o->c.nchannels) o->c.nchannels = o->c.gpus < 32 ? o->c.gpus : 32;
  if (!o->c.nics || o->c.nics > o->c.gpus) o->c.nics = o->c.gpus;
  o->ring_slot = config_size(CFG_CHUNK_SIZE);
  o->peer_slot = config_size(CFG_ALGO_CHUNK_SIZE);
  return 0;
}

/* The algorithm of algo_table named name; ALGO_COUNT when xccl has none. */
static algo_t algo_by_name(const char *name) {
  for (int a = 0; a < ALGO_COUNT; a++)
    if (strcmp(algo_table[a]->name, name) == 0) return (algo_t)a;
  return ALGO_COUNT;
}

static double bus_factor(coll_kind_t coll, int k) {
  if (coll == COLL_ALLREDUCE) return 2.0 * (k - 1) / k;
  if (coll == COLL_ALLGATHER || coll == COLL_REDUCESCATTER || coll == COLL_ALLTOALL) return (double)(k - 1) / k;
  return 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* sim set up for `bytes` of o's collective (4-byte elements, as xccl-perf's default float). */
static void sim_for(sim_t *s, const opts_t *o, size_t bytes, int symmetric) {
  memset(s, 0, sizeof(*s));
  s->c = o->c;
  s->coll = o->coll;
  s->root = o->root;
  s->esize = 4;
  s->bytes = bytes;
  s->count = bytes / s->esize;
  if (o->coll == COLL_ALLGATHER || o->coll == COLL_REDUCESCATTER || o->coll == COLL_ALLTOALL)
    s->count /= (size_t)o->c.nranks; /* a share; all-to-all's block to one peer */
  s->ring_slot = o->ring_slot;
  s->peer_slot = o->peer_slot;
  s->symmetric = symmetric;
  s->site = &o->site;
}

typedef struct {
  double time_s;
  double msgs;
  double net_bytes; /* per rank, between hosts */
  const char *method;
} row_t;

/* 1 if schedule i is wanted and its algorithm serves o's collective
 * (algo_serves, the descriptor's colls): each replay drives its kernel's
 * items for that collective (the ring's iterator, the tree's rooted trees,
 * rab's halves). */
static int replays(const opts_t *o, int i) {
  algo_t a = algo_by_name(scheds[i]->name);
  return o->want[i] && a < ALGO_COUNT && algo_serves(a, o->coll);
}

/* One replay of sched at `bytes`, folded or not. */
static int replay(const opts_t *o, const sim_sched_t *sched, size_t bytes, int fold, row_t *row) {
  sim_t s;
  sim_for(&s, o, bytes, fold);
  if (sim_run(&s, sched) != 0) return -1;
  row->time_s = s.end;
  row->msgs += (double)s.nmsgs;
  row->net_bytes = s.net_bytes / (fold ? o->c.gpus : o->c.nranks);
  return 0;
}

static int run_row(const opts_t *o, const sim_sched_t *sched, size_t bytes, row_t *row) {
  sim_t s;
  int fold = 0;
  sim_for(&s, o, bytes, 0);
  if (sched->msgs(&s) > o->max_msgs && sched->can_fold && sched->can_fold(&s)) fold = 1;
  sim_for(&s, o, bytes, fold);
  row->msgs = 0;
  /* The ring keeps its channel count while the size stays above this; the
   * others need a few pieces. */
  size_t floor_b = sched == &sim_ring ? 4 * (size_t)o->c.nchannels * RING_BYTES_PER_CHANNEL : 8 * o->peer_slot;
  if (sched->msgs(&s) <= o->max_msgs || bytes / 2 < floor_b) {
    row->method = fold ? "symmetric" : "event";
    return replay(o, sched, bytes, fold, row);
  }
  size_t b2 = bytes;
  do {
    b2 /= 2;
    sim_for(&s, o, b2, fold);
  } while (sched->msgs(&s) * 1.5 > o->max_msgs && b2 / 2 >= floor_b);
  row_t r1 = {0}, r2 = {0};
  if (replay(o, sched, b2 / 2, fold, &r1) || replay(o, sched, b2, fold, &r2)) return -1;
  row->time_s = r2.time_s + (double)(bytes - b2) * (r2.time_s - r1.time_s) / (double)(b2 - b2 / 2);
  row->msgs = r1.msgs + r2.msgs;
  row->net_bytes = r2.net_bytes * (double)bytes / (double)b2;
  row->method = fold ? "symmetric+extrapolated" : "extrapolated";
  return 0;
}

void sim_json_row(json_t *row, int first) {
  fputs(first ? "\n " : ",\n ", stdout);
  /* "key": value, ... on one line; null where json_pack ran out of memory */
  if (!row || json_dumpf(row, stdout, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) != 0) fputs("null", stdout);
  json_decref(row);
}

int main(int argc, char **argv) {
  opts_t o;
  if (parse_args(argc, argv, &o) != 0) return 2;
  if (o.topo) topo_say(&o, o.json ? stderr : stdout);
  if (o.bootstrap) return sim_bootstrap(&o.c, o.json);
  const sim_cluster_t *c = &o.c;
  int k = c->nranks, forced[COLL_NKINDS];
  for (int i = 0; i < COLL_NKINDS; i++) forced[i] = -1;
  if (sim_site_make(c, o.peer_slot, &o.site) != 0) {
    fprintf(stderr, "xccl-sim: %s\n", *xcclGetLastError(NULL) ? xcclGetLastError(NULL) : "out of memory");
    return 2;
  }
  const algo_site_t *site = &o.site;
  char root_text[32] = "";
  if (o.coll == COLL_BROADCAST || o.coll == COLL_REDUCE)
    snprintf(root_text, sizeof(root_text), " %s root %d", o.coll == COLL_BROADCAST ? "from" : "to", o.root);
  if (o.json)
    printf("[");
  else
    printf("# xccl-sim: %d hosts x %d GPUs = %d ranks, %s%s (float); NVLink %.0f Gb/s %.2f us, %d NIC(s) per host of %.0f Gb/s "
           "%.2f us; %d channels; slots %zuK ring, %zuK others, %d per connection\n"
           "# %12s  %-6s %14s %12s  %-22s %12s %9s %14s\n",
           c->hosts, c->gpus, k, tuning_coll_name(o.coll), root_text, c->nvl_bps * 8 / 1e9, c->nvl_lat * 1e6, c->nics,
           c->nic_bps * 8 / 1e9, c->nic_lat * 1e6, c->nchannels, o.ring_slot >> 10, o.peer_slot >> 10, c->window, "bytes", "algo",
           "time_us", "busbw_GB/s", "method", "msgs", "sim_ms", "net_B/rank");
  if (!o.json && c->cores > 0 && c->gpus > c->cores)
    printf("# %.3g cores per host for %d ranks: links priced as ranks taking turns (--cores)\n", c->cores, c->gpus);
  for (int i = 0; i < NSCHED && !o.json; i++)
    if (o.want[i] == 2 && !replays(&o, i))
      printf("# %s does not serve %s: no rows for it\n", scheds[i]->name, tuning_coll_name(o.coll));
  int rows = 0, rc = 0;
  for (size_t bytes = o.minb;;) {
    /* The tuner is given the schedule's count in bytes, as coll_pick
     * (enqueue.c) is: one rank's share for all-gather and reduce-scatter. */
    sim_t probe;
    sim_for(&probe, &o, bytes, 0);
    size_t pick_bytes = probe.count * probe.esize;
    algo_t pick = tuning_pick(forced, o.coll, pick_bytes, k, o.ring_slot, site);
    for (int i = 0; i < NSCHED; i++) {
      algo_t a = algo_by_name(scheds[i]->name);
      if (!replays(&o, i)) continue;
      if (k < 2 && i > 0) continue; /* one rank: the ring (a copy) */
      row_t row;
      double t0 = now_s();
      if (run_row(&o, scheds[i], bytes, &row) != 0) {
        rc = 1;
        continue;
      }
      double ms = (now_s() - t0) * 1e3, t = row.time_s > 0 ? row.time_s : 1e-12;
      double busbw = (double)bytes / t * bus_factor(o.coll, k) / 1e9;
      int chosen = a == pick;
      /* What the tuner prices it at, and xcclGroupSimulateEnd would
       * estimate, at this site (null where it cannot run: hier on one host
       * or one rank per host). */
      double model = cost_estimate_s(a, o.coll, pick_bytes, k, o.ring_slot, site);
      if (o.json)
        sim_json_row(json_pack("{s:s, s:I, s:f, s:f, s:b, s:s, s:I, s:f, s:I, s:o}", "algo", scheds[i]->name, "bytes",
                               (json_int_t)bytes, "time_us", row.time_s * 1e6, "busbw", busbw, "chosen", chosen,
                               "method", row.method, "msgs", (json_int_t)llround(row.msgs), "sim_ms",
                               round(ms * 10) / 10, "net_bytes", (json_int_t)llround(row.net_bytes), "model_us",
                               isfinite(model) ? json_real(model * 1e6) : json_null()),
                     rows == 0);
      else
        printf("  %12zu  %-5s%c %14.2f %12.2f  %-22s %12.0f %9.1f %14.0f\n", bytes, scheds[i]->name,
               chosen ? '*' : ' ', row.time_s * 1e6, busbw, row.method, row.msgs, ms, row.net_bytes);
      rows++;
      fflush(stdout);
    }
    int simulated = 0;
    for (int i = 0; i < NSCHED; i++) simulated |= replays(&o, i) && strcmp(scheds[i]->name, algo_name(pick)) == 0;
    if (!o.json && !simulated) printf("#   the tuner picks %s, which has no row here\n", algo_name(pick));
    if (bytes >= o.maxb) break;
    size_t next = (size_t)((double)bytes * o.factor);
    bytes = next > bytes ? (next < o.maxb ? next : o.maxb) : bytes + 1;
  }
  if (o.json) printf("\n]\n");
  sim_site_free(&o.site);
  return rc;
}
