/* perf_options.c — xccl-perf's command line (perf_options.h). */
#include "perf_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "perf_check.h"
#include "perf_plot.h"

void perf_usage(FILE *f, const char *collectives) {
  fprintf(f,
          "usage: xccl-run -n N xccl-perf COLLECTIVE [options]\n"
          "Measures the bandwidth of an xccl collective; rank 0 prints the results.\n"
          "Collectives:%s", collectives);
  fprintf(f,
          "\n\n"
          "  -b SIZE     smallest size in bytes (K, M, G suffixes: powers of 1024); default 8\n"
          "  -e SIZE     largest size in bytes; default 64M\n"
          "  -f FACTOR   multiply the size by this (an integer >= 2) each step; default 2\n"
          "  -n ITERS    timed iterations per size; default 20 (1000 with -L)\n"
          "  -w ITERS    warm-up iterations per size; default 5\n"
          "  -d TYPE     int8 uint8 int32 uint32 int64 uint64 float16|half bfloat16\n"
          "              float32|float float64|double fp8e4m3 fp8e5m2; default float32\n"
          "  -o OP       sum prod max min avg; default sum (allreduce, reducescatter, reduce)\n"
          "  -r ROOT     the root rank of broadcast, reduce, gather and scatter; default 0\n"
          "  -c 0|1      check results; default 1\n"
          "  -L, --latency  latency mode: 1000 timed iterations per size unless -n says\n"
          "              otherwise, for small sizes (e.g. -b 8 -e 64K)\n"
          "  --inplace   send and receive in the same buffer (default: out of place);\n"
          "              not for alltoall and sendrecv, which have no in-place form\n"
          "  --json      one JSON object per line instead of the table\n"
          "  --memalloc  host buffers from xcclMemAlloc, each registered as a window on\n"
          "              every rank (xcclCommWindowRegister): what zero-copy collectives read\n"
          "  --algo all|LIST  every algorithm that serves the collective (all), or those\n"
          "              named (ring,tree), side by side: each size runs once per algorithm\n"
          "              on a communicator of its own, a row each with its name, and the\n"
          "              one the tuner picks marked with * (host buffers only)\n"
          "  --plot FILE rank 0 draws bus bandwidth against size into the PNG FILE, a line\n"
          "              per algorithm with --algo (xccl-plot, which needs matplotlib)\n"
          "  --device    buffers in GPU memory (CUDA device XCCL_LOCAL_RANK modulo the\n"
          "              devices), calls on one stream, timed until it drains\n"
          "  -h, --help  show this help\n"
          "The size is the whole buffer of one call: the output of allgather and gather\n"
          "(the root's), the input of reducescatter and scatter (the root's), each rank's\n"
          "buffer for alltoall (size / nranks to each peer), for sendrecv what each rank\n"
          "sends to rank + 1 and receives from rank - 1, the one buffer of the others.\n"
          "Element counts are rounded down to a whole number of elements, and for\n"
          "allgather, reducescatter, gather, scatter and alltoall to a multiple of the\n"
          "number of ranks.\n");
}

static int parse_size(const char *opt, const char *text, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  unsigned shift = 0;
  if (end != text && *end) {
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
  }
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || (v << shift) >> shift != v) {
    fprintf(stderr, "xccl-perf: %s needs a size in bytes like 8, 1K, 64M or 1G, not '%s'\n", opt, text);
    return -1;
  }
  *out = (size_t)(v << shift);
  return 0;
}

static int parse_int(const char *opt, const char *text, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "xccl-perf: %s needs a whole number from %ld to %ld, not '%s'\n", opt, lo, hi, text);
    return -1;
  }
  *out = v;
  return 0;
}

