/*
 * registry.h — the table of live communicator handles that comm_acquire looks in
 * (comm_handle.c), for init and teardown only.
 */
#ifndef XCCL_CORE_REGISTRY_H
#define XCCL_CORE_REGISTRY_H

#include "comm.h"

/* The registry of live handles (comm_handle.c), for init and teardown
 * (comm.c): add makes a handle live; remove takes it out (0 when it was not
 * live); bury keeps the freed struct's address out of malloc's reach,
 * remembering how it went ("destroyed", "aborted"); refuse_locked is the
 * sentence for a handle that is not live. */
xcclResult_t registry_add(struct xcclComm *comm);
int registry_remove(struct xcclComm *comm);
void registry_bury(struct xcclComm *comm, const char *how);
xcclResult_t registry_refuse_locked(const void *comm);

/* Waits for comm's background init, if one runs (any thread; once joined,
 * returns at once; comm_handle.c). */
void comm_init_join(struct xcclComm *comm);

#endif
