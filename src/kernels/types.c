/* types.c — sizes and names of datatypes and ops, for every layer. */
#include "reduce.h"

size_t xcclTypeSize(xcclDataType_t t) {
  switch (t) {
    case xcclInt8: case xcclUint8: case xcclFloat8e4m3: case xcclFloat8e5m2: return 1;
    case xcclFloat16: case xcclBfloat16: return 2;
    case xcclInt32: case xcclUint32: case xcclFloat32: return 4;
    case xcclInt64: case xcclUint64: case xcclFloat64: return 8;
    default: return 0;
  }
}

const char *kern_type_name(xcclDataType_t t) {
  static const char *names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return (unsigned)t < xcclNumTypes ? names[t] : "(unknown type)";
}

const char *kern_op_name(xcclRedOp_t op) {
  static const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return (unsigned)op < xcclNumOps ? names[op] : "(unknown op)";
}
