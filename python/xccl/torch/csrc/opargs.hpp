// opargs.hpp — what every operation of the backend does with its
// arguments: checks on the caller's thread (a mistake raises at the call,
// as with gloo), torch's types and ops in xccl's words, and the staging of
// tensors into contiguous buffers on the worker. Shared by ops.cpp and
// coalesced.cpp.
#pragma once

#include <memory>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "compat.hpp"
#include "xccl.h"

namespace xccl_torch {
namespace opargs {

using TensorList = std::vector<at::Tensor>;
using Buf = std::shared_ptr<at::Tensor>;  // a staging buffer made on the worker

inline Buf newBuf() { return std::make_shared<at::Tensor>(); }

inline const char *redOpName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
  case c10d::ReduceOp::SUM: return "SUM";
  case c10d::ReduceOp::AVG: return "AVG";
  case c10d::ReduceOp::PRODUCT: return "PRODUCT";
  case c10d::ReduceOp::MIN: return "MIN";
  case c10d::ReduceOp::MAX: return "MAX";
  case c10d::ReduceOp::BAND: return "BAND";
  case c10d::ReduceOp::BOR: return "BOR";
  case c10d::ReduceOp::BXOR: return "BXOR";
  case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
  default: return "UNUSED";
  }
}

inline void checkTensor(const at::Tensor &t, const char *op) {
  TORCH_CHECK(t.defined(), "xccl ", op, ": a tensor argument is undefined");
  TORCH_CHECK(t.layout() == at::kStrided, "xccl ", op, ": sparse tensors are not supported; pass t.to_dense()");
  TORCH_CHECK(t.device().is_cpu(), "xccl ", op, ": the tensor is on ", t.device(),
              ", but xccl's torch backend serves CPU tensors only for now. Move it with .cpu(), or give "
              "device tensors another backend: init_process_group(\"cpu:xcl,cuda:nccl\").");
}

inline xcclDataType_t xcclType(const at::Tensor &t, const char *op) {
  switch (t.scalar_type()) {
  case at::kFloat: return xcclFloat32;
  case at::kDouble: return xcclFloat64;
  case at::kHalf: return xcclFloat16;
  case at::kBFloat16: return xcclBfloat16;
  case at::kChar: return xcclInt8;
  case at::kByte: return xcclUint8;
  case at::kInt: return xcclInt32;
  case at::kLong: return xcclInt64;
  case at::kBool: return xcclUint8;  // one byte, 0 or 1; see xcclOp for what may reduce it
#if XCCL_TORCH_HAS_FLOAT8
  case at::kFloat8_e4m3fn: return xcclFloat8e4m3;
  case at::kFloat8_e5m2: return xcclFloat8e5m2;
#endif
  default:
    TORCH_CHECK(false, "xccl ", op, ": tensors of type ", t.scalar_type(),
                " are not supported; xccl carries float32, float64, float16, bfloat16, int8, uint8, int32, "
                "int64, bool and (torch 2.1 and later) float8_e4m3fn and float8_e5m2");
  }
}

// A reduction as the caller asked for it: xccl's op, or for PREMUL_SUM the
// factor (in the tensors' type, as xccl reads it) of the op that CallOp
// makes on the worker.
struct RedOp {
  xcclRedOp_t op = xcclSum;
  at::Tensor factor;  // defined for PREMUL_SUM only
};

inline RedOp xcclOp(const c10d::ReduceOp &rop, at::ScalarType type, const char *op) {
  const auto kind = rop.op_;
  if (type == at::kBool) {
    TORCH_CHECK(kind == c10d::ReduceOp::MIN || kind == c10d::ReduceOp::MAX || kind == c10d::ReduceOp::PRODUCT,
                "xccl ", op, ": bool tensors reduce with MIN or PRODUCT (logical and) and MAX (logical or); ",
                redOpName(kind), " would leave values other than 0 and 1. Convert to an integer type first.");
  }
  RedOp r;
  switch (kind) {
  case c10d::ReduceOp::SUM: r.op = xcclSum; break;
  case c10d::ReduceOp::AVG: r.op = xcclAvg; break;
  case c10d::ReduceOp::PRODUCT: r.op = xcclProd; break;
  case c10d::ReduceOp::MIN: r.op = xcclMin; break;
  case c10d::ReduceOp::MAX: r.op = xcclMax; break;
  case c10d::ReduceOp::PREMUL_SUM: {
    at::Tensor f = preMulSumFactor(rop);
    TORCH_CHECK(f.defined(), "xccl ", op, ": ReduceOp.PREMUL_SUM carries no factor; make it with "
                "torch.distributed._make_nccl_premul_sum(factor)");
    r.factor = f.to(type);
    break;
  }
  default:
    TORCH_CHECK(false, "xccl ", op, ": ReduceOp.", redOpName(kind),
                " has no xccl counterpart; xccl reduces with SUM, PRODUCT, MIN, MAX, AVG and PREMUL_SUM");
  }
  return r;
}

