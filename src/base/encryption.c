/*
 * encryption.c — the program's encryption choice (encryption.h).
 */
#include "encryption.h"

#include <pthread.h>
#include <string.h>

#include "config.h"
#include "log.h"

static pthread_mutex_t enc_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t enc_psk[ENCRYPTION_PSK_MAX];
static size_t enc_psk_len;
static int enc_frozen;

static void wipe(volatile uint8_t *p, size_t n) {
  while (n--) *p++ = 0;
}

xcclResult_t encryption_set(int mode, const char *psk, const char *fn) {
  if (mode != ENCRYPTION_NONE && mode != ENCRYPTION_PSK)
    return err_set(xcclInvalidArgument, LOG_INIT, "%s: mode %d is neither none (0) nor a pre-shared key (1)", fn,
                   mode);
  size_t n = 0;
  if (mode == ENCRYPTION_PSK) {
    if (!psk) return err_set(xcclInvalidArgument, LOG_INIT, "%s: the pre-shared key mode needs a psk string", fn);
    n = strnlen(psk, ENCRYPTION_PSK_MAX + 1);
    if (n < ENCRYPTION_PSK_MIN || n > ENCRYPTION_PSK_MAX)
      return err_set(xcclInvalidArgument, LOG_INIT,
                     "%s: the psk has %s%zu bytes; give one of %d to %d bytes (the same on every rank)", fn,
                     n > ENCRYPTION_PSK_MAX ? "more than " : "",
                     n > ENCRYPTION_PSK_MAX ? (size_t)ENCRYPTION_PSK_MAX : n,
                     ENCRYPTION_PSK_MIN, ENCRYPTION_PSK_MAX);
  }
  pthread_mutex_lock(&enc_lock);
  if (enc_frozen) {
    pthread_mutex_unlock(&enc_lock);
    return err_set(xcclInvalidUsage, LOG_INIT,
                   "%s: called after this process made a unique id or a communicator; call it before "
                   "xcclGetUniqueId and the first communicator init, with the same setting on every rank",
                   fn);
  }
  wipe(enc_psk, sizeof(enc_psk));
  if (n) memcpy(enc_psk, psk, n);
  enc_psk_len = n;
  config_override(CFG_TLS, mode == ENCRYPTION_PSK, fn);
  pthread_mutex_unlock(&enc_lock);
  INFO(INIT, "%s: TLS %s", fn, mode == ENCRYPTION_PSK ? "on, keyed by the program's pre-shared key" : "off");
  return xcclSuccess;
}

size_t encryption_psk(uint8_t *buf, size_t cap) {
  pthread_mutex_lock(&enc_lock);
  size_t n = enc_psk_len <= cap ? enc_psk_len : 0;
  if (n) memcpy(buf, enc_psk, n);
  pthread_mutex_unlock(&enc_lock);
  return n;
}

void encryption_freeze(void) {
  pthread_mutex_lock(&enc_lock);
  enc_frozen = 1;
  pthread_mutex_unlock(&enc_lock);
}
