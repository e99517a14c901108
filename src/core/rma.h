/*
 * rma.h — the one-sided calls (xcclPutSignal, xcclSignal, xcclWaitSignal,
 * rma.c) over the COMM_P2P_RMA connections, which the first window
 * registration makes between every pair (reg.c).
 *
 * A put is one stream message on the connection to its target: a header
 * (the window's id, the offset, the bytes, sigIdx, ctx) with the first
 * bytes of the data in the first slot, the rest in the slots after it. No
 * receive is posted for it: the target's one-sided calls consume the
 * messages of its receive connections in stream order, write each put's
 * data into the window its id names and then count the signal (peer,
 * sigIdx, ctx), so a counted signal means the data before it is in place.
 */
#ifndef XCCL_CORE_RMA_H
#define XCCL_CORE_RMA_H

struct xcclComm;

/* xcclCommDestroy, before anything is torn down: the network takes the
 * puts this rank returned from before the proxy stops (rma.c). */
void rma_comm_flush(struct xcclComm *comm);
/* Frees comm's one-sided state (comm_free, once nothing runs on comm). */
void rma_comm_free(struct xcclComm *comm);

#endif
