// ProcessGroupXCCL.cpp — the process group: setup, the worker, teardown,
// coalescing. The collectives' arguments are in ops.cpp and coalesced.cpp,
// how sends and receives meet in p2p.cpp.
#include "ProcessGroupXCCL.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace xccl_torch {

// ---- Work -------------------------------------------------------------------

WorkXCCL::WorkXCCL(int rank, c10d::OpType type, const char *title, uint64_t seq, std::vector<at::Tensor> outputs,
                   const c10::optional<std::vector<at::Tensor>> &inputs)
    : c10d::Work(rank, type, title, inputs),
      name_(opName(title)),
      seq_(seq),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool WorkXCCL::wait(std::chrono::milliseconds timeout) {
  waited_.store(true, std::memory_order_relaxed);
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    // Bounded all the same: the operation fails by itself at xccl's
    // per-operation timeout when a peer never takes part.
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    throw XcclError(c10::str("xccl ", name_, " (operation ", seq_, " of its process group, rank ", rank_,
                             ") did not complete within the ", timeout.count(),
                             " ms given to wait(). It is still queued or running; it fails by itself at the "
                             "process group's timeout if a peer never takes part."));
  }
  if (exception_) {
    std::rethrow_exception(exception_);
  }
  lock.unlock();
  future_->wait();  // marked completed right after the Work: wait() returns with both done
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkXCCL::getFuture() { return future_; }

std::vector<at::Tensor> WorkXCCL::result() { return outputs_; }

int WorkXCCL::sourceRank() const {
  const int r = source_.load(std::memory_order_relaxed);
  TORCH_CHECK(r >= 0, "xccl ", name_, ": sourceRank() is known only for a receive that has completed");
  return r;
}

void WorkXCCL::complete(std::exception_ptr error) {
  // The Work first, so a future that is done finds is_completed() true; then
  // the future, whose callbacks run here, on the worker (as with gloo). One
  // that throws must not stop the worker.
  finish(error);
  try {
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  } catch (const std::exception &e) {
    TORCH_WARN("xccl ", name_, ": a callback of the operation's future raised: ", e.what());
  }
}

// ---- Setup and teardown -----------------------------------------------------

namespace {

void joinPlainly(std::thread &t) { t.join(); }
void (*g_join)(std::thread &) = joinPlainly;

std::string storePrefix(c10d::Store &store, int rank) {
  // The store torch hands a backend is already prefixed with the group's
  // name. Every rank counts the xccl groups it made under that prefix, so a
  // group made again with the same name (after destroy_process_group, on a
  // store that outlived it) gets fresh keys: members create their groups
  // in the same order, so their counts agree.
  const int64_t generation = store.add("xccl/generation/rank" + std::to_string(rank), 1);
  return "xccl/" + std::to_string(generation) + "/";
}

}  // namespace

void setWorkerJoin(void (*join)(std::thread &)) { g_join = join ? join : joinPlainly; }

ProcessGroupXCCL::ProcessGroupXCCL(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                                   std::chrono::milliseconds timeout, std::string groupName,
                                   std::vector<int64_t> globalRanks)
    : BaseGroup(rank, size),
      store_(store),
      groupName_(std::move(groupName)),
      globalRanks_(std::move(globalRanks)),
      timeout_(timeout),
      announcedTo_(size, 0),
      readFrom_(size, 0) {
  TORCH_CHECK(timeout.count() > 0, "xccl: the process group's timeout must be positive, got ", timeout.count(),
              " ms");
  xcclUniqueId id;
  keyPrefix_ = storePrefix(*store, rank);
  const std::string key = keyPrefix_ + "unique_id";
  if (rank == 0) {
    xcclResult_t rc = xcclGetUniqueId(&id);
    if (rc != xcclSuccess) {
      throw XcclError(c10::str("xccl: rank 0 could not make the communicator's unique id (",
                               xcclGetErrorString(rc), "): ", xcclGetLastError(nullptr)));
    }
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    std::vector<uint8_t> bytes;
    try {
      bytes = store->get(key);
    } catch (const std::exception &e) {
      throw XcclError(c10::str("xccl: rank ", rank, " of ", size, " waited up to the store's timeout (",
                               store->getTimeout().count(), " ms) for rank 0 to publish xccl's unique id under '",
                               key, "' in the c10d store, in vain: ", e.what(),
                               ". Is rank 0 alive, and did it create this process group too?"));
    }
    TORCH_CHECK(bytes.size() == sizeof id.internal, "xccl: the unique id under '", key, "' in the c10d store has ",
                bytes.size(), " bytes instead of ", sizeof id.internal,
                "; something else wrote that key. Use a fresh store or group name.");
    std::memcpy(id.internal, bytes.data(), sizeof id.internal);
  }
  // xccl's log lines and in-flight dumps name the torch group.
  const std::string commName = "torch:" + (groupName_.empty() ? std::string("?") : groupName_);
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  config.commName = commName.c_str();
  config.timeoutSeconds = static_cast<double>(timeout_.count()) / 1000.0;
  xcclResult_t rc = xcclCommInitRankConfig(&comm_, size, id, rank, &config);
  if (rc != xcclSuccess) {
    throw XcclError(c10::str("xccl: rank ", rank, " of ", size, " of torch process group '", groupName_,
                             "' could not join the communicator (", xcclGetErrorString(rc),
                             "): ", xcclGetLastError(nullptr)));
  }
  try {
    setCommTimeout(timeout_);
  } catch (...) {
    xcclCommDestroy(comm_);
    throw;
  }
  worker_ = std::thread([this] { runWorker(); });
}

