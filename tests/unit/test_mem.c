/*
 * test_mem.c — xcclMemAlloc and xcclMemFree on the host: page alignment,
 * zero fill, reads and writes, the registry's refusals, and another process
 * that maps an allocation through its fd (mem_lookup) the way a peer on the
 * host would, through /proc/<pid>/fd, and sees the data both ways.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "test_util.h"
#include "xccl.h"

#define SIZE 10000

static unsigned char *buf;
static int buf_fd;
static pid_t parent;

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + 3); }

/* In a child: map the parent's allocation by its fd, as a peer would. */
static void child_maps(void) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)parent, buf_fd);
  int fd = open(path, O_RDWR);
  CHECK(fd >= 0, "open %s", path);
  if (fd < 0) return;
  unsigned char *m = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(m != MAP_FAILED, "mmap of the peer's allocation");
  if (m == MAP_FAILED) return;
  int same = 1;
  for (size_t i = 0; i < SIZE; i++) same &= m[i] == pattern(i);
  CHECK(same, "the child sees the parent's data");
  m[5000] = 0xEE; /* the parent must see this */
  munmap(m, SIZE);
  close(fd);
}

int main(void) {
  void *p = NULL;
  CHECK(xcclMemAlloc(NULL, 10) == xcclInvalidArgument, "NULL ptr");
  CHECK(xcclMemAlloc(&p, 0) == xcclInvalidArgument, "size 0");
  CHECK(p == NULL, "ptr written on failure");
  XCHECK(xcclMemAlloc(&p, SIZE));
  size_t off = 99;
  int fd = -1;
  uint64_t ino = 0;
  if (!mem_lookup(p, 1, &fd, &ino, &off)) {
    XCHECK(xcclMemFree(p));
    test_skip("xcclMemAlloc gave device memory (a CUDA build with a usable device): the host path is not what runs");
  }
  buf = p;
  buf_fd = fd;
  CHECK(off == 0, "offset of the start %zu", off);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && (uint64_t)st.st_ino == ino, "the inode given is the memfd's");
  long page = sysconf(_SC_PAGESIZE);
  CHECK((uintptr_t)p % (uintptr_t)page == 0, "%p is not page aligned", p);
  int zero = 1;
  for (size_t i = 0; i < SIZE; i++) zero &= buf[i] == 0;
  CHECK(zero, "not zero-filled");
  for (size_t i = 0; i < SIZE; i++) buf[i] = pattern(i);
  int same = 1;
  for (size_t i = 0; i < SIZE; i++) same &= buf[i] == pattern(i);
  CHECK(same, "reads back what was written");

  /* Lookups: inside, at the edge, past it, elsewhere. */
  int fd2 = -1;
  CHECK(mem_lookup(buf + 100, 50, &fd2, &ino, &off) && fd2 == fd && off == 100, "lookup inside (fd %d off %zu)", fd2,
        off);
  CHECK(mem_lookup(buf + SIZE - 10, 10, &fd2, &ino, &off) && off == SIZE - 10, "lookup at the end");
  CHECK(!mem_lookup(buf + SIZE - 10, 11, &fd2, &ino, &off), "lookup past the end");
  int local = 0;
  CHECK(!mem_lookup(&local, sizeof(local), &fd2, &ino, &off), "lookup of the stack");
  CHECK(mem_contains(buf, SIZE) && !mem_contains(&local, 1), "mem_contains");

  /* A peer maps it and writes; this process sees the write. */
  parent = getpid();
  test_run_in_child("peer maps the allocation", NULL, child_maps);
  CHECK(buf[5000] == 0xEE, "the child's write is not seen (0x%02x)", buf[5000]);

  /* Several at once, freed out of order. */
  void *q[3];
  for (int i = 0; i < 3; i++) XCHECK(xcclMemAlloc(&q[i], 4096 * (size_t)(i + 1)));
  CHECK(q[0] != q[1] && q[1] != q[2], "distinct allocations");
  XCHECK(xcclMemFree(q[1]));
  CHECK(mem_contains(q[0], 4096) && mem_contains(q[2], 3 * 4096) && !mem_contains(q[1], 1), "registry after a free");
  XCHECK(xcclMemFree(q[0]));
  XCHECK(xcclMemFree(q[2]));

  /* Refusals. */
  void *heap = malloc(64);
  CHECK(xcclMemFree(heap) == xcclInvalidArgument, "freeing malloc's memory");
  CHECK(strstr(xcclGetLastError(NULL), "xcclMemAlloc"), "message: %s", xcclGetLastError(NULL));
  free(heap);
  CHECK(xcclMemFree(buf + 1) == xcclInvalidArgument, "freeing inside an allocation");
  CHECK(xcclMemFree(NULL) == xcclSuccess, "freeing NULL");
  XCHECK(xcclMemFree(buf));
  CHECK(xcclMemFree(buf) == xcclInvalidArgument, "double free");
  CHECK(!mem_lookup(buf, 1, &fd2, &ino, &off), "lookup after the free");
  return test_finish("mem");
}
