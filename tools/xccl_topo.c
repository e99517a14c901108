/*
 * xccl-topo — what xccl sees of a machine, for operators.
 *
 *   xccl-topo                        what the library would use: the file
 *                                    XCCL_TOPO_FILE (or NCCL_TOPO_FILE) names,
 *                                    else this machine (hwloc, NVML, sysfs)
 *   xccl-topo --file X.xml           any machine: hwloc XML export or NCCL XML
 *   --format text|matrix|xml|json|dot|nccl-graph   (default text; nccl-graph:
 *                                    the rings as NCCL's graph XML, NCCL_GRAPH_FILE's input)
 *   --channels [--gpus 0,2,...]      add the rings chosen over all (or these) GPUs, as the
 *                                    library chooses them (XCCL_GRAPH_FILE, XCCL_MIN/MAX_NCHANNELS)
 *   --max-channels N                 at most N channels (default XCCL_MAX_NCHANNELS, 16)
 *   --png out.png                    also draw the graph with Graphviz's dot
 *   --job HOSTSxGPUS                 the rings a job of HOSTS hosts like this one, GPUS ranks each,
 *                                    would run (the planner init uses, topo_plan.c): rank
 *                                    h*GPUS+i on GPU i of host h; text, json (the topology's
 *                                    JSON with the key "job") or nccl-graph (host 0's GPU rings);
 *                                    text and json say how many channels each NIC carries
 *   -o FILE                          write to FILE instead of stdout
 *
 * Text and matrix outputs end with the network interfaces left out as
 * virtual ("Excluded interfaces: N (...)", then "  NAME: REASON" lines).
 *
 * --job on a machine without GPUs plans host-buffer ranks: GPUS ranks per
 * host spread over the NUMA domains in order, in blocks (ranks 0..k-1 on the
 * first domain, the next k on the second...), as a launcher binding ranks by
 * domain places them. XCCL_NCHANNELS, when set, forces the channel count as
 * it does at init; XCCL_GRAPH_FILE and XCCL_MIN/MAX_NCHANNELS apply.
 *
 * Exit: 0 success, 1 the machine or file could not be read (the reason on
 * stderr), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "config.h"
#include "error.h"
#include "topo.h"
#include "topo_graph.h" /* --job: the GPUs' and the machine's NUMA domains */

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-topo [--file X.xml] [--format text|matrix|xml|json|dot|nccl-graph] [--channels]\n"
          "                 [--gpus 0,2,...] [--max-channels N] [--png OUT.png] [-o FILE]\n"
          "       xccl-topo [--file X.xml] --job HOSTSxGPUS [--format text|json|nccl-graph] [-o FILE]\n"
          "Shows the node graph xccl builds (from the hwloc / NCCL XML file --file or else\n"
          "XCCL_TOPO_FILE / NCCL_TOPO_FILE names, else this machine; text output says which),\n"
          "the path between every GPU pair and GPU-NIC pair, and with --channels the rings.\n"
          "--job 2x8: the rings a job of 2 hosts like this one, 8 ranks each (GPUs 0..7),\n"
          "would run: per channel the ranks in ring order and the NIC it enters and leaves\n"
          "every host by, and how many channels each NIC of a host carries. Without GPUs,\n"
          "host-buffer ranks over the NUMA domains in order.\n");
}

static int parse_gpus(const char *s, int *gpus, int *n_p) {
  int n = 0;
  char *copy = strdup(s), *save = NULL;
  if (!copy) return -1;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *end;
    long v = strtol(tok, &end, 10);
    if (end == tok || *end || v < 0 || v > 100000 || n >= TOPO_SEARCH_MAX_GPUS) {
      free(copy);
      return -1;
    }
    gpus[n++] = (int)v;
  }
  free(copy);
  *n_p = n;
  return n > 0 ? 0 : -1;
}

/* The interfaces left out as virtual, after the text and matrix outputs:
 * "Excluded interfaces: N (...)" then "  NAME: REASON" per line. */
static void print_excluded(const topo_system_t *sys, FILE *out) {
  int n = topo_nexcluded(sys);
  if (n == 0) return;
  fprintf(out, "\nExcluded interfaces: %d (virtual: never chosen automatically, XCCL_SOCKET_IFNAME can name one)\n", n);
  for (int i = 0; i < n && topo_excluded_name(sys, i)[0]; i++)
    fprintf(out, "  %s: %s\n", topo_excluded_name(sys, i), topo_excluded_why(sys, i));
  for (int i = 0; i < n; i++)
    if (!topo_excluded_name(sys, i)[0]) {
      fprintf(out, "  ... and %d more\n", n - i);
      break;
    }
}

