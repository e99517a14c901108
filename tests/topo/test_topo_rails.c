/*
 * test_topo_rails.c DATA_DIR — channels over every NIC (issue 45), on the
 * saved machines of tests/data/topologies, each planned as a job of two
 * hosts like it over all its GPUs (xccl-topo --job 2xN) and over the first
 * half of them:
 * - rails: channel c enters and leaves both hosts by one NIC, the same
 *   index on both (NIC i to NIC i);
 * - where the job's GPUs each have a NIC beside them (PHB or nearer; of the
 *   NICs a channel may use: the RDMA ones when there are any), their own
 *   (some GPUs nearer some of those NICs than others), and there are two or
 *   more such NICs, every one of them carries a channel (they are at
 *   most XCCL_MAX_NCHANNELS on the saved machines), and each channel enters
 *   its host at a GPU nearest its NIC and leaves it at a GPU as near as the
 *   others left allow;
 * - XCCL_MAX_NCHANNELS below the NIC count is kept;
 * - host-buffer ranks on the NICs' domains: every NIC there carries a
 *   channel, unless XCCL_NCHANNELS says how many;
 * - hosts planned apart (one sees two NICs, the other four) still join, and
 *   the hops that change NIC are said at INFO as cross-NIC.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "test_util.h"
#include "topo.h"
#include "topo_fixtures.h"
#include "topo_graph.h"
#include "topo_paths.h"

static void env_clear(void) {
  const char *vars[] = {"XCCL_GRAPH_FILE", "XCCL_MIN_NCHANNELS", "XCCL_MAX_NCHANNELS", "XCCL_NCHANNELS",
                        "NCCL_GRAPH_FILE", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_NCHANNELS"};
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) unsetenv(vars[i]);
  config_reset_for_test();
}

/* The NICs beside GPUs 0..ng-1, counted here as the issue states it: of
 * the NICs a channel may use, those of the best path kind any of the GPUs
 * has to one, that kind PHB or nearer, every GPU at PHB or nearer to one of
 * them, and some GPUs nearer one of them than others (path kind, bandwidth
 * or hops: the NICs are the GPUs' own, not all shared alike; 2 GPUs and 4
 * NICs on one switch, or one GPU, are not a rail-optimised node). Returns
 * how many (list[]), 0 when the GPUs do not each have one of their own. */
static int near_nics(const topo_system_t *sys, int ng, int *list) {
  topo_path_type_t kind[TOPO_MAX_DEVICES], best = TOPO_PATH_NONE;
  int n = 0;
  for (int x = 0; x < topo_nnics(sys) && x < TOPO_MAX_DEVICES; x++) {
    kind[x] = TOPO_PATH_NONE;
    for (int g = 0; g < ng && topo_nic_usable(sys, x); g++) {
      topo_path_type_t t = topo_gpu_nic_path(sys, g, x, NULL);
      if (t < kind[x]) kind[x] = t;
    }
    if (kind[x] < best) best = kind[x];
  }
  if (best > TOPO_PATH_PHB) return 0;
  for (int x = 0; x < topo_nnics(sys) && x < TOPO_MAX_DEVICES; x++)
    if (kind[x] == best) list[n++] = x;
  int own = 0;
  for (int g = 0; g < ng; g++) {
    int has = 0;
    for (int i = 0; i < n; i++) {
      const topo_path_t *p = topo_path_gn(sys, g, list[i]), *q = topo_path_gn(sys, 0, list[i]);
      has |= p->type <= TOPO_PATH_PHB;
      own |= p->type != q->type || p->bw != q->bw || p->hops != q->hops;
    }
    if (!has) return 0;
  }
  return own ? n : 0;
}

/* The best path kind from any of GPUs 0..ng-1 but skip (-1: none) to NIC x. */
static topo_path_type_t nearest_kind(const topo_system_t *sys, int ng, int x, int skip) {
  topo_path_type_t best = TOPO_PATH_NONE;
  for (int g = 0; g < ng; g++) {
    topo_path_type_t t = topo_gpu_nic_path(sys, g, x, NULL);
    if (g != skip && t < best) best = t;
  }
  return best;
}

/* Two hosts like sys over GPUs 0..ng-1: rails always; every near NIC
 * carrying a channel, entered beside it, where the GPUs have near NICs.
 * Returns 1 when the near-NIC rule applied. */
