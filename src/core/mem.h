/*
 * mem.h — memory of xcclMemAlloc: host shared memory that peers on the host
 * can map (a memfd, mapped MAP_SHARED), or device memory in a build with
 * CUDA and a usable current device. Every allocation is in one process-wide
 * registry, so that xcclMemFree refuses what it did not hand out and a
 * zero-copy path can find the fd behind a buffer.
 */
#ifndef XCCL_CORE_MEM_H
#define XCCL_CORE_MEM_H

#include <stddef.h>
#include <stdint.h>

/*
 * 1 when p..p+len lies inside one host allocation of xcclMemAlloc: *fd_p is
 * its memfd (owned by the registry: valid until xcclMemFree; dup it to keep
 * it), *ino_p its inode (a peer checks it opened this file) and *offset_p
 * the offset of p in it; a peer maps it through
 * /proc/<pid>/fd/<fd> or an fd passed over a socket. 0 otherwise (device
 * memory included), outputs untouched. Any thread.
 */
int mem_lookup(const void *p, size_t len, int *fd_p, uint64_t *ino_p, size_t *offset_p);

/* 1 when p..p+len lies inside one allocation of xcclMemAlloc, host or device. */
int mem_contains(const void *p, size_t len);

#endif
