/*
 * test_set_encryption.c — xcclSetEncryption, in one process:
 *   - a bad mode, a missing or short psk are xcclInvalidArgument, and leave
 *     the setting as it was;
 *   - a psk turns XCCL_TLS on (its source says the call), and the keys
 *     derived for a job then depend on the psk: two psks, or none, give
 *     three keys; mode none turns TLS off;
 *   - after xcclGetUniqueId the setting is fixed: xcclInvalidUsage, with a
 *     sentence that says to call it before.
 */
#include <string.h>

#include "bootstrap.h"
#include "config.h"
#include "test_util.h"

static const char psk_a[] = "test_set_encryption: the first key, 32 bytes or more";
static const char psk_b[] = "test_set_encryption: the other key, 32 bytes or more";

int main(void) {
  uint8_t secret[BS_SECRET_BYTES], k_a[32], k_b[32], k_none[32];
  memset(secret, 7, sizeof(secret));

  CHECK(xcclSetEncryption((xcclEncryptionMode_t)5, psk_a) == xcclInvalidArgument, "mode 5 taken");
  CHECK(xcclSetEncryption(xcclEncryptionPsk, NULL) == xcclInvalidArgument, "a NULL psk taken");
  CHECK(xcclSetEncryption(xcclEncryptionPsk, "31 bytes, one short of enough..") == xcclInvalidArgument,
        "a 31-byte psk taken");
  CHECK(strstr(xcclGetLastError(NULL), "32"), "the refusal does not say how long a psk must be: %s",
        xcclGetLastError(NULL));
  CHECK(!config_bool(CFG_TLS), "a refused call turned TLS on");

  XCHECK(xcclSetEncryption(xcclEncryptionPsk, psk_a));
  CHECK(config_bool(CFG_TLS), "a psk did not turn TLS on");
  CHECK(strcmp(config_source(CFG_TLS), "xcclSetEncryption") == 0, "XCCL_TLS's source is %s",
        config_source(CFG_TLS));
  CHECK(bs_derive_key(secret, "label", k_a) == 0, "derivation failed");
  XCHECK(xcclSetEncryption(xcclEncryptionPsk, psk_b));
  CHECK(bs_derive_key(secret, "label", k_b) == 0, "derivation failed");
  XCHECK(xcclSetEncryption(xcclEncryptionNone, NULL));
  CHECK(!config_bool(CFG_TLS), "mode none left TLS on");
  CHECK(bs_derive_key(secret, "label", k_none) == 0, "derivation failed");
  CHECK(memcmp(k_a, k_b, 32) != 0, "two psks gave one key");
  CHECK(memcmp(k_a, k_none, 32) != 0 && memcmp(k_b, k_none, 32) != 0, "a psk did not change the key");

  XCHECK(xcclSetEncryption(xcclEncryptionPsk, psk_a));
  xcclUniqueId id;
  XCHECK(xcclGetUniqueId(&id));
  CHECK(xcclSetEncryption(xcclEncryptionNone, NULL) == xcclInvalidUsage, "the setting changed after an id");
  CHECK(strstr(xcclGetLastError(NULL), "before"), "the refusal does not say when to call it: %s",
        xcclGetLastError(NULL));
  CHECK(config_bool(CFG_TLS), "a refused call turned TLS off");
  return test_finish("test_set_encryption");
}
