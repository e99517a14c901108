/*
 * shm_seg.h — POSIX shared-memory segments for the shm transport: one process
 * creates a segment (its receive fifo), the peer on the same host opens it
 * and writes straight into it; the creator unlinks the name as soon as the
 * peer has it mapped, so a crash leaves nothing in /dev/shm.
 */
#ifndef XCCL_TRANSPORT_SHM_SEG_H
#define XCCL_TRANSPORT_SHM_SEG_H

#include <stddef.h>

#include "xccl.h"

typedef struct {
  void *base;
  size_t bytes;
  char name[64];
  int linked; /* the name still exists */
} shm_seg_t;

/* Creates and maps bytes of zeroed shared memory under a fresh name. When
 * /dev/shm cannot hold it, xcclSystemError with a sentence that says how
 * much is free and how to make room (the caller falls back to TCP). */
xcclResult_t shm_seg_create(size_t bytes, shm_seg_t *seg_p);
/* Maps a segment another process created. */
xcclResult_t shm_seg_open(const char *name, size_t bytes, shm_seg_t *seg_p);
void shm_seg_unlink(shm_seg_t *seg);
/* Unmaps (and unlinks if still linked). A zeroed seg is fine. */
void shm_seg_close(shm_seg_t *seg);

#endif
