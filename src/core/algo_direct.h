/*
 * algo_direct.h — ALGO_DIRECT's part of init: the ranks of one host read each other's
 * buffers (algo_direct.c).
 */
#ifndef XCCL_CORE_ALGO_DIRECT_H
#define XCCL_CORE_ALGO_DIRECT_H

#include "comm.h"

/* ALGO_DIRECT's part of init (algo_direct.c). Before the peer info is
 * all-gathered: the probe a peer reads, and the ptrace permission. */
void direct_before_allgather(struct xcclComm *comm, comm_peer_info_t *me);
/* XCCL_SHM_COPY is a word it knows. */
xcclResult_t direct_check_config(void);
/* After: comm->site, and whether the ranks read each other (one more
 * all-gather, where every rank is on this host). shm_used: shared memory is
 * allowed (neither XCCL_SHM_DISABLE nor XCCL_TRANSPORT=socket). */
xcclResult_t direct_setup(struct xcclComm *comm, int shm_used);

#endif
