/*
 * redop.h — reduction ops made at run time (xcclRedOpCreatePreMulSum).
 *
 * An op is an entry of one process-wide table, owned by the communicator it
 * was made on; its value is xcclNumOps + its index, never reused, so a
 * destroyed op or another communicator's is told apart from a live one. A
 * collective with such an op runs as xcclSum over inputs each rank first
 * multiplies by its scalar: op.c resolves the op (redop_resolve) and
 * the queued operation carries the scalar (redop_premul_t); the group
 * launch (group.c) scales the input into scratch of its own just before it
 * runs, and frees the scratch once it has.
 */
#ifndef XCCL_CORE_REDOP_H
#define XCCL_CORE_REDOP_H

#include <stddef.h>

#include "algo.h"
#include "xccl.h"

struct xcclComm;

/* What a queued collective needs to scale its input. Zeroed: nothing to scale. */
typedef struct {
  int on;                 /* 1: sendbuff is multiplied by the scalar before the sum */
  xcclDataType_t type;    /* the op's datatype, the collective's */
  const void *scalar_ptr; /* xcclScalarDevice: read at launch; NULL: imm holds it */
  unsigned char imm[8];   /* xcclScalarHostImmediate: the scalar as read at create */
  void *scratch;          /* the scaled input, between redop_premul_begin and _end */
} redop_premul_t;

/*
 * a->op not a built-in op, on a collective with an op: looks it up among
 * comm's ops (caller holds comm). On success *pm is filled and a->op becomes
 * xcclSum; an op destroyed, another communicator's or of another datatype
 * is refused with xcclInvalidArgument and a sentence, a and *pm untouched.
 */
xcclResult_t redop_resolve(struct xcclComm *comm, coll_args_t *a, redop_premul_t *pm_p);

/* dst[i] = scalar * src[i] for i < n in pm's type (dst may be src): integer
 * types wrap modulo 2^bits, fp16/bf16/fp8 multiply in float and round to
 * nearest even, float and double natively. The scalar is read now. */
void redop_scale(const redop_premul_t *pm, void *dst, const void *src, size_t n);

/* The launch's side: scales a's input into new scratch (pm->scratch) and
 * points a->sendbuff at it; _end frees it. No-ops when !pm->on. */
xcclResult_t redop_premul_begin(redop_premul_t *pm, coll_args_t *a);
void redop_premul_end(redop_premul_t *pm);

/* Part of comm_ops_free: the ops comm still has become gone (their values
 * are then refused as "its communicator was destroyed"). */
void redop_comm_free(struct xcclComm *comm);

#endif
