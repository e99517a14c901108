/* test_lanes.c — lane keys (lane.h) of a launch over several communicators
 * stay apart at every rank count: items on one lane run in issue order, so
 * two communicators sharing a key would run one's receives behind the
 * other's, and a key shared by two peers' receives would pair a message with
 * the wrong item. Keys once ran into the next communicator's from about
 * 49,500 ranks. */
#include <limits.h>

#include "algo.h"
#include "lane.h"
#include "test_util.h"

/* The highest and lowest key communicator ci uses with nranks ranks. */
static kern_lane_t lane_max(int ci, int nranks) { return kern_lane_p2p(ci, nranks - 1, 1); }
static kern_lane_t lane_min(int ci) { return kern_lane_comm(ci) + ALGO_LANE_CHANNEL; }

static void test_comms_apart(void) {
  static const int ranks[] = {2, 1000, 49500, 50000, 65536, 1 << 20, INT_MAX};
  for (size_t r = 0; r < sizeof(ranks) / sizeof(ranks[0]); r++)
    for (int ci = 0; ci < 4; ci++)
      CHECK(lane_max(ci, ranks[r]) < lane_min(ci + 1), "%d ranks: communicator %d's last lane %lld reaches %d's first %lld",
            ranks[r], ci, (long long)lane_max(ci, ranks[r]), ci + 1, (long long)lane_min(ci + 1));
  /* Many communicators in one group (ncclGroup over hundreds of comms). */
  CHECK(lane_max(4095, INT_MAX) < lane_min(4096), "communicator 4095 at INT_MAX ranks");
}

static void test_peers_apart(void) {
  static const int peers[] = {0, 1, 49999, 50000, INT_MAX - 1, INT_MAX};
  int n = (int)(sizeof(peers) / sizeof(peers[0]));
  for (int i = 0; i < n; i++) {
    CHECK(kern_lane_p2p(0, peers[i], 0) != kern_lane_p2p(0, peers[i], 1), "peer %d: send and receive share a lane",
          peers[i]);
    CHECK(kern_lane_p2p(1, peers[i], 0) > kern_lane_comm(1) + ALGO_LANE_PEERS2, "peer %d meets the algorithms' lanes",
          peers[i]);
    for (int j = i + 1; j < n; j++)
      for (int d = 0; d < 2; d++)
        for (int e = 0; e < 2; e++)
          CHECK(kern_lane_p2p(0, peers[i], d) != kern_lane_p2p(0, peers[j], e), "peers %d and %d share a lane",
                peers[i], peers[j]);
  }
}

int main(void) {
  test_comms_apart();
  test_peers_apart();
  return test_finish("lanes");
}
