/*
 * perf_device.h — where xccl-perf's buffers live: host memory, or with
 * --device the current CUDA device's memory, with the collectives enqueued
 * on a stream and timed to its completion (like NCCL's tests). Builds
 * without CUDA have the same functions; perf_dev_open says why they cannot
 * be used.
 */
#ifndef XCCL_TOOLS_PERF_DEVICE_H
#define XCCL_TOOLS_PERF_DEVICE_H

#include <stddef.h>

#include "xccl.h"

/* Makes device buffers usable in this process (CUDA device `local_rank`
 * modulo the devices there are, the one xccl's device path runs on).
 * 0, or -1 with a sentence in why. */
int perf_dev_open(int local_rank, char *why, size_t len);
/* The stream the collectives run on (after perf_dev_open). */
void *perf_dev_stream(void);
/* A device buffer of bytes, zeroed; NULL when out of memory. */
void *perf_dev_alloc(size_t bytes);
void perf_dev_free(void *p);
/* bytes from src to dst, either of them device or host memory; waits. 0 or -1. */
int perf_dev_copy(void *dst, const void *src, size_t bytes);
/* Waits until everything on the stream is done. 0, or -1 with a sentence in why. */
int perf_dev_sync(char *why, size_t len);
/* "NVIDIA H200 (device 0)" after perf_dev_open. */
const char *perf_dev_name(void);

/* --memalloc: host buffers from xcclMemAlloc (memory peers on the host can
 * map), each registered on every rank as a window, which lets the cost model
 * choose zero copy; input (send_bytes) is copied into the first. Collective:
 * every rank calls it. 0, or -1 after printing why. */
int perf_mem_windows(xcclComm_t comm, int rank, const void *input, size_t send_bytes, size_t recv_bytes,
                     void **send_p, void **recv_p, xcclWindow_t wins[2]);
/* Deregisters the windows (before the communicator goes), then, after it,
 * frees the buffers. */
void perf_mem_deregister(xcclComm_t comm, xcclWindow_t wins[2]);
void perf_mem_free(void *send, void *recv);

#endif
