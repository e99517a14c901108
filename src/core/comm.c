/*
 * comm.c — the sequences that make and end a communicator over every layer
 * of src/core (the top one, "init", src/core/layers.txt): init, which
 * checks this rank's settings, meets the others, plans and connects the
 * rings, sets up the algorithms and the tuner, measures, and starts the
 * observers; destroy and abort, which undo it. The registry of live
 * handles is below, in comm_handle.c.
 */
#include "algo_direct.h"
#include "comm.h"
#include "comm_plan.h"
#include "connect.h"
#include "init.h"
#include "algo.h"
#include "net_select.h"
#include "reg.h"
#include "registry.h"
#include "rma.h"
#include "tuning.h"
#include "tune_measure.h"

#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "comm_stats.h"
#include "comm_trace.h"
#include "config.h"
#include "comm_dump.h"
#include "comm_observe.h"
#ifdef XCCL_HAVE_CUDA
#include "enqueue_cuda.h"
#endif
#include "fault.h"
#include "log.h"
#include "redop.h"
#include "topo.h"

/* ---- Teardown ---- */

static void comm_free(struct xcclComm *comm) {
  if (!comm) return;
  rma_comm_stop(comm); /* its thread reads the connections */
#ifdef XCCL_HAVE_CUDA
  enqueue_cuda_comm_free(comm); /* nothing runs on comm now: its fifos leave CUDA before they go */
#endif
  comm_stats_stop(comm);      /* its last numbers, while what they are read from is there */
  dump_unregister(comm);      /* before the peers it reads go */
  proxy_destroy(comm->proxy); /* stops the thread before the fifos go */
  comm_trace_stop(comm);      /* nothing adds events now: the timeline's file */
  algo_states_free(comm); /* direct's mappings among them */
  comm_free_conns(comm); /* their fifos with them */
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    free(comm->p2p_send[set]);
    free(comm->p2p_recv[set]);
  }
  bootstrap_close(comm->bs);
  free(comm->channels);
  free(comm->peers);
  free((void *)comm->hosts);
  free(comm->op_memo);
  free(comm->ring);
  free(comm->ring_pos);
  redop_comm_free(comm); /* its PreMulSum ops */
  comm_ops_free(comm);   /* its registrations and windows (issue 16) */
  rma_comm_free(comm);   /* the one-sided calls' signals */
  pthread_mutex_destroy(&comm->err_lock);
  pthread_mutex_destroy(&comm->init_lock);
}

/* Waits for calls on other threads to leave the communicator. They poll the
 * abort flag (abort) or finish their operation (destroy). */
static void comm_wait_idle(struct xcclComm *comm) {
  while (atomic_load(&comm->busy) > 0) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}

xcclResult_t xcclCommDestroy(xcclComm_t comm) {
  if (!comm || !registry_remove(comm)) return registry_refuse_locked(comm);
  comm_init_join(comm); /* a background init ends first (done, failed or timed out) */
  comm_wait_idle(comm);
  rma_comm_flush(comm); /* puts returned from before the network took them */
  INFO(INIT, "rank %d of %d: communicator %p destroyed", comm->rank, comm->nranks, (void *)comm);
  comm_free(comm);
  registry_bury(comm, "destroyed");
  return xcclSuccess;
}

xcclResult_t xcclCommAbort(xcclComm_t comm) {
  if (!comm || !registry_remove(comm)) return registry_refuse_locked(comm);
  atomic_store(&comm->abort_flag, 1);
  comm_init_join(comm); /* a background init sees the flag in its waits and stops */
  slot_bell_ring(&comm->bell);
  if (comm->proxy) proxy_shutdown_connections(comm->proxy);
  char msg[SLOT_ERROR_MAX];
  snprintf(msg, sizeof(msg), "rank %d aborted its communicator", comm->rank);
  comm_break_shm(comm, msg);
  comm_wait_idle(comm);
  INFO(INIT, "rank %d of %d: communicator %p aborted", comm->rank, comm->nranks, (void *)comm);
  comm_free(comm);
  registry_bury(comm, "aborted");
  return xcclSuccess;
}

/* ---- Init ---- */

