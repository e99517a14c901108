/*
 * test_topo_plan.c DATA_DIR — the job planner (topo_plan.c, issue 24) on the
 * saved machines of tests/data/topologies:
 * - every machine with 2 GPUs or more, one host: the plan's rings are
 *   topo_channels_choose's (GPU order, channel count), no NIC;
 * - the same machines as 2 and 4 hosts: the rings are
 *   topo_channels_choose_rails's, no fewer than one host's; every ring visits every rank once
 *   and changes host exactly nhosts times around; channel c leaves host h and
 *   enters host h+1 by the same NIC index (a rail), the search's NIC of c,
 *   at the GPU the search starts and ends at; the channels spread over the
 *   NICs nearest the GPUs (min(channels, those NICs) of them);
 * - host buffers keep topo_local_ring_order's NUMA order (one host), and on
 *   several hosts each channel is that cycle cut so it enters and leaves on
 *   its NIC's domain, the NICs taken in turn;
 * - XCCL_NCHANNELS (job nchannels) forces the count, both ways;
 * - topo_plan_join refuses bad places with a sentence and leaves *out empty;
 *   it runs the least channel count of the hosts;
 * - topo_plan_describe_channel writes NCCL's INFO shape.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"
#include "topo_graph.h"

static void env_clear(void) {
  const char *keep[] = {"XCCL_GRAPH_FILE", "XCCL_MIN_NCHANNELS", "XCCL_MAX_NCHANNELS", "XCCL_NCHANNELS",
                        "NCCL_GRAPH_FILE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"};
  for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) unsetenv(keep[i]);
  config_reset_for_test();
}

/* The NICs the search takes in turn over all GPUs: usable, of the best path kind to any GPU. */
static int nearest_nics(const topo_system_t *sys) {
  topo_path_type_t best = TOPO_PATH_NONE, k[TOPO_MAX_DEVICES];
  int n = 0;
  for (int x = 0; x < topo_nnics(sys); x++) {
    k[x] = TOPO_PATH_NONE;
    for (int g = 0; g < topo_ngpus(sys) && topo_nic_usable(sys, x); g++) {
      topo_path_type_t t = topo_gpu_nic_path(sys, g, x, NULL);
      if (t < k[x]) k[x] = t;
    }
    if (k[x] < best) best = k[x];
  }
  for (int x = 0; x < topo_nnics(sys); x++) n += k[x] != TOPO_PATH_NONE && k[x] == best;
  return n;
}

/* Checks a joined plan's shape: permutations, nhosts host changes, rails. */
static void check_rings(const char *name, const topo_plan_t *p, const topo_host_plan_t *hp, int nhosts) {
  int n = p->nranks;
  CHECK(p->nhosts == nhosts && n == nhosts * hp->nlocal, "%s: %d hosts, %d ranks", name, p->nhosts, n);
  char *seen = malloc((size_t)n);
  for (int c = 0; c < p->nchannels; c++) {
    const int *ring = p->ring + (size_t)c * (size_t)n;
    memset(seen, 0, (size_t)n);
    int changes = 0, ok = 1;
    for (int i = 0; i < n; i++) {
      if (ring[i] < 0 || ring[i] >= n || seen[ring[i]]++) ok = 0;
      changes += nhosts > 1 && p->host_of[ring[i]] != p->host_of[ring[(i + 1) % n]];
    }
    CHECK(ok, "%s x%d channel %d: not a permutation of the ranks", name, nhosts, c);
    CHECK(changes == (nhosts > 1 ? nhosts : 0), "%s x%d channel %d: %d host changes", name, nhosts, c, changes);
    for (int h = 0; h < nhosts; h++) {
      int out = p->nic_out[c * nhosts + h], in = p->nic_in[c * nhosts + (h + 1) % nhosts];
      CHECK(out == in, "%s x%d channel %d: leaves host %d by NIC %d, enters the next by NIC %d", name, nhosts, c, h,
            out, in);
      CHECK(out == (nhosts > 1 ? hp->nic_out[c] : -1), "%s x%d channel %d: host %d NIC %d, the host plan's %d", name,
            nhosts, c, h, out, hp->nic_out[c]);
      /* host h's ranks, in place order, from local rank order[c][i] */
      for (int i = 0; i < hp->nlocal; i++) {
        int want = h * hp->nlocal + hp->order[(size_t)c * (size_t)hp->nlocal + (size_t)i];
        if (ring[h * hp->nlocal + i] != want) {
          CHECK(0, "%s x%d channel %d: host %d place %d holds rank %d, not %d", name, nhosts, c, h, i,
                ring[h * hp->nlocal + i], want);
          break;
        }
      }
    }
  }
  free(seen);
}

