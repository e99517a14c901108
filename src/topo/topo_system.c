/*
 * topo_system.c — choosing the source (XCCL_TOPO_FILE, else this machine),
 * reading files, and what callers ask of a finished system.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "error.h"
#include "log.h"
#include "topo_graph.h"
#include "topo_load.h"
#include "topo_paths.h"

/* The first element's name: skips the XML declaration, comments, DOCTYPE. */
static int root_is(const char *data, size_t len, const char *name) {
  size_t nl = strlen(name);
  for (size_t i = 0; i + 1 < len; i++) {
    if (data[i] != '<') continue;
    char c = data[i + 1];
    if (c == '?' || c == '!') continue;
    return i + 1 + nl <= len && memcmp(data + i + 1, name, nl) == 0 &&
           (i + 1 + nl == len || data[i + 1 + nl] == ' ' || data[i + 1 + nl] == '>' ||
            data[i + 1 + nl] == '\n' || data[i + 1 + nl] == '\t' || data[i + 1 + nl] == '\r' ||
            data[i + 1 + nl] == '/');
  }
  return 0;
}

static xcclResult_t load_buffer(const char *data, size_t len, const char *name, topo_system_t **sys_p) {
  if (!data || !sys_p) return err_set(xcclInvalidArgument, LOG_TOPO, "topo_system_load_buffer: NULL argument");
  if (!name) name = "(buffer)";
  if (len >= TOPO_MAX_FILE_BYTES)
    return err_set(xcclInvalidArgument, LOG_TOPO, "%s: %zu bytes, more than the %u a topology file may have", name, len,
                   TOPO_MAX_FILE_BYTES);
  if (root_is(data, len, "system")) return topo_load_nccl_xml(data, len, name, sys_p);
  if (root_is(data, len, "topology")) return topo_load_hwloc_xml(data, len, name, sys_p);
  return err_set(xcclInvalidArgument, LOG_TOPO,
                 "%s: neither an hwloc XML export (<topology>) nor NCCL topology XML (<system>)", name);
}

xcclResult_t topo_system_load_buffer(const char *data, size_t len, const char *name, topo_system_t **sys_p) {
  topo_system_t *sys = NULL;
  TRY(load_buffer(data, len, name, &sys));
  topo_graph_log_warnings(sys, 0);
  *sys_p = sys;
  return xcclSuccess;
}

/* Reads and loads a file; its warnings are left for the caller to log. */
static xcclResult_t read_file(const char *path, topo_system_t **sys_p) {
  FILE *f = fopen(path, "rb");
  if (!f) return err_set(xcclSystemError, LOG_TOPO, "cannot open topology file %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    return err_set(xcclInvalidArgument, LOG_TOPO, "topology file %s is not a regular file", path);
  }
  if ((unsigned long long)st.st_size >= TOPO_MAX_FILE_BYTES) {
    fclose(f);
    return err_set(xcclInvalidArgument, LOG_TOPO, "topology file %s: %lld bytes, more than %u", path,
                   (long long)st.st_size, TOPO_MAX_FILE_BYTES);
  }
  size_t len = (size_t)st.st_size;
  char *data = malloc(len + 1);
  if (!data) {
    fclose(f);
    return err_set(xcclSystemError, LOG_TOPO, "out of memory reading %s", path);
  }
  size_t got = fread(data, 1, len, f);
  int rerr = ferror(f);
  fclose(f);
  if (rerr || got != len) {
    free(data);
    return err_set(xcclSystemError, LOG_TOPO, "cannot read topology file %s", path);
  }
  data[len] = 0;
  xcclResult_t res = load_buffer(data, len, path, sys_p);
  free(data);
  return res;
}

xcclResult_t topo_system_load_file(const char *path, topo_system_t **sys_p) {
  topo_system_t *sys = NULL;
  TRY(read_file(path, &sys));
  topo_graph_log_warnings(sys, 0);
  *sys_p = sys;
  return xcclSuccess;
}

xcclResult_t topo_system_load_live(topo_system_t **sys_p) {
  topo_system_t *sys = NULL;
  TRY(topo_load_hwloc_live(&sys));
  topo_graph_log_warnings(sys, 0);
  *sys_p = sys;
  return xcclSuccess;
}

/* The communicator loads the topology at every init (and more than once in
 * one): the warnings about one source are logged at WARN the first time in
 * the process, at INFO after. A file is the same while its path, inode, size
 * and modification time are. */
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  int live;
  char path[1024];
  struct stat st;
} warned;

static int warned_before(const char *file) {
  struct stat st;
  int before = 0;
  if (file && stat(file, &st) != 0) return 0;
  pthread_mutex_lock(&warned_lock);
  if (!file) {
    before = warned.live;
    warned.live = 1;
  } else {
    before = strcmp(warned.path, file) == 0 && warned.st.st_dev == st.st_dev && warned.st.st_ino == st.st_ino &&
             warned.st.st_size == st.st_size && warned.st.st_mtime == st.st_mtime;
    snprintf(warned.path, sizeof(warned.path), "%s", file);
    warned.st = st;
  }
  pthread_mutex_unlock(&warned_lock);
  return before;
}

