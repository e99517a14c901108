/* test_slots.c — the slot protocol's message checks: sizes, the GPU-data mark of
 * GPUDirect RDMA, and the CRC32C that XCCL_CHECKSUM adds to every message. */
#include <stdlib.h>
#include <string.h>

#include "slots.h"
#include "test_util.h"

/* Fills slot `step` of f with n bytes of a pattern and sends it as a kernel does. */
static void send_pattern(slot_fifo_t *f, uint64_t step, size_t n) {
  unsigned char *d = (unsigned char *)slot_fifo_slot(f, step);
  for (size_t i = 0; i < n; i++) d[i] = (unsigned char)(i * 7 + step);
  slot_fifo_send(f, step, n, NULL);
}

static void test_crc_vectors(void) {
  /* The check value of CRC-32C (Castagnoli) and the RFC 3720 (iSCSI) vectors. */
  CHECK(slot_crc32c("123456789", 9) == 0xE3069283u, "crc32c(\"123456789\") = %08x", slot_crc32c("123456789", 9));
  unsigned char zeros[32] = {0}, ones[32];
  memset(ones, 0xff, sizeof(ones));
  CHECK(slot_crc32c(zeros, 32) == 0x8A9136AAu, "32 zero bytes: %08x", slot_crc32c(zeros, 32));
  CHECK(slot_crc32c(ones, 32) == 0x62A8AB43u, "32 0xff bytes: %08x", slot_crc32c(ones, 32));
  CHECK(slot_crc32c("", 0) == 0, "empty: %08x", slot_crc32c("", 0));
}

static void test_checksum_fifo(void) {
  slot_fifo_t *f = slot_fifo_create(4096);
  CHECK(f != NULL, "fifo");
  if (!f) return;
  f->checksum = 1;
  CHECK(slot_fifo_wire_max(f) == 4096 + SLOT_CRC_BYTES, "wire max %zu", slot_fifo_wire_max(f));
  uint64_t got = 0, carried = 0;
  /* A full slot, a small one and an empty one arrive intact. */
  size_t sizes[] = {4096, 13, 0};
  for (uint64_t s = 0; s < 3; s++) {
    send_pattern(f, s, sizes[s]);
    CHECK(slot_fifo_ready(f, s), "message %llu published", (unsigned long long)s);
    CHECK(slot_fifo_size(f, s) == sizes[s] + SLOT_CRC_BYTES, "wire size %zu", slot_fifo_size(f, s));
    CHECK(slot_fifo_check(f, s, sizes[s], &got, &carried) == SLOT_MSG_OK, "message %llu intact", (unsigned long long)s);
    slot_fifo_release(f, s);
  }
  /* One flipped bit anywhere in the data, or in the CRC itself, is caught. */
  size_t flips[] = {0, 2047, 4095, 4096 + 1};
  for (int i = 0; i < 4; i++) {
    uint64_t s = 3 + (uint64_t)i;
    send_pattern(f, s, 4096);
    slot_fifo_slot(f, s)[flips[i]] ^= 0x10;
    slot_msg_t m = slot_fifo_check(f, s, 4096, &got, &carried);
    CHECK(m == SLOT_MSG_CRC, "a flipped bit at byte %zu: result %d", flips[i], (int)m);
    CHECK(got != carried, "computed %08llx vs carried %08llx", (unsigned long long)got, (unsigned long long)carried);
    slot_fifo_release(f, s);
  }
  /* A message of another size is a size error, not a CRC error. */
  send_pattern(f, 7, 100);
  CHECK(slot_fifo_check(f, 7, 200, &got, &carried) == SLOT_MSG_SIZE && got == 100, "size mismatch: got %llu",
        (unsigned long long)got);
  slot_fifo_release(f, 7);
  /* A wire message shorter than a CRC (a peer without XCCL_CHECKSUM) is a size error. */
  slot_fifo_publish(f, 8, 2);
  CHECK(slot_fifo_check(f, 8, 0, &got, &carried) == SLOT_MSG_SIZE, "2-byte message without CRC");
  slot_fifo_destroy(f);
}

static void test_plain_fifo(void) {
  slot_fifo_t *f = slot_fifo_create(1024);
  CHECK(f != NULL, "fifo");
  if (!f) return;
  f->checksum = 0;
  uint64_t got = 0, carried = 0;
  CHECK(slot_fifo_wire_max(f) == 1024, "wire max %zu", slot_fifo_wire_max(f));
  send_pattern(f, 0, 1024);
  CHECK(slot_fifo_size(f, 0) == 1024, "no CRC without checksum: %zu", slot_fifo_size(f, 0));
  slot_fifo_slot(f, 0)[5] ^= 1; /* undetected, as documented */
  CHECK(slot_fifo_check(f, 0, 1024, &got, &carried) == SLOT_MSG_OK, "no checksum: only the size is checked");
  CHECK(slot_fifo_check(f, 0, 512, &got, &carried) == SLOT_MSG_SIZE && got == 1024, "size mismatch");
  slot_fifo_destroy(f);
}

/* The GPU mark (SLOT_SIZE_GPU): the size without it, the data's place in a
 * GPU data area laid out like the slots, the bytes counted without it, and
 * a host consumer that meets one refuses it rather than read the slot. */
static void test_gpu_mark(void) {
  slot_fifo_t *f = slot_fifo_create(1024);
  char *area = malloc(XCCL_STEPS * 2048);
  CHECK(f && area, "fifo and area");
  if (!f || !area) return (void)(free(area), slot_fifo_destroy(f));
  f->checksum = 0;
  uint64_t got = 0, carried = 0;
  CHECK(slot_fifo_area_bytes(f) == XCCL_STEPS * f->slot_stride, "area bytes %zu", slot_fifo_area_bytes(f));
  slot_fifo_publish(f, 0, 100);
  CHECK(slot_fifo_size(f, 0) == 100, "unmarked size %zu", slot_fifo_size(f, 0));
  slot_fifo_publish(f, 1, 300 | SLOT_SIZE_GPU);
  CHECK(slot_fifo_size(f, 1) == 300, "marked size %zu", slot_fifo_size(f, 1));
  CHECK(slot_fifo_area_data(f, area, 1) == area + f->slot_stride + SLOT_HDR_BYTES, "marked data at %p, area %p",
        (void *)slot_fifo_area_data(f, area, 1), (void *)area);
  CHECK(slot_fifo_area_data(f, area, XCCL_STEPS + 1) == slot_fifo_area_data(f, area, 1), "the area wraps as the slots");
  CHECK(atomic_load(&f->bytes) == 400, "bytes counted %llu", (unsigned long long)atomic_load(&f->bytes));
  CHECK(slot_fifo_check(f, 1, 300, &got, &carried) == SLOT_MSG_GPU && got == 300,
        "a host consumer refuses a marked message (got %llu)", (unsigned long long)got);
  CHECK(slot_fifo_check(f, 0, 100, &got, &carried) == SLOT_MSG_OK, "and takes an unmarked one");
  free(area);
  slot_fifo_destroy(f);
}

int main(void) {
  test_gpu_mark();
  if (!slot_checksum_available()) {
    printf("SKIP: xccl was built without ISA-L (libisal-dev): no CRC32C to test\n");
    return TEST_SKIP_CODE;
  }
  test_crc_vectors();
  test_checksum_fifo();
  test_plain_fifo();
  return test_finish("slots");
}