static int two_hosts(const char *file, const topo_system_t *sys, int ng) {
  int gpus[TOPO_SEARCH_MAX_GPUS];
  for (int i = 0; i < ng; i++) gpus[i] = i;
  topo_host_job_t job = {.nlocal = ng, .gpu = gpus};
  topo_plan_t p;
  topo_host_plan_t hp;
  if (topo_plan_job(sys, 2, &job, &p, &hp) != xcclSuccess) {
    CHECK(0, "%s 2x%d: %s", file, ng, err_last());
    return 0;
  }
  for (int c = 0; c < p.nchannels; c++) {
    int a = p.nic_in[c * 2], b = p.nic_in[c * 2 + 1];
    CHECK(a == p.nic_out[c * 2] && b == p.nic_out[c * 2 + 1],
          "%s 2x%d channel %d: enters by NIC %d/%d, leaves by %d/%d", file, ng, c, a, b, p.nic_out[c * 2],
          p.nic_out[c * 2 + 1]);
    CHECK(a == b, "%s 2x%d channel %d: NIC %d on host 0, %d on host 1: not one rail", file, ng, c, a, b);
  }
  int near[TOPO_MAX_DEVICES], nn = near_nics(sys, ng, near);
  if (nn >= 2) {
    CHECK(nn <= TOPO_DEFAULT_MAX_CHANNELS, "%s: %d NICs beside the GPUs, more than the channels allowed", file, nn);
    for (int i = 0; i < nn; i++) {
      int k = 0;
      for (int c = 0; c < p.nchannels; c++) k += p.nic_in[c * 2] == near[i];
      CHECK(k >= 1, "%s 2x%d: NIC %s carries no channel (%d channels: %s)", file, ng, topo_nic_name(sys, near[i]),
            p.nchannels, hp.desc);
    }
    for (int c = 0; c < hp.nchannels && hp.with_gpus; c++) {
      int x = hp.nic_in[c], first = hp.order[c * ng], last = hp.order[c * ng + ng - 1];
      if (x < 0) continue;
      topo_path_type_t tin = topo_gpu_nic_path(sys, first, x, NULL), tout = topo_gpu_nic_path(sys, last, x, NULL);
      CHECK(tin == nearest_kind(sys, ng, x, -1), "%s 2x%d channel %d: enters at GPU %d (%s to NIC %s), not the nearest",
            file, ng, c, first, topo_path_name(tin), topo_nic_name(sys, x));
      CHECK(ng < 2 || tout == nearest_kind(sys, ng, x, first),
            "%s 2x%d channel %d: leaves at GPU %d (%s to NIC %s), a nearer one was left", file, ng, c, last,
            topo_path_name(tout), topo_nic_name(sys, x));
    }
  }
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  return nn >= 2;
}

static void every_machine(const char *dir) {
  fixture_t *fx = NULL;
  int nf = fixtures_read(dir, &fx), spread = 0;
  CHECK(nf >= 40, "counts.tsv lists %d machines", nf);
  for (int f = 0; f < nf; f++) {
    if (fx[f].gpus < 1 || fx[f].nics < 1) continue;
    topo_system_t *sys = fixture_load(dir, fx[f].file);
    int ng = topo_ngpus(sys) < TOPO_SEARCH_MAX_GPUS ? topo_ngpus(sys) : TOPO_SEARCH_MAX_GPUS;
    spread += two_hosts(fx[f].file, sys, ng);
    if (ng >= 4) spread += two_hosts(fx[f].file, sys, ng / 2);
    topo_system_free(sys);
  }
  /* jureca (both exports), tioga, the Azure, OCI, IBM, Alibaba and AWS 8-GPU machines... */
  CHECK(spread >= 12, "only %d jobs with NICs beside their GPUs", spread);
  free(fx);
}

/* Channels of a 2-host plan entering both hosts by NIC x (x < 4), into used[x]. */
static void rails_used(const topo_plan_t *p, int *used) {
  for (int c = 0; c < p->nchannels; c++) {
    int x = p->nic_in[c * 2];
    if (x >= 0 && x < 4 && x == p->nic_in[c * 2 + 1]) used[x]++;
  }
}

/* The machine of the issue: 4 A100, each beside its own HDR NIC, two AMD
 * sockets. 2x4 runs over mlx5_0..3, each at least once, within the cap. */
static void jureca(const char *dir) {
  topo_system_t *sys = fixture_load(dir, "hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml");
  int gpus[4] = {0, 1, 2, 3}, used[4] = {0};
  topo_host_job_t job = {.nlocal = 4, .gpu = gpus};
  topo_plan_t p;
  topo_host_plan_t hp;
  CHECK(topo_plan_job(sys, 2, &job, &p, &hp) == xcclSuccess, "jureca 2x4: %s", err_last());
  rails_used(&p, used);
  CHECK(used[0] && used[1] && used[2] && used[3], "jureca 2x4: channels per NIC %d %d %d %d (%s)", used[0], used[1],
        used[2], used[3], hp.desc);
  CHECK(p.nchannels % 4 == 0 && used[0] == used[3], "jureca 2x4: %d channels, not the same on every NIC",
        p.nchannels);
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  setenv("XCCL_MAX_NCHANNELS", "2", 1);
  config_reset_for_test();
  CHECK(topo_plan_job(sys, 2, &job, &p, &hp) == xcclSuccess && p.nchannels == 2,
        "jureca 2x4 with XCCL_MAX_NCHANNELS=2: %d channels", p.nchannels);
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  env_clear();
  topo_system_free(sys);
}

