/*
 * lifecycle.c — configured and non-blocking init, init inside a group,
 * xcclCommInitAll, xcclCommFinalize, xcclCommRevoke and xcclCommCuDevice
 * (issue 16). A background init is comm_start's (comm.c): the handle is
 * live but COMM_INITIALIZING until its thread ends. What a group does with
 * the inits started in it is group_init.c's (the run layer).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "comm.h"
#include "connect.h"
#include "init.h"
#include "config.h"
#include "group.h"
#include "log.h"
#include "registry.h"
#include "tuning.h"

/* ---- Config ---- */

xcclResult_t comm_opts_from_config(const char *fn, const xcclConfig_t *config, comm_opts_t *opts) {
  comm_opts_t o = {.blocking = 1, .timeout_s = 0, .name = "", .cuda_dev = -1};
  if (config) {
    if (config->size != sizeof(xcclConfig_t))
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "%s: config->size is %zu, expected sizeof(xcclConfig_t) = %zu: start from XCCL_CONFIG_INITIALIZER",
                     fn, config->size, sizeof(xcclConfig_t));
    if (config->magic != XCCL_CONFIG_MAGIC)
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "%s: config->magic is 0x%x, expected XCCL_CONFIG_MAGIC (0x%x): start from XCCL_CONFIG_INITIALIZER",
                     fn, config->magic, XCCL_CONFIG_MAGIC);
    if (config->version != XCCL_VERSION_CODE)
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "%s: config->version is %u, but this library is %d: rebuild against its xccl.h", fn,
                     config->version, XCCL_VERSION_CODE);
    if (config->blocking != XCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
      return err_set(xcclInvalidArgument, LOG_INIT, "%s: config->blocking is %d: give 0, 1 or leave it unset", fn,
                     config->blocking);
    if (config->timeoutSeconds > 1e9)
      return err_set(xcclInvalidArgument, LOG_INIT, "%s: config->timeoutSeconds = %g s is not a timeout (<= 1e9)", fn,
                     config->timeoutSeconds);
    o.blocking = config->blocking == XCCL_CONFIG_UNDEF_INT ? config_bool(CFG_COMM_BLOCKING) : config->blocking != 0;
    o.timeout_s = config->timeoutSeconds > 0 ? config->timeoutSeconds : 0; /* also NaN: the default */
    if (config->commName) snprintf(o.name, sizeof(o.name), "%s", config->commName);
    if (config->algo && config->algo[0]) {
      int forced[COLL_NKINDS];
      if (strlen(config->algo) >= sizeof(o.algo))
        return err_set(xcclInvalidArgument, LOG_INIT, "%s: config->algo is %zu characters long, more than %zu", fn,
                       strlen(config->algo), sizeof(o.algo) - 1);
      xcclResult_t res = tuning_parse(config->algo, forced);
      if (res != xcclSuccess)
        return err_prefix(xcclInvalidArgument, "%s: config->algo = \"%s\" takes XCCL_ALGO's words", fn, config->algo);
      snprintf(o.algo, sizeof(o.algo), "%s", config->algo);
    }
  }
  *opts = o;
  return xcclSuccess;
}

/* A derived communicator's options (split, grow): config's, or (NULL) its
 * parent's blocking, timeout, name, algorithms and device. */
xcclResult_t comm_opts_inherit(const char *fn, const struct xcclComm *parent, const xcclConfig_t *config,
                               comm_opts_t *o) {
  if (config) return comm_opts_from_config(fn, config, o);
  *o = (comm_opts_t){.blocking = parent->blocking, .timeout_s = parent->timeout_s, .cuda_dev = parent->cuda_dev};
  snprintf(o->algo, sizeof(o->algo), "%s", parent->algo_text);
  snprintf(o->name, sizeof(o->name), "%s", parent->name);
  return xcclSuccess;
}

/* ---- xcclCommInitRank(Config) ---- */

