/*
 * host_direct.h — collectives between the ranks of one host that read each
 * other's buffers where they are, instead of passing every byte through the
 * connections' slots. The slots carry only small messages: each rank's
 * buffer addresses at the start, "my block is reduced" in the middle of an
 * all-reduce, "I am done with your buffers" at the end.
 *
 * A peer's buffer is read one of two ways, chosen per buffer by the reader:
 * - zero copy: the peer's buffer lies in memory it allocated with
 *   xcclMemAlloc (a memfd), which the reader has mapped (map_peer below says
 *   where); the reduction reads it in place;
 * - single copy: the kernel's cross-memory attach (process_vm_readv) copies
 *   it, in cache-sized pieces for a reduction, straight into the output for
 *   a gather.
 *
 * All-reduce of N bytes on k ranks: rank r reduces block r of every rank's
 * input into its own output, says so, then copies every other block from the
 * output of the rank that reduced it (pull). When every rank's buffers lie
 * in xcclMemAlloc memory (every post says so, so all ranks agree), rank r
 * instead writes block r into every rank's output as it reduces it (push):
 * each byte is read twice and written twice, against pull's three reads and
 * two writes, and the "reduced" messages go. Each block is reduced by one
 * rank, so every rank ends with the same bits. Reduce-scatter is the first half; all-
 * gather the second (from the peers' inputs); broadcast reads the root's
 * buffer. Host buffers only; the ranks' pids must accept each other's reads
 * (algo_direct.c checks that at init).
 */
#ifndef XCCL_KERNELS_HOST_DIRECT_H
#define XCCL_KERNELS_HOST_DIRECT_H

#include "host_engine.h"
#include "ring_schedule.h"

/* Bytes reduced per step: a piece of each peer's input is read into a buffer
 * of this size, which stays in the cache while it is reduced. */
#define DIRECT_PIECE (1024u << 10)
#define DIRECT_MAX_RANKS 64
#define DIRECT_MAX_ACTIONS (3 * 2 * DIRECT_MAX_RANKS + 4)

/* What a rank sends each peer at the start: its pid and buffers, and for a
 * buffer inside an xcclMemAlloc allocation its memfd, the fd's inode and the
 * offset (fd -1: none), by which a peer may map it. */
typedef struct {
  uint64_t seq; /* the operation's, checked by the reader */
  int32_t pid, pad;
  uint64_t addr[2]; /* 0 sendbuff, 1 recvbuff */
  int32_t fd[2];
  uint64_t ino[2], off[2];
} direct_post_t;

enum { DIRECT_SEND = 0, DIRECT_RECV = 1 };

typedef struct {
  coll_kind_t coll; /* COLL_ALLREDUCE, _REDUCESCATTER, _ALLGATHER or _BROADCAST */
  const void *sendbuff;
  void *recvbuff;
  size_t count; /* all-gather: per rank (sendcount); reduce-scatter: per rank (recvcount); else the whole */
  xcclDataType_t type;
  xcclRedOp_t op;
  int nranks, rank, root;
  uint64_t seq;
  int zero_copy;             /* 0: never map peers' buffers, read them all with process_vm_readv */
  const direct_post_t *mine; /* sent to every peer */
  direct_post_t *posts;      /* by rank: what each peer sent (posts[rank] unused) */
  /* Where peer p's buffer `which` (DIRECT_SEND, DIRECT_RECV) is mapped here
   * (its start, as posts[p] gives addr), or NULL to read it with
   * process_vm_readv; *writable: 1 when the mapping may be written. Called
   * once per peer and buffer, after its post came. */
  char *(*map_peer)(void *ctx, int peer, const direct_post_t *post, int which, int *writable);
  void *map_ctx;
  const char *mapped[DIRECT_MAX_RANKS][2];
  char *mapped_out[DIRECT_MAX_RANKS]; /* peer p's output, mapped writable here, or NULL (process_vm_writev) */
  int push;                           /* all-reduce: this operation pushes (decided from the posts) */
  char *tmp; /* DIRECT_PIECE bytes, 64-byte aligned */
  /* Per peer: the connections to it and from it and their step counters. */
  slot_fifo_t **send_fifo, **recv_fifo;
  uint64_t **send_step, **recv_step;
} direct_args_t;

typedef struct {
  kern_item_t base;
  direct_args_t *args;
  int nact;
  size_t done; /* bytes of the current copy action finished */
  struct {
    int kind, peer;
  } act[DIRECT_MAX_ACTIONS];
} direct_item_t;

/* a must outlive the item; lane is the algorithms' peers lane. */
void host_direct_item(direct_item_t *it, direct_args_t *a, const kern_env_t *env, kern_lane_t lane);

/* Reads len bytes at address `remote` of process pid into local: 0, or an
 * errno. */
int host_direct_read(int pid, void *local, uint64_t remote, size_t len);
/* Writes len bytes of local to address `remote` of process pid: 0, or an
 * errno. */
int host_direct_write(int pid, const void *local, uint64_t remote, size_t len);

#endif