ProcessGroupXCCL::~ProcessGroupXCCL() { teardown(); }

void ProcessGroupXCCL::teardown() {
  std::vector<Op> orphans;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    orphans.swap(coalesced_);  // queued inside a coalescing manager that never ended
  }
  cv_.notify_all();
  auto error = std::make_exception_ptr(
      XcclError("xccl: the process group was destroyed inside a coalescing manager (batch_isend_irecv) "
                "before the batch was issued"));
  for (auto &op : orphans) {
    op.work->complete(error);
  }
  if (worker_.joinable()) {
    g_join(worker_);  // the worker drains the queue first
  }
  if (comm_ != nullptr) {
    xcclResult_t async = xcclSuccess;
    if (xcclCommGetAsyncError(comm_, &async) != xcclSuccess || async != xcclSuccess) {
      xcclCommAbort(comm_);  // a failed communicator: do not wait on its peers
    } else {
      xcclCommDestroy(comm_);
    }
    comm_ = nullptr;
  }
}

#if XCCL_TORCH_IS_BACKEND
void ProcessGroupXCCL::abort() {
  if (aborted_.exchange(true) || comm_ == nullptr) {
    return;
  }
  // Operations in flight on the worker return at once with xccl's "revoked"
  // error, and the ones queued behind them fail the same way: the worker
  // drains quickly and the group can be torn down without its peers.
  revoked_.store(true);
  xcclCommRevoke(comm_, 0);
}

void ProcessGroupXCCL::shutdown() {
  // destroy_process_group: the caller is done with the group, so it returns
  // at once, as gloo's does: operations still queued or running are aborted
  // (a peer that never comes would otherwise hold it for the timeout), and
  // a failed group is aborted as nothing more on it can succeed. An idle,
  // healthy group is destroyed in order.
  bool busy = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy = running_ || !queue_.empty();
  }
  xcclResult_t async = xcclSuccess;
  if (comm_ != nullptr &&
      (busy || xcclCommGetAsyncError(comm_, &async) != xcclSuccess || async != xcclSuccess)) {
    abort();
  }
  teardown();
}
#endif

// ---- Queue and worker -------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::enqueue(const char *title, c10d::OpType type,
                                                         std::vector<at::Tensor> outputs,
                                                         const std::vector<at::Tensor> &inputs,
                                                         std::chrono::milliseconds timeout,
                                                         std::function<xcclResult_t(xcclComm_t)> issue,
                                                         std::function<void()> finish, bool groupable,
                                                         std::shared_ptr<P2P> msg) {
  std::unique_lock<std::mutex> lock(mutex_);
  TORCH_CHECK(!stop_, "xccl ", opName(title), ": torch process group '", groupName_,
              "' has been shut down (destroy_process_group); make a new group");
  TORCH_CHECK(!aborted_.load(), "xccl ", opName(title), ": torch process group '", groupName_,
              "' was aborted; make a new group (or shrink this one: torch.distributed.shrink_group)");
  const uint64_t seq = ++seq_;
  auto work = c10::make_intrusive<WorkXCCL>(rank_, type, title, seq, std::move(outputs),
                                            c10::optional<std::vector<at::Tensor>>(inputs));
  TORCH_CHECK(groupable || !coalescing_, "xccl ", work->name(),
              " cannot be called inside batch_isend_irecv (a coalescing manager): xccl groups cannot hold it. "
              "Call it after the batch.");
  const bool p2p = !coalescing_ && msg != nullptr;
  Op op{work, std::move(issue), std::move(finish), timeout == c10d::kUnsetTimeout ? timeout_ : timeout,
        groupable, p2p, std::move(msg)};
  if (coalescing_) {
    coalesced_.push_back(std::move(op));
  } else {
    std::vector<Op> batch;
    batch.push_back(std::move(op));
    queue_.push_back(std::move(batch));
    cv_.notify_one();
  }
  return work;
}

