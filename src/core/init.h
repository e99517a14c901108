/*
 * init.h — making a communicator (the "init" layer of src/core, the top:
 * comm.c, lifecycle.c, split.c, grow.c, shrink.c, init_env.c).
 */
#ifndef XCCL_CORE_INIT_H
#define XCCL_CORE_INIT_H

#include "comm.h"

/* How a communicator is made: a checked config's values (lifecycle.c). */
typedef struct {
  int blocking;
  double timeout_s; /* <= 0: XCCL_TIMEOUT */
  char name[COMM_NAME_BYTES];
  char algo[COMM_ALGO_BYTES]; /* config->algo, "" when none: XCCL_ALGO */
  int cuda_dev; /* >= 0: made current on the init's thread first (xcclCommInitAll) */
} comm_opts_t;

/* Collective init once the id is decoded (comm.c). */
xcclResult_t comm_init(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank);
/* The same for a communicator made by xcclCommShrink: XCCL_FAULT rules keep
 * matching job_rank in this process, so a rule aimed at one process does not
 * move to the one that inherits its rank number. */
xcclResult_t comm_init_shrunk(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank, int job_rank);

/*
 * The lifecycle's way in (issue 16): makes a communicator with opts. With
 * background = 0, *comm_p is written once it is ready, as comm_init does.
 * With background = 1 the handle is written at once, live but
 * COMM_INITIALIZING, and a thread runs the init (xcclCommGetAsyncError
 * tells when it ends). job_rank as comm_init_shrunk's.
 */
xcclResult_t comm_start(xcclComm_t *comm_p, int nranks, const bs_id_t *id, int rank, int job_rank,
                        const comm_opts_t *opts, int background);
/* Checks a user's config into *opts (NULL: the defaults). fn for messages. */
xcclResult_t comm_opts_from_config(const char *fn, const xcclConfig_t *config, comm_opts_t *opts);
/* A derived communicator's options: config's, or (NULL) parent's (lifecycle.c). */
xcclResult_t comm_opts_inherit(const char *fn, const struct xcclComm *parent, const xcclConfig_t *config,
                               comm_opts_t *o);

/* Where two ranks of comm share a process (comm->shares_process, set
 * here), every algorithm's connections, made now: the one thread that
 * drives them could not make them lazily (comm.c; init and xcclCommResume). */
xcclResult_t comm_connect_algos(struct xcclComm *comm);

/* Waits until no call but the caller's own runs on comm (busy <= mine), at
 * most until deadline: 0 once idle, -1 past it (lifecycle.c). */
int comm_wait_calls(struct xcclComm *comm, int mine, uint64_t deadline);

/* A new random id with a root serving it in this process for timeout_s
 * (xcclGetUniqueId, xcclCommGetUniqueId; unique_id.c). id's other fields
 * (flags, parent) are the caller's, set before. */
xcclResult_t unique_id_fresh(bs_id_t *id, double timeout_s);

#endif