/* config->algo's words, lower-cased, hashed for the peers' check; 0 for none. */
static uint64_t comm_algo_hash(const char *text) {
  if (!text[0]) return 0;
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = text; *p; p++) h = (h ^ (uint8_t)tolower((unsigned char)*p)) * 1099511628211ull;
  return h;
}

/* Every rank must agree on the settings config.h marks shared (channels, slot
 * size, transports, algorithms...). Each rank compares every rank with rank 0,
 * so all of them fail with the same sentence: the first shared setting in
 * table order that differs, and the lowest rank that differs in it. */
static xcclResult_t comm_check_peers(struct xcclComm *comm) {
  config_id_t id = CFG_COUNT;
  int who = -1;
  char dr[160], d0[160];
  for (int r = 0; r < comm->nranks; r++) {
    const comm_peer_info_t *p = &comm->peers[r];
    if (p->rank != r)
      return err_set(xcclInternalError, LOG_INIT, "bootstrap all-gather put rank %d's info in slot %d", p->rank, r);
    if (p->refused && r != comm->rank) /* its own reason, for the ranks that would otherwise wait for it */
      return err_set((xcclResult_t)p->refused, LOG_INIT, "%s cannot take part: %.*s",
                     comm_peer_desc(comm, r, dr, sizeof(dr)), COMM_REFUSAL_BYTES, p->refusal);
    config_id_t d = config_shared_diff(&p->shared, &comm->peers[0].shared);
    if (d < id) id = d, who = r;
  }
  if (who < 0) {
    for (int r = 1; r < comm->nranks; r++)
      if (comm->peers[r].algo_hash != comm->peers[0].algo_hash)
        return err_set(xcclInvalidUsage, LOG_INIT,
                       "%s and %s were made with different config->algo (this rank's: \"%s\"): every rank must "
                       "give the same",
                       comm_peer_desc(comm, r, dr, sizeof(dr)), comm_peer_desc(comm, 0, d0, sizeof(d0)),
                       comm->algo_text);
    return xcclSuccess;
  }
  char vr[CONFIG_SHARED_TEXT + 32], v0[CONFIG_SHARED_TEXT + 32];
  const char *name = config_table[id].name;
  return err_set(
      xcclInvalidUsage, LOG_INIT, "%s runs with XCCL_%s=%s but %s with XCCL_%s=%s: every rank must use the same value",
      comm_peer_desc(comm, who, dr, sizeof(dr)), name, config_shared_show(&comm->peers[who].shared, id, vr, sizeof(vr)),
      comm_peer_desc(comm, 0, d0, sizeof(d0)), name, config_shared_show(&comm->peers[0].shared, id, v0, sizeof(v0)));
}

/* This process's NUMA domain, asked of hwloc once per process. */
static int numa_of_process;
static void numa_probe(void) {
  err_quiet(1);
  if (topo_process_numa(&numa_of_process) != xcclSuccess) numa_of_process = -1;
  err_quiet(0);
}
static int comm_process_numa(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, numa_probe);
  return numa_of_process;
}

/* XCCL_TOPO_DUMP_FILE: the lowest rank of each host writes what it sees. */
static void comm_dump_topology(const struct xcclComm *comm) {
  const char *path = config_str(CFG_TOPO_DUMP_FILE);
  if (!path[0] || comm->hosts->local_of[comm->rank] != 0) return;
  topo_system_t *sys = NULL;
  if (topo_system_load(&sys) != xcclSuccess || topo_dump_file(sys, path) != xcclSuccess)
    WARN(INIT, "XCCL_TOPO_DUMP_FILE=%s: %s", path, err_last());
  else
    INFO(INIT, "rank %d: topology written to %s", comm->rank, path);
  topo_system_free(sys);
}

/* Records in this rank's info that it cannot take part, and why (err_last). */
static void comm_refuse(comm_peer_info_t *me, xcclResult_t res) {
  me->refused = res;
  snprintf(me->refusal, sizeof(me->refusal), "%s", err_last());
}

