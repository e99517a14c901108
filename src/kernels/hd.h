/*
 * hd.h — XCCL_HD marks a function that compiles both as host C and as CUDA
 * device code: `__host__ __device__` under nvcc, nothing for a C compiler.
 *
 * The headers that use it (fp_convert.h, reduce_ops.h, ring_schedule.h)
 * hold the logic the host twins and the CUDA kernels share, so the host tests
 * exercise the same arithmetic and the same schedule the GPU runs. Such code
 * stays header-only, calls no libc function, and has no C-only construct.
 */
#ifndef XCCL_KERNELS_HD_H
#define XCCL_KERNELS_HD_H

#ifdef __CUDACC__
#define XCCL_HD __host__ __device__
#else
#define XCCL_HD
#endif

#endif
