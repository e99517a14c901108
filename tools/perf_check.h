/*
 * perf_check.h — the element values xccl-perf writes and checks: names of
 * types and ops, and its own conversions between double and every xccl type
 * (fp16, bf16 and fp8 included), so that the check does not lean on the
 * library's conversions.
 */
#ifndef XCCL_TOOLS_PERF_CHECK_H
#define XCCL_TOOLS_PERF_CHECK_H

#include <stddef.h>

#include "xccl.h"

typedef struct {
  const char *name;
  xcclDataType_t type;
} name_type_t;

/* Every accepted type name; the first name of each type is the one printed. */
extern const name_type_t perf_type_names[];
extern const size_t perf_n_type_names;
extern const char *const perf_op_names[xcclNumOps];

const char *perf_type_name(xcclDataType_t t);
int perf_type_is_unsigned(xcclDataType_t t);
int perf_type_is_int(xcclDataType_t t);

/* The largest n such that every integer 0..n is exact (and in range) in t. */
double perf_type_exact_limit(xcclDataType_t t);

/* An integer exact in t, in -L..L (0..L for unsigned types; L is the exact
 * limit, at most 100000), that looks random over (rank, i): neighbouring
 * elements, blocks and ranks differ without a period that a misplaced block
 * could line up with. For collectives that only move data. */
double perf_scrambled_value(xcclDataType_t t, int rank, size_t i);

/* Element i of buf, of type t, from or to a double: floating types round to
 * nearest-even, integers truncate. v must be in the type's range. */
void perf_store_value(xcclDataType_t t, void *buf, size_t i, double v);
double perf_load_value(xcclDataType_t t, const void *buf, size_t i);

#endif
