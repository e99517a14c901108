/*
 * test_rma.c — the one-sided calls (xcclPutSignal, xcclSignal,
 * xcclWaitSignal) under xccl-run, over whichever transport XCCL_TRANSPORT /
 * XCCL_NET pick: shared memory, sockets, ib (tests/rxe/plan.sh).
 *
 * usage: test_rma MODE   with MODE one of
 *   puts     every rank puts to every other rank, at each size of SIZES
 *            (0 bytes up to several XCCL_RMA_CHUNK_SIZE slots), into a
 *            region of the peer's window of its own; the target waits for
 *            each put's signal and checks every byte, and that the guard
 *            bytes around each region are untouched; then signals that add
 *            up (two puts and a signal alone on one sigIdx, one wait for 3)
 *   corrupt  2 ranks, run with XCCL_FAULT="rank=0,action=corrupt": rank 0's
 *            first message, an 8-byte put, has one bit of its header flipped
 *            on the way; rank 1's wait fails naming rank 0, not one byte of
 *            its window changed, and every later wait on rank 0 fails too;
 *            rank 1's put to rank 0 still lands; with XCCL_CHECKSUM the
 *            slot's CRC32C catches it first, and the sentence says so
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "xccl.h"

static const size_t SIZES[] = {0, 1, 8, 4093, 65536 - 40, 65536, 3 * 65536 + 7, (1u << 20) + 13};
#define NSIZES (sizeof(SIZES) / sizeof(SIZES[0]))
#define GUARD 64         /* untouched bytes before and after each region */
#define GUARD_BYTE 0xEE  /* what they hold */

static int nranks, rank;

/* Byte i of the put from src to dst at size index k. */
static unsigned char pattern(int src, int dst, int k, size_t i) {
  return (unsigned char)(i * 131u + (size_t)src * 17u + (size_t)dst * 7u + (size_t)k * 29u + 1u);
}

/* Where src's put at size index k lands in a window: regions one after the
 * other, each with GUARD bytes before and after. */
static size_t region(int src, int k) {
  size_t off = 0, per_src = 0;
  for (size_t j = 0; j < NSIZES; j++) per_src += SIZES[j] + 2 * GUARD;
  off = (size_t)src * per_src;
  for (int j = 0; j < k; j++) off += SIZES[j] + 2 * GUARD;
  return off + GUARD;
}

static size_t window_bytes(void) { return region(nranks, 0); }

static void wait_one(xcclComm_t comm, int peer, int sig, int ctx, int cnt, const char *what) {
  xcclWaitSignalDesc_t d = {.opCnt = cnt, .peer = peer, .sigIdx = sig, .ctx = ctx};
  xcclResult_t r = xcclWaitSignal(1, &d, comm, NULL);
  CHECK(r == xcclSuccess, "rank %d: wait for %s from rank %d -> %s: %s", rank, what, peer, xcclGetErrorString(r),
        xcclGetLastError(comm));
}

static void mode_puts(xcclComm_t comm) {
  size_t wb = window_bytes();
  unsigned char *win_buf = malloc(wb), *src = malloc(SIZES[NSIZES - 1] + 1);
  CHECK(win_buf && src, "out of memory for a %zu-byte window", wb);
  if (!win_buf || !src) exit(1);
  memset(win_buf, GUARD_BYTE, wb);
  xcclWindow_t win;
  XCHECK(xcclCommWindowRegister(comm, win_buf, wb, &win, XCCL_WIN_DEFAULT));
  for (int k = 0; k < (int)NSIZES; k++) {
    for (int i = 1; i < nranks; i++) {
      int dst = (rank + i) % nranks;
      for (size_t b = 0; b < SIZES[k]; b++) src[b] = pattern(rank, dst, k, b);
      xcclResult_t r = xcclPutSignal(src, SIZES[k], xcclUint8, dst, win, region(rank, k), k % XCCL_RMA_SIGNALS,
                                     k % XCCL_RMA_CTXS, 0, comm, NULL);
      CHECK(r == xcclSuccess, "rank %d: put of %zu bytes to rank %d -> %s: %s", rank, SIZES[k], dst,
            xcclGetErrorString(r), xcclGetLastError(comm));
      memset(src, 0, SIZES[k]); /* localbuff may be reused once the put returned */
    }
    for (int i = 1; i < nranks; i++) {
      int from = (rank + nranks - i) % nranks;
      wait_one(comm, from, k % XCCL_RMA_SIGNALS, k % XCCL_RMA_CTXS, 1, "a put");
      const unsigned char *got = win_buf + region(from, k);
      size_t bad = 0, first = 0;
      for (size_t b = 0; b < SIZES[k]; b++)
        if (got[b] != pattern(from, rank, k, b) && !bad++) first = b;
      CHECK(bad == 0, "rank %d: %zu of the %zu bytes rank %d put differ, the first at %zu", rank, bad, SIZES[k], from,
            first);
      for (size_t g = 1; g <= GUARD; g++)
        if (got[-(ptrdiff_t)g] != GUARD_BYTE || got[SIZES[k] + g - 1] != GUARD_BYTE) {
          CHECK(0, "rank %d: a guard byte around rank %d's %zu-byte put changed", rank, from, SIZES[k]);
          break;
        }
    }
  }
  /* Counts add up: two puts and a signal alone on one (sigIdx, ctx), one wait for 3. */
  for (int i = 1; i < nranks; i++) {
    int dst = (rank + i) % nranks;
    XCHECK(xcclPutSignal(src, 8, xcclUint8, dst, win, region(rank, 2), 31, 3, 0, comm, NULL));
    XCHECK(xcclPutSignal(src, 8, xcclUint8, dst, win, region(rank, 2), 31, 3, 0, comm, NULL));
    XCHECK(xcclSignal(dst, 31, 3, 0, comm, NULL));
  }
  for (int i = 1; i < nranks; i++) wait_one(comm, (rank + i) % nranks, 31, 3, 3, "two puts and a signal");
  XCHECK(xcclBarrier(comm)); /* nobody puts into the window any more */
  XCHECK(xcclCommWindowDeregister(comm, win));
  free(win_buf);
  free(src);
}