void ProcessGroupXCCL::runWorker() {
  at::NoGradGuard no_grad;  // staging copies back into tensors that may require grad
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    auto ready = [&] { return stop_ || !queue_.empty(); };
    if (pending_.empty()) {
      cv_.wait(lock, ready);
    } else {
      cv_.wait_until(lock, nextP2PPoll(), ready);  // receives wait: look for their messages now and then
    }
    if (queue_.empty()) {
      const bool stopping = stop_;
      lock.unlock();
      if (stopping) {
        failPending("the process group was destroyed before a matching send came");
        return;  // stopped, and everything queued has run
      }
      progressP2P(false);
      lock.lock();
      continue;
    }
    std::vector<Op> batch = std::move(queue_.front());
    queue_.pop_front();
    if (batch.size() == 1 && batch[0].p2p) {
      gatherPointToPoint(batch, lock);
    }
    running_ = true;
    lock.unlock();
    runBatch(batch);
    batch.clear();  // release the tensors outside the lock
    lock.lock();
    running_ = false;
  }
}

// A send runs until its receiver takes the data, so two ranks that each
// isend() to the other and then irecv() (the usual exchange) would wait on
// each other if the worker ran the sends alone. Sends and receives queued
// close together therefore run as one xccl group, as batch_isend_irecv's
// do: the worker takes every send or receive queued behind the first, and
// waits for more while they keep coming (up to kP2PIdle after the last, at
// most kP2PMax in all), until another kind of operation is queued or the
// caller waits on one of them (then nothing more can come first).
namespace {
constexpr auto kP2PIdle = std::chrono::microseconds(200);
constexpr auto kP2PSlice = std::chrono::microseconds(25);
constexpr auto kP2PMax = std::chrono::milliseconds(2);
}  // namespace

void ProcessGroupXCCL::gatherPointToPoint(std::vector<Op> &batch, std::unique_lock<std::mutex> &lock) {
  const auto until = std::chrono::steady_clock::now() + kP2PMax;
  auto someoneWaits = [&] {
    return std::any_of(batch.begin(), batch.end(), [](const Op &op) { return op.work->waited(); });
  };
  for (;;) {
    while (!queue_.empty() && queue_.front().size() == 1 && queue_.front()[0].p2p) {
      batch.push_back(std::move(queue_.front()[0]));
      queue_.pop_front();
    }
    if (!queue_.empty() || stop_ || someoneWaits()) {
      return;
    }
    // Short slices: wait() marks its Work without taking the queue's lock.
    bool more = false;
    for (auto idle = std::chrono::microseconds(0); idle < kP2PIdle && !more && !someoneWaits();
         idle += kP2PSlice) {
      if (std::chrono::steady_clock::now() >= until) {
        return;
      }
      more = cv_.wait_for(lock, kP2PSlice, [&] { return stop_ || !queue_.empty(); });
    }
    if (!more) {
      return;  // nothing came for kP2PIdle, or the caller waits
    }
  }
}

void ProcessGroupXCCL::setCommTimeout(std::chrono::milliseconds timeout) {
  if (timeout == commTimeout_) {
    return;
  }
  xcclResult_t rc = xcclCommSetTimeout(comm_, static_cast<double>(timeout.count()) / 1000.0);
  if (rc != xcclSuccess) {
    throw XcclError(c10::str("xccl: could not set the communicator's timeout to ", timeout.count(), " ms (",
                             xcclGetErrorString(rc), "): ", xcclGetLastError(comm_)));
  }
  commTimeout_ = timeout;
}