int perf_parse_options(int argc, char **argv, const char *collectives, options_t *o) {
  enum { OPT_INPLACE = 1000, OPT_JSON, OPT_DEVICE, OPT_MEMALLOC, OPT_ALGO, OPT_PLOT };
  static const struct option longopts[] = {{"inplace", no_argument, NULL, OPT_INPLACE},
                                           {"device", no_argument, NULL, OPT_DEVICE},
                                           {"memalloc", no_argument, NULL, OPT_MEMALLOC},
                                           {"json", no_argument, NULL, OPT_JSON},
                                           {"algo", required_argument, NULL, OPT_ALGO},
                                           {"plot", required_argument, NULL, OPT_PLOT},
                                           {"latency", no_argument, NULL, 'L'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  *o = (options_t){.min_bytes = 8, .max_bytes = 64u << 20, .factor = 2, .iters = 0, .warmup = 5,
                   .type = xcclFloat32, .op = xcclSum, .check = 1};
  int c;
  long v;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":b:e:f:n:w:d:o:r:c:Lh", longopts, NULL)) != -1) {
    switch (c) {
    case 'b': if (parse_size("-b", optarg, &o->min_bytes)) return -1; break;
    case 'e': if (parse_size("-e", optarg, &o->max_bytes)) return -1; break;
    case 'f': if (parse_int("-f", optarg, 2, 1 << 20, &v)) return -1; o->factor = (size_t)v; break;
    case 'n': if (parse_int("-n", optarg, 1, 1 << 30, &v)) return -1; o->iters = (int)v; break;
    case 'w': if (parse_int("-w", optarg, 0, 1 << 30, &v)) return -1; o->warmup = (int)v; break;
    case 'r': if (parse_int("-r", optarg, 0, INT_MAX, &v)) return -1; o->root = (int)v; break;
    case 'c': if (parse_int("-c", optarg, 0, 1, &v)) return -1; o->check = (int)v; break;
    case 'L': o->latency = 1; break;
    case 'd': {
      size_t i = 0;
      while (i < perf_n_type_names && strcmp(perf_type_names[i].name, optarg) != 0) i++;
      if (i == perf_n_type_names) {
        fprintf(stderr, "xccl-perf: unknown type '%s'; known:", optarg);
        for (i = 0; i < perf_n_type_names; i++) fprintf(stderr, " %s", perf_type_names[i].name);
        fprintf(stderr, "\n");
        return -1;
      }
      o->type = perf_type_names[i].type;
      break;
    }
    case 'o': {
      int i = 0;
      while (i < xcclNumOps && strcmp(perf_op_names[i], optarg) != 0) i++;
      if (i == xcclNumOps) {
        fprintf(stderr, "xccl-perf: unknown op '%s'; known: sum prod max min avg\n", optarg);
        return -1;
      }
      o->op = (xcclRedOp_t)i;
      break;
    }
    case OPT_INPLACE: o->inplace = 1; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_DEVICE: o->device = 1; break;
    case OPT_MEMALLOC: o->memalloc = 1; break;
    case OPT_ALGO: o->algos = optarg; break;
    case OPT_PLOT: o->plot = optarg; break;
    case 'h': perf_usage(stdout, collectives); exit(0);
    case ':':
      fprintf(stderr, "xccl-perf: option '%s' needs a value; see xccl-perf --help\n", argv[optind - 1]);
      return -1;
    default:
      fprintf(stderr, "xccl-perf: unknown option '%s'; see xccl-perf --help\n", argv[optind - 1]);
      return -1;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "xccl-perf: unexpected argument '%s'; see xccl-perf --help\n", argv[optind]);
    return -1;
  }
  if (o->max_bytes < o->min_bytes) {
    fprintf(stderr, "xccl-perf: the largest size (-e %zu) is below the smallest (-b %zu)\n", o->max_bytes,
            o->min_bytes);
    return -1;
  }
  if (o->algos && o->device) {
    fprintf(stderr, "xccl-perf: --algo is for host buffers: device collectives run the ring\n");
    return -1;
  }
  if (o->algos && o->memalloc) {
    fprintf(stderr, "xccl-perf: --algo and --memalloc exclude each other (the windows belong to one communicator)\n");
    return -1;
  }
  if (o->memalloc && o->device) {
    fprintf(stderr, "xccl-perf: --memalloc and --device exclude each other\n");
    return -1;
  }
  if (o->plot && perf_plot_check(o->plot) != 0) return -1;
  if (o->iters == 0) o->iters = o->latency ? 1000 : 20; /* -n not given */
  return 0;
}