static xcclResult_t init_rank(const char *fn, xcclComm_t *comm, int nranks, const xcclUniqueId *commId, int rank,
                              const xcclConfig_t *config) {
  config_load();
  if (!comm) return err_set(xcclInvalidArgument, LOG_INIT, "%s: comm is NULL", fn);
  if (nranks < 1 || nranks > BS_MAX_RANKS)
    return err_set(xcclInvalidArgument, LOG_INIT, "%s: nranks=%d is not in 1..%d", fn, nranks, BS_MAX_RANKS);
  if (rank < 0 || rank >= nranks)
    return err_set(xcclInvalidArgument, LOG_INIT, "%s: rank %d is not in 0..%d", fn, rank, nranks - 1);
  comm_opts_t opts;
  TRY(comm_opts_from_config(fn, config, &opts));
  bs_id_t id;
  char why[256];
  if (bs_id_decode(commId, &id, why, sizeof(why)) != 0)
    return err_set(xcclInvalidArgument, LOG_INIT, "%s: %s", fn, why);
  if ((id.flags & BS_ID_ROOT_AT_RANK0) && rank == 0)
    TRY(bootstrap_root_start(&id, opts.timeout_s > 0 ? opts.timeout_s : config_double(CFG_TIMEOUT)));
  int in_group = group_open();
  xcclComm_t c = NULL;
  TRY(comm_start(&c, nranks, &id, rank, rank, &opts, in_group || !opts.blocking));
  if (in_group && opts.blocking) {
    xcclResult_t res = group_inits_add(c);
    if (res != xcclSuccess) {
      xcclCommAbort(c);
      return res;
    }
  }
  *comm = c;
  return opts.blocking ? xcclSuccess : xcclInProgress;
}

xcclResult_t xcclCommInitRank(xcclComm_t *comm, int nranks, xcclUniqueId commId, int rank) {
  return init_rank("xcclCommInitRank", comm, nranks, &commId, rank, NULL);
}

xcclResult_t xcclCommInitRankConfig(xcclComm_t *comm, int nranks, xcclUniqueId commId, int rank,
                                    const xcclConfig_t *config) {
  return init_rank("xcclCommInitRankConfig", comm, nranks, &commId, rank, config);
}

/* ---- xcclCommInitAll ---- */

static xcclResult_t init_all_check(int ndev, const int *devlist) {
  if (ndev < 1 || ndev > BS_MAX_RANKS)
    return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitAll: ndev=%d is not in 1..%d", ndev, BS_MAX_RANKS);
  for (int i = 0; devlist && i < ndev; i++) {
    if (devlist[i] < 0)
      return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitAll: devlist[%d] = %d is not a device number", i,
                     devlist[i]);
    for (int j = 0; j < i; j++)
      if (devlist[j] == devlist[i])
        return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitAll: devlist[%d] and devlist[%d] are both device %d",
                       j, i, devlist[i]);
  }
  return xcclSuccess;
}

xcclResult_t xcclCommInitAll(xcclComm_t *comms, int ndev, const int *devlist) {
  config_load();
  if (!comms) return err_set(xcclInvalidArgument, LOG_INIT, "xcclCommInitAll: comms is NULL");
  TRY(init_all_check(ndev, devlist));
  xcclUniqueId uid;
  TRY(xcclGetUniqueId(&uid));
  bs_id_t id;
  char why[256];
  if (bs_id_decode(&uid, &id, why, sizeof(why)) != 0)
    return err_set(xcclInternalError, LOG_INIT, "xcclCommInitAll: its own unique id: %s", why);
  if (id.flags & BS_ID_ROOT_AT_RANK0) TRY(bootstrap_root_start(&id, config_double(CFG_TIMEOUT)));
  xcclComm_t *made = calloc((size_t)ndev, sizeof(*made));
  if (!made) return err_set(xcclSystemError, LOG_INIT, "xcclCommInitAll: out of memory for %d communicators", ndev);
  xcclResult_t res = xcclSuccess;
  int started = 0;
  for (; started < ndev && res == xcclSuccess; started++) {
    comm_opts_t opts = {.blocking = 1, .timeout_s = 0, .name = "", .cuda_dev = devlist ? devlist[started] : started};
    res = comm_start(&made[started], ndev, &id, started, started, &opts, 1);
    if (res != xcclSuccess) break;
  }
  char msg[ERR_MSG_MAX] = "";
  if (res != xcclSuccess) snprintf(msg, sizeof(msg), "%s", err_last());
  for (int i = 0; i < started; i++) { /* an abort stops the others' waits at once */
    if (res != xcclSuccess) atomic_store(&made[i]->abort_flag, 1);
    comm_init_join(made[i]);
    xcclResult_t r = atomic_load(&made[i]->init_result);
    if (r != xcclSuccess && res == xcclSuccess) {
      res = r;
      pthread_mutex_lock(&made[i]->err_lock);
      snprintf(msg, sizeof(msg), "%s", made[i]->last_error);
      pthread_mutex_unlock(&made[i]->err_lock);
      for (int j = 0; j < started; j++) atomic_store(&made[j]->abort_flag, 1);
    }
  }
  if (res != xcclSuccess) {
    for (int i = 0; i < started; i++) xcclCommAbort(made[i]);
    free(made);
    return err_set(res, LOG_INIT, "xcclCommInitAll of %d ranks: %s", ndev, msg);
  }
  memcpy(comms, made, sizeof(*made) * (size_t)ndev);
  free(made);
  return xcclSuccess;
}