static void mode_corrupt(xcclComm_t comm) {
  if (nranks != 2) test_skip("corrupt runs on 2 ranks");
  enum { WB = 4096 };
  static unsigned char win_buf[WB];
  memset(win_buf, GUARD_BYTE, WB);
  xcclWindow_t win;
  XCHECK(xcclCommWindowRegister(comm, win_buf, WB, &win, XCCL_WIN_DEFAULT));
  unsigned char src[8];
  for (int b = 0; b < 8; b++) src[b] = (unsigned char)(0x10 + b);
  if (rank == 0) {
    /* The fault flips a bit in the middle of the message: in the header of an 8-byte put */
    XCHECK(xcclPutSignal(src, 8, xcclUint8, 1, win, 0, 0, 0, 0, comm, NULL));
    XCHECK(xcclSignal(1, 0, 0, 0, comm, NULL)); /* after the corrupt one: dropped on arrival */
    wait_one(comm, 1, 0, 0, 1, "rank 1's put"); /* the other direction is whole */
    CHECK(memcmp(win_buf, src, 8) == 0, "rank 0: rank 1's put did not land");
  } else {
    XCHECK(xcclPutSignal(src, 8, xcclUint8, 0, win, 0, 0, 0, 0, comm, NULL));
    xcclWaitSignalDesc_t d = {.opCnt = 1, .peer = 0, .sigIdx = 0, .ctx = 0};
    const char *cks = getenv("XCCL_CHECKSUM");
    const char *why = cks && strcmp(cks, "0") ? "failed its CRC32C" : "corrupt header";
    for (int again = 0; again < 2; again++) {
      xcclResult_t r = xcclWaitSignal(1, &d, comm, NULL);
      const char *msg = xcclGetLastError(comm);
      CHECK(r == xcclRemoteError, "rank 1: wait %d on rank 0's corrupt put -> %s, not xcclRemoteError", again,
            xcclGetErrorString(r));
      CHECK(strstr(msg, "from rank 0") && strstr(msg, why), "rank 1: wait %d's error does not name rank 0 and '%s': %s",
            again, why, msg);
    }
    size_t changed = 0;
    for (int b = 0; b < WB; b++) changed += win_buf[b] != GUARD_BYTE;
    CHECK(changed == 0, "rank 1: %zu bytes of the window changed although the put's header was corrupt", changed);
  }
  XCHECK(xcclBarrier(comm));
  XCHECK(xcclCommWindowDeregister(comm, win));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s puts|corrupt\n", argv[0]);
    return 2;
  }
  xcclComm_t comm;
  XCHECK(xcclCommInitFromEnv(&comm));
  XCHECK(xcclCommCount(comm, &nranks));
  XCHECK(xcclCommUserRank(comm, &rank));
  if (nranks < 2) test_skip("needs 2 ranks or more");
  if (!strcmp(argv[1], "puts"))
    mode_puts(comm);
  else if (!strcmp(argv[1], "corrupt"))
    mode_corrupt(comm);
  else
    return 2;
  XCHECK(xcclCommDestroy(comm));
  return test_finish(argv[1]);
}
