/*
 * algo_direct.c — collectives between the ranks of one host that read each
 * other's buffers in place (host_direct.h): single copy through the kernel's
 * cross-memory attach, zero copy for buffers from xcclMemAlloc, which peers
 * map. The slots of the algorithms' own connections (COMM_P2P_ALGO, one
 * each way with every peer) carry only addresses and small tokens.
 *
 * At init (direct_setup) every rank reads a value from every other rank's
 * memory with process_vm_readv and the ranks agree on the outcome: the
 * algorithm runs only where all reads worked, so the ranks always choose
 * alike. Where Yama restricts ptrace to ancestors (ptrace_scope 1), each
 * process first lets any process of its user read it (PR_SET_PTRACER_ANY),
 * as Open MPI's CMA path does.
 */

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "algo.h"
#include "algo_direct.h"
#include "bootstrap.h"
#include "comm.h"
#include "config.h"
#include "error.h"
#include "host_direct.h"
#include "host_line.h"
#include "log.h"
#include "mem.h"
#include "tuning.h"

/* The work of a direct collective of B bytes on k ranks: two rounds of
 * tokens of k-1 messages each (three for an all-reduce that pulls, which
 * zero copy does not: it pushes), and what each rank reads from its peers
 * (2(k-1)/k B for all-reduce, as the ring moves), counted at what it costs
 * against the slots' copies on the same link:
 * - Zero copy (the operation's buffers in windows of xcclMemAlloc memory on
 *   every rank): each byte copied once, where the slots copy it twice: half
 *   the ring's price per byte.
 * - Single copy (process_vm_readv): the kernel pins the peer's pages for
 *   every read. On the development machine (a VM) that read ran at a third
 *   of memcpy's speed (8 vs 24 GB/s, 16 MiB in 4 MiB reads), and the 2-rank
 *   all-reduce at 0.7 of the slots' bus bandwidth (6.0 vs 8.5 GB/s at
 *   16 MiB, 5.6 vs 7.7 at 64 MiB): priced so, it never wins by cost there,
 *   and runs when XCCL_SHM_COPY=single or zero asks for it (work.forced). */
#define DIRECT_CMA_SPEED 0.7
#define DIRECT_MAX_MAPS 16

/* A peer's xcclMemAlloc memory mapped here: for reading and writing (an
 * all-reduce that pushes writes peers' outputs), or read-only where the
 * file refuses writing. */
typedef struct direct_map {
  int32_t pid, fd;
  uint64_t ino;
  char *base;
  size_t size;
  int writable;
  struct direct_map *next;
} direct_map_t;

/* What direct keeps on a communicator (comm->algo_state[ALGO_DIRECT]). */
typedef struct {
  uint64_t probe;     /* read by peers at init: the peer info's probe_value */
  uint64_t seq;       /* direct operations launched: equal on every rank, checked in their messages */
  direct_map_t *maps; /* peers' xcclMemAlloc memory mapped here, most recent first */
} direct_state_t;

static direct_state_t *direct_state(const struct xcclComm *comm) { return comm->algo_state[ALGO_DIRECT]; }

static void direct_work(coll_kind_t coll, size_t bytes, int nranks, size_t slot, const algo_site_t *site,
                        algo_work_t *work_p) {
  (void)slot;
  if (!site->direct) return; /* direct_setup: one host, readable, at most DIRECT_MAX_RANKS */
  double k = nranks, b = (double)bytes, rounds = coll == COLL_ALLREDUCE && !site->zero_agreed ? 3 : 2;
  double moved = coll == COLL_ALLREDUCE ? 2 * (k - 1) / k * b : coll == COLL_BROADCAST ? b : (k - 1) * b;
  algo_work_flat(work_p, site, rounds * (k - 1), moved / (site->zero_agreed ? 2 : DIRECT_CMA_SPEED));
  work_p->forced = site->direct_forced;
}

/* One operation's scratch. */
typedef struct {
  direct_args_t args;
  direct_item_t item;
  direct_post_t mine;
  char tmp[DIRECT_PIECE] __attribute__((aligned(64)));
  direct_post_t posts[]; /* nranks; then 2 * nranks fifos and 2 * nranks step pointers */
} direct_launch_t;

