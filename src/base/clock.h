/* clock.h — monotonic time and deadlines. Every wait in xccl has one. */
#ifndef XCCL_BASE_CLOCK_H
#define XCCL_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A deadline `seconds` from now; seconds <= 0 means already expired. */
static inline uint64_t clock_deadline(double seconds) {
  return clock_ns() + (seconds > 0 ? (uint64_t)(seconds * 1e9) : 0);
}

static inline int clock_expired(uint64_t deadline_ns) { return clock_ns() >= deadline_ns; }

/* Milliseconds left before the deadline, at least 0, at most cap_ms. */
static inline int clock_ms_left(uint64_t deadline_ns, int cap_ms) {
  uint64_t now = clock_ns();
  if (now >= deadline_ns) return 0;
  uint64_t ms = (deadline_ns - now + 999999) / 1000000;
  return ms > (uint64_t)cap_ms ? cap_ms : (int)ms;
}

#endif
