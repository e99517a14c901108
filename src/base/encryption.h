/*
 * encryption.h — what the program asked of encryption (xcclSetEncryption,
 * ncclSetEncryption): TLS on or off, and a pre-shared key of its own.
 *
 * The choice is process-wide and is read when a unique id's root starts and
 * when a communicator is made; from then on it is fixed (encryption_freeze),
 * so every connection of a communicator agrees with its peers'. Unset, TLS
 * is XCCL_TLS and the key comes from the job's secret.
 */
#ifndef XCCL_BASE_ENCRYPTION_H
#define XCCL_BASE_ENCRYPTION_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define ENCRYPTION_PSK_MIN 32   /* bytes, as NCCL asks */
#define ENCRYPTION_PSK_MAX 1024 /* bytes */

enum { ENCRYPTION_NONE = 0, ENCRYPTION_PSK = 1 };

/* Records mode (ENCRYPTION_NONE: TLS off; ENCRYPTION_PSK: TLS on, keyed by
 * psk, a NUL-terminated string of ENCRYPTION_PSK_MIN to ENCRYPTION_PSK_MAX
 * bytes). fn names the caller in errors. xcclInvalidArgument for a bad
 * mode or psk, xcclInvalidUsage once a root or communicator was made; on
 * failure the earlier choice stays. XCCL_TLS then reads as the choice
 * (source fn, in xccl-info and the shared-setting check). */
xcclResult_t encryption_set(int mode, const char *psk, const char *fn);

/* Copies the program's pre-shared key into buf (of cap bytes) and returns
 * its length; 0 when the program gave none. */
size_t encryption_psk(uint8_t *buf, size_t cap);

/* Fixes the choice: later encryption_set calls fail. */
void encryption_freeze(void);

#endif