/* XCCL_CPU_BIND: the ranks of this host, each its own process, outnumber
 * the CPUs they share (the same set for each). Left to itself the scheduler
 * now and then piles waiting ranks onto fewer cores: on a 2-core VM a 4-rank
 * 8-byte all-reduce took 11-27 us from one start to the next, and 11 us
 * every time with each rank bound. So the thread that created
 * the communicator goes to one CPU of the set, local rank modulo their
 * number; once per process (a later communicator finds the sets differ). */
static void comm_bind_cpu(struct xcclComm *comm) {
  static _Atomic int bound;
  const comm_peer_info_t *me = &comm->peers[comm->rank];
  if (!config_bool(CFG_CPU_BIND) || atomic_load(&bound) || me->cpus.count < 1) return;
  int local = 0, nlocal = 0, host = comm->hosts->host_of[comm->rank];
  for (int i = 0; i < hier_host_size(comm->hosts, host); i++) {
    int r = hier_host_ranks(comm->hosts, host)[i];
    const comm_peer_info_t *p = &comm->peers[r];
    if (p->pidns != me->pidns) continue;
    if (p->cpus.first != me->cpus.first || p->cpus.count != me->cpus.count) return; /* placed by whoever started them */
    if (r != comm->rank && p->pid == me->pid) return; /* threads of one process: their creator's affinity is theirs */
    local += r < comm->rank;
    nlocal++;
  }
  cpu_set_t set, one;
  if (nlocal <= me->cpus.count || sched_getaffinity(comm->caller_tid, sizeof(set), &set) != 0) return;
  int want = local % CPU_COUNT(&set), cpu = -1;
  for (int c = 0, k = 0; c < CPU_SETSIZE && cpu < 0; c++)
    if (CPU_ISSET(c, &set) && k++ == want) cpu = c;
  if (cpu < 0) return;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(comm->caller_tid, sizeof(one), &one) != 0) return;
  atomic_store(&bound, 1);
  INFO(INIT,
       "rank %d: %d ranks of this host share %d CPUs: the thread that created the communicator now runs on CPU %d "
       "only (local rank %d; XCCL_CPU_BIND=0 leaves affinity alone)",
       comm->rank, nlocal, me->cpus.count, cpu, local);
}

/* The host layout (comm->hosts) from the all-gathered peer info: the same
 * on every rank. */
static xcclResult_t comm_hosts_make(struct xcclComm *comm) {
  void *mem = malloc(hier_layout_bytes(comm->nranks));
  if (!mem) return err_set(xcclSystemError, LOG_INIT, "out of memory for the hosts of %d ranks", comm->nranks);
  comm->hosts = hier_layout_make(comm->nranks, &comm->peers[0].host_hash, sizeof(*comm->peers), mem);
  return xcclSuccess;
}

/* refused: what this rank's own checks said. A rank that cannot take part
 * still joins the all-gather, then fails with its own error while the others
 * fail naming it. */
static xcclResult_t comm_setup_rings(struct xcclComm *comm, xcclResult_t refused) {
  comm_peer_info_t *me = &comm->peers[comm->rank];
  char mine[ERR_MSG_MAX] = "";
  if (refused == xcclSuccess) refused = net_get(&comm->net);
  if (refused != xcclSuccess) {
    comm_refuse(me, refused);
    snprintf(mine, sizeof(mine), "%s", err_last());
  }
  /* The GPU this rank drives, for the planner: asked of CUDA only where the
   * topology shows GPUs, so a plain host init makes no CUDA call. */
  const topo_system_t *sys = comm_plan_topology();
#ifdef XCCL_HAVE_CUDA
  if (sys && topo_ngpus(sys) > 0) comm_cuda_busid(comm, me->busid, sizeof(me->busid));
#endif
  xcclResult_t res = bootstrap_allgather(comm->bs, comm->peers, sizeof(*comm->peers));
  if (res == xcclSuccess && refused != xcclSuccess) res = err_set(refused, LOG_INIT, "%s", mine);
  if (res == xcclSuccess) res = comm_check_peers(comm);
  if (res == xcclSuccess) res = comm_hosts_make(comm);
  if (res == xcclSuccess) res = comm_plan_rings(comm, sys);
  TRY(res);
  int shm_used = transport_allows("shm") && !config_bool(CFG_SHM_DISABLE);
  TRY(direct_setup(comm, shm_used));
  TRY(tuning_site_hosts(comm_site_edit(comm), comm->hosts, &comm->peers[0].cpus, sizeof(*comm->peers), shm_used,
                        comm->algo_forced));
  comm_site_edit(comm)->nics = comm->rails; /* the plan's rails (comm_plan.c) */
  comm_bind_cpu(comm);
  comm_dump_topology(comm);
  return comm_connect_rings(comm);
}

