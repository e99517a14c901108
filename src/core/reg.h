/*
 * reg.h — buffers a communicator was told about: xcclCommRegister's
 * records (local) and xcclCommWindowRegister's windows (collective, with
 * every rank's size), kept on the communicator until deregistered or
 * destroyed, for transports that read and write them in place.
 */
#ifndef XCCL_CORE_REG_H
#define XCCL_CORE_REG_H

#include <stddef.h>

#include "xccl.h"

struct xcclComm;

/* One registration: the handle xcclCommRegister gives out. */
typedef struct comm_reg {
  struct xcclComm *comm;
  void *buff;
  size_t size;
  int shared; /* 1: inside an xcclMemAlloc allocation (mem.h), which peers on the host can map */
  struct comm_reg *next;
} comm_reg_t;

/* A window (xcclWindow_t). */
struct xcclWindow {
  struct xcclComm *comm;
  void *buff;
  size_t size;
  int flags;    /* XCCL_WIN_* */
  int shared;   /* as comm_reg_t's */
  int all_shared; /* every rank's window is shared: collectives on such windows may read peers' in place */
  int nranks;
  size_t *sizes; /* each rank's size, by rank */
  uint64_t id;   /* its place in comm's registrations: the same window has the same id on every rank */
  struct xcclWindow *next;
};

/* The registration of comm holding p..p+len, NULL when none. What it points
 * to stays valid while the caller holds comm (comm_acquire) and does not
 * deregister it itself. */
const comm_reg_t *reg_find(struct xcclComm *comm, const void *p, size_t len);
/* The same for windows. */
const struct xcclWindow *reg_find_window(struct xcclComm *comm, const void *p, size_t len);

/* The window of comm whose id is id, its buffer and size in *buff_p and
 * *size_p: 1; 0 when comm has none (deregistered here); -1 when this rank
 * has not registered that many windows yet (a peer's registration ended
 * first and it already puts into it). */
int reg_window_by_id(struct xcclComm *comm, uint64_t id, void **buff_p, size_t *size_p);
/* Whether win is one of comm's windows; its id and peer's size of it. */
int reg_window_peer(struct xcclComm *comm, const struct xcclWindow *win, int peer, uint64_t *id_p, size_t *size_p);

/* The buffer win was registered with, into *buff_p, if win is one of comm's
 * windows (the caller holds comm); xcclInvalidArgument naming it if not. */
xcclResult_t reg_window_buff(struct xcclComm *comm, const struct xcclWindow *win, void **buff_p);

/* registrations (issue 16): comm_free's, once nothing runs on comm: its
 * registrations and windows go (reg.c; its PreMulSum ops: redop_comm_free). */
void comm_ops_free(struct xcclComm *comm);

struct xcclComm;
/* Resume: the one-sided connections again, where the first window had
 * made them (and their progress thread). */
xcclResult_t win_rma_reconnect(struct xcclComm *comm);

#endif