static size_t direct_scratch_bytes(const coll_args_t *a, const struct xcclComm *comm) {
  (void)a;
  size_t k = (size_t)comm->nranks;
  return sizeof(direct_launch_t) + k * sizeof(direct_post_t) + 2 * k * (sizeof(slot_fifo_t *) + sizeof(uint64_t *));
}

/* The memfd, its inode and the offset of [p, p + len) when it lies in one
 * xcclMemAlloc allocation. */
static void direct_post_buf(direct_post_t *m, int which, const void *p, size_t len) {
  int fd;
  uint64_t ino;
  size_t off;
  m->addr[which] = (uint64_t)(uintptr_t)p;
  m->fd[which] = -1;
  if (p && len && mem_lookup(p, len, &fd, &ino, &off)) m->fd[which] = fd, m->ino[which] = ino, m->off[which] = off;
}

static void direct_map_drop(direct_map_t *m) {
  munmap(m->base, m->size);
  free(m);
}

/* The peers' memory it mapped (algo_desc_t.state_free). */
static void direct_state_free(void *state) {
  direct_state_t *st = state;
  while (st->maps) {
    direct_map_t *m = st->maps;
    st->maps = m->next;
    direct_map_drop(m);
  }
}

/* Keeps the most recent mappings: DIRECT_MAX_MAPS, and never fewer than
 * one operation uses (two buffers of each peer, all at the front), so none
 * that the running operation was given goes. */
static void direct_maps_trim(struct xcclComm *comm) {
  int keep = 2 * comm->nranks > DIRECT_MAX_MAPS ? 2 * comm->nranks : DIRECT_MAX_MAPS;
  direct_map_t *m = direct_state(comm)->maps;
  for (int n = 1; m && n < keep; n++) m = m->next;
  while (m && m->next) {
    direct_map_t *old = m->next;
    m->next = old->next;
    direct_map_drop(old);
  }
}