/* The CPUs this process may run on: its affinity's lowest and its count. */
static algo_cpus_t comm_own_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return (algo_cpus_t){0, (int32_t)sysconf(_SC_NPROCESSORS_ONLN)};
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &set)) first++;
  return (algo_cpus_t){first, CPU_COUNT(&set)};
}

/* XCCL_TOPO_FILE (or NCCL_TOPO_FILE) names the topology the user wants: one
 * that cannot be read or parsed fails init, with the file, the line and the
 * reason, instead of running as if it were unset. (The live machine's, when
 * no file is set, is read only where there is a choice to make, and its
 * failure means "no topology".) */
static xcclResult_t comm_check_topo_file(void) {
  if (!config_str(CFG_TOPO_FILE)[0]) return xcclSuccess;
  topo_system_t *sys = NULL;
  TRY(topo_system_load(&sys));
  topo_system_free(sys);
  return xcclSuccess;
}

/* What this rank's own settings and build refuse, before it meets the others. */
static xcclResult_t comm_own_checks(struct xcclComm *comm) {
  TRY(comm_check_topo_file());
  if (config_bool(CFG_CHECKSUM) && !slot_checksum_available())
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "XCCL_CHECKSUM=1 needs CRC32C from ISA-L, which this build of xccl lacks (install libisal-dev "
                   "and rebuild)");
  TRY(tuning_parse(comm->algo_text[0] ? comm->algo_text : config_str(CFG_ALGO), comm->algo_forced));
  unsigned hier_inter;
  TRY(tuning_hier_inter(&hier_inter));
  TRY(direct_check_config());
  TRY(tune_check_config());
  return fault_check_config();
}

/* The struct and its tables, before any rank is met. */
static xcclResult_t comm_alloc(struct xcclComm **comm_p, int nranks, int rank, int job_rank, const comm_opts_t *o) {
  struct xcclComm *comm = calloc(1, sizeof(*comm));
  if (!comm) return err_set(xcclSystemError, LOG_INIT, "out of memory for a communicator");
  comm->obs = &comm_observe_v1; /* before anything can fail */
  pthread_mutex_init(&comm->err_lock, NULL);
  pthread_mutex_init(&comm->init_lock, NULL);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->caller_tid = gettid();
  comm->next = (rank + 1) % nranks;
  comm->prev = (rank + nranks - 1) % nranks;
  fault_ctx_init(&comm->fault, job_rank);
  comm->timeout_s = o->timeout_s > 0 ? o->timeout_s : config_double(CFG_TIMEOUT);
  comm->blocking = o->blocking;
  comm->cuda_dev = comm_cuda_built() ? o->cuda_dev : -1; /* (no CUDA call at a plain init: see comm_cuda_device) */
  snprintf(comm->name, sizeof(comm->name), "%s", o->name);
  snprintf(comm->algo_text, sizeof(comm->algo_text), "%s", o->algo);
  atomic_init(&comm->init_result, xcclInProgress);
  atomic_init(&comm->life, COMM_INITIALIZING);
  comm->nchannels = nranks > 1 ? topo_comm_nchannels() : 0; /* XCCL_NCHANNELS within MIN/MAX */
  comm->peers = calloc((size_t)nranks, sizeof(*comm->peers));
  int p2p_ok = 1;
  for (int set = 0; set < COMM_P2P_SETS; set++) {
    comm->p2p_send[set] = calloc((size_t)nranks, sizeof(comm_p2p_t));
    comm->p2p_recv[set] = calloc((size_t)nranks, sizeof(comm_p2p_t));
    p2p_ok &= comm->p2p_send[set] && comm->p2p_recv[set];
  }
  xcclResult_t res = !comm->peers || !p2p_ok ? err_set(xcclSystemError, LOG_INIT, "out of memory for %d peers", nranks)
                                              : algo_states_make(comm);
  if (res != xcclSuccess) {
    comm_free(comm);
    free(comm);
    return res;
  }
  *comm_p = comm;
  return xcclSuccess;
}

