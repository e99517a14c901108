/*
 * launch.h — how xcclCommInitFromEnv finds its job under the launchers
 * people use, when no XCCL_* variable says where the rendezvous is:
 *
 *  - torchrun (launch_torchrun.c): with its agent store
 *    (TORCHELASTIC_USE_AGENT_STORE=True, the default static rendezvous), rank
 *    0 makes a unique id and publishes it under a key of that c10d TCPStore,
 *    the others read it; the store's wire protocol is spoken by a small client
 *    here. Without the agent store (--standalone) rank 0 hosts the root at
 *    MASTER_ADDR:MASTER_PORT (init_env.c).
 *  - PMIx (launch_pmix.c): Open MPI's mpirun and srun --mpi=pmix serve it;
 *    libpmix is loaded at run time, so libxccl does not need it installed.
 *    Rank 0 puts its unique id, a fence collects it, the others get it.
 *  - Slurm without PMI (launch_slurm.c): rank 0 hosts the root on the first
 *    node of SLURM_STEP_NODELIST, at a port derived from the job and step ids.
 *
 * Every wait has a deadline of XCCL_TIMEOUT. `call` numbers a process's
 * calls of xcclCommInitFromEnv (0, 1, ...): every rank makes the same calls
 * in the same order, so the n-th call of each rank meets the n-th of the
 * others under its own key, port or PMIx key. `how` receives a few words
 * for the INFO line that says which rendezvous was used.
 */
#ifndef XCCL_CORE_LAUNCH_H
#define XCCL_CORE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_msg.h"
#include "xccl.h"

/* ---- torchrun's agent store (launch_torchrun.c) ---- */

/* Rank 0 makes a unique id (xcclGetUniqueId: the root runs on a thread of
 * this process) and sets it in the store, the others wait for it (XCCL_TIMEOUT)
 * and get it; which key, launch_torchrun.c says (not `call`: the store
 * counts arrivals itself). addr and port are MASTER_ADDR and MASTER_PORT.
 * *uid_p is written only on success. */
xcclResult_t launch_torch_store(const char *addr, const char *port, int rank, int nranks, xcclUniqueId *uid_p,
                                char *how, size_t howlen);

/* A store key: xccl/<run id>/<restart count>/<name>. */
void launch_torch_store_key(const char *run_id, const char *restart, const char *name, char *key, size_t keylen);

/* ---- PMIx (launch_pmix.c) ---- */

/* 1 when the environment says a PMIx server serves this process
 * (PMIX_NAMESPACE and PMIX_RANK are set). */
int launch_pmix_present(void);

/* NULL when PMIx can be used; else why not (compiled out, libpmix missing),
 * as a sentence for the message of a launch that then fails. */
const char *launch_pmix_unavailable(void);

/* Rank and size from PMIx, and the unique id rank 0 made, through a put,
 * a fence that collects it (XCCL_TIMEOUT) and a get. */
xcclResult_t launch_pmix(unsigned call, int *rank_p, int *nranks_p, xcclUniqueId *uid_p, char *how, size_t howlen);

/* ---- Slurm without PMI (launch_slurm.c) ---- */

/* Ports the Slurm rendezvous derives its root's port from: [MIN, MAX], below
 * Linux's ephemeral range (32768-60999) and clear of torch's 29500. */
#define LAUNCH_SLURM_PORT_MIN 21000
#define LAUNCH_SLURM_PORT_MAX 28999

/* The port of a job step's call: the same on every rank, different for the
 * next step and the next call (until the range wraps). */
uint16_t launch_slurm_port(uint64_t job, uint64_t step, unsigned call);

/* Slurm hostlist expressions ("node[01-03,7],gpu5", "rack[1-2]-n[1-4]"):
 * how many hosts one names, and the n-th (0-based, in Slurm's order: names
 * as listed, each bracket's ranges in order, the first bracket slowest).
 * Return the count / 0, or -1 with a sentence in why. */
int launch_hostlist_count(const char *list, char *why, size_t whylen);
int launch_hostlist_nth(const char *list, int n, char *out, size_t outlen, char *why, size_t whylen);

/* rank and nranks are SLURM_PROCID and SLURM_NTASKS. Rank 0 starts the root
 * (listening on every address of its host) and everyone gets the id whose
 * root is the step's first node (127.0.0.1 when the step has one node). */
xcclResult_t launch_slurm(unsigned call, int rank, int nranks, bs_id_t *id_p, char *how, size_t howlen);

/* ---- Shared (init_env.c) ---- */

/* The id of a job that meets at a known address: root, and the secret and
 * job number derived from XCCL_SECRET (secret; "" when unset) and text,
 * which every rank must give alike. */
void launch_id_derive(const char *secret, const char *text, const sock_addr_t *root, bs_id_t *id);

#endif