/* Peer's buffer `which` mapped here (host_direct.h's map_peer), or NULL. */
static char *direct_map_peer(void *ctx, int peer, const direct_post_t *post, int which, int *writable) {
  struct xcclComm *comm = ctx;
  (void)peer;
  *writable = 0;
  if (post->pid == (int32_t)comm->peers[comm->rank].pid) { /* a thread of this process */
    *writable = 1;
    return (char *)(uintptr_t)post->addr[which];
  }
  if (post->fd[which] < 0) return NULL;
  direct_state_t *ds = direct_state(comm);
  direct_map_t **pp = &ds->maps, *m;
  for (; (m = *pp); pp = &m->next)
    if (m->pid == post->pid && m->fd == post->fd[which] && m->ino == post->ino[which]) {
      *pp = m->next; /* to the front */
      m->next = ds->maps, ds->maps = m;
      *writable = m->writable;
      return m->base + post->off[which];
    }
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)post->pid, (int)post->fd[which]);
  int rw = 1, fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) rw = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_ino != post->ino[which] || st.st_size <= 0) {
    close(fd);
    return NULL;
  }
  char *base = mmap(NULL, (size_t)st.st_size, PROT_READ | (rw ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return NULL;
  m = malloc(sizeof(*m));
  if (!m) {
    munmap(base, (size_t)st.st_size);
    return NULL;
  }
  *m = (direct_map_t){.pid = post->pid,
                      .fd = post->fd[which],
                      .ino = post->ino[which],
                      .base = base,
                      .size = (size_t)st.st_size,
                      .writable = rw,
                      .next = ds->maps};
  *writable = rw;
  ds->maps = m;
  direct_maps_trim(comm);
  TRACE(COLL, "rank %d: mapped rank %d's xcclMemAlloc memory (%zu bytes) for zero-copy %s", comm->rank, peer, m->size,
        rw ? "reads and writes" : "reads");
  return base + post->off[which];
}

static int direct_build(const coll_args_t *a, struct xcclComm *comm, kern_lane_t lane0, void *scratch, kern_item_t **items) {
  direct_launch_t *l = scratch;
  int k = comm->nranks;
  slot_fifo_t **fifo = (slot_fifo_t **)&l->posts[k];
  uint64_t **steps = (uint64_t **)&fifo[2 * k];
  algo_peer_fifos(comm, 0, fifo, steps);
  size_t esize = a->esize;
  direct_state_t *st = direct_state(comm);
  memset(&l->mine, 0, sizeof(l->mine));
  l->mine.seq = st->seq;
  l->mine.pid = (int32_t)comm->peers[comm->rank].pid;
  direct_post_buf(&l->mine, DIRECT_SEND, a->sendbuff, a->send_elems * esize);
  direct_post_buf(&l->mine, DIRECT_RECV, a->recvbuff, a->recv_elems * esize);
  direct_args_t *da = &l->args;
  *da = (direct_args_t){.coll = a->coll,
                        .sendbuff = a->sendbuff,
                        .recvbuff = a->recvbuff,
                        .count = a->count,
                        .type = a->type,
                        .op = a->op,
                        .nranks = k,
                        .rank = comm->rank,
                        .root = a->root,
                        .seq = st->seq,
                        .zero_copy = comm->site.zero_copy,
                        .mine = &l->mine,
                        .posts = l->posts,
                        .map_peer = direct_map_peer,
                        .map_ctx = comm,
                        .tmp = l->tmp,
                        .send_fifo = fifo,
                        .recv_fifo = fifo + k,
                        .send_step = steps,
                        .recv_step = steps + k};
  st->seq++;
  host_direct_item(&l->item, da, &comm->env, lane0 + ALGO_LANE_PEERS);
  items[0] = &l->item.base;
  return 1;
}

/* Every other rank, both ways. */
static void direct_peers(int nranks, int rank, const algo_site_t *site, algo_peers_t *peers_p) {
  (void)site;
  algo_peer_set_t *s = &peers_p->set[0];
  int n = 0;
  for (int i = 1; i < nranks && n < ALGO_MAX_PEERS; i++) s->send[n++] = (rank + i) % nranks;
  memcpy(s->recv, s->send, (size_t)n * sizeof(int));
  s->nsend = s->nrecv = n;
}

const algo_desc_t algo_direct = {
    .name = "direct",
    .colls = 1u << COLL_ALLREDUCE | 1u << COLL_REDUCESCATTER | 1u << COLL_ALLGATHER | 1u << COLL_BROADCAST,
    .work = direct_work,
    .max_items = 1,
    .scratch_bytes = direct_scratch_bytes,
    .build = direct_build,
    .peers = direct_peers,
    .state_bytes = sizeof(direct_state_t),
    .state_free = direct_state_free,
};

/* ---- Init: may the ranks read each other? ---- */

static int yama_scope(void) {
  FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
  int v = 0;
  if (!f) return 0;
  if (fscanf(f, "%d", &v) != 1) v = 0;
  fclose(f);
  return v;
}

void direct_before_allgather(struct xcclComm *comm, comm_peer_info_t *me) {
  const char *mode = config_str(CFG_SHM_COPY);
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  direct_state_t *st = direct_state(comm);
  st->probe = ((uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)comm) | 1;
  me->probe_addr = (uint64_t)(uintptr_t)&st->probe;
  me->probe_value = st->probe;
  static int ptracer_set;
  if (comm->nranks > 1 && strcasecmp(mode, "slot") != 0 && !__atomic_load_n(&ptracer_set, __ATOMIC_ACQUIRE) &&
      !__atomic_exchange_n(&ptracer_set, 1, __ATOMIC_SEQ_CST) && yama_scope() == 1) {
    if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) == 0)
      INFO(INIT,
           "Yama ptrace_scope is 1: this process lets processes of its user read its memory "
           "(PR_SET_PTRACER_ANY), for single-copy collectives; XCCL_SHM_COPY=slot does not");
    else
      INFO(INIT, "prctl(PR_SET_PTRACER) failed: %s", strerror(errno));
  }
}

static int direct_mode_valid(const char *m) {
  return !strcasecmp(m, "auto") || !strcasecmp(m, "slot") || !strcasecmp(m, "single") || !strcasecmp(m, "zero");
}

xcclResult_t direct_check_config(void) {
  const char *m = config_str(CFG_SHM_COPY);
  if (!direct_mode_valid(m))
    return err_set(xcclInvalidUsage, LOG_INIT, "XCCL_SHM_COPY=%s: expected auto, slot, single or zero", m);
  return xcclSuccess;
}