/* Host-buffer ranks, one on each HDR NIC's domain of jureca (3, 1, 7, 5):
 * four channels, one per NIC, unless XCCL_NCHANNELS (job nchannels) says. */
static void host_buffers(const char *dir) {
  topo_system_t *sys = fixture_load(dir, "hwloc/psmgmt-jureca-dc-gpu-4xA100-4xHDR-hwloc22.xml");
  int numa[4], used[4] = {0};
  for (int i = 0; i < 4; i++) numa[i] = topo_nic_numa(sys, i);
  topo_host_job_t job = {.nlocal = 4, .numa = numa};
  topo_plan_t p;
  topo_host_plan_t hp;
  CHECK(topo_plan_job(sys, 2, &job, &p, &hp) == xcclSuccess, "host buffers: %s", err_last());
  rails_used(&p, used);
  CHECK(!hp.with_gpus && used[0] && used[1] && used[2] && used[3], "host buffers: channels per NIC %d %d %d %d (%s)",
        used[0], used[1], used[2], used[3], hp.desc);
  CHECK(strstr(hp.desc, "raised to 4") != NULL, "host buffers: the raise is not said: %s", hp.desc);
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  job.nchannels = 2;
  CHECK(topo_plan_job(sys, 2, &job, &p, &hp) == xcclSuccess && p.nchannels == 2,
        "host buffers with XCCL_NCHANNELS=2: %d channels", p.nchannels);
  CHECK(strstr(hp.desc, "carry no channel") != NULL, "host buffers, 2 channels: idle NICs not said: %s", hp.desc);
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  /* one host: no NIC, the count as set */
  job.nchannels = 0;
  CHECK(topo_plan_job(sys, 1, &job, &p, &hp) == xcclSuccess && p.nchannels == topo_comm_nchannels(),
        "host buffers, one host: %d channels", p.nchannels);
  topo_plan_free(&p);
  topo_host_plan_free(&hp);
  topo_system_free(sys);
}

/* XCCL_DEBUG=INFO XCCL_DEBUG_SUBSYS=TOPO on (1) or off (0), read again. */
static void log_topo_info(int on) {
  if (on) {
    setenv("XCCL_DEBUG", "INFO", 1);
    setenv("XCCL_DEBUG_SUBSYS", "TOPO", 1);
  } else {
    unsetenv("XCCL_DEBUG");
    unsetenv("XCCL_DEBUG_SUBSYS");
  }
  xcclResetDebugInit();
}

typedef struct {
  const topo_rank_place_t *places;
  int nranks;
  topo_plan_t plan;
} join_t;

static xcclResult_t join_run(void *arg) {
  join_t *j = arg;
  return topo_plan_join(j->nranks, j->places, &j->plan);
}

/* Host 0 plans four channels on NICs 0..3, host 1 four on NICs 0, 1, 0, 1
 * (a host with two NICs): channels 2 and 3 change NIC between the hosts. */
static void cross_nic(void) {
  topo_rank_place_t places[2];
  memset(places, 0, sizeof(places));
  for (int h = 0; h < 2; h++) {
    places[h].host = h;
    places[h].nchannels = 4;
    for (int c = 0; c < TOPO_MAX_CHANNELS; c++) places[h].nic_in[c] = places[h].nic_out[c] = -1;
    for (int c = 0; c < 4; c++) places[h].nic_in[c] = places[h].nic_out[c] = (int16_t)(h == 0 ? c : c % 2);
  }
  join_t j = {.places = places, .nranks = 2};
  log_topo_info(1);
  xcclResult_t r;
  char *log = fixture_stderr_of(join_run, &j, &r);
  log_topo_info(0);
  CHECK(r == xcclSuccess && j.plan.nchannels == 4, "join of hosts planned apart: %s", err_last());
  CHECK(r != xcclSuccess || (j.plan.nic_out[2 * 2] == 2 && j.plan.nic_in[2 * 2 + 1] == 0),
        "channel 2: leaves host 0 by NIC %d, enters host 1 by NIC %d", j.plan.nic_out[4], j.plan.nic_in[5]);
  CHECK(log && strstr(log, "4 cross-NIC hops") &&
            strstr(log, "channel 2 leaves host 0 by NIC 2 and enters host 1 by NIC 0"),
        "the cross-NIC hops are not said at INFO:\n%s", log ? log : "(no log)");
  free(log);
  topo_plan_free(&j.plan);
  /* hosts alike: nothing said */
  for (int c = 0; c < 4; c++) places[1].nic_in[c] = places[1].nic_out[c] = (int16_t)c;
  log_topo_info(1);
  log = fixture_stderr_of(join_run, &j, &r);
  log_topo_info(0);
  CHECK(r == xcclSuccess && log && !strstr(log, "cross-NIC"), "hosts alike: %s", log ? log : "(no log)");
  free(log);
  topo_plan_free(&j.plan);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  env_clear();
  every_machine(argv[1]);
  jureca(argv[1]);
  host_buffers(argv[1]);
  cross_nic();
  return test_finish("topo_rails");
}