/* Renders dot and runs Graphviz; 0 on success. */
static int draw_png(const topo_system_t *sys, const topo_channels_t *chs, const char *png) {
  if (system("command -v dot >/dev/null 2>&1") != 0) {
    fprintf(stderr, "xccl-topo: --png needs Graphviz's dot (Debian: apt-get install graphviz)\n");
    return -1;
  }
  char *text;
  if (topo_render(sys, chs, TOPO_FMT_DOT, &text) != xcclSuccess) return -1;
  char tmpl[] = "/tmp/xccl-topo-XXXXXX";
  int fd = mkstemp(tmpl);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) {
    free(text);
    perror("xccl-topo: temporary file");
    return -1;
  }
  fputs(text, f);
  fclose(f);
  free(text);
  pid_t pid = fork();
  if (pid == 0) {
    execlp("dot", "dot", "-Tpng", "-o", png, tmpl, (char *)NULL);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) < 0) st = -1;
  unlink(tmpl);
  if (st != 0) {
    fprintf(stderr, "xccl-topo: dot failed to write %s\n", png);
    return -1;
  }
  return 0;
}

/* "2x8" -> 2, 8; -1 when it is not HOSTSxRANKS of positive numbers. */
static int parse_job(const char *s, int *hosts_p, int *ranks_p) {
  char *end;
  long h = strtol(s, &end, 10);
  if (end == s || (*end != 'x' && *end != 'X') || h < 1 || h > 65536) return -1;
  const char *r0 = end + 1;
  long r = strtol(r0, &end, 10);
  if (end == r0 || *end || r < 1 || r > TOPO_PLAN_MAX_LOCAL) return -1;
  *hosts_p = (int)h;
  *ranks_p = (int)r;
  return 0;
}

/* --job: plans nhosts hosts like sys with nlocal ranks each and writes the
 * rings; the exit status (1: the plan or the output failed, 2: usage). */
static int run_job(const topo_system_t *sys, const char *spec, int nhosts, int nlocal, topo_format_t fmt, FILE *out) {
  int ng = topo_ngpus(sys);
  if (ng > 0 && nlocal > ng) {
    fprintf(stderr, "xccl-topo: --job %s: this machine has %d GPU%s, so at most %d ranks per host\n", spec, ng,
            ng == 1 ? "" : "s", ng);
    return 2;
  }
  if (ng == 0 && fmt == TOPO_FMT_NCCL_GRAPH) {
    fprintf(stderr,
            "xccl-topo: --job %s: the NCCL graph format lists GPUs, and this machine has none (its ranks use host "
            "buffers): use --format text or json\n",
            spec);
    return 2;
  }
  int *gpu = malloc((size_t)nlocal * sizeof(int)), *numa = malloc((size_t)nlocal * sizeof(int));
  int ids[TOPO_MAX_DEVICES], nd = 0;
  for (int i = 0; i < sys->nnodes && nd < TOPO_MAX_DEVICES; i++)
    if (sys->nodes[i].type == TOPO_CPU) ids[nd++] = sys->nodes[i].numa;
  if (!gpu || !numa) {
    free(gpu);
    free(numa);
    fprintf(stderr, "xccl-topo: out of memory\n");
    return 1;
  }
  for (int i = 0; i < nlocal; i++) {
    gpu[i] = ng > 0 ? i : -1;
    numa[i] = ng > 0 ? sys->nodes[sys->gpus[i]].numa : nd > 0 ? ids[(long)i * nd / nlocal] : -1;
  }
  topo_host_job_t job = {.nlocal = nlocal, .numa = numa, .gpu = ng > 0 ? gpu : NULL};
  if (config_is_set(CFG_NCHANNELS)) job.nchannels = topo_comm_nchannels(); /* as init does */
  topo_plan_t plan;
  topo_host_plan_t host;
  char *text = NULL;
  int rc = 0;
  if (topo_plan_job(sys, nhosts, &job, &plan, &host) != xcclSuccess) {
    fprintf(stderr, "xccl-topo: --job %s: %s\n", spec, err_last());
    rc = 1;
  } else {
    if (topo_plan_render(sys, &plan, &host, fmt, &text) != xcclSuccess) {
      fprintf(stderr, "xccl-topo: --job %s: %s\n", spec, err_last());
      rc = 1;
    } else if (fputs(text, out) < 0 || fflush(out) != 0) {
      perror("xccl-topo: writing the job's rings");
      rc = 1;
    }
    topo_plan_free(&plan);
    topo_host_plan_free(&host);
  }
  free(text);
  free(gpu);
  free(numa);
  return rc;
}

