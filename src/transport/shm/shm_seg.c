#include "shm_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

static xcclResult_t shm_no_room(size_t bytes, int unnamed, int err) {
  if (unnamed)
    return err_set(xcclSystemError, LOG_NET,
                   "cannot reserve %.1f MiB of memory for a shared-memory connection (%s): the process or its "
                   "container is out of memory; lower XCCL_CHUNK_SIZE or XCCL_NCHANNELS; using TCP for this "
                   "connection",
                   (double)bytes / 1048576.0, strerror(err));
  struct statvfs st;
  double free_mib = statvfs("/dev/shm", &st) == 0 ? (double)st.f_bavail * (double)st.f_frsize / 1048576.0 : -1;
  return err_set(xcclSystemError, LOG_NET,
                 "/dev/shm cannot hold a %.1f MiB shared-memory connection (%s; %.1f MiB free): give it more "
                 "(docker run --shm-size=1g, or mount -o remount,size=1G /dev/shm) or lower XCCL_CHUNK_SIZE; "
                 "using TCP for this connection",
                 (double)bytes / 1048576.0, strerror(err), free_mib);
}

/* A new file to hold the segment: memory without a name, or a fresh name
 * in /dev/shm (s->name, s->linked). */
static xcclResult_t seg_file(int unnamed, shm_seg_t *s, int *fd_p) {
  if (unnamed) {
    if ((*fd_p = memfd_create("xccl-shm", MFD_CLOEXEC)) < 0)
      return err_set(xcclSystemError, LOG_NET, "memfd_create failed: %s", strerror(errno));
    return xcclSuccess;
  }
  unsigned long long rnd = 0;
  if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) rnd = (unsigned long long)getpid() << 20;
  snprintf(s->name, sizeof(s->name), "/xccl-%d-%llx", (int)getpid(), rnd);
  if ((*fd_p = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
    return err_set(xcclSystemError, LOG_NET, "shm_open %s failed: %s", s->name, strerror(errno));
  s->linked = 1;
  return xcclSuccess;
}

xcclResult_t shm_seg_create(size_t bytes, int unnamed, shm_seg_t *seg_p) {
  shm_seg_t s = {0};
  int fd = -1;
  TRY(seg_file(unnamed, &s, &fd));
  /* Reserve the pages now: memory that is not there would otherwise kill
   * the process with SIGBUS on first touch. */
  int rc = ftruncate(fd, (off_t)bytes) == 0 ? posix_fallocate(fd, 0, (off_t)bytes) : errno;
  xcclResult_t res = rc != 0 ? shm_no_room(bytes, unnamed, rc) : xcclSuccess;
  if (res == xcclSuccess) {
    s.base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (s.base == MAP_FAILED)
      res = err_set(xcclSystemError, LOG_NET, "mmap of %zu bytes of shared memory failed: %s", bytes, strerror(errno));
  }
  if (res != xcclSuccess || !unnamed) close(fd); /* a named one is found by its name */
  if (res != xcclSuccess) {
    if (s.linked) shm_unlink(s.name);
    return res;
  }
  s.bytes = bytes;
  s.fd = fd;
  s.fd_open = unnamed;
  *seg_p = s;
  return xcclSuccess;
}

void shm_seg_where(const shm_seg_t *seg, char *buf, size_t len) {
  struct stat st = {0};
  if (!seg->fd_open) {
    snprintf(buf, len, "%s", seg->name);
    return;
  }
  fstat(seg->fd, &st);
  snprintf(buf, len, "@%d:%d:%" PRIx64 ":%" PRIx64, (int)getpid(), seg->fd, (uint64_t)st.st_dev, (uint64_t)st.st_ino);
}

/* Opens what where names, checked to be that file. */
static xcclResult_t seg_open_where(const char *where, int *fd_p) {
  int pid, fd;
  uint64_t dev, ino;
  if (where[0] != '@') {
    if ((*fd_p = shm_open(where, O_RDWR | O_CLOEXEC, 0600)) < 0)
      return err_set(xcclSystemError, LOG_NET, "shm_open %s failed: %s", where, strerror(errno));
    return xcclSuccess;
  }
  if (sscanf(where, "@%d:%d:%" SCNx64 ":%" SCNx64, &pid, &fd, &dev, &ino) != 4)
    return err_set(xcclRemoteError, LOG_NET, "the peer named its shared memory '%.63s', which is no segment", where);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
  int f = open(path, O_RDWR | O_CLOEXEC);
  if (f < 0)
    return err_set(xcclSystemError, LOG_NET,
                   "cannot open the peer's shared memory through %s: %s (XCCL_SHM_MEMFD=0 uses named segments in "
                   "/dev/shm instead)",
                   path, strerror(errno));
  struct stat st;
  if (fstat(f, &st) != 0 || (uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino) {
    close(f);
    return err_set(xcclRemoteError, LOG_NET, "%s is no longer the peer's shared memory: the peer is gone", path);
  }
  *fd_p = f;
  return xcclSuccess;
}

xcclResult_t shm_seg_open(const char *where, size_t bytes, shm_seg_t *seg_p) {
  shm_seg_t s = {0};
  int fd = -1;
  TRY(seg_open_where(where, &fd));
  struct stat st;
  if (fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
    close(fd);
    return err_set(xcclRemoteError, LOG_NET, "shared-memory segment %s is smaller than the %zu bytes expected", where,
                   bytes);
  }
  s.base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (s.base == MAP_FAILED)
    return err_set(xcclSystemError, LOG_NET, "mmap of shared memory %s failed: %s", where, strerror(errno));
  s.bytes = bytes;
  *seg_p = s;
  return xcclSuccess;
}

void shm_seg_unlink(shm_seg_t *seg) {
  if (seg->linked) shm_unlink(seg->name);
  if (seg->fd_open) close(seg->fd);
  seg->linked = seg->fd_open = 0;
}

void shm_seg_close(shm_seg_t *seg) {
  shm_seg_unlink(seg);
  if (seg->base) munmap(seg->base, seg->bytes);
  seg->base = NULL;
}
