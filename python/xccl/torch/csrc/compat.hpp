// compat.hpp — everything that differs between the torch versions this
// backend builds against, in one place.
//
// Compiled and tested here against torch 1.13.1 (Debian 12's python3-torch)
// and 2.13.0 (the CPU wheel from PyPI). The lines for the versions between
// follow torch's history and have not been compiled here.
//
// torch 1.13: a backend is a c10d::ProcessGroup subclass; its collectives
// are ProcessGroup's virtual methods; batch_isend_irecv brackets its sends
// and receives with startCoalescing() / endCoalescing(std::vector<Work>&);
// PREMUL_SUM's factor is NCCLPreMulSumSupplement::tensor_factors (a list);
// no float8 types.
//
// torch 2.x: a backend is a c10d::Backend that torch wraps in its own
// ProcessGroup, one per device type; the collectives keep their signatures.
// From 2.1 endCoalescing() takes no argument and returns one Work, the
// factor is PreMulSumSupplement::tensor_factor (one tensor), and float8
// e4m3fn / e5m2 exist. The capability flags, split, shrink, getError and
// the *_tensor_coalesced collectives came in later 2.x releases, each with
// the signature 2.13 has: XCCL_TORCH_LATER_BEGIN / END bracket their
// declarations, which carry no `override` so that a torch without one of
// them still compiles (there it is a method nobody calls).
#pragma once

#include <torch/version.h>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#define XCCL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define XCCL_TORCH_BASE ::c10d::Backend
#define XCCL_TORCH_IS_BACKEND 1
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define XCCL_TORCH_BASE ::c10d::ProcessGroup
#define XCCL_TORCH_IS_BACKEND 0
#endif

#define XCCL_TORCH_END_COALESCING_RETURNS_WORK XCCL_TORCH_AT_LEAST(2, 1)
#define XCCL_TORCH_HAS_FLOAT8 XCCL_TORCH_AT_LEAST(2, 1)

#if defined(__clang__)
#define XCCL_TORCH_LATER_BEGIN                                                   \
  _Pragma("clang diagnostic push")                                               \
  _Pragma("clang diagnostic ignored \"-Winconsistent-missing-override\"")        \
  _Pragma("clang diagnostic ignored \"-Wsuggest-override\"")                     \
  _Pragma("clang diagnostic ignored \"-Woverloaded-virtual\"")
#define XCCL_TORCH_LATER_END _Pragma("clang diagnostic pop")
#else
#define XCCL_TORCH_LATER_BEGIN                                \
  _Pragma("GCC diagnostic push")                              \
  _Pragma("GCC diagnostic ignored \"-Wsuggest-override\"")    \
  _Pragma("GCC diagnostic ignored \"-Woverloaded-virtual\"")
#define XCCL_TORCH_LATER_END _Pragma("GCC diagnostic pop")
#endif

namespace xccl_torch {

using BaseGroup = XCCL_TORCH_BASE;

// The factor of a PREMUL_SUM op, as a one-element float64 tensor; an
// undefined tensor when op carries none.
inline at::Tensor preMulSumFactor(const c10d::ReduceOp &op) {
#if XCCL_TORCH_AT_LEAST(2, 1)
  const auto *s = dynamic_cast<const c10d::PreMulSumSupplement *>(op.supplement_.get());
  if (s == nullptr) {
    return at::Tensor();
  }
  if (s->tensor_factor.defined()) {
    return s->tensor_factor.detach().to(at::kCPU, at::kDouble).reshape({1});
  }
#else
  const auto *s = dynamic_cast<const c10d::NCCLPreMulSumSupplement *>(op.supplement_.get());
  if (s == nullptr) {
    return at::Tensor();
  }
  if (!s->tensor_factors.empty()) {
    return s->tensor_factors[0].detach().to(at::kCPU, at::kDouble).reshape({1});
  }
#endif
  return at::full({1}, s->double_factor, at::TensorOptions().dtype(at::kDouble));
}

}  // namespace xccl_torch
