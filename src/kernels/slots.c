#include "slots.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#ifdef XCCL_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define SLOT_DATA_OFF ((sizeof(slot_fifo_t) + 4095) / 4096 * 4096) /* slots start on a page */

/* ---- Sleepers and wakers of a fifo, with the fence on the sleeper's side ----
 *
 * A waker stores a counter and then reads `sleepers`; a sleeper adds itself
 * to `sleepers` and then reads the counter. Each must not read before its
 * store is seen (Dekker), or the waker misses a sleeper that misses its
 * store, which then sleeps out its timeout. A full fence in every publish
 * costs the waker a stall on the slot's cache line, once per message,
 * where sleeping is rare: so the waker's fence is only the compiler's, and
 * the sleeper issues membarrier(GLOBAL_EXPEDITED), which puts a full
 * barrier into every thread of every process that registered for it: a
 * waker either read `sleepers` after that barrier (it sees the sleeper) or
 * stored the counter before it (the sleeper sees the counter). Every xccl
 * process registers once; where the kernel refuses membarrier (before
 * Linux 4.16, or a seccomp filter), that process's stores keep the full
 * fence. A process that cannot issue the membarrier but talks to one that
 * did register risks at worst the futex's timeout (1 ms), never a hang. */
static _Atomic int asym_state; /* 0: not registered yet; 1: registered; 2: refused */
static pthread_once_t asym_fork_once = PTHREAD_ONCE_INIT;

/* A forked child is not registered (the registration is its parent's
 * memory's): it asks again before its first store. */
static void asym_child(void) { atomic_store(&asym_state, 0); }
static void asym_fork_hook(void) { pthread_atfork(NULL, NULL, asym_child); }

/* Before a process's first store to a fifo: both sides of a shared fifo
 * take a side (slot_fifo_side_set), and a local one is laid out here.
 * Threads that race register twice, which is harmless. */
static void asym_register(void) {
  if (atomic_load_explicit(&asym_state, memory_order_acquire)) return;
  pthread_once(&asym_fork_once, asym_fork_hook);
  int ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
  atomic_store_explicit(&asym_state, ok ? 1 : 2, memory_order_release);
}

static inline void waker_store(_Atomic uint64_t *c, uint64_t v) {
  if (__builtin_expect(atomic_load_explicit(&asym_state, memory_order_relaxed) == 1, 1)) {
    atomic_store_explicit(c, v, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst); /* the compiler's half: the barrier's other half is the sleeper's */
  } else {
    atomic_store_explicit(c, v, memory_order_seq_cst);
  }
}

/* Where membarrier is refused the sleeper's seq_cst add to `sleepers` and
 * its seq_cst load of the counter already order it against a waker that
 * kept the seq_cst store (the case above). */
static void sleeper_fence(void) {
  asym_register();
  (void)syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
}

/* A slot's header, data and room for a CRC, rounded up to whole cache lines. */
static size_t slot_stride(size_t slot_size) { return (SLOT_HDR_BYTES + slot_size + SLOT_CRC_BYTES + 63) / 64 * 64; }

size_t slot_fifo_bytes(size_t slot_size) { return SLOT_DATA_OFF + slot_stride(slot_size) * XCCL_STEPS; }

slot_fifo_t *slot_fifo_init_at(void *mem, size_t slot_size) {
  asym_register();
  slot_fifo_t *f = mem;
  memset(f, 0, sizeof(*f));
  f->slot_size = slot_size;
  f->slot_stride = slot_stride(slot_size);
  f->data_off = SLOT_DATA_OFF;
  /* Every rank runs with the same value (comm init checks), so both sides of
   * a fifo agree whoever lays it out. */
  f->checksum = config_bool(CFG_CHECKSUM);
  for (int s = 0; s < XCCL_STEPS; s++) memset(slot_fifo_hdr(f, (uint64_t)s), 0, sizeof(slot_hdr_t));
  return f;
}

slot_fifo_t *slot_fifo_create(size_t slot_size) {
  void *mem = NULL;
  if (posix_memalign(&mem, 4096, slot_fifo_bytes(slot_size)) != 0) return NULL;
  return slot_fifo_init_at(mem, slot_size);
}

void slot_fifo_destroy(slot_fifo_t *f) { free(f); }

void slot_fifo_fail(slot_fifo_t *f, int result, const char *msg) {
  /* Both processes of a shared fifo, and threads of one (a revoke beside a
   * call that fails), may fail it at once: one claims the message. */
  int unclaimed = 0;
  if (!atomic_compare_exchange_strong(&f->error_claim, &unclaimed, 1)) return;
  snprintf(f->error_msg, sizeof(f->error_msg), "%s", msg);
  atomic_store_explicit(&f->error, result, memory_order_release);
}

/* ---- who is on each side of a shared fifo ---- */

/* This process's token: its pid in the high half (so a forked child, whose
 * pid differs, draws its own) and a random number in the low half. Two
 * threads may both draw one; the first stored is the process's. */
static _Atomic uint64_t id_token;

