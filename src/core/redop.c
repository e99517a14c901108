/*
 * redop.c — xcclRedOpCreatePreMulSum and xcclRedOpDestroy, the table of
 * ops they manage, and the scaling a collective with such an op runs
 * first (redop.h).
 */
#include "redop.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "error.h"
#include "fp_convert.h"
#include "log.h"
#include "op.h"
#include "reduce.h"

/* One op. comm NULL: gone, `gone` says how. */
typedef struct {
  struct xcclComm *comm;
  const char *gone;
  xcclDataType_t type;
  xcclScalarResidence_t residence;
  const void *scalar_ptr;
  unsigned char imm[8];
} redop_entry_t;

/* Every op of the process, indexed by op - xcclNumOps; entries are never
 * reused, so an old value keeps saying what became of it. */
static pthread_mutex_t redop_lock = PTHREAD_MUTEX_INITIALIZER;
static redop_entry_t *redops;
static int nredops, redops_cap;

xcclResult_t xcclRedOpCreatePreMulSum(xcclRedOp_t *op, void *scalar, xcclDataType_t datatype,
                                      xcclScalarResidence_t residence, xcclComm_t comm) {
  TRY(comm_acquire(comm));
  xcclResult_t res = xcclSuccess;
  size_t esize = 0;
  if (!op || !scalar)
    res = err_set(xcclInvalidArgument, LOG_COLL, "xcclRedOpCreatePreMulSum: %s is NULL", !op ? "op" : "scalar");
  else
    res = op_check_type("xcclRedOpCreatePreMulSum", datatype, &esize);
  if (res == xcclSuccess && residence != xcclScalarDevice && residence != xcclScalarHostImmediate)
    res = err_set(xcclInvalidArgument, LOG_COLL,
                  "xcclRedOpCreatePreMulSum: residence %d is neither xcclScalarDevice (0) nor "
                  "xcclScalarHostImmediate (1)",
                  (int)residence);
  if (res != xcclSuccess) goto out;
  redop_entry_t e = {.comm = comm, .type = datatype, .residence = residence};
  if (residence == xcclScalarHostImmediate) memcpy(e.imm, scalar, esize);
  else e.scalar_ptr = scalar;
  pthread_mutex_lock(&redop_lock);
  if (nredops == redops_cap) {
    int cap = redops_cap ? 2 * redops_cap : 16;
    redop_entry_t *t = cap > redops_cap && cap <= INT_MAX - xcclNumOps ? realloc(redops, sizeof(*t) * (size_t)cap)
                                                                        : NULL;
    if (!t) {
      pthread_mutex_unlock(&redop_lock);
      res = err_set(xcclSystemError, LOG_COLL, "xcclRedOpCreatePreMulSum: no room for op %d", nredops + 1);
      goto out;
    }
    redops = t;
    redops_cap = cap;
  }
  redops[nredops] = e;
  *op = (xcclRedOp_t)(xcclNumOps + nredops++);
  pthread_mutex_unlock(&redop_lock);
out:
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

/* Under redop_lock: why op is not one of comm's live ops, or NULL when it is. */
static const char *redop_refusal(const struct xcclComm *comm, int op, char *buf, size_t len) {
  int i = op - xcclNumOps;
  if (op < 0) return "no op is negative";
  if (op < xcclNumOps) return "it is a built-in op";
  if (i >= nredops) return "no xcclRedOpCreatePreMulSum made it";
  if (!redops[i].comm) return redops[i].gone;
  if (redops[i].comm != comm) {
    snprintf(buf, len, "it belongs to another communicator (%p, rank %d)", (void *)redops[i].comm,
             redops[i].comm->rank);
    return buf;
  }
  return NULL;
}

xcclResult_t xcclRedOpDestroy(xcclRedOp_t op, xcclComm_t comm) {
  TRY(comm_acquire(comm));
  char buf[96];
  pthread_mutex_lock(&redop_lock);
  const char *why = redop_refusal(comm, (int)op, buf, sizeof(buf));
  if (!why) redops[(int)op - xcclNumOps] = (redop_entry_t){.gone = "it was destroyed (xcclRedOpDestroy)"};
  xcclResult_t res = why ? err_set(xcclInvalidArgument, LOG_COLL, "xcclRedOpDestroy: op %d is not an op of this "
                                   "communicator to destroy: %s", (int)op, why)
                         : xcclSuccess;
  pthread_mutex_unlock(&redop_lock);
  comm_release(comm);
  return res == xcclSuccess ? res : comm_record(comm, res);
}

void redop_comm_free(struct xcclComm *comm) {
  pthread_mutex_lock(&redop_lock);
  for (int i = 0; i < nredops; i++)
    if (redops[i].comm == comm) redops[i] = (redop_entry_t){.gone = "its communicator was destroyed"};
  pthread_mutex_unlock(&redop_lock);
}

xcclResult_t redop_resolve(struct xcclComm *comm, coll_args_t *a, redop_premul_t *pm_p) {
  char buf[96];
  pthread_mutex_lock(&redop_lock);
  const char *why = redop_refusal(comm, (int)a->op, buf, sizeof(buf));
  redop_entry_t e = why ? (redop_entry_t){0} : redops[(int)a->op - xcclNumOps];
  pthread_mutex_unlock(&redop_lock);
  if (why)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: unknown reduction op %d (valid: 0..%d, or a live op this "
                   "communicator made with xcclRedOpCreatePreMulSum): %s", a->name, (int)a->op, xcclNumOps - 1, why);
  if (e.type != a->type)
    return err_set(xcclInvalidArgument, LOG_COLL, "%s: reduction op %d was made for %s, but the call's datatype is %s",
                   a->name, (int)a->op, kern_type_name(e.type), kern_type_name(a->type));
  *pm_p = (redop_premul_t){.on = 1, .type = e.type, .scalar_ptr = e.scalar_ptr};
  memcpy(pm_p->imm, e.imm, sizeof(e.imm));
  a->op = xcclSum;
  return xcclSuccess;
}

/* Integers as unsigned of their width (which wraps), float and double natively. */
#define SCALE_NATIVE(T)                                    \
  do {                                                  \
    T s_, *d_ = dst;                                    \
    const T *x_ = src;                                  \
    memcpy(&s_, scalar, sizeof(s_));                    \
    for (size_t i = 0; i < n; i++) d_[i] = (T)(x_[i] * s_); \
  } while (0)

/* Narrow floats: widen, multiply in float, round back to nearest even. */
#define SCALE_NARROW(T, WIDEN, NARROW)                                           \
  do {                                                                           \
    T sb_, *d_ = dst;                                                            \
    const T *x_ = src;                                                           \
    memcpy(&sb_, scalar, sizeof(sb_));                                           \
    float s_ = WIDEN(sb_);                                                       \
    for (size_t i = 0; i < n; i++) d_[i] = NARROW(WIDEN(x_[i]) * s_);            \
  } while (0)

void redop_scale(const redop_premul_t *pm, void *dst, const void *src, size_t n) {
  const void *scalar = pm->scalar_ptr ? pm->scalar_ptr : pm->imm;
  switch (pm->type) {
    case xcclInt8:
    case xcclUint8: SCALE_NATIVE(uint8_t); break;
    case xcclInt32:
    case xcclUint32: SCALE_NATIVE(uint32_t); break;
    case xcclInt64:
    case xcclUint64: SCALE_NATIVE(uint64_t); break;
    case xcclFloat16: SCALE_NARROW(uint16_t, fp16_to_float, fp16_from_float); break;
    case xcclBfloat16: SCALE_NARROW(uint16_t, bf16_to_float, bf16_from_float); break;
    case xcclFloat8e4m3: SCALE_NARROW(uint8_t, fp8_e4m3_to_float, fp8_e4m3_from_float); break;
    case xcclFloat8e5m2: SCALE_NARROW(uint8_t, fp8_e5m2_to_float, fp8_e5m2_from_float); break;
    case xcclFloat32: SCALE_NATIVE(float); break;
    case xcclFloat64: SCALE_NATIVE(double); break;
    default: break;
  }
}

xcclResult_t redop_premul_begin(redop_premul_t *pm, coll_args_t *a) {
  if (!pm->on || !a->send_elems) return xcclSuccess;
  size_t bytes = a->send_elems * a->esize;
  if (!(pm->scratch = malloc(bytes)))
    return err_set(xcclSystemError, LOG_COLL, "%s: out of memory for the %zu bytes of its scaled input", a->name,
                   bytes);
  redop_scale(pm, pm->scratch, a->sendbuff, a->send_elems);
  a->sendbuff = pm->scratch;
  return xcclSuccess;
}

void redop_premul_end(redop_premul_t *pm) {
  free(pm->scratch);
  pm->scratch = NULL;
}
