/*
 * comm_observe.h — the observers' hook table (comm_obs_v1_t, comm.h):
 * in-flight dumps (comm_dump.h), XCCL_STATS_FILE's counters (comm_stats.h)
 * and XCCL_TRACE's timeline (comm_trace.h) behind the hooks the
 * communicator and run layers call.
 */
#ifndef XCCL_CORE_COMM_OBSERVE_H
#define XCCL_CORE_COMM_OBSERVE_H

#include "comm.h"

extern const comm_obs_v1_t comm_observe_v1;

#endif
