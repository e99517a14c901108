/*
 * slots.h — the slot/counter protocol every data mover speaks.
 *
 * A slot_fifo_t is one direction of one connection on one channel: STEPS
 * slots of slot_size bytes and two counters. The producer may fill slot
 * s % STEPS once head + STEPS > s, writes the data and its size, then
 * publishes: a release store of seq = s + 1 in the slot's header, then
 * tail = s + 1. The consumer may read slot s once an acquire load of the
 * header's seq (or of tail) is > s, and frees it with a release store
 * head = s + 1.
 *
 * Who is producer and consumer depends on the transport:
 *  - network (socket, ib): on the send side the kernel produces and the proxy
 *    consumes (isend); on the receive side the proxy produces (irecv) and the
 *    kernel consumes.
 *  - shm / cuda p2p: the sending kernel produces straight into the peer's
 *    receive fifo; no proxy.
 * So the kernels cannot tell transports apart.
 *
 * When the party on the other side of a fifo fails (a closed socket, a verbs
 * completion error), it writes a sentence to error_msg and then stores a
 * non-zero xcclResult_t into error with release order; a waiter that sees it
 * stops waiting and reports it. A shared fifo has no party in between, and a
 * peer process that dies writes nothing: so each side writes who it is into
 * the fifo (slot_fifo_side_set) and a waiter, which holds only the fifo,
 * asks whether the other side is gone (slot_fifo_side_gone).
 *
 * The fifo holds the protocol and what the data movers on its two sides
 * need to run it, nothing else. What one transport keeps about a connection
 * is its own (the network connection's GPUDirect state: proxy.h's
 * proxy_gpu_t; a shared-memory connection's GPU area offer: shm_conn.h).
 */
#ifndef XCCL_KERNELS_SLOTS_H
#define XCCL_KERNELS_SLOTS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"

#define XCCL_STEPS 8
#define SLOT_ERROR_MAX 256

/* A cache line two ranks exchange small messages through (host_line.h):
 * side[0] is the lower rank's, side[1] the higher's. Message n goes to
 * data[n & 1] of the writer's side, then seq = n (release), so a reader
 * that sees seq one ahead of what it waits for still finds its message. */
#define SLOT_LINE_BYTES 12
typedef struct {
  struct {
    _Atomic uint64_t seq;
    unsigned char data[2][SLOT_LINE_BYTES];
  } side[2];
} slot_line_t;

/* The fifo and its slots are one block of memory with no pointers in it, so
 * that it can live in memory shared between processes (each maps it at its
 * own address): slot i is at slot_fifo_slot(f, i). */
typedef struct {
  /* The producer writes this line per publish, the consumer the next per
   * release. */
  _Alignas(64) _Atomic uint64_t tail; /* slots filled, written by the producer */
  _Atomic uint64_t bytes;             /* bytes published since creation */
  _Atomic uint64_t head_seen;         /* the producer's own last look at head */
  fault_stream_t fault;               /* the producer's: XCCL_FAULT's count of messages (shared memory) */
  _Alignas(64) _Atomic uint64_t head; /* slots freed, written by the consumer */
  _Alignas(64) _Atomic int error;     /* xcclResult_t of a failure, 0 while fine */
  _Atomic uint32_t sleepers;          /* threads in slot_fifo_wait on this fifo */
  _Atomic int error_claim; /* 1 once a failure writes error_msg: the first writer of either process wins */
  size_t slot_size;                   /* data bytes a slot holds */
  size_t slot_stride;                 /* from one slot's header to the next */
  size_t data_off;                    /* from the fifo's first byte to slot 0's header */
  int shared;      /* in shared memory, moved by the peer's kernel (no proxy) */
  int checksum;    /* XCCL_CHECKSUM: each message ends with the CRC32C of its data (slot_fifo_send) */
  int32_t producer_pid, consumer_pid; /* shared fifos: who is on each side (slot_fifo_side_*) */
  uint64_t producer_pidns, consumer_pidns; /* ... in which PID namespace (the pid means something only there) */
  uint64_t producer_token, consumer_token; /* ... which process: its pid and a random number of its own */
  char error_msg[SLOT_ERROR_MAX];
  /* Shared fifos: the pair's exchange line (host_line.h), which the ranks
   * at both ends write, each its own half: the fifo from the lower rank to
   * the higher one holds the pair's. Both processes map it, and a rank that
   * writes its half gets the other's with the same transfer of the line. */
  _Alignas(64) slot_line_t line;
} slot_fifo_t;

/* Each slot starts with a header that shares its cache line with the first
 * 48 bytes of data: the producer stores seq = step + 1 (release) once size
 * and data are in place, so a consumer polling seq gets a small message in
 * one cache-line transfer. tail is still published after it, for the proxy,
 * for sleepers and for failure checks. */
