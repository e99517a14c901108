/*
 * lane.h — the keys of lanes. Work items on one lane run in issue order;
 * items on different lanes interleave (host_engine.h; on a GPU, one thread
 * block per lane). A launch numbers the communicators it touches 0, 1, ...;
 * each communicator owns the keys [ci << KERN_LANE_COMM_SHIFT, (ci + 1) <<
 * KERN_LANE_COMM_SHIFT): below KERN_LANE_P2P the algorithms' lanes (algo.h's
 * ALGO_LANE_*), from it two per peer, one per direction. The shift leaves
 * room for every peer of a communicator of INT_MAX ranks, so no two
 * communicators' keys meet at any rank count.
 */
#ifndef XCCL_KERN_LANE_H
#define XCCL_KERN_LANE_H

#include <limits.h>
#include <stdint.h>

typedef int64_t kern_lane_t;

#define KERN_LANE_COMM_SHIFT 34
#define KERN_LANE_P2P 1000 /* first point-to-point key of a communicator */

_Static_assert(KERN_LANE_P2P + 2 * (int64_t)INT_MAX + 1 < ((int64_t)1 << KERN_LANE_COMM_SHIFT),
               "a communicator's point-to-point lanes fit below the next communicator's first");

/* The first key of communicator number ci (0 <= ci < 2^29) in a launch. */
static inline kern_lane_t kern_lane_comm(int ci) { return (kern_lane_t)ci << KERN_LANE_COMM_SHIFT; }

/* The lane of communicator ci's point-to-point traffic with peer: sends
 * (recv 0) and receives (recv 1) on lanes of their own. */
static inline kern_lane_t kern_lane_p2p(int ci, int peer, int recv) {
  return kern_lane_comm(ci) + KERN_LANE_P2P + 2 * (kern_lane_t)peer + (recv != 0);
}

#endif
