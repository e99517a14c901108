// elastic.cpp — process groups made from another one's communicator:
// shrink (the survivors of a failure, xcclCommShrink) and grow (more ranks,
// xcclCommGrow with an id from xcclCommGetUniqueId), and the constructor
// over a communicator they share.
//
// No new bootstrap goes through the c10d store: the communicators find each
// other as xccl's calls do. The store serves the new group only as any
// group's does (sends' announcements, failure reports), under keys every
// member derives alike: a shrink's from its parent's keys and the number of
// shrinks of that parent so far, a grow's from a hash of its id (which the
// joiners have too, and which is not written out: it holds a secret).
#include <algorithm>
#include <cstring>
#include <set>

#include "ProcessGroupXCCL.hpp"

#include <c10/util/Exception.h>

namespace xccl_torch {

namespace {

// The rank or size of a communicator this constructor was handed: on
// failure it aborts the communicator (the constructor owns it) and throws.
int askComm(xcclComm_t comm, bool size) {
  TORCH_CHECK(comm != nullptr, "xccl: a process group was to be made over a NULL communicator");
  int value = -1;
  xcclResult_t rc = size ? xcclCommCount(comm, &value) : xcclCommUserRank(comm, &value);
  if (rc != xcclSuccess) {
    std::string why = xcclGetLastError(comm);
    xcclCommAbort(comm);
    throw XcclError(c10::str("xccl: could not ask the new communicator its ", size ? "size" : "rank", " (",
                             xcclGetErrorString(rc), "): ", why));
  }
  return value;
}

xcclUniqueId idFromBytes(const std::vector<uint8_t> &uid, const char *who) {
  TORCH_CHECK(uid.size() == sizeof(xcclUniqueId::internal), "xccl.torch.", who, ": the id has ", uid.size(),
              " bytes instead of ", sizeof(xcclUniqueId::internal),
              "; pass what xccl.torch.grow_id() returned, unchanged");
  xcclUniqueId id;
  std::memcpy(id.internal, uid.data(), sizeof id.internal);
  return id;
}

// The grown group's keys: FNV-1a of the id, so members that share only the
// id and the store agree, and the id's secret stays out of the store.
std::string growPrefix(const std::vector<uint8_t> &uid) {
  uint64_t h = 1469598103934665603ull;
  for (uint8_t b : uid) {
    h = (h ^ b) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string("xccl/grow/") + hex + "/";
}

// Thrown inside the worker for a group that has failed, where the call
// needs a healthy one.
void refuseFailed(xcclComm_t comm, const char *what) {
  xcclResult_t async = xcclSuccess;
  xcclResult_t rc = xcclCommGetAsyncError(comm, &async);
  if (rc != xcclSuccess || async != xcclSuccess) {
    throw XcclError(c10::str("xccl.torch.", what, ": the process group has failed (",
                             xcclGetErrorString(rc != xcclSuccess ? rc : async), ": ", xcclGetLastError(comm),
                             "), and only a healthy group can grow. Shrink it first (xccl.torch.shrink), "
                             "then grow the new group."));
  }
}

}  // namespace

ProcessGroupXCCL::ProcessGroupXCCL(xcclComm_t comm, const c10::intrusive_ptr<c10d::Store> &store,
                                   std::string keyPrefix, std::chrono::milliseconds timeout, std::string groupName)
    : BaseGroup(askComm(comm, false), askComm(comm, true)),
      comm_(comm),
      store_(store),
      groupName_(std::move(groupName)),
      keyPrefix_(std::move(keyPrefix)),
      timeout_(timeout),
      announcedTo_(size_, 0),
      readFrom_(size_, 0) {
  try {
    TORCH_CHECK(store_, "xccl: a process group needs a c10d store (for its sends' announcements), got None");
    TORCH_CHECK(timeout.count() > 0, "xccl: the process group's timeout must be positive, got ", timeout.count(),
                " ms");
    setCommTimeout(timeout_);
    worker_ = std::thread([this] { runWorker(); });
  } catch (...) {
    xcclCommAbort(comm_);
    comm_ = nullptr;
    throw;
  }
}

void ProcessGroupXCCL::runOnWorker(const char *title, std::function<xcclResult_t(xcclComm_t)> fn) {
  // Not groupable: refused inside batch_isend_irecv, with a sentence.
  auto work = enqueue(title, c10d::OpType::UNKNOWN, {}, {}, c10d::kUnsetTimeout, std::move(fn), nullptr,
                      /*groupable=*/false);
  work->wait();
}

c10::intrusive_ptr<ProcessGroupXCCL> ProcessGroupXCCL::shrinkGroup(const std::vector<int> &exclude,
                                                                   const c10::intrusive_ptr<c10d::Store> &store) {
  TORCH_CHECK(!exclude.empty(), "xccl.torch.shrink: exclude_ranks is empty; name the ranks of the group (0..",
              size_ - 1, ") to leave out");
  std::set<int> seen;
  for (int r : exclude) {
    TORCH_CHECK(r >= 0 && r < size_, "xccl.torch.shrink: rank ", r, " in exclude_ranks is not a rank of the group (0..",
                size_ - 1, "); exclude_ranks are ranks of the group being shrunk, not global ranks");
    TORCH_CHECK(seen.insert(r).second, "xccl.torch.shrink: rank ", r, " appears twice in exclude_ranks");
    TORCH_CHECK(r != rank_, "xccl.torch.shrink: rank ", rank_,
                " called it but is in exclude_ranks; only the ranks that stay call shrink");
  }
  const uint64_t n = ++shrinks_;  // every survivor shrinks this group as often, in the same order
  auto out = std::make_shared<xcclComm_t>(nullptr);
  runOnWorker("xcl:shrink", [out, exclude](xcclComm_t comm) {
    return xcclCommShrink(comm, exclude.data(), static_cast<int>(exclude.size()), out.get());
  });
  return c10::make_intrusive<ProcessGroupXCCL>(*out, store ? store : store_,
                                               keyPrefix_ + "shrink" + std::to_string(n) + "/", timeout(),
                                               groupName_ + ":shrink" + std::to_string(n));
}

std::vector<uint8_t> ProcessGroupXCCL::growId() {
  auto id = std::make_shared<xcclUniqueId>();
  runOnWorker("xcl:grow_id", [id](xcclComm_t comm) {
    refuseFailed(comm, "grow_id");
    return xcclCommGetUniqueId(comm, id.get());
  });
  return std::vector<uint8_t>(id->internal, id->internal + sizeof id->internal);
}

c10::intrusive_ptr<ProcessGroupXCCL> ProcessGroupXCCL::grow(int nranks, const std::vector<uint8_t> &uid,
                                                            const c10::intrusive_ptr<c10d::Store> &store) {
  TORCH_CHECK(nranks > size_, "xccl.torch.grow: nranks=", nranks, " is not above the group's size ", size_,
              "; a grown group has more ranks (to drop ranks, use xccl.torch.shrink)");
  TORCH_CHECK(store, "xccl.torch.grow: store is None; pass the c10d store the joining processes pass to join()");
  const xcclUniqueId id = idFromBytes(uid, "grow");
  auto out = std::make_shared<xcclComm_t>(nullptr);
  runOnWorker("xcl:grow", [out, id, nranks](xcclComm_t comm) {
    refuseFailed(comm, "grow");
    return xcclCommGrow(comm, nranks, &id, -1, out.get(), nullptr);
  });
  return c10::make_intrusive<ProcessGroupXCCL>(*out, store, growPrefix(uid), timeout());
}

c10::intrusive_ptr<ProcessGroupXCCL> ProcessGroupXCCL::join(int nranks, int rank, const std::vector<uint8_t> &uid,
                                                            const c10::intrusive_ptr<c10d::Store> &store,
                                                            std::chrono::milliseconds timeout) {
  TORCH_CHECK(rank >= 0 && rank < nranks, "xccl.torch.join: rank ", rank, " is not a rank of a group of ", nranks,
              "; a joining process takes one of the new ranks (the old group's size .. nranks-1)");
  TORCH_CHECK(store, "xccl.torch.join: store is None; pass the c10d store the group's ranks pass to grow()");
  TORCH_CHECK(timeout.count() > 0, "xccl.torch.join: the timeout must be positive, got ", timeout.count(), " ms");
  const xcclUniqueId id = idFromBytes(uid, "join");
  xcclComm_t comm = nullptr;
  xcclResult_t rc = xcclCommGrow(nullptr, nranks, &id, rank, &comm, nullptr);
  if (rc != xcclSuccess) {
    throw XcclError(c10::str("xccl.torch.join: rank ", rank, " of ", nranks, " could not join the grown group (",
                             xcclGetErrorString(rc), "): ", xcclGetLastError(nullptr)));
  }
  return c10::make_intrusive<ProcessGroupXCCL>(comm, store, growPrefix(uid), timeout);
}

#if XCCL_TORCH_IS_BACKEND
// ---- torch 2.x: split_group, shrink_group and the rest of Backend ---------

c10::intrusive_ptr<c10d::Backend> ProcessGroupXCCL::split(const c10::intrusive_ptr<c10d::Store> &store,
                                                          const std::vector<int> &ranks,
                                                          const c10::intrusive_ptr<Options> &opts) {
  TORCH_CHECK(!ranks.empty(), "xccl split_group: the new group's rank list is empty");
  for (size_t i = 0; i < ranks.size(); i++) {
    TORCH_CHECK(ranks[i] >= 0 && ranks[i] < size_, "xccl split_group: rank ", ranks[i],
                " is not a rank of the parent group (0..", size_ - 1, ")");
    TORCH_CHECK(i == 0 || ranks[i] > ranks[i - 1], "xccl split_group: the ranks must be sorted and distinct");
  }
  // The groups torch splits into are disjoint, so each one's lowest rank
  // is a color no other group has; a rank in none takes no color.
  const auto me = std::find(ranks.begin(), ranks.end(), rank_);
  const bool member = me != ranks.end();
  const int color = member ? ranks.front() : XCCL_SPLIT_NOCOLOR;
  const int key = member ? static_cast<int>(me - ranks.begin()) : 0;
  const std::string name = opts ? opts->group_name : groupName_ + ":split";
  const std::chrono::milliseconds limit = opts && opts->timeout.count() > 0 ? opts->timeout : timeout();
  const std::string commName = "torch:" + name;
  auto out = std::make_shared<xcclComm_t>(nullptr);
  runOnWorker("xcl:split", [out, color, key, commName, limit](xcclComm_t comm) {
    xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
    config.commName = commName.c_str();
    config.timeoutSeconds = static_cast<double>(limit.count()) / 1000.0;
    return xcclCommSplit(comm, color, key, out.get(), &config);
  });
  if (*out == nullptr) {
    return nullptr;  // torch's way of saying "not in this group"
  }
  return c10::make_intrusive<ProcessGroupXCCL>(*out, store ? store : store_, "xccl/split/", limit, name);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupXCCL::shrink(const std::vector<int64_t> &ranksToExclude,
                                                           int shrinkFlags, const c10::intrusive_ptr<Options> &opts) {
  TORCH_CHECK((shrinkFlags & ~1) == 0, "xccl shrink_group: shrink_flags ", shrinkFlags,
              " is neither SHRINK_DEFAULT (0) nor SHRINK_ABORT (1)");
  std::vector<int> exclude;
  for (int64_t r : ranksToExclude) {
    TORCH_CHECK(r >= 0 && r < size_, "xccl shrink_group: rank ", r, " is not a rank of the group (0..", size_ - 1,
                ")");
    exclude.push_back(static_cast<int>(r));
  }
  if (shrinkFlags & 1) {
    // SHRINK_ABORT: what is in flight on this group stops now (a peer that
    // died would otherwise hold it until the timeout); xcclCommShrink works
    // on the revoked communicator.
    revoked_.store(true);
    xcclCommRevoke(comm_, 0);
  }
  auto pg = shrinkGroup(exclude, nullptr);
  if (opts && opts->timeout.count() > 0) {
    pg->setTimeout(opts->timeout);
  }
  return pg;
}

void ProcessGroupXCCL::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, "xccl: the process group's timeout must be positive, got ", timeout.count(),
              " ms");
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_ = timeout;  // operations queued from now on take it; the worker sets xccl's before each
}

uint64_t ProcessGroupXCCL::getSequenceNumberForGroup() {
  std::lock_guard<std::mutex> lock(mutex_);
  return seq_;
}

c10d::ErrorType ProcessGroupXCCL::getError() {
  if (comm_ == nullptr) {
    return c10d::ErrorType::SUCCESS;
  }
  xcclResult_t async = xcclSuccess;
  if (xcclCommGetAsyncError(comm_, &async) != xcclSuccess) {
    return c10d::ErrorType::COMM_ERROR;
  }
  switch (async) {
  case xcclSuccess: return c10d::ErrorType::SUCCESS;
  case xcclTimeout: return c10d::ErrorType::TIMEOUT;
  case xcclRemoteError: return c10d::ErrorType::REMOTE_ERROR;
  default: return c10d::ErrorType::COMM_ERROR;
  }
}

c10::intrusive_ptr<c10d::Backend::Options> ProcessGroupXCCL::getBackendOptions() {
  auto opts = c10::make_intrusive<Options>(getBackendName(), timeout());
  opts->group_name = groupName_;
  for (int64_t g : globalRanks_) {
    opts->global_ranks_in_group.push_back(static_cast<uint64_t>(g));
  }
  return opts;
}
#endif  // XCCL_TORCH_IS_BACKEND

}  // namespace xccl_torch