static uint64_t my_token(void) {
  uint32_t pid = (uint32_t)getpid();
  uint64_t cur = atomic_load_explicit(&id_token, memory_order_acquire);
  if (cur >> 32 == pid) return cur;
  uint32_t r = 0;
  if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) /* no entropy: time still tells processes apart */
    r = (uint32_t)time(NULL) ^ (uint32_t)(uintptr_t)&r;
  uint64_t t = (uint64_t)pid << 32 | r | 1;
  return atomic_compare_exchange_strong(&id_token, &cur, t) ? t : cur;
}

/* This process's PID namespace: the inode of /proc/self/ns/pid, 0 if
 * unknown; found again after a fork (threads that race store the same). */
static _Atomic uint64_t id_pidns;
static _Atomic int32_t id_pidns_pid;

uint64_t slot_pidns(void) {
  int32_t pid = (int32_t)getpid();
  if (atomic_load_explicit(&id_pidns_pid, memory_order_acquire) != pid) {
    struct stat st;
    atomic_store(&id_pidns, stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0);
    atomic_store_explicit(&id_pidns_pid, pid, memory_order_release);
  }
  return atomic_load(&id_pidns);
}

void slot_fifo_side_set(slot_fifo_t *f, int producer) {
  asym_register();
  *(producer ? &f->producer_pid : &f->consumer_pid) = (int32_t)getpid();
  *(producer ? &f->producer_pidns : &f->consumer_pidns) = slot_pidns();
  *(producer ? &f->producer_token : &f->consumer_token) = my_token();
}

int32_t slot_fifo_side_pid(const slot_fifo_t *f, int producer) {
  uint64_t ns = producer ? f->producer_pidns : f->consumer_pidns;
  return ns && ns == slot_pidns() ? (producer ? f->producer_pid : f->consumer_pid) : 0;
}

int slot_fifo_side_is_me(const slot_fifo_t *f, int producer) {
  uint64_t t = producer ? f->producer_token : f->consumer_token;
  uint64_t ns = producer ? f->producer_pidns : f->consumer_pidns;
  return t && t == my_token() && ns == slot_pidns(); /* the pid half is unique within a namespace */
}

/* A killed process stays a zombie until its parent reaps it, and kill(pid, 0)
 * succeeds on a zombie: a launcher that reaps late (torchrun polls its
 * children every few seconds) would leave the peer waiting for XCCL_TIMEOUT.
 * So a live pid is also looked up in /proc, at most every 100 ms per pid and thread. */
static int pid_is_zombie(int32_t pid) {
  /* A few pids per thread: a rank waiting on two peers (a ring's both
   * sides) must not read /proc on every pass by evicting one for the other. */
  enum { SEEN = 4 };
  static _Thread_local struct {
    int32_t pid;
    int zombie;
    uint64_t next_ns;
  } seen[SEEN];
  static _Thread_local unsigned next_slot;
  uint64_t now = clock_ns();
  int slot = -1;
  for (int i = 0; i < SEEN && slot < 0; i++)
    if (seen[i].pid == pid) slot = i;
  if (slot >= 0 && now < seen[slot].next_ns) return seen[slot].zombie;
  if (slot < 0) slot = (int)(next_slot++ % SEEN);
  char path[48], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  int zombie = 0, fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *paren = strrchr(buf, ')'); /* "pid (comm) S ...": comm may hold spaces and parens */
    zombie = paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
  }
  seen[slot].pid = pid, seen[slot].zombie = zombie, seen[slot].next_ns = now + 100000000ull;
  return zombie;
}

int slot_fifo_side_gone(const slot_fifo_t *f, int producer) {
  int32_t pid = slot_fifo_side_pid(f, producer);
  if (pid <= 0 || slot_fifo_side_is_me(f, producer)) return 0;
  if (kill(pid, 0) != 0) return errno == ESRCH;
  return pid_is_zombie(pid);
}

void slot_bell_wait(slot_bell_t *b, uint32_t seen, int timeout_us) {
  atomic_fetch_add(&b->sleepers, 1);
  if (atomic_load(&b->seq) == seen) {
    struct timespec ts = {timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000};
    syscall(SYS_futex, &b->seq, FUTEX_WAIT, seen, &ts, NULL, 0);
  }
  atomic_fetch_sub(&b->sleepers, 1);
}