/* 1 when two ranks of comm run in one process (threads: xcclCommInitAll,
 * inits inside a group). Every rank computes the same from the peer info. */
static int comm_shares_process(const struct xcclComm *comm) {
  for (int h = 0; h < comm->hosts->nhosts; h++) {
    const int *ranks = hier_host_ranks(comm->hosts, h);
    for (int i = 0; i < hier_host_size(comm->hosts, h); i++)
      for (int j = 0; j < i; j++)
        if (comm->peers[ranks[j]].pid == comm->peers[ranks[i]].pid &&
            comm->peers[ranks[j]].pidns == comm->peers[ranks[i]].pidns)
          return 1;
  }
  return 0;
}

/* Ranks of one process are then driven by one thread, which cannot make
 * their connections lazily, one communicator after the other (each waits
 * for a peer that the same thread drives): the algorithms' own connections
 * are made now, while every rank has its init thread. */
xcclResult_t comm_connect_algos(struct xcclComm *comm) {
  comm->shares_process = comm_shares_process(comm);
  if (!comm->shares_process) return xcclSuccess;
  /* NULL: every operation's connections, every root's for the tree. */
  for (int a = 0; a < ALGO_COUNT; a++) TRY(algo_connect(comm, (algo_t)a, NULL));
  return xcclSuccess;
}

/* Meets the other ranks and connects: the init proper, on the caller's
 * thread or a background one. On failure what it made stays for comm_free. */
static xcclResult_t comm_connect(struct xcclComm *comm, const bs_id_t *id) {
  int rank = comm->rank, nranks = comm->nranks;
  comm_peer_info_t *me = &comm->peers[rank];
  me->rank = rank;
  me->pid = (uint32_t)getpid();
  me->uid = (uint32_t)getuid();
  me->pidns = slot_pidns();
  me->host_hash = comm_host_hash(me->host, sizeof(me->host));
  me->numa = nranks > 1 ? comm_process_numa() : -1;
  me->cpus = comm_own_cpus();
  me->chunk_size = config_size(CFG_CHUNK_SIZE);
  me->algo_hash = comm_algo_hash(comm->algo_text);
  config_shared_pack(&me->shared);
  comm_trace_announce(me);
  direct_before_allgather(comm, me);
  comm->check = config_bool(CFG_CHECK);
  xcclResult_t refused = comm_own_checks(comm), res;
#ifdef XCCL_HAVE_CUDA
  if (comm->cuda_dev >= 0) TRY_GOTO(comm_cuda_use_device(&comm->cuda_dev), fail);
#endif
  if (refused != xcclSuccess && nranks == 1) {
    res = refused;
    goto fail;
  }
  uint64_t t0 = clock_ns();
  TRY_GOTO(bootstrap_init(id, rank, nranks, comm->timeout_s, &comm->abort_flag, &comm->bs), fail);
  comm->job = id->job;
  if (bootstrap_derive_key(comm->bs, "xccl socket tls psk v1", comm->net_key) != 0) {
    res = err_set(xcclSystemError, LOG_INIT, "OpenSSL could not derive the network transport's key (HKDF)");
    goto fail;
  }
  if (nranks > 1) {
    TRY_GOTO(comm_setup_rings(comm, refused), fail);
  } else {
    TRY_GOTO(comm_hosts_make(comm), fail); /* its own info is all there is to gather */
  }
  int spin_us = (int)config_int(CFG_SPIN_US);
  comm->env = (kern_env_t){.timeout_s = comm->timeout_s,
                           .abort_flag = &comm->abort_flag,
                           .spin_ns = (uint64_t)(spin_us < 0 ? 50 : spin_us) * 1000,
                           /* more ranks on a host than cores: a waiting caller gives its
                              core away, or the rank it waits for may not run */
                           .yield = comm->site.cpu_share > 1,
                           .bell = &comm->bell,
                           .progress = proxy_progress,
                           .wait = proxy_wait,
                           .progress_ctx = comm->proxy,
                           .fault = &comm->fault};
  if (nranks > 1) TRY_GOTO(comm_connect_algos(comm), fail);
  TRY_GOTO(dump_register(comm, id->job), fail);
  if (nranks > 1) TRY_GOTO(tune_measure(comm), fail);
  comm_stats_start(comm, id->job); /* after tune_measure: only the user's operations count */
  comm_trace_start(comm, id->job); /* every rank here together: the clock offsets */
  int conns;
  uint64_t slot_bytes;
  comm_conn_memory(comm, &conns, &slot_bytes);
  INFO(INIT,
       "rank %d of %d ready in %.1f ms%s%s%s: %d channel(s), ring %d -> %d -> %d, transport %s; %d connection(s), "
       "%.1f MiB of slots",
       rank, nranks, (double)(clock_ns() - t0) / 1e6, comm->name[0] ? " (comm \"" : "", comm->name,
       comm->name[0] ? "\")" : "", comm->nchannels, comm->prev, rank, comm->next,
       comm->net ? comm->net->name : "(none)", conns, (double)slot_bytes / (1 << 20));
  return xcclSuccess;
fail:
  return err_prefix(res, "rank %d of %d%s%s%s: init failed", rank, nranks, comm->name[0] ? " (comm \"" : "", comm->name,
                    comm->name[0] ? "\")" : "");
}