void ProcessGroupXCCL::runBatch(std::vector<Op> &batch) {
  std::vector<Op> p2p, rest;
  for (auto &op : batch) {
    (op.msg ? p2p : rest).push_back(std::move(op));
  }
  if (!p2p.empty()) {
    runP2P(p2p);
  }
  if (!rest.empty()) {
    runGroup(rest);
  }
}

void ProcessGroupXCCL::runGroup(std::vector<Op> &batch) {
  std::exception_ptr error;
  try {
    std::chrono::milliseconds longest{0};
    for (const auto &op : batch) {
      longest = std::max(longest, op.timeout);
    }
    setCommTimeout(longest);
    if (batch.size() == 1) {
      const Op &op = batch[0];
      xcclResult_t rc = op.issue(comm_);
      if (rc != xcclSuccess) {
        throw XcclError(failureText(op.work->name(), op.work->seq(), rc));
      }
    } else {
      xcclResult_t rc = xcclGroupStart();
      if (rc != xcclSuccess) {
        throw XcclError(failureText("group start", batch[0].work->seq(), rc));
      }
      const Op *refused = nullptr;
      std::exception_ptr stagingError;
      for (const auto &op : batch) {
        try {
          rc = op.issue(comm_);
        } catch (...) {
          stagingError = std::current_exception();
        }
        if (stagingError || rc != xcclSuccess) {
          refused = &op;
          break;
        }
      }
      std::string refusedText = refused && !stagingError ? failureText(refused->work->name(), refused->work->seq(), rc)
                                                         : std::string();
      xcclResult_t end = xcclGroupEnd();  // always: the group must be closed
      if (stagingError) {
        std::rethrow_exception(stagingError);
      }
      if (refused) {
        throw XcclError(refusedText);
      }
      if (end != xcclSuccess) {
        throw XcclError(failureText(c10::str("batch of ", batch.size(), " operations").c_str(),
                                    batch.front().work->seq(), end));
      }
    }
    for (const auto &op : batch) {
      if (op.finish) {
        op.finish();
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  for (auto &op : batch) {
    op.work->complete(error);
  }
}

// ---- Coalescing (batch_isend_irecv) -----------------------------------------

void ProcessGroupXCCL::startCoalescing() {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!coalescing_, "xccl: coalescing managers (batch_isend_irecv) do not nest on one process group");
  coalescing_ = true;
}

#if XCCL_TORCH_END_COALESCING_RETURNS_WORK
c10::intrusive_ptr<c10d::Work> ProcessGroupXCCL::endCoalescing() {
  // torch 2.x hands back this one Work for the whole batch (and drops the
  // operations' own), so it completes when every operation of the batch has:
  // receives complete only once their message came, after the batch was
  // issued. It fails with the first operation's error.
  std::vector<Op> batch;
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(coalescing_, "xccl: endCoalescing without startCoalescing");
    coalescing_ = false;
    batch.swap(coalesced_);
    seq = seq_;
  }
  std::vector<at::Tensor> outputs;
  c10::List<c10::intrusive_ptr<c10::ivalue::Future>> futures(c10::FutureType::create(c10::AnyType::get()));
  for (const auto &op : batch) {
    for (const auto &t : op.work->result()) {
      outputs.push_back(t);
    }
    futures.push_back(op.work->getFuture());
  }
  auto work = c10::make_intrusive<WorkXCCL>(rank_, c10d::OpType::COALESCED, "xcl:coalesced", seq, outputs,
                                            c10::nullopt);
  if (batch.empty()) {
    work->complete(nullptr);
    return work;
  }
  c10::collectAll(futures)->addCallback([work, futures](c10::ivalue::Future &) {
    std::exception_ptr error;
    for (size_t i = 0; i < futures.size() && !error; i++) {
      const auto f = futures.get(i);
      if (f->hasError()) {
        error = f->exception_ptr();
      }
    }
    work->complete(error);
  });
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(batch));
  cv_.notify_one();
  return work;
}
#else
void ProcessGroupXCCL::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>> & /* reqs: ours, queued */) {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(coalescing_, "xccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  if (!coalesced_.empty()) {
    queue_.push_back(std::move(coalesced_));
    coalesced_.clear();
    cv_.notify_one();
  }
}
#endif

}  // namespace xccl_torch
