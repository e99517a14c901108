/* thread.h — starting a thread that nobody joins (the bootstrap root, ib's
 * async-event reader, the device-work watcher): each ends by itself. */
#ifndef XCCL_BASE_THREAD_H
#define XCCL_BASE_THREAD_H

#include <pthread.h>

/* 0, or pthread_create's error number. */
static inline int thread_start_detached(void *(*fn)(void *), void *arg) {
  pthread_t t;
  pthread_attr_t attr;
  int rc = pthread_attr_init(&attr);
  if (rc != 0) return rc;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  rc = pthread_create(&t, &attr, fn, arg);
  pthread_attr_destroy(&attr);
  return rc;
}

#endif
