// ProcessGroupXCCL — xccl as a torch.distributed backend.
//
// The shape is ProcessGroupGloo's: every call checks its arguments on the
// caller's thread, then queues the operation for the group's one worker
// thread and returns a Work at once. The worker runs the queued operations
// in order, one at a time (xccl calls on one communicator must not run
// concurrently, and a host-buffer call blocks the thread that makes it until
// its result is in place). Non-contiguous tensors are copied into contiguous
// buffers on the worker, and the results copied back, so a queued operation
// sees its tensors as the operations queued before it left them.
//
// Sends and receives made between startCoalescing() and endCoalescing()
// (what batch_isend_irecv does) run as one xccl group, so a ring of sends and
// receives cannot deadlock.
//
// Failures: a failed xccl call completes its Work (and the Work's future)
// with an XcclError whose text is xccl's own message for the communicator
// (it names the operation, its number and the peer). The communicator stays
// failed; later operations fail at once with their own message.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "compat.hpp"
#include "xccl.h"

namespace xccl_torch {

// An operation's title is what the profilers show: "xcl:all_reduce", the
// backend's name and the operation's, as gloo's are "gloo:all_reduce" (torch's
// own tests look for "<backend>:<op>"). Its name in sentences is the part
// after the colon.
inline const char *opName(const char *title) {
  const char *colon = std::strchr(title, ':');
  return colon ? colon + 1 : title;
}

// What a failed xccl call raises: Python sees a RuntimeError with this text.
class XcclError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WorkXCCL : public c10d::Work {
 public:
  WorkXCCL(int rank, c10d::OpType type, const char *name, uint64_t seq, std::vector<at::Tensor> outputs,
           const c10::optional<std::vector<at::Tensor>> &inputs);

  // Waits for the operation; with a timeout other than kNoTimeout, raises if
  // it has not completed by then (the operation itself goes on, and ends at
  // xccl's own per-operation timeout at the latest).
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

  // Called by the worker once, with nullptr on success.
  void complete(std::exception_ptr error);

  // Whether someone has called wait(): read by the worker while it gathers
  // sends and receives (nothing more will be posted before this one is done).
  bool waited() const { return waited_.load(std::memory_order_relaxed); }

  // The rank a receive took its message from (gloo's sourceRank); set by
  // the worker before it completes the Work.
  int sourceRank() const override;
  void setSourceRank(int rank) { source_.store(rank, std::memory_order_relaxed); }

  const char *name() const { return name_; }
  uint64_t seq() const { return seq_; }

 private:
  const char *name_;
  uint64_t seq_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> waited_{false};
  std::atomic<int> source_{-1};
};

// How the destructor joins the worker; the Python module sets one that
// releases the GIL meanwhile (the worker runs futures' callbacks, which may
// need it).
void setWorkerJoin(void (*join)(std::thread &));

class ProcessGroupXCCL : public BaseGroup {
 public:
  // Joins the group: rank 0 makes xccl's unique id and publishes it in
  // store, the others read it from there (waiting at most the store's own
  // timeout), then every rank joins the communicator. timeout becomes xccl's
  // per-operation timeout (an operation's own timeout option overrides it).
  // groupName is torch's name for the group (its errors, xccl's log lines
  // and dumps carry it; "" for none); globalRanks its members' global ranks
  // by group rank (empty: unknown), which errors use to name a peer.
  ProcessGroupXCCL(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                   std::chrono::milliseconds timeout, std::string groupName = "",
                   std::vector<int64_t> globalRanks = {});
  // A group over a communicator made elsewhere (xcclCommShrink or
  // xcclCommGrow, elastic.cpp), which it takes over: the group destroys it,
  // and on failure the constructor aborts it. Its rank and size are the
  // communicator's; keyPrefix names this group's keys in store (sends'
  // announcements and failure reports), the same on every member.
  ProcessGroupXCCL(xcclComm_t comm, const c10::intrusive_ptr<c10d::Store> &store, std::string keyPrefix,
                   std::chrono::milliseconds timeout, std::string groupName = "");
  ~ProcessGroupXCCL() override;

