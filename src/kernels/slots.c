#include "slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int slot_fifo_init(slot_fifo_t *f, size_t slot_size) {
  memset(f, 0, sizeof(*f));
  char *mem = NULL;
  if (posix_memalign((void **)&mem, 4096, slot_size * XCCL_STEPS) != 0) return -1;
  for (int i = 0; i < XCCL_STEPS; i++) f->slots[i] = mem + (size_t)i * slot_size;
  f->slot_size = slot_size;
  return 0;
}

void slot_fifo_fini(slot_fifo_t *f) {
  free(f->slots[0]);
  memset(f->slots, 0, sizeof(f->slots));
}

void slot_fifo_fail(slot_fifo_t *f, int result, const char *msg) {
  if (atomic_load_explicit(&f->error, memory_order_acquire)) return;
  snprintf(f->error_msg, sizeof(f->error_msg), "%s", msg);
  atomic_store_explicit(&f->error, result, memory_order_release);
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
