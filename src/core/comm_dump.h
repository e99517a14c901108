/*
 * comm_dump.h — a communicator's in-flight state record: which operation it
 * is in and whom it waits on, kept current by the calls below (the caller
 * and the engine's kern_state_t), collected into src/observe/dump.h's
 * dump_info_t and written as JSON there when an operation fails with a
 * timeout or a broken connection, and on XCCL_DUMP_SIGNAL (the observe
 * layer's watcher thread asks for every registered record). The format, the
 * files and the signal path are documented in src/observe/dump.h.
 */
#ifndef XCCL_CORE_COMM_DUMP_H
#define XCCL_CORE_COMM_DUMP_H

#include <stdint.h>

#include "comm.h"
#include "dump.h"
#include "op_record.h"

/* Gives comm its state record (comm->dump, comm->env.state) and makes it
 * visible to XCCL_DUMP_SIGNAL; the first call in the process reads the dump
 * settings (dump_start). Call once comm's peers, ring and rank are known.
 * comm_id names the communicator's files (the same on every rank). Fails
 * only when out of memory. */
xcclResult_t dump_register(struct xcclComm *comm, uint64_t comm_id);
/* Takes the record away (after a dump of it under way on the watcher thread
 * ends). Safe when dump_register never ran or failed. */
void dump_unregister(struct xcclComm *comm);

/* The operations of comm among ops[0..n-1] wait for their connections to
 * be made (the first use of a peer): the record names those peers, with
 * channel -1, until dump_connect_end. */
void dump_connect_begin(struct xcclComm *comm, const group_op_t *ops, int n);
void dump_connect_end(struct xcclComm *comm);

/* The operation failed: f is the kernel's failure, here 1 when it happened on
 * this communicator (0: on another of the group), msg the error sentence.
 * Records the failure and, for a timeout or a connection error, writes the
 * dump and logs its path at WARN. */
void dump_op_failed(struct xcclComm *comm, const kern_failure_t *f, int here, const char *msg);

#endif
