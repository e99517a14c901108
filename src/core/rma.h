/*
 * rma.h — the one-sided calls (xcclPutSignal, xcclSignal, xcclWaitSignal,
 * rma.c) over the COMM_P2P_RMA connections, which the first window
 * registration makes between every pair (reg.c).
 *
 * A put is one stream message on the connection to its target: a header
 * (the window's id, the offset, the bytes, sigIdx, ctx and a check word
 * over them) with the first bytes of the data in the first slot, the rest
 * in the slots after it. A header or slot that does not check out fails
 * that peer's stream for good: nothing more from it is written, and every
 * wait on it fails. No
 * receive is posted for it: the target's progress thread and its own
 * one-sided calls consume the messages of its receive connections in
 * stream order, write each put's data into the window its id names and
 * then count the signal (peer, sigIdx, ctx), so a counted signal means the
 * data before it is in place. rma.c is the data path (comm layer, since
 * the first window starts it); rma_api.c the calls' checks (run layer).
 */
#ifndef XCCL_CORE_RMA_H
#define XCCL_CORE_RMA_H

#include <stddef.h>
#include <stdint.h>

#include "xccl.h"

struct xcclComm;
struct xcclWindow;
struct comm_rma;

/* comm's one-sided state (signals, per-connection locks), made at the
 * first need; xcclSystemError when out of memory. */
xcclResult_t rma_state(struct xcclComm *comm, struct comm_rma **r_p);
/* With the connections made (reg.c, the first window): the state and the
 * thread that consumes incoming puts while the rank does something else. */
xcclResult_t rma_start(struct xcclComm *comm);

/* A checked put of bytes at data into peer's window win (id win_id) at
 * offset, then signal (sig, ctx); win NULL: the signal alone. Returns once
 * data may be reused; to oneself, once it is in the window. */
xcclResult_t rma_issue(struct xcclComm *comm, int peer, const struct xcclWindow *win, uint64_t win_id,
                       size_t offset, const void *data, size_t bytes, int sig, int ctx, const char *fn);
/* Checked descriptors: waits for each one's signals, then consumes them
 * (nothing when it fails). */
xcclResult_t rma_wait(struct xcclComm *comm, int nd, const xcclWaitSignalDesc_t *d, const char *fn);

/* comm_free, first: the progress thread ends (joined). */
void rma_comm_stop(struct xcclComm *comm);

/* xcclCommDestroy, before anything is torn down: the network takes the
 * puts this rank returned from before the proxy stops (rma.c). */
void rma_comm_flush(struct xcclComm *comm);
/* xcclCommWindowDeregister: puts still arriving into that window drop the
 * rest of their data (said by the next wait). */
void rma_window_gone(struct xcclComm *comm, const void *buff, size_t size);
/* XCCL_SUSPEND_MEM, every rank in it: every put sent to this rank is
 * consumed and this rank's own are taken by the network (an all-gather of
 * counts); then the connections may go. */
xcclResult_t rma_comm_quiesce(struct xcclComm *comm);
/* After the one-sided connections were made again: no put is open. */
void rma_comm_reset(struct xcclComm *comm);
/* Frees comm's one-sided state (comm_free, once nothing runs on comm). */
void rma_comm_free(struct xcclComm *comm);

#endif
