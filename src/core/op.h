/*
 * op.h — the one preparation step of a call. An entry point (enqueue.c)
 * acquires its communicator once and hands the user's arguments here; the
 * call is checked once, every refusal's sentence is written once (below),
 * and the op record (group_op_t, its coll_args_t) is filled with what the
 * layers below read instead of deriving it again: the element size, the
 * bytes, the operation's number, the algorithm and the ring channels.
 *
 * Every function here is called holding the communicator (comm_acquire);
 * fn is the call's name as messages give it ("allreduce", "send",
 * "xcclCommGetAlgorithm"). A refusal is xcclInvalidArgument (or, for a
 * failed communicator, xcclInvalidUsage) with a sentence that names fn;
 * the caller records it on the communicator (comm_record).
 */
#ifndef XCCL_CORE_OP_H
#define XCCL_CORE_OP_H

#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "ring_schedule.h"

/* ---- The checks, each sentence once ---- */

/* type is one of xccl's; its element size in *esize_p (the one place a call
 * derives it). */
xcclResult_t op_check_type(const char *fn, xcclDataType_t type, size_t *esize_p);
/* r (what: "root", "peer") is a rank of a communicator of nranks. */
xcclResult_t op_check_rank(const char *fn, const char *what, int r, int nranks);
/* count elements of esize bytes, times `times` (ranks' blocks), fit in half
 * the address space. */
xcclResult_t op_check_count(const char *fn, size_t count, size_t esize, size_t times, xcclDataType_t type);
/* The buffer `what` the call moves elems elements of esize through: not
 * NULL and aligned to the element size (nothing to check when elems is 0). */
xcclResult_t op_check_buffer(const char *fn, const char *what, const void *p, size_t elems, size_t esize);
/* comm can take the call: not failed, and no stream given to a build
 * without CUDA. */
xcclResult_t op_check_usable(const char *fn, const struct xcclComm *comm, void *stream);

/* Numbers a call (res: its checks' verdict) into *seq_p. Under XCCL_CHECK
 * every rank's call is first compared with every other's (check.h), a
 * refused one included as "(refused)", so that the others learn of it at
 * once instead of waiting for it. op and root: -1 where there is none.
 * Returns res, or the comparison's refusal; *seq_p is written on success. */
xcclResult_t op_number(struct xcclComm *comm, xcclResult_t res, const char *fn, size_t count, xcclDataType_t type,
                       int op, int root, uint64_t *seq_p);

/* The algorithm for coll of `bytes` (count * esize), its buffers in windows
 * every rank shares (in_windows) or not; the last answer is kept in comm's
 * op_memo (op.c). */
algo_t op_pick(struct xcclComm *comm, coll_kind_t coll, size_t bytes, int in_windows);

/* The derived sizes of a whose type has esize bytes, on a communicator of
 * comm_nchannels ring channels. */
static inline void op_coll_sizes(coll_args_t *a, size_t esize, int comm_nchannels) {
  a->esize = esize;
  a->bytes = a->count * esize;
  a->nchannels = ring_nchannels_for(a->bytes, comm_nchannels);
}

/* ---- Preparing a call ---- */

/*
 * A collective: op->coll holds the user's name, coll, sendbuff, recvbuff,
 * count (per rank for all-gather and reduce-scatter), type, op and root.
 * Checks them, resolves a PreMulSum op (redop.h), sets this rank's
 * send_elems and recv_elems (and drops the buffer a non-root does not use),
 * asks CUDA where the buffers live (*on_device_p, CUDA builds), numbers
 * the call, picks its algorithm and channels and counts it in the stats.
 * Every other field of *op is set. On a refusal *op is partly filled and
 * must not be submitted.
 */
xcclResult_t op_prepare_coll(struct xcclComm *comm, group_op_t *op, void *stream, int *on_device_p);

/*
 * A send or receive: op->kind, op->peer, op->buf and op->coll's name, count
 * and type set by the caller. seq 0: the user's own call, checked and
 * numbered here. Otherwise one part of a collective made of sends and
 * receives that was checked as a whole (seq its number, op->coll.esize its
 * element size): only completed.
 * Then as op_prepare_coll: every field set, *on_device_p from CUDA.
 */
xcclResult_t op_prepare_p2p(struct xcclComm *comm, group_op_t *op, void *stream, uint64_t seq, int *on_device_p);

#endif
