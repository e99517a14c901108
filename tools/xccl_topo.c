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
 *   -o FILE                          write to FILE instead of stdout
 *
 * Text and matrix outputs end with the network interfaces left out as
 * virtual ("Excluded interfaces: N (...)", then "  NAME: REASON" lines).
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

static void usage(FILE *f) {
  fprintf(f,
          "usage: xccl-topo [--file X.xml] [--format text|matrix|xml|json|dot|nccl-graph] [--channels]\n"
          "                 [--gpus 0,2,...] [--max-channels N] [--png OUT.png] [-o FILE]\n"
          "Shows the node graph xccl builds (from the hwloc / NCCL XML file --file or else\n"
          "XCCL_TOPO_FILE / NCCL_TOPO_FILE names, else this machine; text output says which),\n"
          "the path between every GPU pair and GPU-NIC pair, and with --channels the rings.\n");
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

int main(int argc, char **argv) {
  const char *file = NULL, *out_path = NULL, *png = NULL, *gpu_list = NULL;
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
