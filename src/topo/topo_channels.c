/*
 * topo_channels.c — how many channels, and which: the bounds
 * XCCL_MIN_NCHANNELS / XCCL_MAX_NCHANNELS, the communicator's host ring
 * count, and the rings the library uses (XCCL_GRAPH_FILE, else the search),
 * as topo.h describes.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "topo_graph.h"

void topo_nchannels_limits(int *min_p, int *max_p) {
  int lo = (int)config_int(CFG_MIN_NCHANNELS), hi = (int)config_int(CFG_MAX_NCHANNELS);
  if (hi > TOPO_MAX_CHANNELS) hi = TOPO_MAX_CHANNELS;
  if (lo > hi) {
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
      WARN(TOPO, "XCCL_MIN_NCHANNELS=%d is above XCCL_MAX_NCHANNELS=%d (from %s): using %d", lo, hi,
           config_source(CFG_MAX_NCHANNELS), hi);
    lo = hi;
  }
  *min_p = lo;
  *max_p = hi;
}

int topo_comm_nchannels(void) {
  int n = (int)config_int(CFG_NCHANNELS), lo, hi;
  topo_nchannels_limits(&lo, &hi);
  int m = n;
  if (config_is_set(CFG_MIN_NCHANNELS) && m < lo) m = lo;
  if (config_is_set(CFG_MAX_NCHANNELS) && m > hi) m = hi;
  if (m != n)
    INFO(TOPO, "XCCL_NCHANNELS=%d (from %s) kept within XCCL_MIN_NCHANNELS=%d, XCCL_MAX_NCHANNELS=%d: %d", n,
         config_source(CFG_NCHANNELS), lo, hi, m);
  return m;
}

void topo_channels_clamp(topo_channels_t *chs, int min, int max) {
  if (max > TOPO_MAX_CHANNELS) max = TOPO_MAX_CHANNELS;
  if (min > max) min = max;
  if (max >= 1 && chs->nchannels > max) chs->nchannels = max;
  int n = chs->nchannels;
  if (n < 1 || n >= min) return;
  int copies[TOPO_MAX_CHANNELS];
  for (int c = 0; c < n; c++) copies[c] = min / n + (c < min % n);
  for (int c = 0; c < n; c++) chs->ch[c].bw /= copies[c];
  for (int c = n; c < min; c++) chs->ch[c] = chs->ch[c % n];
  chs->nchannels = min;
}

static xcclResult_t channels_choose(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels, int rails,
                                    topo_channels_t *out) {
  int lo, hi;
  topo_nchannels_limits(&lo, &hi);
  if (max_channels > 0) {
    hi = max_channels;
    if (lo > hi) lo = hi;
  }
  topo_channels_t *chs = malloc(sizeof(*chs));
  if (!chs) return err_set(xcclSystemError, LOG_TOPO, "out of memory for channels");
  const char *file = config_str(CFG_GRAPH_FILE);
  xcclResult_t res;
  if (file[0]) {
    res = topo_graph_file_read(sys, file, gpus, ngpus, chs);
    if (res != xcclSuccess) res = err_prefix(res, "%s", config_source(CFG_GRAPH_FILE));
  } else {
    res = topo_search_channels_for(sys, gpus, ngpus, hi, rails, chs);
  }
  if (res == xcclSuccess) {
    int found = chs->nchannels;
    topo_channels_clamp(chs, lo, hi);
    if (chs->nchannels != found)
      INFO(TOPO, "%d channel%s %s, %d kept (XCCL_MIN_NCHANNELS %d, XCCL_MAX_NCHANNELS %d)", found,
           found == 1 ? "" : "s", file[0] ? "in the graph file" : "found", chs->nchannels, lo, hi);
    if (file[0]) INFO(TOPO, "channels from %s=%s", config_source(CFG_GRAPH_FILE), file);
    *out = *chs;
  }
  free(chs);
  return res;
}

xcclResult_t topo_channels_choose(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                  topo_channels_t *out) {
  return channels_choose(sys, gpus, ngpus, max_channels, 0, out);
}

xcclResult_t topo_channels_choose_rails(const topo_system_t *sys, const int *gpus, int ngpus, int max_channels,
                                        topo_channels_t *out) {
  return channels_choose(sys, gpus, ngpus, max_channels, 1, out);
}
