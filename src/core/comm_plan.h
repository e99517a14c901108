/*
 * comm_plan.h — a communicator's rings from the topology (comm_plan.c).
 */
#ifndef XCCL_CORE_COMM_PLAN_H
#define XCCL_CORE_COMM_PLAN_H

#include "comm.h"

/* This host's topology for the planner: XCCL_TOPO_FILE's, else the live
 * machine's; NULL when there is none. Loaded once per process and shared,
 * read-only (comm_plan.c). */
struct topo_system;
const struct topo_system *comm_plan_topology(void);
/* The rings (issue 24), once the peer info is all-gathered: plans this host
 * (sys may be NULL), all-gathers every rank's place, joins the rings; then
 * comm->nchannels, ring, ring_pos, channels (each with its neighbours),
 * chan_dev and chan_send_dev. Collective over all ranks (comm_plan.c). */
xcclResult_t comm_plan_rings(struct xcclComm *comm, const struct topo_system *sys);

#endif
