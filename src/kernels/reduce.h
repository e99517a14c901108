/*
 * reduce.h — element-wise reductions on host memory, for every type and op.
 *
 * These are the host twins of the device reduction kernels: tight loops per
 * (type, op) that the compiler vectorizes. fp16, bf16 and fp8 are widened to
 * float, combined, and rounded back to nearest-even (see fp_convert.h).
 */
#ifndef XCCL_KERNELS_REDUCE_H
#define XCCL_KERNELS_REDUCE_H

#include <stddef.h>
#include "xccl.h"

/*
 * dst[i] = a[i] op b[i] for i < n. dst may be the same pointer as a or b (but
 * must not otherwise overlap). xcclAvg combines as xcclSum; the division
 * happens once, in kern_divide. Type and op must be valid (callers check;
 * anything else is a no-op). Integer sum and prod wrap modulo 2^bits, signed
 * types included. Floating max/min return NaN if either input is NaN and
 * order -0 below +0, so (NaN payloads aside) the result does not depend on
 * the operand order.
 */
void kern_reduce(void *dst, const void *a, const void *b, size_t n, xcclDataType_t type,
                 xcclRedOp_t op);

/* dst[i] = src[i] / divisor, the last step of xcclAvg. Integer types divide
 * truncating toward zero; floating types divide in float (double for
 * float64) and round to nearest-even. dst may equal src. The divisor is a
 * rank count; other values are still defined: for integer types 0 leaves the
 * values unchanged, MIN / -1 wraps to MIN, and unsigned values divided by a
 * negative divisor give the truncated quotient modulo 2^bits. */
void kern_divide(void *dst, const void *src, size_t n, xcclDataType_t type, int divisor);

/* xcclTypeSize, inline for the per-call and per-step paths: 0 for a type
 * that is none. (types.c) */
extern const unsigned char kern_type_sizes[xcclNumTypes];
static inline size_t kern_type_size(xcclDataType_t t) {
  return (unsigned)t < (unsigned)xcclNumTypes ? kern_type_sizes[t] : 0;
}

/* "float32", "sum", ... for messages; never NULL. (types.c) */
const char *kern_type_name(xcclDataType_t type);
const char *kern_op_name(xcclRedOp_t op);

#endif