static void gpu_machines(const char *dir) {
  fixture_t *fx = NULL;
  int nf = fixtures_read(dir, &fx), tried = 0;
  CHECK(nf >= 40, "counts.tsv lists %d machines", nf);
  for (int f = 0; f < nf; f++) {
    if (fx[f].gpus < 2) continue;
    topo_system_t *sys = fixture_load(dir, fx[f].file);
    int ng = topo_ngpus(sys) < TOPO_SEARCH_MAX_GPUS ? topo_ngpus(sys) : TOPO_SEARCH_MAX_GPUS, gpus[64];
    for (int i = 0; i < ng; i++) gpus[i] = i;
    topo_channels_t one, rails;
    CHECK(topo_channels_choose(sys, gpus, ng, 0, &one) == xcclSuccess, "%s: %s", fx[f].file, err_last());
    CHECK(topo_channels_choose_rails(sys, gpus, ng, 0, &rails) == xcclSuccess, "%s: %s", fx[f].file, err_last());
    topo_host_job_t job = {.nlocal = ng, .gpu = gpus};
    for (int nh = 1; nh <= 4; nh *= 2) {
      const topo_channels_t chs = nh == 1 ? one : rails;
      topo_plan_t p;
      topo_host_plan_t hp;
      if (topo_plan_job(sys, nh, &job, &p, &hp) != xcclSuccess) {
        CHECK(0, "%s x%d: %s", fx[f].file, nh, err_last());
        continue;
      }
      tried++;
      CHECK(hp.with_gpus && hp.gpu_channels, "%s x%d: not the GPU rings (%s)", fx[f].file, nh, hp.desc);
      CHECK(p.nchannels == chs.nchannels && hp.nchannels == chs.nchannels, "%s x%d: %d channels, the search %d",
            fx[f].file, nh, p.nchannels, chs.nchannels);
      for (int c = 0; c < hp.nchannels && c < chs.nchannels; c++) {
        int same = 1;
        for (int i = 0; i < ng; i++) same &= hp.order[c * ng + i] == chs.ch[c].gpus[i];
        CHECK(same, "%s x%d channel %d: not the search's ring", fx[f].file, nh, c);
        if (nh > 1)
          CHECK(hp.nic_in[c] == chs.ch[c].nic && hp.nic_out[c] == chs.ch[c].nic,
                "%s x%d channel %d: NIC %d/%d, the search's %d", fx[f].file, nh, c, hp.nic_in[c], hp.nic_out[c],
                chs.ch[c].nic);
        else
          CHECK(hp.nic_in[c] == -1 && hp.nic_out[c] == -1, "%s: one host uses NIC %d", fx[f].file, hp.nic_in[c]);
      }
      check_rings(fx[f].file, &p, &hp, nh);
      if (nh > 1) {
        int want = nearest_nics(sys), distinct = 0;
        if (want > hp.nchannels) want = hp.nchannels;
        for (int c = 0; c < hp.nchannels; c++) {
          int first = 1;
          for (int d = 0; d < c; d++) first &= hp.nic_out[d] != hp.nic_out[c];
          distinct += first && hp.nic_out[c] >= 0;
        }
        CHECK(rails.nchannels >= one.nchannels, "%s: %d channels across hosts, %d on one", fx[f].file,
              rails.nchannels, one.nchannels);
        /* the search finds at most as many channels as it keeps distinct NICs for */
        int found = chs.nchannels;
        CHECK(distinct >= (want < found ? want : found), "%s x%d: %d channels over %d NICs, %d nearest", fx[f].file, nh,
              hp.nchannels, distinct, nearest_nics(sys));
      }
      topo_plan_free(&p);
      topo_host_plan_free(&hp);
    }
    /* forced counts, both ways */
    for (int want = 1; want <= 5; want += 4) {
      topo_host_job_t j = job;
      j.nchannels = want;
      topo_host_plan_t hp;
      CHECK(topo_plan_host(sys, &j, &hp) == xcclSuccess && hp.nchannels == want && hp.gpu_channels &&
                hp.gpu_channels->nchannels == want,
            "%s: XCCL_NCHANNELS=%d gives %d channels", fx[f].file, want, hp.nchannels);
      topo_host_plan_free(&hp);
    }
    topo_system_free(sys);
  }
  CHECK(tried >= 3 * 30, "only %d GPU plans made", tried);
  free(fx);
}