  // ---- A new group after a failure, or a larger one (elastic.cpp) ----
  // Each runs on the worker after everything queued before it, and raises
  // XcclError or c10::Error with a sentence on failure; this group stays
  // as it was (a failed one still failed) and is still destroyed as usual.
  //
  // The survivors: every rank not in exclude (ranks of this group) calls it
  // with the same list, also after an operation failed. store: the new
  // group's (nullptr: this group's).
  c10::intrusive_ptr<ProcessGroupXCCL> shrinkGroup(const std::vector<int> &exclude,
                                                   const c10::intrusive_ptr<c10d::Store> &store);
  // The id for grow() and join(): one rank makes it (this process then hosts
  // the new communicator's bootstrap root for the group's timeout).
  std::vector<uint8_t> growId();
  // Every rank of this group: a group of nranks where each keeps its rank;
  // store must be the one the joiners pass to join().
  c10::intrusive_ptr<ProcessGroupXCCL> grow(int nranks, const std::vector<uint8_t> &uid,
                                            const c10::intrusive_ptr<c10d::Store> &store);
  // A process that was in no group of it: joins the grown group as rank.
  static c10::intrusive_ptr<ProcessGroupXCCL> join(int nranks, int rank, const std::vector<uint8_t> &uid,
                                                   const c10::intrusive_ptr<c10d::Store> &store,
                                                   std::chrono::milliseconds timeout);

  const std::string getBackendName() const override { return "xcl"; }
  std::chrono::milliseconds timeout() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return timeout_;
  }
  const std::string &groupName() const { return groupName_; }

#if XCCL_TORCH_IS_BACKEND
  // ---- torch 2.x's Backend interface beyond the collectives (elastic.cpp) --
  XCCL_TORCH_LATER_BEGIN
  bool supportsCoalescing() const { return true; }
  bool supportsSplitting() const { return true; }
  bool supportsShrinking() const { return true; }
  // torch's split_group: every rank of this group calls it with the same
  // sorted ranks of one new group (its own, or for a rank in none, another
  // group's): xcclCommSplit; nullptr for a rank not in ranks.
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
                                          const c10::intrusive_ptr<Options> &opts);
  // torch's shrink_group: the ranks not in ranksToExclude (xcclCommShrink);
  // shrinkFlags SHRINK_ABORT revokes this group's operations in flight first.
  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t> &ranksToExclude, int shrinkFlags = 0,
                                           const c10::intrusive_ptr<Options> &optsOverride = nullptr);
  c10::intrusive_ptr<Options> getBackendOptions();
  void setTimeout(std::chrono::milliseconds timeout);
  // Sequence numbers: xccl's per-group count of operations, which every
  // member runs in one order, so nothing needs agreeing on.
  void setSequenceNumberForGroup() {}
  uint64_t getSequenceNumberForGroup();
  c10d::ErrorType getError();
  // Revokes the communicator: operations in flight fail at once, queued and
  // later ones are refused, with a sentence that says the group was aborted.
  void abort();
  // destroy_process_group: aborts what is still queued or running (and a
  // failed group), then frees the communicator; later calls are refused.
  void shutdown();
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts = c10d::AllgatherOptions());
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::ReduceScatterOptions &opts = c10d::ReduceScatterOptions());
  XCCL_TORCH_LATER_END
#endif

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor> &tensors,
      const c10d::AllreduceCoalescedOptions &opts = c10d::AllreduceCoalescedOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor &output, at::Tensor &input,
      const c10d::AllgatherOptions &opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>> &outputLists, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts = c10d::GatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts = c10d::ScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
      const c10d::ReduceScatterOptions &opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input,
      const c10d::ReduceScatterOptions &opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &outputSplitSizes,
                                               std::vector<int64_t> &inputSplitSizes,
                                               const c10d::AllToAllOptions &opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts = c10d::BarrierOptions()) override;

  void startCoalescing() override;
