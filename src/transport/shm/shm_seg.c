#include "shm_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

static xcclResult_t shm_no_room(size_t bytes, int err) {
  struct statvfs st;
  double free_mib = statvfs("/dev/shm", &st) == 0 ? (double)st.f_bavail * (double)st.f_frsize / 1048576.0 : -1;
  return err_set(xcclSystemError, LOG_NET,
                 "/dev/shm cannot hold a %.1f MiB shared-memory connection (%s; %.1f MiB free): give it more "
                 "(docker run --shm-size=1g, or mount -o remount,size=1G /dev/shm) or lower XCCL_CHUNK_SIZE; "
                 "using TCP for this connection",
                 (double)bytes / 1048576.0, strerror(err), free_mib);
}

xcclResult_t shm_seg_create(size_t bytes, shm_seg_t *seg_p) {
  shm_seg_t s = {0};
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = (unsigned long long)getpid() << 20;
  snprintf(s.name, sizeof(s.name), "/xccl-%d-%llx", (int)getpid(), rnd);
  int fd = shm_open(s.name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return err_set(xcclSystemError, LOG_NET, "shm_open %s failed: %s", s.name, strerror(errno));
  s.linked = 1;
  /* Reserve the pages now: a tmpfs that is too small would otherwise kill
   * the process with SIGBUS on first touch. */
  int rc = ftruncate(fd, (off_t)bytes) == 0 ? posix_fallocate(fd, 0, (off_t)bytes) : errno;
  if (rc != 0) {
    close(fd);
    shm_unlink(s.name);
    return shm_no_room(bytes, rc);
  }
  s.base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s.base == MAP_FAILED) {
    shm_unlink(s.name);
    return err_set(xcclSystemError, LOG_NET, "mmap of %zu bytes of shared memory failed: %s", bytes, strerror(errno));
  }
  s.bytes = bytes;
  *seg_p = s;
  return xcclSuccess;
}

xcclResult_t shm_seg_open(const char *name, size_t bytes, shm_seg_t *seg_p) {
  shm_seg_t s = {0};
  snprintf(s.name, sizeof(s.name), "%s", name);
  int fd = shm_open(s.name, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return err_set(xcclSystemError, LOG_NET, "shm_open %s failed: %s", s.name, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
    close(fd);
    return err_set(xcclRemoteError, LOG_NET, "shared-memory segment %s is smaller than the %zu bytes expected", name,
                   bytes);
  }
  s.base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s.base == MAP_FAILED)
    return err_set(xcclSystemError, LOG_NET, "mmap of shared memory %s failed: %s", name, strerror(errno));
  s.bytes = bytes;
  *seg_p = s;
  return xcclSuccess;
}

void shm_seg_unlink(shm_seg_t *seg) {
  if (seg->linked) shm_unlink(seg->name);
  seg->linked = 0;
}

void shm_seg_close(shm_seg_t *seg) {
  shm_seg_unlink(seg);
  if (seg->base) munmap(seg->base, seg->bytes);
  seg->base = NULL;
}