void slot_bell_ring(slot_bell_t *b) {
  atomic_fetch_add(&b->seq, 1);
  if (atomic_load(&b->sleepers)) syscall(SYS_futex, &b->seq, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* A futex on the low half of a 64-bit counter: it changes whenever the
 * counter does (it only grows, by one at a time). */
static uint32_t *low_half(_Atomic uint64_t *c) { return (uint32_t *)c; }

static void fifo_wake(slot_fifo_t *f, _Atomic uint64_t *c) {
  if (atomic_load(&f->sleepers)) syscall(SYS_futex, low_half(c), FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

/* XCCL_FAULT on shared memory, where no transport call exists to wrap
 * (slots.h): also for what a kernel writes to an exchange line. */
int slot_fifo_fault_send(slot_fifo_t *f, const fault_ctx_t *ctx, void *data, size_t bytes) {
  if (atomic_load_explicit(&f->error, memory_order_acquire)) return 0; /* closed: nothing more goes through */
  char where[64];
  snprintf(where, sizeof(where), "shared memory to pid %d", (int)f->consumer_pid);
  if (fault_on_send(ctx, &f->fault, where, data, bytes) != FAULT_NONE) {
    /* close or error: the consumer sees the connection fail; so, soon, does this rank */
    slot_fifo_fail(f, xcclRemoteError, "fault injection (XCCL_FAULT) closed this shared-memory connection");
    return 0;
  }
  return 1;
}

void slot_fifo_publish(slot_fifo_t *f, uint64_t step, size_t bytes) {
  slot_hdr_t *h = slot_fifo_hdr(f, step);
  h->size = bytes;
  /* Counted before the message shows: a consumer that has seen it (and the
   * caller it returns to, reading xcclCommGetPeerCounters) sees the count. */
  slot_fifo_count(f, bytes & ~SLOT_SIZE_GPU);
  atomic_store_explicit(&h->seq, step + 1, memory_order_release);
  waker_store(&f->tail, step + 1);
  fifo_wake(f, &f->tail);
}

uint32_t slot_crc32c(const void *data, size_t n) {
#ifdef XCCL_HAVE_ISAL
  /* ISA-L's iSCSI CRC without the final inversion; slots never exceed INT_MAX. */
  return ~crc32_iscsi((unsigned char *)data, (int)n, 0xFFFFFFFFu);
#else
  (void)data, (void)n;
  return 0;
#endif
}

int slot_checksum_available(void) {
#ifdef XCCL_HAVE_ISAL
  return 1;
#else
  return 0;
#endif
}

void slot_fifo_send(slot_fifo_t *f, uint64_t step, size_t bytes, const fault_ctx_t *fault) {
  if (f->checksum) {
    uint32_t crc = slot_crc32c(slot_fifo_slot(f, step), bytes);
    memcpy(slot_fifo_slot(f, step) + bytes, &crc, sizeof(crc)); /* x86/arm: little-endian on every rank */
    bytes += SLOT_CRC_BYTES;
  }
  if (f->shared && fault_enabled() && !slot_fifo_fault_send(f, fault, slot_fifo_slot(f, step), bytes)) return;
  slot_fifo_publish(f, step, bytes);
}

slot_msg_t slot_fifo_check(slot_fifo_t *f, uint64_t step, size_t want, uint64_t *got, uint64_t *carried) {
  if (slot_fifo_hdr(f, step)->size & SLOT_SIZE_GPU) { /* in GPU memory: not for the host */
    *got = slot_fifo_size(f, step);
    return SLOT_MSG_GPU;
  }
  size_t size = slot_fifo_size(f, step);
  size_t data = f->checksum ? (size >= SLOT_CRC_BYTES ? size - SLOT_CRC_BYTES : 0) : size;
  if (data != want || (f->checksum && size < SLOT_CRC_BYTES)) {
    *got = data;
    return SLOT_MSG_SIZE;
  }
  if (!f->checksum) return SLOT_MSG_OK;
  uint32_t crc;
  memcpy(&crc, slot_fifo_slot(f, step) + data, sizeof(crc));
  uint32_t here = slot_crc32c(slot_fifo_slot(f, step), data);
  if (here == crc) return SLOT_MSG_OK;
  *got = here;
  *carried = crc;
  return SLOT_MSG_CRC;
}

/* Sleeps on counter c of f (a sleeper of f) until it differs from seen, a
 * waker's fifo_wake, or timeout_us. */
static void counter_wait(slot_fifo_t *f, _Atomic uint64_t *c, uint64_t seen, int timeout_us) {
  atomic_fetch_add(&f->sleepers, 1);
  sleeper_fence();
  if (atomic_load(c) == seen) {
    struct timespec ts = {timeout_us / 1000000, (long)(timeout_us % 1000000) * 1000};
    syscall(SYS_futex, low_half(c), FUTEX_WAIT, (uint32_t)seen, &ts, NULL, 0);
  }
  atomic_fetch_sub(&f->sleepers, 1);
}

void slot_line_publish(slot_fifo_t *f, _Atomic uint64_t *seq, uint64_t v) {
  waker_store(seq, v);
  fifo_wake(f, seq);
}

void slot_line_wait(slot_fifo_t *f, _Atomic uint64_t *seq, uint64_t seen, int timeout_us) {
  counter_wait(f, seq, seen, timeout_us);
}

void slot_fifo_release(slot_fifo_t *f, uint64_t step) {
  waker_store(&f->head, step + 1);
  fifo_wake(f, &f->head);
}

void slot_fifo_wait(slot_fifo_t *f, int is_recv, uint64_t seen, int timeout_us) {
  counter_wait(f, is_recv ? &f->tail : &f->head, seen, timeout_us);
}