typedef struct {
  _Atomic uint64_t seq; /* step + 1 of the message in the slot, 0 before the first */
  uint64_t size;        /* its bytes */
} slot_hdr_t;
#define SLOT_HDR_BYTES 16
/* With XCCL_CHECKSUM a message is its data and then the data's CRC32C
 * (little-endian), which travels with it through any transport: the proxy
 * and the transports move `size` bytes without knowing. Every slot has room
 * for it after slot_size bytes of data. */
#define SLOT_CRC_BYTES 4
/* In a header's size: the data is not in the slot but in a GPU data area
 * that goes with the fifo, at slot_fifo_area_data. Which area is the
 * transport's business (over the network the connection's, proxy.h's
 * proxy_gpu_t; over shared memory the one the consumer's GPU offered). A
 * host consumer cannot read it there and refuses it (SLOT_MSG_GPU). */
#define SLOT_SIZE_GPU (1ull << 63)

static inline slot_hdr_t *slot_fifo_hdr(slot_fifo_t *f, uint64_t step) {
  return (slot_hdr_t *)((char *)f + f->data_off + (size_t)(step % XCCL_STEPS) * f->slot_stride);
}

/* The data of slot `step % XCCL_STEPS` of f (16-byte aligned). */
static inline char *slot_fifo_slot(slot_fifo_t *f, uint64_t step) {
  return (char *)slot_fifo_hdr(f, step) + SLOT_HDR_BYTES;
}

/* The consumer's side: is message `step` in its slot? (acquire: its data is
 * visible once this says so). */
static inline int slot_fifo_ready(slot_fifo_t *f, uint64_t step) {
  return atomic_load_explicit(&slot_fifo_hdr(f, step)->seq, memory_order_acquire) > step;
}

/* Bytes of the message in slot `step` (after slot_fifo_ready said so). */
static inline size_t slot_fifo_size(slot_fifo_t *f, uint64_t step) {
  return (size_t)(slot_fifo_hdr(f, step)->size & ~SLOT_SIZE_GPU);
}

/* A GPU data area laid out like f's slots (where a message whose size has
 * SLOT_SIZE_GPU has its data): its bytes, and where message `step`'s data
 * goes in it. */
static inline size_t slot_fifo_area_bytes(const slot_fifo_t *f) { return (size_t)XCCL_STEPS * f->slot_stride; }
static inline char *slot_fifo_area_data(const slot_fifo_t *f, char *area, uint64_t step) {
  return area + (size_t)(step % XCCL_STEPS) * f->slot_stride + SLOT_HDR_BYTES;
}

/* Every slot before `step` that the producer published is out of its hands:
 * the consumer freed it, or the fifo is shared memory, where the data already
 * sits in memory the consumer keeps mapped whatever the producer does next. */
static inline int slot_fifo_taken(slot_fifo_t *f, uint64_t step) {
  return f->shared || atomic_load_explicit(&f->head, memory_order_acquire) >= step;
}

/* The producer's side: may slot `step` be filled (the consumer freed what
 * was in it)? Reads the consumer's counter only when its own last look does
 * not already say so. */
static inline int slot_fifo_room(slot_fifo_t *f, uint64_t step) {
  if (atomic_load_explicit(&f->head_seen, memory_order_relaxed) + XCCL_STEPS > step) return 1;
  uint64_t head = atomic_load_explicit(&f->head, memory_order_acquire);
  atomic_store_explicit(&f->head_seen, head, memory_order_relaxed);
  return head + XCCL_STEPS > step;
}

/* The producer's side: `bytes` more went to the consumer (f->bytes, which
 * xcclCommGetPeerCounters adds up), counted before they show. One
 * producer: no read-modify-write needed. */
static inline void slot_fifo_count(slot_fifo_t *f, uint64_t bytes) {
  atomic_store_explicit(&f->bytes, atomic_load_explicit(&f->bytes, memory_order_relaxed) + bytes, memory_order_relaxed);
}

/* The producer's side: slot `step` holds `bytes`; publish it (tail = step + 1).
 * Moves messages as they are (the proxy's receive side): kernels use
 * slot_fifo_send. bytes may carry SLOT_SIZE_GPU (the data is in the GPU
 * data area). */
void slot_fifo_publish(slot_fifo_t *f, uint64_t step, size_t bytes);
/* XCCL_FAULT for a message of `bytes` at data that a kernel hands to the
 * consumer of shared fifo f other than through its slots (an exchange
 * line): counted on f's stream as a send would be; 0 when a rule closed the
 * connection (f is then marked failed) and the message must not go. */
int slot_fifo_fault_send(slot_fifo_t *f, const fault_ctx_t *fault, void *data, size_t bytes);
/* A kernel's send: slot `step` holds `bytes` of data; adds their CRC32C when
 * f->checksum, applies XCCL_FAULT's rules (matched against fault, the
 * sending communicator's context) when f is shared memory, then publishes,
 * unless a rule closed the connection (f is then marked failed). */