int main(int argc, char **argv) {
  const char *file = NULL, *out_path = NULL, *png = NULL, *gpu_list = NULL, *job_spec = NULL;
  int job_hosts = 0, job_ranks = 0;
  topo_format_t fmt = TOPO_FMT_TEXT;
  int want_channels = 0, max_ch = 0; /* 0: XCCL_MAX_NCHANNELS */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--channels")) {
      want_channels = 1;
    } else if (v && (!strcmp(a, "--file") || !strcmp(a, "-f"))) {
      file = v, i++;
    } else if (v && !strcmp(a, "--format")) {
      if (topo_format_parse(v, &fmt) != 0) {
        fprintf(stderr, "xccl-topo: unknown format '%s' (text, matrix, xml, json, dot, nccl-graph)\n", v);
        return 2;
      }
      i++;
    } else if (v && !strcmp(a, "--gpus")) {
      gpu_list = v, want_channels = 1, i++;
    } else if (v && !strcmp(a, "--max-channels")) {
      max_ch = atoi(v), i++;
      if (max_ch < 1 || max_ch > TOPO_MAX_CHANNELS) {
        fprintf(stderr, "xccl-topo: --max-channels must be 1..%d\n", TOPO_MAX_CHANNELS);
        return 2;
      }
    } else if (v && !strcmp(a, "--job")) {
      job_spec = v, i++;
      if (parse_job(v, &job_hosts, &job_ranks) != 0) {
        fprintf(stderr,
                "xccl-topo: --job wants HOSTSxGPUS, two positive numbers like 2x8 (at most 65536 hosts and %d "
                "ranks per host), not '%s'\n",
                TOPO_PLAN_MAX_LOCAL, v);
        return 2;
      }
    } else if (v && !strcmp(a, "--png")) {
      png = v, i++;
    } else if (v && !strcmp(a, "-o")) {
      out_path = v, i++;
    } else {
      fprintf(stderr, "xccl-topo: unknown or incomplete argument '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (job_spec && (want_channels || max_ch || png)) {
    fprintf(stderr,
            "xccl-topo: --job plans GPUs 0..N-1 as init does: --channels, --gpus, --max-channels and --png "
            "do not apply (XCCL_MAX_NCHANNELS and XCCL_NCHANNELS do)\n");
    return 2;
  }
  if (job_spec && fmt != TOPO_FMT_TEXT && fmt != TOPO_FMT_JSON && fmt != TOPO_FMT_NCCL_GRAPH) {
    fprintf(stderr, "xccl-topo: --job writes text, json or nccl-graph only\n");
    return 2;
  }
  /* Where the topology comes from, as the library would choose it. */
  char origin[1100];
  const char *env_file = config_str(CFG_TOPO_FILE);
  if (file) {
    snprintf(origin, sizeof(origin), "from --file %s", file);
  } else if (env_file[0]) {
    file = env_file;
    snprintf(origin, sizeof(origin), "from %s=%s", config_source(CFG_TOPO_FILE), file);
  } else {
    snprintf(origin, sizeof(origin), "live (hwloc)");
  }
  topo_system_t *sys = NULL;
  xcclResult_t res = file ? topo_system_load_file(file, &sys) : topo_system_load_live(&sys);
  if (res != xcclSuccess) {
    fprintf(stderr, "xccl-topo: %s: %s\n", origin, err_last());
    return 1;
  }
  topo_channels_t *chs = NULL;
  int rc = 0;
  if (job_spec) {
    FILE *out = out_path ? fopen(out_path, "w") : stdout;
    if (!out) {
      perror(out_path);
      rc = 1;
    } else {
      if (fmt == TOPO_FMT_TEXT) fprintf(out, "Source: %s\n", origin);
      rc = run_job(sys, job_spec, job_hosts, job_ranks, fmt, out);
      if (out != stdout && fclose(out) != 0) rc = rc ? rc : 1;
    }
    topo_system_free(sys);
    return rc;
  }
  if (want_channels || fmt == TOPO_FMT_JSON || fmt == TOPO_FMT_NCCL_GRAPH) {
    int gpus[TOPO_SEARCH_MAX_GPUS], ng = 0;
    if (gpu_list && parse_gpus(gpu_list, gpus, &ng) != 0) {
      fprintf(stderr, "xccl-topo: --gpus wants GPU indices like 0,2,3 (at most %d)\n", TOPO_SEARCH_MAX_GPUS);
      topo_system_free(sys);
      return 2;
    }
    chs = malloc(sizeof(*chs));
    if (!chs || topo_channels_choose(sys, gpu_list ? gpus : NULL, ng, max_ch, chs) != xcclSuccess) {
      fprintf(stderr, "xccl-topo: %s\n", chs ? err_last() : "out of memory");
      free(chs);
      topo_system_free(sys);
      return 1;
    }
  }
  FILE *out = stdout;
  if (out_path && !(out = fopen(out_path, "w"))) {
    perror(out_path);
    rc = 1;
  }
  if (out) {
    if (fmt == TOPO_FMT_TEXT) fprintf(out, "Source: %s\n", origin);
    if (topo_write(sys, chs, fmt, out) != xcclSuccess) {
      fprintf(stderr, "xccl-topo: %s\n", err_last());
      rc = 1;
    }
    if (fmt == TOPO_FMT_MATRIX && chs) {
      char line[4096];
      fprintf(out, "\nChannels: %s\n", topo_channels_describe(sys, chs, line, sizeof(line)));
    }
    if (fmt == TOPO_FMT_TEXT || fmt == TOPO_FMT_MATRIX) print_excluded(sys, out);
    if (out != stdout) fclose(out);
  }
  if (png && draw_png(sys, chs, png) != 0) rc = 1;
  free(chs);
  topo_system_free(sys);
  return rc;
}