#if XCCL_TORCH_END_COALESCING_RETURNS_WORK
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
#else
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>> &reqs) override;
#endif

  // One queued operation. issue() runs on the worker: it stages the
  // tensors and makes the xccl call (inside a group, only queues it);
  // finish() copies the results back into the caller's tensors.
  // A send or receive: peer -1 is any source.
  struct P2P {
    bool send;
    int peer;
    int tag;
    at::Tensor tensor;
  };

  struct Op {
    c10::intrusive_ptr<WorkXCCL> work;
    std::function<xcclResult_t(xcclComm_t)> issue;
    std::function<void()> finish;
    std::chrono::milliseconds timeout;
    bool groupable;  // may run inside an xccl group (barrier may not)
    bool p2p;        // a send or a receive, outside batch_isend_irecv
    std::shared_ptr<P2P> msg;  // a send or a receive (inside batch_isend_irecv too)
  };

 private:
  c10::intrusive_ptr<c10d::Work> enqueue(const char *name, c10d::OpType type, std::vector<at::Tensor> outputs,
                                         const std::vector<at::Tensor> &inputs, std::chrono::milliseconds timeout,
                                         std::function<xcclResult_t(xcclComm_t)> issue,
                                         std::function<void()> finish = nullptr, bool groupable = true,
                                         std::shared_ptr<P2P> msg = nullptr);
  void runWorker();
  // Stops the worker once it has run what is queued, then frees the
  // communicator (aborts a failed one); once only, later calls do nothing.
  void teardown();
  // Runs fn on the worker after what is queued, and waits for it (elastic.cpp).
  void runOnWorker(const char *title, std::function<xcclResult_t(xcclComm_t)> fn);
  void gatherPointToPoint(std::vector<Op> &batch, std::unique_lock<std::mutex> &lock);
  void runBatch(std::vector<Op> &batch);
  void runGroup(std::vector<Op> &batch);
  c10::intrusive_ptr<c10d::Work> enqueueP2P(const char *title, bool send, std::vector<at::Tensor> &tensors, int peer,
                                            int tag);
  // The worker's side of sends and receives.
  struct Pending;   // a receive waiting for its message
  struct Arrived;   // a message pulled before a receive claimed it
  struct Pull;      // an announced message to receive in the next group
  void runP2P(std::vector<Op> &ops);
  void progressP2P(bool allPeers);
  void readAnnouncements(bool allPeers, std::vector<Pull> &pulls);
  void issueP2PGroup(std::vector<Op> &sends, std::vector<Pull> &pulls);
  void matchArrived();
  void expirePending();
  void failPending(const char *why);
  std::chrono::steady_clock::time_point nextP2PPoll() const;
  std::string p2pKey(int src, int dst, uint64_t n) const;
  void setCommTimeout(std::chrono::milliseconds timeout);
  // The error text of a failed call: xccl's message for the communicator,
  // and for a failure that involves peers, what the other ranks saw
  // (failure.cpp).
  std::string failureText(const char *name, uint64_t seq, xcclResult_t rc);
  std::string peerReports(const std::string &mine);
  std::string globalRanksText() const;

  xcclComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string groupName_;       // torch's name for the group ("" where unknown)
  std::vector<int64_t> globalRanks_;  // members' global ranks by group rank (empty: unknown)
  std::atomic<bool> aborted_{false};  // abort() was called: new operations are refused
  std::atomic<bool> revoked_{false};  // this side revoked the communicator (abort, SHRINK_ABORT)
  std::string keyPrefix_;       // this group's keys in store_
  bool reported_ = false;       // this rank's first failure is in the store (worker only)
  uint64_t shrinks_ = 0;        // shrink() calls so far: names the new groups' keys
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds commTimeout_{0};  // what the communicator is set to now (worker only)

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<Op>> queue_;
  bool stop_ = false;
  bool running_ = false;        // the worker is running a batch it took off the queue
  uint64_t seq_ = 0;            // operations queued, numbered from 1
  bool coalescing_ = false;
  std::vector<Op> coalesced_;
  std::thread worker_;

  // Worker only (sends and receives, ProcessGroupXCCL.cpp).
  std::vector<uint64_t> announcedTo_;    // messages announced to each rank
  std::vector<uint64_t> readFrom_;       // announcements read from each rank
  std::deque<std::shared_ptr<Pending>> pending_;   // in posting order
  std::deque<std::shared_ptr<Arrived>> arrived_;   // in arrival order
  uint64_t arrivals_ = 0;
  std::chrono::microseconds pollEvery_{0};
  std::chrono::steady_clock::time_point lastPoll_{};
};

}  // namespace xccl_torch
