/*
 * bootstrap_allgather.c — bootstrap_allgather: Bruck's all-gather over the
 * bootstrap's point-to-point messages, ceil(log2 k) rounds for any k.
 *
 * Rank r holds a run of blocks that starts at its own: r, r+1, ..., r+have-1
 * (mod k), have = 1 at first. In round i (d = 2^i, so have = d) it sends the
 * first cnt = min(d, k - d) blocks of its run to rank r - d, and receives cnt
 * from rank r + d: that rank's first blocks, r+d, ..., which extend the run
 * to have + cnt. After the last round the run is all k blocks. Blocks stay in
 * place in the caller's array; a run that passes block k-1 wraps to 0.
 *
 * Each message is one bootstrap_send (its own authenticated connection: the
 * receiver's challenge, then a frame MAC'ed with the job's secret under that
 * nonce), so every wait is bounded by the bootstrap's deadline and stops on
 * its abort flag, and the peer is named in every error. A message carries
 * the sender's block size first, so ranks that disagree on it fail at once
 * naming each other. A round's bytes above ag_chunk_max go in several
 * messages. Tags hold the call's number, the round and the chunk, so a rank
 * that has already moved on to the next all-gather cannot be mistaken for
 * one still in this one.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap_conn.h"
#include "clock.h"
#include "error.h"
#include "log.h"

#define AG_HDR 8 /* the sender's block size, u64 */
#define AG_MAX_CHUNKS 128
/* 'A' | call (12 bits) | round (5 bits) | chunk (7 bits): no other bootstrap tag starts with 0x41. */
#define AG_TAG(call, round, chunk) \
  (0x41000000u | ((uint32_t)(call)&0xfffu) << 12 | (uint32_t)(round) << 7 | (uint32_t)(chunk))
/* Room for the point-to-point header and ours in one frame. */
#define AG_CHUNK_DEFAULT ((size_t)BS_MAX_PAYLOAD - 64)

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int ceil_log2(int k) {
  int n = 0;
  while ((1 << n) < k) n++;
  return n;
}

/* Copies len bytes between buf and the run of blocks that starts at byte
 * `at` of the whole array (total bytes), wrapping at its end. */
static void run_copy(uint8_t *all, size_t total, size_t at, uint8_t *buf, size_t len, int to_all) {
  while (len > 0) {
    at %= total;
    size_t n = total - at < len ? total - at : len;
    if (to_all)
      memcpy(all + at, buf, n);
    else
      memcpy(buf, all + at, n);
    at += n, buf += n, len -= n;
  }
}

/* Sends bytes [at, at + bytes) of the array, as a run, to peer. */
static xcclResult_t ag_send(bootstrap_t *bs, int peer, int round, uint8_t *all, size_t total, size_t at,
                            size_t bytes, size_t size, uint8_t *msg, size_t chunk, uint64_t deadline) {
  for (size_t off = 0, c = 0; off < bytes || (bytes == 0 && c == 0); off += chunk, c++) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    put64(msg, size);
    run_copy(all, total, at + off, msg + AG_HDR, len, 0);
    TRY(bootstrap_send_by(bs, peer, AG_TAG(bs->ag_calls, round, c), msg, AG_HDR + len, deadline));
  }
  return xcclSuccess;
}

/* Receives bytes [at, at + bytes) of the array, as a run, from peer. */
static xcclResult_t ag_recv(bootstrap_t *bs, int peer, int round, uint8_t *all, size_t total, size_t at,
                            size_t bytes, size_t size, size_t chunk, uint64_t deadline) {
  for (size_t off = 0, c = 0; off < bytes || (bytes == 0 && c == 0); off += chunk, c++) {
    size_t len = bytes - off < chunk ? bytes - off : chunk;
    uint8_t *data = NULL;
    size_t got = 0;
    TRY(bootstrap_recv_msg(bs, peer, AG_TAG(bs->ag_calls, round, c), deadline, (void **)&data, &got));
    xcclResult_t res = xcclSuccess;
    uint64_t theirs = got >= AG_HDR ? get64(data) : 0;
    if (got < AG_HDR || theirs != size)
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP,
                    "bootstrap: rank %d gathers blocks of %llu bytes where rank %d has %zu (mismatched xccl "
                    "builds?)",
                    peer, (unsigned long long)theirs, bs->rank, size);
    else if (got - AG_HDR != len)
      res = err_set(xcclRemoteError, LOG_BOOTSTRAP,
                    "bootstrap: rank %d sent %zu bytes in round %d where %zu were expected (mismatched xccl "
                    "builds?)",
                    peer, got - AG_HDR, round + 1, len);
    else
      run_copy(all, total, at + off, data + AG_HDR, len, 1);
    free(data);
    if (res != xcclSuccess) return res;
  }
  return xcclSuccess;
}

int bootstrap_allgather_sends_to(int nranks, int rank, int *to) {
  int n = 0;
  for (int d = 1; d < nranks; d *= 2) to[n++] = (rank - d % nranks + nranks) % nranks;
  return n;
}

xcclResult_t bootstrap_allgather(bootstrap_t *bs, void *all_v, size_t size) {
  uint8_t *all = all_v;
  int k = bs->nranks, r = bs->rank;
  size_t total = (size_t)k * size;
  size_t chunk = bs->ag_chunk_max ? bs->ag_chunk_max : AG_CHUNK_DEFAULT;
  if (chunk > AG_CHUNK_DEFAULT) chunk = AG_CHUNK_DEFAULT;
  bs->ag_rounds = 0;
  if (k == 1) return xcclSuccess;
  if ((total / 2 + chunk - 1) / chunk > AG_MAX_CHUNKS)
    return err_set(xcclInvalidUsage, LOG_BOOTSTRAP,
                   "bootstrap all-gather of %d blocks of %zu bytes: a round would need more than %d messages", k, size,
                   AG_MAX_CHUNKS);
  size_t most = total / 2 < chunk ? total / 2 : chunk; /* a round moves at most half the blocks */
  uint8_t *msg = malloc(AG_HDR + most);
  if (!msg) return err_set(xcclSystemError, LOG_BOOTSTRAP, "out of memory for a %zu-byte bootstrap message", most);
  xcclResult_t res = xcclSuccess;
  uint32_t call = bs->ag_calls;
  for (int round = 0, d = 1; d < k; round++, d *= 2) {
    int cnt = d < k - d ? d : k - d;
    int to = (r - d + k) % k, from = (r + d) % k;
    size_t bytes = (size_t)cnt * size;
    uint64_t deadline = clock_ns() + bs->deadline_s_ns;
    res = ag_send(bs, to, round, all, total, (size_t)r * size, bytes, size, msg, chunk, deadline);
    if (res == xcclSuccess)
      res = ag_recv(bs, from, round, all, total, (size_t)((r + d) % k) * size, bytes, size, chunk, deadline);
    if (res != xcclSuccess) {
      err_prefix(res, "bootstrap all-gather #%u, round %d of %d (rank %d sends to rank %d, receives from rank %d)",
                 call, round + 1, ceil_log2(k), r, to, from);
      break;
    }
    bs->ag_rounds++;
  }
  free(msg);
  bs->ag_calls++;
  return res;
}

int bootstrap_allgather_rounds(const bootstrap_t *bs) { return bs->ag_rounds; }
