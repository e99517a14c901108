/*
 * bootstrap.h — how ranks find each other before any transport exists.
 *
 * The root (a thread in the process that called xcclGetUniqueId, or rank 0
 * for jobs started from XCCL_ROOT) admits ranks that prove knowledge of the
 * secret, then tells each one every rank's bootstrap address. Ranks then form
 * a ring of authenticated TCP connections, over which bootstrap_allgather
 * exchanges whatever the communicator needs (transport handles, host names).
 * Every wait has a deadline; a rank that never shows up is named in the error
 * every other rank gets.
 */
#ifndef XCCL_CORE_BOOTSTRAP_H
#define XCCL_CORE_BOOTSTRAP_H

#include <stdatomic.h>

#include "bootstrap_msg.h"

typedef struct bootstrap bootstrap_t;

/* Starts the root's listener on addr (port 0: any) and its thread. Writes the
 * bound address back to id->root. The thread ends by itself. */
xcclResult_t bootstrap_root_start(bs_id_t *id, double timeout_s);

/* Joins the job as rank of nranks. On failure nothing is left open. */
xcclResult_t bootstrap_init(const bs_id_t *id, int rank, int nranks, double timeout_s,
                            const _Atomic int *abort_flag, bootstrap_t **bs_p);

/* all holds nranks blocks of `size` bytes; this rank's block is filled in;
 * on return every block is. */
xcclResult_t bootstrap_allgather(bootstrap_t *bs, void *all, size_t size);

/*
 * Point-to-point: bootstrap_send delivers size bytes to peer under tag (it
 * connects to the peer's bootstrap port and needs nothing of the peer but
 * its listener, so sends never wait on each other); bootstrap_recv returns
 * the message from peer with that tag, of exactly size bytes, keeping others
 * that arrive meanwhile for later calls. Both wait at most XCCL_TIMEOUT.
 */
xcclResult_t bootstrap_send(bootstrap_t *bs, int peer, uint32_t tag, const void *data, size_t size);
xcclResult_t bootstrap_recv(bootstrap_t *bs, int peer, uint32_t tag, void *data, size_t size);
/* Serves the listener without waiting: accepts and reads what peers are
 * sending now, keeping whole messages for bootstrap_recv. A rank that waits
 * on something else (a transport's connect or accept) calls it in its loop,
 * or a peer whose bootstrap_send needs it waits until its deadline. */
void bootstrap_serve(bootstrap_t *bs);

/* Where a rank's bootstrap listened (for messages). */
const sock_addr_t *bootstrap_addr(const bootstrap_t *bs, int rank);

void bootstrap_close(bootstrap_t *bs);

#endif
