/*
 * shm_seg.h — shared memory for the shm transport: one process creates a
 * segment (its receive fifo), the peer on the same host maps it and writes
 * straight into it.
 *
 * Two kinds, the creator's choice:
 *  - memory without a name (memfd_create): the peer opens it through the
 *    creator's /proc/<pid>/fd/<fd>, which works when both are in one PID
 *    namespace under one user. Nothing ever appears in the file system, so
 *    a process killed at any instant (SIGKILL, SIGPIPE, the OOM killer)
 *    leaves nothing behind: the kernel frees the memory with its last user.
 *  - a named POSIX segment in /dev/shm (/xccl-<pid>-<hex>), for peers that
 *    cannot see the creator's descriptors; the name is unlinked as soon as
 *    the peer has it mapped, but a process killed before that leaves it.
 * What the peer needs to find a segment is a short string (shm_seg_where)
 * that travels to it through the bootstrap.
 */
#ifndef XCCL_TRANSPORT_SHM_SEG_H
#define XCCL_TRANSPORT_SHM_SEG_H

#include <stddef.h>

#include "xccl.h"

typedef struct {
  void *base;
  size_t bytes;
  char name[64]; /* a named segment's name, "" for memory without one */
  int linked;    /* the name still exists */
  int fd;        /* memory without a name: the descriptor the peer opens, */
  int fd_open;   /* ... while this is 1 */
} shm_seg_t;

/* Creates and maps bytes of zeroed shared memory: without a name when
 * unnamed, else under a fresh name in /dev/shm. The pages are reserved now,
 * so that memory that is not there fails here with xcclSystemError and a
 * sentence (how much was asked, what is free, how to make room; the caller
 * falls back to TCP), not later with SIGBUS. On failure nothing is left. */
xcclResult_t shm_seg_create(size_t bytes, int unnamed, shm_seg_t *seg_p);
/* What the peer passes to shm_seg_open: the name, or for memory without a
 * name "@<pid>:<fd>:<dev>:<ino>" (this process's descriptor, and the file
 * it must lead to). */
void shm_seg_where(const shm_seg_t *seg, char *buf, size_t len);
/* Maps a segment another process created, from its where. A descriptor
 * that no longer leads to that file (the creator died and its pid was
 * reused) is refused with xcclRemoteError. */
xcclResult_t shm_seg_open(const char *where, size_t bytes, shm_seg_t *seg_p);
/* The peer has the segment mapped: drops what let it find the segment (the
 * name, or the descriptor). The mappings stay. */
void shm_seg_unlink(shm_seg_t *seg);
/* Unmaps, and drops the name or descriptor if still there. A zeroed seg is
 * fine. */
void shm_seg_close(shm_seg_t *seg);

#endif