// The op of one xccl call, made on the worker: the built-in one, or a
// PREMUL_SUM op on comm for the call's datatype, freed once the call has
// been made (xccl reads an op's factor when the call is issued, also inside
// a group).
class CallOp {
 public:
  CallOp(const RedOp &r, xcclDataType_t dt, xcclComm_t comm) : comm_(comm), op_(r.op) {
    if (r.factor.defined()) {
      status_ = xcclRedOpCreatePreMulSum(&op_, r.factor.data_ptr(), dt, xcclScalarHostImmediate, comm);
      made_ = status_ == xcclSuccess;
    }
  }
  ~CallOp() {
    if (made_) {
      xcclRedOpDestroy(op_, comm_);
    }
  }
  CallOp(const CallOp &) = delete;
  CallOp &operator=(const CallOp &) = delete;
  bool ok() const { return status_ == xcclSuccess; }
  xcclResult_t status() const { return status_; }
  xcclRedOp_t op() const { return op_; }

 private:
  xcclComm_t comm_;
  xcclRedOp_t op_;
  xcclResult_t status_ = xcclSuccess;
  bool made_ = false;
};

inline at::Tensor &single(TensorList &ts, const char *op) {
  TORCH_CHECK(ts.size() == 1, "xccl ", op, ": takes one tensor per process, got a list of ", ts.size());
  checkTensor(ts[0], op);
  return ts[0];
}

inline void checkLike(const at::Tensor &t, const at::Tensor &ref, int64_t numel, const char *what, const char *op) {
  checkTensor(t, op);
  TORCH_CHECK(t.scalar_type() == ref.scalar_type(), "xccl ", op, ": ", what, " is ", t.scalar_type(),
              " but the input is ", ref.scalar_type(), "; all tensors of one call must have one type");
  TORCH_CHECK(t.numel() == numel, "xccl ", op, ": ", what, " has ", t.numel(), " elements where ", numel,
              " are needed");
}

inline void checkRank(int64_t r, int size, const char *what, const char *op) {
  TORCH_CHECK(r >= 0 && r < size, "xccl ", op, ": ", what, " ", r, " is not a rank of this process group (0..",
              size - 1, ")");
}

// A contiguous buffer holding t's values (t itself when it is contiguous).
inline at::Tensor stageIn(const at::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }
// A contiguous buffer to receive into (t itself when it is contiguous).
inline at::Tensor stageOut(const at::Tensor &t) {
  return t.is_contiguous() ? t : at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
}
inline void unstage(const at::Tensor &user, const at::Tensor &buf) {
  if (!buf.is_same(user)) {
    user.copy_(buf);
  }
}
// All of ts, one after the other, in one new contiguous 1-D buffer.
inline at::Tensor flatten(const TensorList &ts) {
  TensorList flat;
  flat.reserve(ts.size());
  for (const auto &t : ts) {
    flat.push_back(t.reshape({-1}));
  }
  return at::cat(flat, 0);
}
// The reverse: copy consecutive pieces of buf into ts.
inline void unflatten(const at::Tensor &buf, int64_t offset, const TensorList &ts) {
  for (const auto &t : ts) {
    t.copy_(buf.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

inline size_t count(const at::Tensor &t) { return static_cast<size_t>(t.numel()); }

// The per-rank element counts and displacements of one side of an
// all-to-all along dim 0 (splits empty: equal parts).
inline void splitCounts(const at::Tensor &t, const std::vector<int64_t> &splits, int size, const char *side,
                 std::vector<size_t> &counts, std::vector<size_t> &displs) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t rowElems = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> parts = splits;
  if (parts.empty()) {
    TORCH_CHECK(rows % size == 0, "xccl all_to_all_single: the ", side, " tensor's ", rows,
                " rows do not split evenly over ", size, " ranks; pass ", side, "_split_sizes");
    parts.assign(size, rows / size);
  }
  TORCH_CHECK(static_cast<int>(parts.size()) == size, "xccl all_to_all_single: ", side, "_split_sizes has ",
              parts.size(), " entries, one per rank (", size, ") is needed");
  int64_t sum = 0;
  counts.resize(size);
  displs.resize(size);
  for (int r = 0; r < size; r++) {
    TORCH_CHECK(parts[r] >= 0, "xccl all_to_all_single: ", side, "_split_sizes[", r, "] is negative");
    displs[r] = static_cast<size_t>(sum * rowElems);
    counts[r] = static_cast<size_t>(parts[r] * rowElems);
    sum += parts[r];
  }
  TORCH_CHECK(sum == rows, "xccl all_to_all_single: ", side, "_split_sizes add up to ", sum, " rows but the ",
              side, " tensor has ", rows);
}

}  // namespace opargs
}  // namespace xccl_torch
