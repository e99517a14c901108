// failure.cpp — the text of a failed operation.
//
// xccl names the peer a rank saw fail, which is not always the rank that
// failed first: when a rank dies in a ring, its neighbours see it go, and
// the ranks beyond them see a neighbour give up. So on its first failure
// that involves peers, each rank writes its message into the c10d store
// (which outlives the ranks: torchrun's agent or rank 0's process hosts it)
// and reads the others' for a short while; its error then ends with what
// every other rank saw, and "no report" names the ranks that said nothing
// (dead, stopped, or still waiting).
#include <algorithm>
#include <chrono>
#include <thread>

#include "ProcessGroupXCCL.hpp"

#include <c10/util/Exception.h>

namespace xccl_torch {

namespace {

constexpr auto kReportWait = std::chrono::seconds(2);

// xcclGetErrorString's text without its "(run with XCCL_DEBUG=...)" hint:
// the full message follows it here.
std::string resultName(xcclResult_t rc) {
  std::string s = xcclGetErrorString(rc);
  const auto cut = s.find(" (");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

bool involvesPeers(xcclResult_t rc) {
  return rc == xcclRemoteError || rc == xcclTimeout || rc == xcclSystemError;
}

}  // namespace

std::string ProcessGroupXCCL::failureText(const char *name, uint64_t seq, xcclResult_t rc) {
  if (revoked_.load()) {
    // Revoked by abort() (destroy_process_group or shrink_group with
    // SHRINK_ABORT while it ran): no peer is to blame.
    return c10::str("xccl ", name, " (operation ", seq, " of torch process group '", groupName_, "', rank ", rank_,
                    " of ", size_, ") did not complete: the group was aborted while it was queued or running ",
                    "(destroy_process_group, abort, or shrink_group with SHRINK_ABORT)");
  }
  std::string mine = c10::str("xccl ", name, " (operation ", seq, " of torch process group '", groupName_, "', rank ",
                              rank_, " of ", size_, globalRanksText(), ") failed with ", resultName(rc), ": ",
                              xcclGetLastError(comm_));
  if (!involvesPeers(rc) || reported_ || size_ == 1) {
    return mine;
  }
  reported_ = true;
  return mine + peerReports(mine);
}

std::string ProcessGroupXCCL::globalRanksText() const {
  // xccl numbers peers as the group does; say which global ranks those are
  // where they differ.
  bool same = true;
  for (size_t r = 0; r < globalRanks_.size(); r++) {
    same = same && globalRanks_[r] == static_cast<int64_t>(r);
  }
  if (same) {
    return "";
  }
  std::string text = "; its ranks 0.." + std::to_string(size_ - 1) + " are global ranks ";
  const size_t shown = std::min<size_t>(globalRanks_.size(), 16);
  for (size_t r = 0; r < shown; r++) {
    text += (r ? "," : "") + std::to_string(globalRanks_[r]);
  }
  return text + (shown < globalRanks_.size() ? ",..." : "");
}

std::string ProcessGroupXCCL::peerReports(const std::string &mine) {
  const std::string base = keyPrefix_ + "failure/rank";
  try {
    store_->set(base + std::to_string(rank_), std::vector<uint8_t>(mine.begin(), mine.end()));
  } catch (const std::exception &e) {
    return c10::str(" (the other ranks' view is unknown: the c10d store refused this rank's report: ", e.what(), ")");
  }
  std::vector<std::string> seen(size_);
  std::vector<bool> have(size_, false);
  have[rank_] = true;
  int missing = size_ - 1;
  const auto deadline = std::chrono::steady_clock::now() + kReportWait;
  try {
    while (missing > 0 && std::chrono::steady_clock::now() < deadline) {
      for (int r = 0; r < size_; r++) {
        if (!have[r] && store_->check({base + std::to_string(r)})) {
          auto bytes = store_->get(base + std::to_string(r));
          seen[r].assign(bytes.begin(), bytes.end());
          have[r] = true;
          missing--;
        }
      }
      if (missing > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  } catch (const std::exception &e) {
    seen[rank_] = c10::str("(the store failed while reading the others' reports: ", e.what(), ")");
  }
  std::string text = ". What the other ranks saw:";
  for (int r = 0; r < size_; r++) {
    if (r == rank_) {
      continue;
    }
    if (have[r]) {
      // Their message without the head failureText gave it ("xccl NAME
      // (operation ...) failed with RESULT: ").
      const std::string &m = seen[r];
      const auto head = m.find(") failed with ");
      const auto colon = head == std::string::npos ? head : m.find(": ", head);
      text += c10::str(" [rank ", r, "] ", colon == std::string::npos ? m : m.substr(colon + 2));
    } else {
      text += c10::str(" [rank ", r, "] no report within ",
                       std::chrono::duration_cast<std::chrono::seconds>(kReportWait).count(),
                       " s: rank ", r, " exited, was killed or stopped, or is still waiting.");
    }
  }
  if (!seen[rank_].empty()) {
    text += " " + seen[rank_];
  }
  return text;
}

}  // namespace xccl_torch