#define HOST_BUFFERS_MAX 64 /* domains of a fixture, and ranks of a host_buffers case */

/* NUMA domain ids of sys, in node order, at most max of them. */
static int domains(const topo_system_t *sys, int *ids, int max) {
  int n = 0;
  for (int i = 0; i < sys->nnodes && n < max; i++)
    if (sys->nodes[i].type == TOPO_CPU) ids[n++] = sys->nodes[i].numa;
  return n;
}

static void host_buffers(const char *dir, const char *file, int nlocal) {
  topo_system_t *sys = fixture_load(dir, file);
  int ids[HOST_BUFFERS_MAX] = {0}, numa[HOST_BUFFERS_MAX] = {0}, base[HOST_BUFFERS_MAX] = {0};
  int nd = domains(sys, ids, HOST_BUFFERS_MAX);
  CHECK(nlocal >= 1 && nlocal <= HOST_BUFFERS_MAX, "%s: %d ranks, the test holds 1..%d", file, nlocal,
        HOST_BUFFERS_MAX);
  CHECK(nd > 0, "%s: the fixture has no NUMA domain (no CPU node) to place ranks on", file);
  if (nd == 0 || nlocal < 1 || nlocal > HOST_BUFFERS_MAX) {
    topo_system_free(sys);
    return;
  }
  for (int i = 0; i < nlocal; i++) numa[i] = ids[(i * 7) % nd]; /* shuffled over the domains */
  if (topo_local_ring_order(sys, nlocal, numa, NULL, base, NULL, 0) != xcclSuccess) {
    CHECK(0, "%s: topo_local_ring_order: %s", file, err_last());
    topo_system_free(sys);
    return;
  }
  for (int nh = 1; nh <= 4; nh *= 2) {
    topo_host_job_t job = {.nlocal = nlocal, .numa = numa, .nchannels = 4};
    topo_plan_t p;
    topo_host_plan_t hp;
    if (topo_plan_job(sys, nh, &job, &p, &hp) != xcclSuccess) {
      CHECK(0, "%s x%d host buffers: %s", file, nh, err_last());
      continue;
    }
    CHECK(!hp.with_gpus && !hp.gpu_channels && hp.nchannels == 4, "%s x%d: %d channels, with GPUs %d", file, nh,
          hp.nchannels, hp.with_gpus);
    CHECK(strstr(hp.desc, "NUMA order") != NULL, "%s: desc '%s'", file, hp.desc);
    int distinct = 0;
    for (int c = 0; c < hp.nchannels; c++) {
      const int *o = hp.order + c * nlocal;
      int shift = 0;
      while (shift < nlocal && base[shift] != o[0]) shift++;
      int rot = shift < nlocal;
      for (int i = 0; rot && i < nlocal; i++) rot = o[i] == base[(shift + i) % nlocal];
      CHECK(rot, "%s x%d channel %d: not a rotation of the NUMA order", file, nh, c);
      if (nh == 1) CHECK(shift == 0 && hp.nic_in[c] == -1, "%s: one host, channel %d cut or with a NIC", file, c);
      int nic = hp.nic_out[c];
      if (nh > 1 && topo_nnics(sys) > 0) {
        CHECK(nic >= 0 && nic == hp.nic_in[c], "%s x%d channel %d: NIC %d/%d", file, nh, c, hp.nic_in[c], nic);
        int d = nic >= 0 ? topo_nic_numa(sys, nic) : -1, k = 0;
        for (int i = 0; i < nlocal; i++) k += numa[i] == d;
        if (k >= 2)
          CHECK(numa[o[0]] == d && numa[o[nlocal - 1]] == d,
                "%s x%d channel %d: NIC %s on domain %d, enters on %d, leaves on %d", file, nh, c,
                topo_nic_name(sys, nic), d, numa[o[0]], numa[o[nlocal - 1]]);
        int first = 1;
        for (int e = 0; e < c; e++) first &= hp.nic_out[e] != nic;
        distinct += first;
      }
    }
    if (nh > 1 && topo_nnics(sys) > 1) CHECK(distinct >= 2, "%s x%d: the channels share one NIC", file, nh);
    check_rings(file, &p, &hp, nh);
    topo_plan_free(&p);
    topo_host_plan_free(&hp);
  }
  topo_system_free(sys);
}

