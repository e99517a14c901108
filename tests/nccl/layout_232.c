/*
 * layout_232.c — the layout of what 2.29 .. 2.32.3 added to nccl.h, printed
 * one line per fact. Built twice: against NVIDIA's 2.32.3 header and
 * against src/nccl/nccl_232.h (XCCL_SIDE), the shim's own declarations;
 * nccl_abi_layout_232 runs both and fails where a line differs.
 */
#include <stddef.h>
#include <stdio.h>

#ifdef XCCL_SIDE
#include "nccl_232.h"
typedef ncclConfig_232_t config_t;
#define API_MAGIC XCCL_NCCL_API_MAGIC
#define ENC_NONE XCCL_NCCL_ENCRYPTION_NONE
#define ENC_PSK XCCL_NCCL_ENCRYPTION_PSK
#define SERVED XCCL_NCCL_SERVED_VERSION
#else
#include <nccl.h>
typedef ncclConfig_t config_t;
#define API_MAGIC NCCL_API_MAGIC
#define ENC_NONE NCCL_ENCRYPTION_MODE_NONE
#define ENC_PSK NCCL_ENCRYPTION_MODE_PSK
#define SERVED NCCL_VERSION_CODE
#endif

#define FIELD(t, f) printf(#t "." #f " at %zu, %zu bytes\n", offsetof(t, f), sizeof(((t *)0)->f))
#define VALUE(v) printf(#v " = %lld\n", (long long)(v))

int main(void) {
  printf("config_t %zu bytes\n", sizeof(config_t));
  FIELD(config_t, graphUsageMode);
  FIELD(config_t, numRmaCtx);
  FIELD(config_t, maxP2pPeers);
  FIELD(config_t, graphStreamOrdering);
  FIELD(config_t, launchOrderImplicit);
  FIELD(config_t, numRmaSig);
  FIELD(config_t, rmaEagerInit);
  FIELD(config_t, hostCftMode);
  FIELD(config_t, nvlsHostMode);
  printf("ncclCollConfig_t %zu bytes\n", sizeof(ncclCollConfig_t));
  FIELD(ncclCollConfig_t, size);
  FIELD(ncclCollConfig_t, magic);
  FIELD(ncclCollConfig_t, version);
  FIELD(ncclCollConfig_t, ext);
  FIELD(ncclCollConfig_t, minCTAs);
  FIELD(ncclCollConfig_t, maxCTAs);
  FIELD(ncclCollConfig_t, nvlsCTAs);
  FIELD(ncclCollConfig_t, cgaClusterSize);
  FIELD(ncclCollConfig_t, algSelection);
  FIELD(ncclCollConfig_t, forceAlgSelection);
  FIELD(ncclCollConfig_t, CTAPolicy);
  FIELD(ncclCollConfig_t, userProfilerTag);
  FIELD(ncclCollConfig_t, launchCompletionEvent);
  printf("ncclConfigExt_t %zu bytes\n", sizeof(ncclConfigExt_t));
  FIELD(ncclConfigExt_t, next);
  FIELD(ncclConfigExt_t, key.vendorId);
  FIELD(ncclConfigExt_t, key.optionId);
  FIELD(ncclConfigExt_t, val);
  printf("ncclWaitSignalDesc_t %zu bytes\n", sizeof(ncclWaitSignalDesc_t));
  FIELD(ncclWaitSignalDesc_t, opCnt);
  FIELD(ncclWaitSignalDesc_t, peer);
  FIELD(ncclWaitSignalDesc_t, sigIdx);
  FIELD(ncclWaitSignalDesc_t, ctx);
  printf("ncclEncryptionConfig_t %zu bytes\n", sizeof(ncclEncryptionConfig_t));
  FIELD(ncclEncryptionConfig_t, mode);
  FIELD(ncclEncryptionConfig_t, psk);
  printf("ncclCommMemStat_t %zu bytes\n", sizeof(ncclCommMemStat_t));
  VALUE(ncclStatGpuMemSuspend);
  VALUE(ncclStatGpuMemSuspended);
  VALUE(ncclStatGpuMemPersist);
  VALUE(ncclStatGpuMemTotal);
  VALUE(NCCL_SUSPEND_MEM);
  VALUE(API_MAGIC);
  VALUE(ENC_NONE);
  VALUE(ENC_PSK);
  VALUE(SERVED);
  return 0;
}
