/* types.c — sizes and names of datatypes and ops, for every layer. */
#include "reduce.h"
#include "reduce_ops.h"

#define TYPE_SIZE(TYPE, tname, T, D) [TYPE] = sizeof(T),
const unsigned char kern_type_sizes[xcclNumTypes] = {XR_FOR_EACH_TYPE(TYPE_SIZE)};
#undef TYPE_SIZE

size_t xcclTypeSize(xcclDataType_t t) { return kern_type_size(t); }

const char *kern_type_name(xcclDataType_t t) {
#define TYPE_NAME(TYPE, tname, T, D) [TYPE] = #tname,
  static const char *const names[xcclNumTypes] = {XR_FOR_EACH_TYPE(TYPE_NAME)};
#undef TYPE_NAME
  return (unsigned)t < xcclNumTypes ? names[t] : "(unknown type)";
}

const char *kern_op_name(xcclRedOp_t op) {
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return (unsigned)op < xcclNumOps ? names[op] : "(unknown op)";
}