xcclResult_t direct_setup(struct xcclComm *comm, int shm_used) {
  const comm_peer_info_t *me = &comm->peers[comm->rank];
  const char *mode = config_str(CFG_SHM_COPY);
  int k = comm->nranks, local = k > 1 && shm_used && comm->hosts->nhosts == 1;
  for (int r = 0; r < k && local; r++) local = comm->peers[r].pidns == me->pidns && comm->peers[r].uid == me->uid;
  /* the links themselves are tuning_site_hosts' */
  *comm_site_edit(comm) = (algo_site_t){.flat = local ? ALGO_LINK_LOCAL : ALGO_LINK_NET,
                                        .peer_slot = config_size(CFG_ALGO_CHUNK_SIZE)};
  /* The line all-reduce (host_line.h) shares lines through the fifos, which
   * shared memory holds here; a line has no room for a CRC32C. */
  int line = local && !config_bool(CFG_CHECKSUM) && k <= LINE_MAX_RANKS;
  comm_site_edit(comm)->line = line;
  if (!line && k > 1 && comm->algo_forced[COLL_ALLREDUCE] == ALGO_LINE)
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "XCCL_ALGO forces line, which needs every rank on this host, in one PID namespace, as one user, "
                   "with shared memory allowed, XCCL_CHECKSUM off and at most %d ranks",
                   LINE_MAX_RANKS);
  int forced_algo = 0;
  for (int c = 0; c < COLL_NKINDS; c++) forced_algo |= comm->algo_forced[c] == ALGO_DIRECT;
  if (!local || strcasecmp(mode, "slot") == 0 || k > DIRECT_MAX_RANKS) {
    if (forced_algo)
      return err_set(xcclInvalidUsage, LOG_INIT,
                     "XCCL_ALGO forces direct, which needs every rank on this host, in one PID namespace, as one "
                     "user, with shared memory allowed, XCCL_SHM_COPY other than slot and at most %d ranks",
                     DIRECT_MAX_RANKS);
    return xcclSuccess;
  }
  /* Every rank reads every other's probe; then all learn whether all could. */
  int32_t *ok = calloc((size_t)k, sizeof(*ok));
  if (!ok) return err_set(xcclSystemError, LOG_INIT, "out of memory");
  int bad_peer = -1, bad_err = 0;
  for (int i = 1; i < k && bad_peer < 0; i++) {
    int p = (comm->rank + i) % k;
    uint64_t v = 0;
    int err = host_direct_read((int)comm->peers[p].pid, &v, comm->peers[p].probe_addr, sizeof(v));
    if (!err && v != comm->peers[p].probe_value) err = EIO;
    if (err) bad_peer = p, bad_err = err;
  }
  ok[comm->rank] = bad_peer < 0 ? 1 : -(bad_peer + 1);
  xcclResult_t res = bootstrap_allgather(comm->bs, ok, sizeof(*ok));
  if (res != xcclSuccess) {
    free(ok);
    return res;
  }
  int all = 1, who = -1, whom = -1;
  for (int r = 0; r < k; r++)
    if (ok[r] != 1) all = 0, who = who < 0 ? r : who, whom = whom < 0 ? -ok[r] - 1 : whom;
  free(ok);
  if (bad_peer >= 0)
    INFO(INIT, "rank %d cannot read rank %d's memory with process_vm_readv: %s", comm->rank, bad_peer,
         strerror(bad_err));
  if (!all) {
    if (forced_algo)
      return err_set(xcclInvalidUsage, LOG_INIT,
                     "XCCL_ALGO forces direct, but rank %d cannot read rank %d's memory with process_vm_readv "
                     "(ptrace permission: Yama ptrace_scope, a container's seccomp profile or CAP_SYS_PTRACE)",
                     who, whom);
    if (comm->rank == 0)
      INFO(INIT,
           "rank %d cannot read rank %d's memory with process_vm_readv: collectives between ranks of this "
           "host move data through the slots (XCCL_SHM_COPY=%s)",
           who, whom, mode);
    return xcclSuccess;
  }
  algo_site_t *site = comm_site_edit(comm);
  site->direct = 1;
  site->direct_forced = strcasecmp(mode, "single") == 0 || strcasecmp(mode, "zero") == 0;
  site->zero_copy = strcasecmp(mode, "single") != 0;
  INFO(INIT, "rank %d: the %d ranks read each other's memory: single-copy collectives%s (XCCL_SHM_COPY=%s)", comm->rank,
       k, comm->site.zero_copy ? ", zero copy for xcclMemAlloc buffers" : "", mode);
  return xcclSuccess;
}