void slot_fifo_send(slot_fifo_t *f, uint64_t step, size_t bytes, const fault_ctx_t *fault);
/* The most bytes one message of f takes on the wire (data and CRC). */
static inline size_t slot_fifo_wire_max(const slot_fifo_t *f) {
  return f->slot_size + (f->checksum ? SLOT_CRC_BYTES : 0);
}

/* What a kernel finds in a ready slot that should hold `want` data bytes. */
typedef enum { SLOT_MSG_OK = 0, SLOT_MSG_SIZE, SLOT_MSG_CRC, SLOT_MSG_GPU } slot_msg_t;
/* Checks message `step` (ready) against the `want` data bytes the schedule
 * expects and, when f->checksum, its CRC32C. On SLOT_MSG_SIZE *got is the
 * data bytes found; on SLOT_MSG_CRC *got is the CRC computed here and
 * *carried the one that came with the data; SLOT_MSG_GPU: the data is in GPU
 * memory (SLOT_SIZE_GPU), where the host cannot read it. */
slot_msg_t slot_fifo_check(slot_fifo_t *f, uint64_t step, size_t want, uint64_t *got, uint64_t *carried);

/* CRC32C (Castagnoli, as iSCSI and ext4 use) of n bytes; 0 when xccl was
 * built without it (slot_checksum_available says which). */
uint32_t slot_crc32c(const void *data, size_t n);
int slot_checksum_available(void);
/* The consumer's side: slot `step` is free again (head = step + 1). */
void slot_fifo_release(slot_fifo_t *f, uint64_t step);
/* Sleeps (futex, works across processes) until tail (is_recv) or head of f
 * differs from `seen`, a publish or release wakes it, or timeout_us. */
void slot_fifo_wait(slot_fifo_t *f, int is_recv, uint64_t seen, int timeout_us);

/* A half of an exchange line in fifo f (f->line): seq = v, published as a
 * counter is (release), waking whoever sleeps on it; and the sleep, until
 * seq differs from `seen`, a publish wakes it, or timeout_us. */
void slot_line_publish(slot_fifo_t *f, _Atomic uint64_t *seq, uint64_t v);
void slot_line_wait(slot_fifo_t *f, _Atomic uint64_t *seq, uint64_t seen, int timeout_us);

/* Bytes a fifo with slots of slot_size takes. */
size_t slot_fifo_bytes(size_t slot_size);
/* Lays a fifo out in mem (slot_fifo_bytes long, 64-byte aligned, any kind
 * of memory); returns it. */
slot_fifo_t *slot_fifo_init_at(void *mem, size_t slot_size);
/* A fifo in this process's memory; NULL when out of memory. */
slot_fifo_t *slot_fifo_create(size_t slot_size);
void slot_fifo_destroy(slot_fifo_t *f);

/*
 * A doorbell for a thread that waits on fifo counters written by another
 * thread or process: the writer rings it after publishing, the waiter sleeps
 * on it (a futex) instead of spinning when there is nothing to do, so ranks
 * that outnumber the cores still make progress.
 *   waiter:  seen = slot_bell_seen(b); <check counters>; slot_bell_wait(b, seen, us);
 *   writer:  <publish counters>; slot_bell_ring(b);
 */
typedef struct {
  _Atomic uint32_t seq;
  _Atomic uint32_t sleepers;
} slot_bell_t;

static inline uint32_t slot_bell_seen(slot_bell_t *b) { return atomic_load(&b->seq); }
/* Returns after a ring, after timeout_us, or at once if rung since `seen`. */
void slot_bell_wait(slot_bell_t *b, uint32_t seen, int timeout_us);
void slot_bell_ring(slot_bell_t *b);

/* Records a failure as described above. */
void slot_fifo_fail(slot_fifo_t *f, int result, const char *msg);

/* This process's PID namespace (the inode of /proc/self/ns/pid, 0 when
 * unknown), as shared fifos record it; looked up once per process. */
uint64_t slot_pidns(void);

/* Shared fifos: this process takes the producer's or the consumer's side
 * (its pid, PID namespace and token go into the fifo). */
void slot_fifo_side_set(slot_fifo_t *f, int producer);
/* The pid of the process on the given side, as kill() here understands it:
 * 0 when unknown, or when it lives in another PID namespace (containers
 * that share /dev/shm but not PIDs), where the number means another
 * process. */
int32_t slot_fifo_side_pid(const slot_fifo_t *f, int producer);
/* 1: the process on the given side is this one (two ranks in one process). */
int slot_fifo_side_is_me(const slot_fifo_t *f, int producer);
/* 1: the process on the given side is known to be gone (by its pid, where
 * that means something here). */
int slot_fifo_side_gone(const slot_fifo_t *f, int producer);

#endif