/* The background init's thread: connects, then publishes the outcome. */
static void *comm_init_thread(void *arg) {
  struct xcclComm *comm = arg;
  xcclResult_t res = comm_connect(comm, &comm->init_id);
  memset(&comm->init_id, 0, sizeof(comm->init_id)); /* its secret */
  if (res != xcclSuccess) {
    pthread_mutex_lock(&comm->err_lock);
    snprintf(comm->last_error, sizeof(comm->last_error), "%s", err_last());
    pthread_mutex_unlock(&comm->err_lock);
  }
  atomic_store(&comm->init_result, res);
  atomic_store_explicit(&comm->life, res == xcclSuccess ? COMM_READY : COMM_INIT_FAILED, memory_order_release);
  return NULL;
}

xcclResult_t comm_start(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank, int job_rank,
                        const comm_opts_t *opts, int background) {
  struct xcclComm *comm = NULL;
  TRY(comm_alloc(&comm, nranks, rank, job_rank, opts));
  xcclResult_t res;
  if (!background) {
    TRY_GOTO(comm_connect(comm, id), fail);
    atomic_store(&comm->init_result, xcclSuccess);
    atomic_store(&comm->life, COMM_READY);
    TRY_GOTO(registry_add(comm), fail);
    *comm_p = comm;
    return xcclSuccess;
  }
  comm->init_id = *id;
  TRY_GOTO(registry_add(comm), fail);
  pthread_mutex_lock(&comm->init_lock);
  int rc = pthread_create(&comm->init_thread, NULL, comm_init_thread, comm);
  comm->init_running = rc == 0;
  pthread_mutex_unlock(&comm->init_lock);
  if (rc != 0) {
    registry_remove(comm);
    res = err_set(xcclSystemError, LOG_INIT, "rank %d of %d: cannot start the init's thread: %s", rank, nranks,
                  strerror(rc));
    goto fail;
  }
  *comm_p = comm;
  return xcclSuccess;
fail:
  atomic_store(&comm->abort_flag, 1);
  comm_free(comm);
  free(comm); /* never handed out: no handle can refer to it */
  return res;
}

static const comm_opts_t comm_default_opts = {.blocking = 1, .timeout_s = 0, .name = "", .cuda_dev = -1};

xcclResult_t comm_init(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank) {
  return comm_start(comm_p, nranks, id, rank, rank, &comm_default_opts, 0);
}

xcclResult_t comm_init_shrunk(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank, int job_rank) {
  return comm_start(comm_p, nranks, id, rank, job_rank, &comm_default_opts, 0);
}
