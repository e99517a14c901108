/*
 * cuda_device.c — the CUDA device a communicator is made on: the one current
 * at init, or the one xcclCommInitAll gives each rank (comm.h's hooks, built
 * with CUDA only).
 */
#include <cuda_runtime_api.h>

#include "comm.h"
#include "enqueue_cuda_int.h"
#include "log.h"

/* The number of usable devices, 0 where CUDA cannot be used (no driver, no device). */
static int usable_devices(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int comm_cuda_current_device(void) {
  int d = -1;
  if (usable_devices() == 0 || cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

xcclResult_t comm_cuda_use_device(int *dev) {
  int n = usable_devices();
  if (n == 0) { /* host buffers only, as documented */
    *dev = -1;
    return xcclSuccess;
  }
  if (*dev >= n)
    return err_set(xcclInvalidArgument, LOG_INIT, "CUDA device %d does not exist (this process sees %d)", *dev, n);
  cudaError_t e = cudaSetDevice(*dev);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return err_set(xcclUnhandledCudaError, LOG_INIT, "cudaSetDevice(%d) failed: %s", *dev, cudaGetErrorString(e));
  }
  return xcclSuccess;
}

int comm_cuda_bound_device(const struct xcclComm *comm) {
  const cuda_comm_t *s = atomic_load_explicit(&((struct xcclComm *)comm)->cuda, memory_order_acquire);
  return s ? s->device : -1;
}

void comm_cuda_busid(const struct xcclComm *comm, char *buf, size_t len) {
  if (len) buf[0] = 0;
  int d = comm->cuda_dev >= 0 ? comm->cuda_dev : comm_cuda_current_device();
  if (d < 0 || len < 2) return;
  if (cudaDeviceGetPCIBusId(buf, (int)len, d) != cudaSuccess) {
    cudaGetLastError();
    buf[0] = 0;
  }
}
