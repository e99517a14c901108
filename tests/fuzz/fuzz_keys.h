/* fuzz_keys.h — the fixed secret and nonce of fuzz_bootstrap_msg, shared with
 * gen_corpus so that its seed frames are authentic to the fuzzer. */
#ifndef XCCL_TESTS_FUZZ_KEYS_H
#define XCCL_TESTS_FUZZ_KEYS_H

#include <stdint.h>

#include "bootstrap_msg.h"

static inline const uint8_t *fuzz_key(void) {
  static uint8_t key[BS_SECRET_BYTES];
  for (int i = 0; i < BS_SECRET_BYTES; i++) key[i] = (uint8_t)(0x5a ^ (i * 7));
  return key;
}

static inline const uint8_t *fuzz_nonce(void) {
  static uint8_t nonce[BS_NONCE_BYTES];
  for (int i = 0; i < BS_NONCE_BYTES; i++) nonce[i] = (uint8_t)(0xc3 + i);
  return nonce;
}

#endif