xcclResult_t topo_system_load(topo_system_t **sys_p) {
  const char *file = config_str(CFG_TOPO_FILE);
  topo_system_t *sys = NULL;
  if (file[0]) {
    xcclResult_t res = read_file(file, &sys);
    if (res != xcclSuccess) return err_prefix(res, "%s", config_source(CFG_TOPO_FILE));
  } else {
    TRY(topo_load_hwloc_live(&sys));
  }
  if (sys->nwarnings) topo_graph_log_warnings(sys, warned_before(file[0] ? file : NULL));
  INFO(TOPO, "topology from %s: %d GPUs, %d NICs, %d NUMA domains%s", sys->source, sys->ngpus, sys->nnics,
       sys->ncpus, sys->nvs >= 0 ? ", NVSwitch" : "");
  *sys_p = sys;
  return xcclSuccess;
}

int topo_ngpus(const topo_system_t *sys) { return sys->ngpus; }
int topo_nnics(const topo_system_t *sys) { return sys->nnics; }
int topo_nnuma(const topo_system_t *sys) { return sys->ncpus; }

int topo_nic_numa(const topo_system_t *sys, int n) {
  return n >= 0 && n < sys->nnics ? sys->nodes[sys->nics[n]].numa : -1;
}
const char *topo_gpu_busid(const topo_system_t *sys, int g, char *buf, size_t len) {
  if (g < 0 || g >= sys->ngpus) {
    snprintf(buf, len, "%s", "");
    return buf;
  }
  return topo_busid_format(sys->nodes[sys->gpus[g]].busid, buf, len);
}
const char *topo_nic_name(const topo_system_t *sys, int n) {
  return n >= 0 && n < sys->nnics ? sys->nodes[sys->nics[n]].name : "";
}
int topo_gpu_by_busid(const topo_system_t *sys, const char *busid) {
  int64_t b = topo_busid_parse(busid);
  for (int g = 0; b >= 0 && g < sys->ngpus; g++)
    if (sys->nodes[sys->gpus[g]].busid == b) return g;
  return -1;
}

topo_path_type_t topo_gpu_gpu_path(const topo_system_t *sys, int a, int b, double *bw_p) {
  if (a < 0 || b < 0 || a >= sys->ngpus || b >= sys->ngpus) {
    if (bw_p) *bw_p = 0;
    return TOPO_PATH_NONE;
  }
  const topo_path_t *p = topo_path_gg(sys, a, b);
  if (bw_p) *bw_p = p->bw;
  return p->type;
}

topo_path_type_t topo_gpu_nic_path(const topo_system_t *sys, int g, int n, double *bw_p) {
  if (g < 0 || n < 0 || g >= sys->ngpus || n >= sys->nnics) {
    if (bw_p) *bw_p = 0;
    return TOPO_PATH_NONE;
  }
  const topo_path_t *p = topo_path_gn(sys, g, n);
  if (bw_p) *bw_p = p->bw;
  return p->type;
}

int topo_gpu_gpu_sys_hops(const topo_system_t *sys, int a, int b) {
  if (a < 0 || b < 0 || a >= sys->ngpus || b >= sys->ngpus) return 0;
  return topo_path_gg(sys, a, b)->nsys;
}

int topo_gpu_gpu_uses_pci(const topo_system_t *sys, int a, int b) {
  if (a < 0 || b < 0 || a >= sys->ngpus || b >= sys->ngpus) return 0;
  return topo_path_gg(sys, a, b)->uses_pci;
}

/* Is NIC n one the channels may use: an RDMA NIC, or any NIC when the node
 * has no RDMA NIC. */
int topo_nic_usable(const topo_system_t *sys, int n) {
  int any_rdma = 0;
  for (int i = 0; i < sys->nnics; i++) any_rdma |= sys->nodes[sys->nics[i]].rdma;
  return !any_rdma || sys->nodes[sys->nics[n]].rdma;
}

int topo_gpu_nearest_nic(const topo_system_t *sys, int g) {
  int best = -1;
  if (g < 0 || g >= sys->ngpus) return -1;
  for (int n = 0; n < sys->nnics; n++) {
    if (!topo_nic_usable(sys, n)) continue;
    const topo_path_t *p = topo_path_gn(sys, g, n);
    if (p->type == TOPO_PATH_NONE) continue;
    if (best < 0) {
      best = n;
      continue;
    }
    const topo_path_t *q = topo_path_gn(sys, g, best);
    if (p->type < q->type || (p->type == q->type && p->bw > q->bw) ||
        (p->type == q->type && p->bw == q->bw && p->hops < q->hops))
      best = n;
  }
  return best;
}
