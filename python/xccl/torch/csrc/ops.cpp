// ops.cpp — the c10d operations of ProcessGroupXCCL.
//
// Each checks its arguments here, on the caller's thread (a mistake raises
// at the call, as with gloo), and queues two steps for the worker: issue
// (stage the tensors into contiguous buffers, make the xccl call) and finish
// (copy results back into the caller's tensors where a staging buffer stood
// in for them).
#include "ProcessGroupXCCL.hpp"
#include "opargs.hpp"

#include <numeric>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace xccl_torch {

using namespace opargs;


// ---- Reductions and broadcast -----------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::allreduce(TensorList &tensors, const c10d::AllreduceOptions &opts) {
  const char *name = "all_reduce";
  at::Tensor t = single(tensors, name);
  const xcclDataType_t dt = xcclType(t, name);
  const RedOp op = xcclOp(opts.reduceOp, t.scalar_type(), name);
  Buf buf = newBuf();
  return enqueue(
      "xcl:all_reduce", c10d::OpType::ALLREDUCE, tensors, tensors, opts.timeout,
      [t, buf, dt, op](xcclComm_t comm) {
        *buf = stageIn(t);
        CallOp o(op, dt, comm);
        return o.ok() ? xcclAllReduce(buf->data_ptr(), buf->data_ptr(), count(*buf), dt, o.op(), comm, nullptr)
                      : o.status();
      },
      [t, buf] { unstage(t, *buf); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::allreduce_coalesced(TensorList &tensors,
                                                                     const c10d::AllreduceCoalescedOptions &opts) {
  const char *name = "all_reduce_coalesced";
  TORCH_CHECK(!tensors.empty(), "xccl ", name, ": the list of tensors is empty");
  for (const auto &t : tensors) {
    checkLike(t, tensors[0], t.numel(), "a tensor", name);
  }
  const xcclDataType_t dt = xcclType(tensors[0], name);
  const RedOp op = xcclOp(opts.reduceOp, tensors[0].scalar_type(), name);
  Buf buf = newBuf();
  TensorList ts = tensors;
  return enqueue(
      "xcl:all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, tensors, tensors, opts.timeout,
      [ts, buf, dt, op](xcclComm_t comm) {
        *buf = flatten(ts);
        CallOp o(op, dt, comm);
        return o.ok() ? xcclAllReduce(buf->data_ptr(), buf->data_ptr(), count(*buf), dt, o.op(), comm, nullptr)
                      : o.status();
      },
      [ts, buf] { unflatten(*buf, 0, ts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::broadcast(TensorList &tensors, const c10d::BroadcastOptions &opts) {
  const char *name = "broadcast";
  at::Tensor t = single(tensors, name);
  checkRank(opts.rootRank, size_, "src", name);
  TORCH_CHECK(opts.rootTensor == 0, "xccl ", name, ": takes one tensor per process, so root tensor must be 0");
  const xcclDataType_t dt = xcclType(t, name);
  const int root = static_cast<int>(opts.rootRank);
  Buf buf = newBuf();
  return enqueue(
      "xcl:broadcast", c10d::OpType::BROADCAST, tensors, tensors, opts.timeout,
      [t, buf, dt, root](xcclComm_t comm) {
        *buf = stageIn(t);
        return xcclBcast(buf->data_ptr(), count(*buf), dt, root, comm, nullptr);
      },
      [t, buf] { unstage(t, *buf); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::reduce(TensorList &tensors, const c10d::ReduceOptions &opts) {
  const char *name = "reduce";
  at::Tensor t = single(tensors, name);
  checkRank(opts.rootRank, size_, "dst", name);
  TORCH_CHECK(opts.rootTensor == 0, "xccl ", name, ": takes one tensor per process, so root tensor must be 0");
  const xcclDataType_t dt = xcclType(t, name);
  const RedOp op = xcclOp(opts.reduceOp, t.scalar_type(), name);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = root == rank_;
  Buf buf = newBuf();
  return enqueue(
      "xcl:reduce", c10d::OpType::REDUCE, tensors, tensors, opts.timeout,
      [t, buf, dt, op, root](xcclComm_t comm) {
        *buf = stageIn(t);
        CallOp o(op, dt, comm);
        return o.ok() ? xcclReduce(buf->data_ptr(), buf->data_ptr(), count(*buf), dt, o.op(), root, comm, nullptr)
                      : o.status();
      },
      [t, buf, isRoot] {
        if (isRoot) {
          unstage(t, *buf);
        }
      });
}

// ---- Gathers ----------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::allgather(std::vector<TensorList> &outputs, TensorList &inputs,
                                                           const c10d::AllgatherOptions &opts) {
  const char *name = "all_gather";
  at::Tensor in = single(inputs, name);
  TORCH_CHECK(outputs.size() == 1, "xccl ", name, ": takes one list of output tensors per process, got ",
              outputs.size());
  TensorList outs = outputs[0];
  TORCH_CHECK(static_cast<int>(outs.size()) == size_, "xccl ", name, ": the output list has ", outs.size(),
              " tensors, one per rank (", size_, ") is needed");
  for (const auto &o : outs) {
    checkLike(o, in, in.numel(), "an output tensor", name);
  }
  const xcclDataType_t dt = xcclType(in, name);
  Buf src = newBuf(), dst = newBuf();
  const int64_t n = size_;
  return enqueue(
      "xcl:all_gather", c10d::OpType::ALLGATHER, outs, inputs, opts.timeout,
      [in, src, dst, dt, n](xcclComm_t comm) {
        *src = stageIn(in);
        *dst = at::empty({n * in.numel()}, in.options());
        return xcclAllGather(src->data_ptr(), dst->data_ptr(), count(*src), dt, comm, nullptr);
      },
      [outs, dst] { unflatten(*dst, 0, outs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::_allgather_base(at::Tensor &output, at::Tensor &input,
                                                                 const c10d::AllgatherOptions &opts) {
  const char *name = "all_gather_into_tensor";
  checkTensor(input, name);
  checkLike(output, input, input.numel() * size_, "the output tensor", name);
  const xcclDataType_t dt = xcclType(input, name);
  at::Tensor in = input, out = output;
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE, {output}, {input}, opts.timeout,
      [in, out, src, dst, dt](xcclComm_t comm) {
        *src = stageIn(in);
        *dst = stageOut(out);
        return xcclAllGather(src->data_ptr(), dst->data_ptr(), count(*src), dt, comm, nullptr);
      },
      [out, dst] { unstage(out, *dst); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::allgather_coalesced(std::vector<TensorList> &outputLists,
                                                                     TensorList &inputs,
                                                                     const c10d::AllgatherOptions &opts) {
  const char *name = "all_gather_coalesced";
  TORCH_CHECK(!inputs.empty(), "xccl ", name, ": the list of input tensors is empty");
  TORCH_CHECK(static_cast<int>(outputLists.size()) == size_, "xccl ", name, ": has ", outputLists.size(),
              " output lists, one per rank (", size_, ") is needed");
  for (const auto &t : inputs) {
    checkLike(t, inputs[0], t.numel(), "an input tensor", name);
  }
  TensorList outs;
  for (const auto &list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "xccl ", name, ": an output list has ", list.size(),
                " tensors where the input list has ", inputs.size());
    for (size_t i = 0; i < list.size(); i++) {
      checkLike(list[i], inputs[i], inputs[i].numel(), "an output tensor", name);
      outs.push_back(list[i]);
    }
  }
  const xcclDataType_t dt = xcclType(inputs[0], name);
  TensorList ins = inputs;
  Buf src = newBuf(), dst = newBuf();
  const int64_t n = size_;
  return enqueue(
      "xcl:all_gather_coalesced", c10d::OpType::ALLGATHER_COALESCED, outs, inputs, opts.timeout,
      [ins, src, dst, dt, n](xcclComm_t comm) {
        *src = flatten(ins);
        *dst = at::empty({n * src->numel()}, src->options());
        return xcclAllGather(src->data_ptr(), dst->data_ptr(), count(*src), dt, comm, nullptr);
      },
      [outs, dst] { unflatten(*dst, 0, outs); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::gather(std::vector<TensorList> &outputs, TensorList &inputs,
                                                        const c10d::GatherOptions &opts) {
  const char *name = "gather";
  at::Tensor in = single(inputs, name);
  checkRank(opts.rootRank, size_, "dst", name);
  const int root = static_cast<int>(opts.rootRank);
  TensorList outs;
  if (root == rank_) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "xccl ", name,
                ": the destination needs a gather_list of ", size_, " tensors");
    outs = outputs[0];
    for (const auto &o : outs) {
      checkLike(o, in, in.numel(), "a tensor of gather_list", name);
    }
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), "xccl ", name,
                ": only the destination (rank ", root, ") takes a gather_list");
  }
  const xcclDataType_t dt = xcclType(in, name);
  Buf src = newBuf(), dst = newBuf();
  const int64_t n = size_;
  const bool isRoot = root == rank_;
  return enqueue(
      "xcl:gather", c10d::OpType::GATHER, outs, inputs, opts.timeout,
      [in, src, dst, dt, n, root, isRoot](xcclComm_t comm) {
        *src = stageIn(in);
        if (isRoot) {
          *dst = at::empty({n * in.numel()}, in.options());
        }
        return xcclGather(src->data_ptr(), isRoot ? dst->data_ptr() : nullptr, count(*src), dt, root, comm,
                          nullptr);
      },
      [outs, dst, isRoot] {
        if (isRoot) {
          unflatten(*dst, 0, outs);
        }
      });
}

// ---- Scatters ---------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::scatter(TensorList &outputs, std::vector<TensorList> &inputs,
                                                         const c10d::ScatterOptions &opts) {
  const char *name = "scatter";
  at::Tensor out = single(outputs, name);
  checkRank(opts.rootRank, size_, "src", name);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = root == rank_;
  TensorList ins;
  if (isRoot) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "xccl ", name,
                ": the source needs a scatter_list of ", size_, " tensors");
    ins = inputs[0];
    for (const auto &t : ins) {
      checkLike(t, out, out.numel(), "a tensor of scatter_list", name);
    }
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), "xccl ", name,
                ": only the source (rank ", root, ") takes a scatter_list");
  }
  const xcclDataType_t dt = xcclType(out, name);
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:scatter", c10d::OpType::SCATTER, outputs, ins, opts.timeout,
      [ins, out, src, dst, dt, root, isRoot](xcclComm_t comm) {
        if (isRoot) {
          *src = flatten(ins);
        }
        *dst = stageOut(out);
        return xcclScatter(isRoot ? src->data_ptr() : nullptr, dst->data_ptr(), count(*dst), dt, root, comm,
                           nullptr);
      },
      [out, dst] { unstage(out, *dst); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::reduce_scatter(TensorList &outputs, std::vector<TensorList> &inputs,
                                                                const c10d::ReduceScatterOptions &opts) {
  const char *name = "reduce_scatter";
  at::Tensor out = single(outputs, name);
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == size_, "xccl ", name,
              ": needs an input list of ", size_, " tensors, one per rank");
  TensorList ins = inputs[0];
  for (const auto &t : ins) {
    checkLike(t, out, out.numel(), "an input tensor", name);
  }
  const xcclDataType_t dt = xcclType(out, name);
  const RedOp op = xcclOp(opts.reduceOp, out.scalar_type(), name);
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:reduce_scatter", c10d::OpType::REDUCE_SCATTER, outputs, ins, opts.timeout,
      [ins, out, src, dst, dt, op](xcclComm_t comm) {
        *src = flatten(ins);
        *dst = stageOut(out);
        CallOp o(op, dt, comm);
        return o.ok() ? xcclReduceScatter(src->data_ptr(), dst->data_ptr(), count(*dst), dt, o.op(), comm, nullptr)
                      : o.status();
      },
      [out, dst] { unstage(out, *dst); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::_reduce_scatter_base(at::Tensor &output, at::Tensor &input,
                                                                      const c10d::ReduceScatterOptions &opts) {
  const char *name = "reduce_scatter_tensor";
  checkTensor(output, name);
  checkLike(input, output, output.numel() * size_, "the input tensor", name);
  const xcclDataType_t dt = xcclType(output, name);
  const RedOp op = xcclOp(opts.reduceOp, output.scalar_type(), name);
  at::Tensor in = input, out = output;
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, {output}, {input}, opts.timeout,
      [in, out, src, dst, dt, op](xcclComm_t comm) {
        *src = stageIn(in);
        *dst = stageOut(out);
        CallOp o(op, dt, comm);
        return o.ok() ? xcclReduceScatter(src->data_ptr(), dst->data_ptr(), count(*dst), dt, o.op(), comm, nullptr)
                      : o.status();
      },
      [out, dst] { unstage(out, *dst); });
}

// ---- All-to-all -------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::alltoall_base(at::Tensor &output, at::Tensor &input,
                                                               std::vector<int64_t> &outputSplitSizes,
                                                               std::vector<int64_t> &inputSplitSizes,
                                                               const c10d::AllToAllOptions &opts) {
  const char *name = "all_to_all_single";
  checkTensor(input, name);
  checkLike(output, input, output.numel(), "the output tensor", name);
  const xcclDataType_t dt = xcclType(input, name);
  auto sc = std::make_shared<std::vector<size_t>>(), sd = std::make_shared<std::vector<size_t>>();
  auto rc = std::make_shared<std::vector<size_t>>(), rd = std::make_shared<std::vector<size_t>>();
  splitCounts(input, inputSplitSizes, size_, "input", *sc, *sd);
  splitCounts(output, outputSplitSizes, size_, "output", *rc, *rd);
  at::Tensor in = input, out = output;
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:all_to_all_single", c10d::OpType::ALLTOALL_BASE, {output}, {input}, opts.timeout,
      [in, out, src, dst, dt, sc, sd, rc, rd](xcclComm_t comm) {
        *src = stageIn(in);
        // xccl's buffers must not overlap: one tensor passed as both gets a
        // separate output buffer.
        *dst = out.is_alias_of(in) ? at::empty(out.sizes(), out.options().memory_format(at::MemoryFormat::Contiguous))
                                   : stageOut(out);
        return xcclAllToAllv(src->data_ptr(), sc->data(), sd->data(), dst->data_ptr(), rc->data(), rd->data(), dt,
                             comm, nullptr);
      },
      [out, dst] { unstage(out, *dst); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::alltoall(TensorList &outputs, TensorList &inputs,
                                                          const c10d::AllToAllOptions &opts) {
  const char *name = "all_to_all";
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_, "xccl ", name,
              ": needs one input and one output tensor per rank (", size_, "), got ", inputs.size(), " and ",
              outputs.size());
  auto sc = std::make_shared<std::vector<size_t>>(size_), sd = std::make_shared<std::vector<size_t>>(size_);
  auto rc = std::make_shared<std::vector<size_t>>(size_), rd = std::make_shared<std::vector<size_t>>(size_);
  size_t soff = 0, roff = 0;
  for (int r = 0; r < size_; r++) {
    checkLike(inputs[r], inputs[0], inputs[r].numel(), "an input tensor", name);
    checkLike(outputs[r], inputs[0], outputs[r].numel(), "an output tensor", name);
    (*sc)[r] = count(inputs[r]);
    (*sd)[r] = soff;
    soff += (*sc)[r];
    (*rc)[r] = count(outputs[r]);
    (*rd)[r] = roff;
    roff += (*rc)[r];
  }
  const xcclDataType_t dt = xcclType(inputs[0], name);
  TensorList ins = inputs, outs = outputs;
  const int64_t total = static_cast<int64_t>(roff);
  Buf src = newBuf(), dst = newBuf();
  return enqueue(
      "xcl:all_to_all", c10d::OpType::ALLTOALL, outputs, inputs, opts.timeout,
      [ins, src, dst, dt, sc, sd, rc, rd, total](xcclComm_t comm) {
        *src = flatten(ins);
        *dst = at::empty({total}, ins[0].options().memory_format(at::MemoryFormat::Contiguous));
        return xcclAllToAllv(src->data_ptr(), sc->data(), sd->data(), dst->data_ptr(), rc->data(), rd->data(), dt,
                             comm, nullptr);
      },
      [outs, dst] { unflatten(*dst, 0, outs); });
}

// ---- Point to point ---------------------------------------------------------

// What they carry and how they match: ProcessGroupXCCL.cpp, "Sends and
// receives". Here only the checks.
c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::enqueueP2P(const char *title, bool send, TensorList &tensors,
                                                            int peer, int tag) {
  const char *name = opName(title);
  at::Tensor t = single(tensors, name);
  if (peer >= 0) {
    checkRank(peer, size_, send ? "dst" : "src", name);
  }
  xcclType(t, name);  // refuses what xccl does not carry elsewhere either
  auto msg = std::make_shared<P2P>(P2P{send, peer, tag, t});
  const c10d::OpType type = send ? c10d::OpType::SEND : peer < 0 ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV;
  return enqueue(title, type, tensors, tensors, c10d::kUnsetTimeout, nullptr, nullptr, true, msg);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::send(TensorList &tensors, int dstRank, int tag) {
  return enqueueP2P("xcl:send", true, tensors, dstRank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::recv(TensorList &tensors, int srcRank, int tag) {
  return enqueueP2P("xcl:recv", false, tensors, srcRank, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::recvAnysource(TensorList &tensors, int tag) {
  return enqueueP2P("xcl:recvAnySource", false, tensors, -1, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::barrier(const c10d::BarrierOptions &opts) {
  return enqueue(
      "xcl:barrier", c10d::OpType::BARRIER, {}, {}, opts.timeout, [](xcclComm_t comm) { return xcclBarrier(comm); },
      nullptr, /*groupable=*/false);
}

}  // namespace xccl_torch
