/* An NCCL program against the installed xccl-nccl/nccl.h and libnccl.so.2:
 * one rank, an all-reduce of host memory. */
#include <nccl.h>
#include <stdio.h>

int main(void) {
  ncclUniqueId id;
  ncclComm_t comm;
  int v = 21, version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || ncclGetUniqueId(&id) != ncclSuccess ||
      ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess ||
      ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, comm, (cudaStream_t)0) != ncclSuccess) {
    fprintf(stderr, "nccl consumer: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  ncclCommDestroy(comm);
  printf("nccl consumer: NCCL API %d on xccl, all-reduce %d\n", version, v);
  /* The library serves a newer NCCL (2.32.3) than this header declares (2.28.9). */
  return v == 21 && version >= NCCL_VERSION_CODE ? 0 : 1;
}
