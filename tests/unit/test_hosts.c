/*
 * test_hosts.c — the host layout a communicator computes once from its
 * peers' info (comm->hosts, comm.c's comm_hosts_make: hier_layout_make over
 * the peer info's host_hash), for patterns of hosts: one host, one rank per
 * host, hosts interleaved, uneven hosts, and more hosts than the layout's
 * first hash table has slots. Each is checked against the plain definition:
 * hosts numbered in order of their lowest rank, a host's ranks in rank
 * order.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "test_util.h"

/* The layout of the ranks whose host i is host[i], laid over peer info as
 * init has it (the same stride). */
static const hier_layout_t *layout_of(const int *host, int n, comm_peer_info_t *peers, void *mem) {
  for (int r = 0; r < n; r++)
    peers[r] = (comm_peer_info_t){.rank = r, .host_hash = 0x9e3779b97f4a7c15ull * (uint64_t)(host[r] + 1) ^ 77};
  return hier_layout_make(n, &peers[0].host_hash, sizeof(*peers), mem);
}

static void check_pattern(const char *what, const int *host, int n) {
  comm_peer_info_t *peers = calloc((size_t)n, sizeof(*peers));
  void *mem = malloc(hier_layout_bytes(n));
  int *want_host = malloc(sizeof(int) * (size_t)n), *seen = malloc(sizeof(int) * (size_t)n);
  CHECK(peers && mem && want_host && seen, "out of memory");
  if (!peers || !mem || !want_host || !seen) goto out;
  const hier_layout_t *l = layout_of(host, n, peers, mem);
  struct xcclComm comm = {.rank = 0, .nranks = n, .hosts = l};
  /* The definition: hosts in order of their lowest rank. */
  int nhosts = 0, shards = 0;
  for (int r = 0; r < n; r++) {
    want_host[r] = -1;
    for (int q = 0; q < r && want_host[r] < 0; q++)
      if (host[q] == host[r]) want_host[r] = want_host[q];
    if (want_host[r] < 0) want_host[r] = nhosts++;
  }
  CHECK(l->nranks == n && l->nhosts == nhosts, "%s: %d ranks on %d hosts, want %d on %d", what, l->nranks, l->nhosts,
        n, nhosts);
  memset(seen, 0, sizeof(int) * (size_t)n);
  for (int r = 0; r < n; r++) {
    int h = want_host[r], local = 0, size = 0;
    for (int q = 0; q < n; q++) size += want_host[q] == h, local += q < r && want_host[q] == h;
    shards = size > shards ? size : shards;
    CHECK(l->host_of[r] == h, "%s: rank %d on host %d, want %d", what, r, l->host_of[r], h);
    CHECK(l->local_of[r] == local, "%s: rank %d is local rank %d, want %d", what, r, l->local_of[r], local);
    CHECK(hier_host_size(l, h) == size, "%s: host %d has %d ranks, want %d", what, h, hier_host_size(l, h), size);
    CHECK(hier_host_ranks(l, h)[local] == r, "%s: host %d's local rank %d is rank %d, want %d", what, h, local,
          hier_host_ranks(l, h)[local], r);
    seen[r]++;
    for (int q = 0; q < n; q++)
      CHECK(comm_same_host(&comm, r, q) == (host[r] == host[q]), "%s: ranks %d and %d: same host %d, want %d", what,
            r, q, comm_same_host(&comm, r, q), host[r] == host[q]);
  }
  CHECK(l->shards == shards, "%s: most ranks on a host %d, want %d", what, l->shards, shards);
  CHECK(l->host_first[0] == 0 && l->host_first[l->nhosts] == n, "%s: host_first spans %d..%d, want 0..%d", what,
        l->host_first[0], l->host_first[l->nhosts], n);
  for (int r = 0; r < n; r++) CHECK(seen[r] == 1, "%s: rank %d listed %d times", what, r, seen[r]);
out:
  free(peers);
  free(mem);
  free(want_host);
  free(seen);
}

int main(void) {
  static const int one_host[] = {5, 5, 5, 5};
  static const int one_each[] = {3, 1, 4, 0, 2};
  static const int interleaved[] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  static const int uneven[] = {7, 7, 7, 9, 7, 8, 8}; /* 4, 1 and 2 ranks, host 7's split by the others */
  check_pattern("one host", one_host, 4);
  check_pattern("one rank per host", one_each, 5);
  check_pattern("hosts interleaved", interleaved, 9);
  check_pattern("uneven hosts", uneven, 7);
  check_pattern("one rank", one_host, 1);
  /* More hosts than the first table's 16 slots, ranks of a host scattered. */
  enum { N = 300 };
  int many[N];
  for (int r = 0; r < N; r++) many[r] = (r * 7) % 37;
  check_pattern("37 hosts of 300 ranks", many, N);
  return test_finish("hosts");
}
