// coalesced.cpp — torch 2.x's coalesced tensor collectives: a list of
// all_gather_into_tensor or reduce_scatter_tensor calls made as one
// operation. The functional collectives (DTensor, FSDP2, torch.compile)
// issue these even for a single tensor. Each pair is its own xccl call, all
// inside one xccl group, so N pairs cost one launch and no flattening copy.
#include "ProcessGroupXCCL.hpp"
#include "opargs.hpp"

#if XCCL_TORCH_IS_BACKEND

namespace xccl_torch {

using namespace opargs;

namespace {

// Checks the pairs: as many outputs as inputs, each output world times (or,
// for the reduce-scatter, one world-th of) its input, all of one type.
void checkPairs(const TensorList &outputs, const TensorList &inputs, int size, bool gather, const char *name) {
  TORCH_CHECK(!inputs.empty(), "xccl ", name, ": the list of input tensors is empty");
  TORCH_CHECK(outputs.size() == inputs.size(), "xccl ", name, ": ", outputs.size(), " output tensors for ",
              inputs.size(), " inputs; each input needs its output");
  for (size_t i = 0; i < inputs.size(); i++) {
    checkTensor(inputs[i], name);
    checkLike(inputs[i], inputs[0], inputs[i].numel(), "an input tensor", name);
    if (gather) {
      checkLike(outputs[i], inputs[i], inputs[i].numel() * size, "an output tensor", name);
    } else {
      TORCH_CHECK(inputs[i].numel() % size == 0, "xccl ", name, ": input ", i, " has ", inputs[i].numel(),
                  " elements, which do not split evenly over ", size, " ranks");
      checkLike(outputs[i], inputs[i], inputs[i].numel() / size, "an output tensor", name);
    }
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::allgather_into_tensor_coalesced(TensorList &outputs,
                                                                                 TensorList &inputs,
                                                                                 const c10d::AllgatherOptions &opts) {
  const char *name = "all_gather_into_tensor_coalesced";
  checkPairs(outputs, inputs, size_, true, name);
  const xcclDataType_t dt = xcclType(inputs[0], name);
  TensorList ins = inputs, outs = outputs;
  auto srcs = std::make_shared<TensorList>(), dsts = std::make_shared<TensorList>();
  return enqueue(
      "xcl:all_gather_into_tensor_coalesced", c10d::OpType::COALESCED, outputs, inputs, opts.timeout,
      [ins, outs, srcs, dsts, dt](xcclComm_t comm) {
        for (size_t i = 0; i < ins.size(); i++) {
          srcs->push_back(stageIn(ins[i]));
          dsts->push_back(stageOut(outs[i]));
        }
        xcclResult_t rc = xcclGroupStart();
        for (size_t i = 0; i < ins.size() && rc == xcclSuccess; i++) {
          rc = xcclAllGather((*srcs)[i].data_ptr(), (*dsts)[i].data_ptr(), count((*srcs)[i]), dt, comm, nullptr);
        }
        const xcclResult_t end = xcclGroupEnd();  // always: the group must be closed
        return rc != xcclSuccess ? rc : end;
      },
      [outs, dsts] {
        for (size_t i = 0; i < outs.size(); i++) {
          unstage(outs[i], (*dsts)[i]);
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::reduce_scatter_tensor_coalesced(
    TensorList &outputs, TensorList &inputs, const c10d::ReduceScatterOptions &opts) {
  const char *name = "reduce_scatter_tensor_coalesced";
  checkPairs(outputs, inputs, size_, false, name);
  const xcclDataType_t dt = xcclType(inputs[0], name);
  const RedOp op = xcclOp(opts.reduceOp, inputs[0].scalar_type(), name);
  TensorList ins = inputs, outs = outputs;
  auto srcs = std::make_shared<TensorList>(), dsts = std::make_shared<TensorList>();
  return enqueue(
      "xcl:reduce_scatter_tensor_coalesced", c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, outputs, inputs, opts.timeout,
      [ins, outs, srcs, dsts, dt, op](xcclComm_t comm) {
        for (size_t i = 0; i < ins.size(); i++) {
          srcs->push_back(stageIn(ins[i]));
          dsts->push_back(stageOut(outs[i]));
        }
        CallOp o(op, dt, comm);
        if (!o.ok()) {
          return o.status();
        }
        xcclResult_t rc = xcclGroupStart();
        for (size_t i = 0; i < ins.size() && rc == xcclSuccess; i++) {
          rc = xcclReduceScatter((*srcs)[i].data_ptr(), (*dsts)[i].data_ptr(), count((*dsts)[i]), dt, o.op(), comm,
                                 nullptr);
        }
        const xcclResult_t end = xcclGroupEnd();
        return rc != xcclSuccess ? rc : end;
      },
      [outs, dsts] {
        for (size_t i = 0; i < outs.size(); i++) {
          unstage(outs[i], (*dsts)[i]);
        }
      });
}

}  // namespace xccl_torch

#endif  // XCCL_TORCH_IS_BACKEND