/* ---- Finalize, revoke ---- */

int comm_wait_calls(struct xcclComm *comm, int mine, uint64_t deadline) {
  while (atomic_load(&comm->busy) > mine) {
    if (clock_expired(deadline)) return -1;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

xcclResult_t xcclCommFinalize(xcclComm_t comm) {
  TRY(comm_acquire(comm));
  int expect = COMM_READY;
  xcclResult_t res = xcclSuccess;
  if (!atomic_compare_exchange_strong(&comm->life, &expect, COMM_FINALIZED)) /* another thread got there first */
    res = err_set(xcclInvalidUsage, LOG_INIT, "xcclCommFinalize: communicator %p was finalized or revoked meanwhile",
                  (void *)comm);
  /* New operations are refused from here; those already issued (device
   * work in flight holds the communicator busy) finish. */
  if (res == xcclSuccess && comm_wait_calls(comm, 1, clock_deadline(comm->timeout_s)) != 0)
    res = err_set(xcclTimeout, LOG_INIT,
                  "xcclCommFinalize on rank %d: operations were still running after XCCL_TIMEOUT=%g s", comm->rank,
                  comm->timeout_s);
  if (res == xcclSuccess) INFO(INIT, "rank %d of %d: communicator %p finalized", comm->rank, comm->nranks, (void *)comm);
  comm_release(comm);
  return comm_record(comm, res);
}

xcclResult_t xcclCommRevoke(xcclComm_t comm, int flags) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t res = xcclSuccess;
  if (flags != 0) {
    res = err_set(xcclInvalidArgument, LOG_INIT, "xcclCommRevoke: flags is %d; it must be 0", flags);
    goto out;
  }
  if (atomic_exchange(&comm->life, COMM_REVOKED) == COMM_REVOKED) goto out; /* revoked already */
  /* As xcclCommAbort stops the calls in flight, but nothing is freed:
   * their errors say "revoked" (comm_record), and the flag is lowered once
   * they are gone, so that shrink and split can use the bootstrap. */
  atomic_store(&comm->revoked, 1);
  atomic_store(&comm->abort_flag, 1);
  slot_bell_ring(&comm->bell);
  if (comm->proxy) proxy_shutdown_connections(comm->proxy);
  char msg[SLOT_ERROR_MAX];
  snprintf(msg, sizeof(msg), "rank %d revoked its communicator", comm->rank);
  comm_break_shm(comm, msg);
  if (comm_wait_calls(comm, 1, clock_deadline(comm->timeout_s)) != 0) {
    res = err_set(xcclTimeout, LOG_INIT,
                  "xcclCommRevoke on rank %d: calls on other threads did not stop within XCCL_TIMEOUT=%g s",
                  comm->rank, comm->timeout_s);
    goto out;
  }
  atomic_store(&comm->abort_flag, 0);
  INFO(INIT, "rank %d of %d: communicator %p revoked", comm->rank, comm->nranks, (void *)comm);
out:
  comm_release(comm);
  return comm_record(comm, res);
}

/* ---- Queries ---- */

xcclResult_t xcclCommCuDevice(const xcclComm_t comm, int *device) {
  TRY(comm_acquire_in(comm, COMM_READY | COMM_FINALIZED | COMM_REVOKED));
  xcclResult_t r = xcclSuccess;
  if (!device)
    r = err_set(xcclInvalidArgument, LOG_COLL, "xcclCommCuDevice: device is NULL");
  else
    *device = comm_cuda_device(comm);
  comm_release(comm);
  return comm_record(comm, r);
}
