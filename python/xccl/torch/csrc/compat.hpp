// compat.hpp — everything that differs between the torch versions this
// backend builds against, in one place.
//
// torch 1.13 (tested: Debian 12's 1.13.1): a backend is a c10d::ProcessGroup
// subclass; its collectives are ProcessGroup's virtual methods, and
// batch_isend_irecv brackets its sends and receives with
// startCoalescing() / endCoalescing(std::vector<Work>&).
//
// torch 2.0 (not tested): the collectives moved to c10d::Backend with the
// same signatures; torch wraps the Backend in a ProcessGroup itself.
// torch 2.1 and later (not tested): endCoalescing() takes no argument and
// returns one Work for the whole batch.
#pragma once

#include <torch/version.h>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define XCCL_TORCH_BASE ::c10d::Backend
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1
#define XCCL_TORCH_END_COALESCING_RETURNS_WORK 1
#endif
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define XCCL_TORCH_BASE ::c10d::ProcessGroup
#endif

#ifndef XCCL_TORCH_END_COALESCING_RETURNS_WORK
#define XCCL_TORCH_END_COALESCING_RETURNS_WORK 0
#endif

namespace xccl_torch {
using BaseGroup = XCCL_TORCH_BASE;
}  // namespace xccl_torch
