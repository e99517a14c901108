/*
 * bootstrap.h — how ranks find each other before any transport exists.
 *
 * The root (a thread in the process that called xcclGetUniqueId, or rank 0
 * for jobs started from XCCL_ROOT) admits ranks that prove knowledge of the
 * secret, then tells each one every rank's bootstrap address. From then on
 * ranks talk by authenticated point-to-point messages, each on its own TCP
 * connection to the receiver's bootstrap listener; bootstrap_allgather
 * exchanges over them whatever the communicator needs (transport handles,
 * host names) in ceil(log2 nranks) rounds. Every wait has a deadline; a rank
 * that never shows up is named in the error every other rank gets.
 */
#ifndef XCCL_CORE_BOOTSTRAP_H
#define XCCL_CORE_BOOTSTRAP_H

#include <stdatomic.h>

#include "bootstrap_msg.h"

typedef struct bootstrap bootstrap_t;

/* Starts the root's listener on addr (port 0: any) and its thread. Writes the
 * bound address back to id->root. The thread ends by itself. */
xcclResult_t bootstrap_root_start(bs_id_t *id, double timeout_s);
/* Waits until no root this process started is running (each ends once its
 * ranks are introduced, or at its deadline), timeout_s at most; how many
 * still run. A process that hosts roots for others must not exit before. */
int bootstrap_roots_wait(double timeout_s);

/* Joins the job as rank of nranks. On failure nothing is left open. */
xcclResult_t bootstrap_init(const bs_id_t *id, int rank, int nranks, double timeout_s,
                            const _Atomic int *abort_flag, bootstrap_t **bs_p);

/* The deadline of later sends, receives and allgathers (init's was timeout_s). */
void bootstrap_set_timeout(bootstrap_t *bs, double timeout_s);

/* Collective: every rank calls it, in the same order as its other
 * all-gathers, with the same size. all holds nranks blocks of `size` bytes;
 * this rank's block is filled in; on success every block is. Bruck's
 * algorithm over point-to-point messages: ceil(log2 nranks) rounds, in each
 * of which a rank sends to one rank and receives from another, the whole
 * exchange moving (nranks - 1) * size bytes into each rank. Each round waits
 * at most the bootstrap's timeout and stops when its abort flag is set. On
 * failure the error names the peer (and says so when ranks passed different
 * sizes); the blocks not yet received are left as they were. */
xcclResult_t bootstrap_allgather(bootstrap_t *bs, void *all, size_t size);
/* The ranks rank of nranks sends to in bootstrap_allgather's rounds (rank -
 * 2^j mod nranks), written to to[] (ceil(log2 nranks) <= 32 of them, all
 * different); returns how many. */
int bootstrap_allgather_sends_to(int nranks, int rank, int *to);
/* Rounds the last bootstrap_allgather of bs completed (for tests and logs). */
int bootstrap_allgather_rounds(const bootstrap_t *bs);

/*
 * Point-to-point: bootstrap_send delivers size bytes to peer under tag (it
 * connects to the peer's bootstrap port and needs nothing of the peer but
 * its listener, so sends never wait on each other); bootstrap_recv returns
 * the message from peer with that tag, of exactly size bytes, keeping others
 * that arrive meanwhile for later calls. Both wait at most XCCL_TIMEOUT.
 */
xcclResult_t bootstrap_send(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size);
xcclResult_t bootstrap_recv(bootstrap_t *bs, int peer, uint32_t tag, void *data, size_t size);
/* bootstrap_send with the caller's deadline (clock_ns based) instead of XCCL_TIMEOUT from now. */
xcclResult_t bootstrap_send_by(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size,
                               uint64_t deadline);
/* Waits until deadline for the oldest message under any of tags, from any
 * peer, and hands it over: *data_p (malloc'ed, the caller frees it) of
 * *size_p bytes, its sender and tag. Keeps others as bootstrap_recv does. */
xcclResult_t bootstrap_recv_any(bootstrap_t *bs, const uint32_t *tags, int ntags, uint64_t deadline, int *peer_p,
                                uint32_t *tag_p, void **data_p, size_t *size_p);
/* Serves the listener without waiting: accepts and reads what peers are
 * sending now, keeping whole messages for bootstrap_recv. A rank that waits
 * on something else (a transport's connect or accept) calls it in its loop,
 * or a peer whose bootstrap_send needs it waits until its deadline. */
void bootstrap_serve(bootstrap_t *bs);

/*
 * The agreement behind xcclCommShrink, over point-to-point messages of bs
 * only (no data connection, so it works after those failed): the ranks
 * not in exclude (ascending, distinct, n < nranks, this rank not among
 * them) check that they all pass the same list and get the id of a new
 * bootstrap for themselves. The lowest of them leads: it
 * collects every other's list, starts a fresh root (as xcclGetUniqueId does,
 * on the address of its own bootstrap listener) and answers each with the
 * root's address, a new job and a salt; the new secret is derived from the
 * old one and the salt (bs_derive_child_secret), so it never travels.
 *
 * Disagreement ends in an error on every rank that took part instead of a
 * hang: a survivor whose list differs fails them all (xcclInvalidUsage); a
 * rank that the leader's list removes gets xcclInvalidArgument; survivors
 * that never ask are named after timeout_s + 5 s (xcclTimeout). The leader
 * waits timeout_s + 5 s for the others, the others 2 * timeout_s + 5 s for
 * its answer (their failed operations may end up to timeout_s apart); all stop when
 * *abort_flag of bs is set. On success *id_p is filled; on failure it is
 * untouched, and bs stays usable.
 */
xcclResult_t bootstrap_shrink(bootstrap_t *bs, const int *exclude, int n, double timeout_s, bs_id_t *id_p);

/*
 * The agreement behind xcclCommSplit, over point-to-point messages of bs
 * only: every rank passes its color (>= 0, or XCCL_SPLIT_NOCOLOR) and key;
 * rank 0 collects them, orders each color's ranks by (key, rank), starts a
 * root per color in its own process (as xcclGetUniqueId does; it serves
 * until the new communicators have met, or timeout_s) and answers each rank.
 * *out_p: the new communicator's size (0 for no color), this rank's place
 * in it and the id to init with. Rank 0 waits timeout_s for the others and
 * names those that never call (xcclTimeout, on every rank that did); the
 * others wait 2 * timeout_s + 5 s; all stop when *abort_flag of bs is set.
 * On failure *out_p is untouched and bs stays usable.
 */
typedef struct {
  int nranks;
  int rank;
  bs_id_t id;
} bs_split_t;
xcclResult_t bootstrap_split(bootstrap_t *bs, int color, int key, double timeout_s, bs_split_t *out_p);

/* A 32-byte key for the purpose `label` names, derived (HKDF, bs_hkdf) from
 * this communicator's secret, and from the program's pre-shared key before
 * it when xcclSetEncryption gave one: the same on every rank of the
 * communicator, unrelated to any other's. -1 when OpenSSL fails. */
int bootstrap_derive_key(const bootstrap_t *bs, const char *label, uint8_t key[32]);


/* Where a rank's bootstrap listened (for messages). */
const sock_addr_t *bootstrap_addr(const bootstrap_t *bs, int rank);

void bootstrap_close(bootstrap_t *bs);

#endif
