/*
 * cacheline_trip.c — the machine's floor for a small message between two
 * processes on one host: the one-way trip of a cache line between them.
 *
 *   cacheline_trip [ROUND_TRIPS]      (default 200000)
 *
 * Two processes (fork) share one 64-byte line (MAP_SHARED). The parent
 * writes k, the child waits to see k and writes k + 1 back, the parent waits
 * for that: one round trip is two transfers of the line. Prints the median,
 * over 9 batches, of the time per round trip / 2, in microseconds. Each
 * side polls with an acquire load and publishes with a release store — the
 * least any shared-memory protocol does to hand over a message: so a
 * 2-rank 8-byte all-reduce, one exchange each way, costs at least one of
 * these trips (both directions run at once). bench/compare.sh prints it.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 9

typedef struct {
  _Alignas(64) _Atomic uint64_t v;
} line_t;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Waits for the line to hold want; yields now and then so that two
 * processes on one core (an oversubscribed host) still get through. */
static void wait_for(line_t *l, uint64_t want) {
  for (unsigned spins = 0; atomic_load_explicit(&l->v, memory_order_acquire) != want;)
    if (++spins % 4096 == 0) sched_yield();
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
  if (n <= 0) {
    fprintf(stderr, "cacheline_trip: ROUND_TRIPS must be a positive number, got %s\n", argv[1]);
    return 2;
  }
  line_t *l = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (l == MAP_FAILED) {
    perror("cacheline_trip: mmap");
    return 1;
  }
  long total = n * BATCHES + n / 10; /* the first tenth of a batch warms up */
  pid_t child = fork();
  if (child < 0) {
    perror("cacheline_trip: fork");
    return 1;
  }
  if (child == 0) {
    for (uint64_t k = 1; k <= (uint64_t)total * 2; k += 2) {
      wait_for(l, k);
      atomic_store_explicit(&l->v, k + 1, memory_order_release);
    }
    _exit(0);
  }
  double us[BATCHES];
  uint64_t k = 1;
  for (long i = 0; i < n / 10; i++, k += 2) {
    atomic_store_explicit(&l->v, k, memory_order_release);
    wait_for(l, k + 1);
  }
  for (int b = 0; b < BATCHES; b++) {
    double t0 = now_s();
    for (long i = 0; i < n; i++, k += 2) {
      atomic_store_explicit(&l->v, k, memory_order_release);
      wait_for(l, k + 1);
    }
    us[b] = (now_s() - t0) / (double)n / 2 * 1e6;
  }
  waitpid(child, NULL, 0);
  qsort(us, BATCHES, sizeof(us[0]), cmp);
  printf("%.3f\n", us[BATCHES / 2]);
  return 0;
}