static void no_topology(void) {
  int numa[5] = {1, 0, 1, -1, 0}, want[5] = {1, 4, 0, 2, 3};
  topo_host_job_t job = {.nlocal = 5, .numa = numa, .nchannels = 2, .multi_host = 1};
  topo_host_plan_t hp;
  CHECK(topo_plan_host(NULL, &job, &hp) == xcclSuccess, "no topology: %s", err_last());
  CHECK(hp.nchannels == 2 && hp.nic_in[0] == -1 && hp.nic_out[1] == -1, "no topology: %d channels, NIC %d",
        hp.nchannels, hp.nic_in[0]);
  for (int i = 0; i < 5; i++)
    CHECK(hp.order[i] == want[i] && hp.order[5 + i] == want[i], "no topology: place %d holds %d", i, hp.order[i]);
  topo_host_plan_free(&hp);
  topo_host_plan_free(&hp); /* twice is fine */
  topo_host_plan_free(NULL);
  job.nlocal = 0;
  CHECK(topo_plan_host(NULL, &job, &hp) == xcclInvalidArgument && hp.order == NULL, "0 ranks accepted");
}

/* Refusals: each corrupts the places of a 2 x 3 job. */
static void join_refusals(void) {
  topo_host_job_t job = {.nlocal = 3, .nchannels = 2};
  topo_host_plan_t hp;
  CHECK(topo_plan_host(NULL, &job, &hp) == xcclSuccess, "%s", err_last());
  topo_rank_place_t good[6], pl[6];
  topo_plan_places(&hp, 0, good);
  topo_plan_places(&hp, 1, good + 3);
  topo_plan_t p;
  CHECK(topo_plan_join(6, good, &p) == xcclSuccess && p.nhosts == 2 && p.nchannels == 2, "good places: %s", err_last());
  char line[256];
  topo_plan_describe_channel(&p, 1, line, sizeof(line));
  CHECK(strcmp(line, "Channel 01/02 :  0 1 2 3 4 5") == 0, "describe: '%s'", line);
  topo_plan_describe_channel(&p, 0, line, 12);
  CHECK(strcmp(line, "Channel 00/") == 0, "describe truncated: '%s'", line);
  topo_plan_free(&p);
  const char *want[] = {
      "numbered 0..", "numbered 0..", "both at place", "that host has 3 ranks", "planned 2 and 1 channels",
      "other NICs"};
  for (int t = 0; t < 6; t++) {
    memcpy(pl, good, sizeof(pl));
    switch (t) {
      case 0:
        pl[0].host = 1;
        break; /* host 1 before host 0 */
      case 1:
        pl[3].host = pl[4].host = pl[5].host = 2;
        break; /* host 1 missing */
      case 2:
        pl[4].place[1] = pl[3].place[1];
        break; /* two ranks at one place */
      case 3:
        pl[2].place[0] = 3;
        break; /* past the host's size */
      case 4:
        pl[1].nchannels = 1;
        break; /* ranks of a host disagree */
      case 5:
        pl[5].nic_in[0] = 3;
        break;
    }
    memset(&p, 0x5a, sizeof(p));
    xcclResult_t r = topo_plan_join(6, pl, &p);
    CHECK(r == xcclInvalidArgument && strstr(err_last(), want[t]) && p.ring == NULL && p.nranks == 0,
          "refusal %d: %d '%s'", t, r, err_last());
  }
  /* the least count of the hosts */
  topo_host_job_t j4 = {.nlocal = 3, .nchannels = 4};
  topo_host_plan_t hp4;
  CHECK(topo_plan_host(NULL, &j4, &hp4) == xcclSuccess, "%s", err_last());
  topo_plan_places(&hp4, 1, pl + 3);
  memcpy(pl, good, 3 * sizeof(pl[0]));
  CHECK(topo_plan_join(6, pl, &p) == xcclSuccess && p.nchannels == 2, "2 and 4 channels join to %d", p.nchannels);
  topo_plan_free(&p);
  topo_plan_free(&p);
  topo_plan_free(NULL);
  topo_host_plan_free(&hp4);
  topo_host_plan_free(&hp);
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  env_clear();
  no_topology();
  join_refusals();
  gpu_machines(argv[1]);
  host_buffers(argv[1], "nccl/azure-ndv4-a100-8gpu-topo.xml", 16);                 /* 4 domains, 8 NICs */
  host_buffers(argv[1], "nccl/aws-g5.48xlarge-a10g-topo.xml", 6);                  /* 2 domains, no NIC */
  host_buffers(argv[1], "hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml", 8); /* 8 domains */
  return test_finish("topo_plan");
}
