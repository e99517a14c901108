// p2p.cpp — sends and receives on the worker: announced in the c10d store,
// pulled by the receiver into the receive that matches (per peer and tag, in
// posting order) or a buffer until one does; receives that nothing matches
// yet wait without holding the worker.
#include "ProcessGroupXCCL.hpp"

#include <algorithm>
#include <cstring>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace xccl_torch {

// ---- Sends and receives -----------------------------------------------------
//
// xccl matches a send and a receive in posting order per pair of ranks, with
// the same size on both sides, and a receive names its sender. torch wants
// gloo's matching instead: per (peer, tag), and a receive may take the first
// message from any rank. So every message is announced before its data
// moves:
//
//  - A send first writes its header (tag, bytes) under the store key
//    <group>p2p/<src>><dst>/<n>, n counting the messages src sent to dst,
//    then sends the bytes with xcclSend in the next group. A send to oneself
//    is a copy into the list of arrived messages.
//  - A receiver reads the headers announced to it in order (check, get,
//    delete) and pulls every message it sees at once, in announcement order,
//    so xccl's per-pair order is kept: into the tensor of the first waiting
//    receive (in posting order) that matches its source and tag and has its
//    size, or else into a buffer of its own, kept in arrival order until a
//    receive claims it. A receive first looks at those buffered messages,
//    so an earlier message always wins.
//  - A receive that nothing matches yet waits in pending_, not on the
//    worker: the worker runs what is queued behind it and polls the store
//    for its message (every 50 us, backing off to 2 ms), until it comes or
//    the operation's timeout passes.
//
// One group carries the sends of a batch and the pulls of every message
// announced by then. Before it the worker reads every peer's announcements,
// so when two ranks send to each other more than a connection buffers at
// about the same time, at least one of them (the store orders the two writes
// and two reads) pulls the other's message in the group with its own send:
// that one completes, and the other rank's pull follows when it polls.
// What still waits: a send the receiver must take part in (the first
// between two ranks, since xccl connects a pair on first use, or one beyond
// what a connection buffers) holds the worker until the receiver's worker
// pulls it, which it does when it polls (it has a receive pending) or runs
// a send; a collective queued behind the send waits too (README, PyTorch).

struct ProcessGroupXCCL::Pending {
  Op op;
  at::Tensor buf;  // contiguous stand-in for op.msg->tensor
  std::chrono::steady_clock::time_point deadline;
  bool pulling = false;  // a pull into buf is in the group being built
};

struct ProcessGroupXCCL::Arrived {
  int src;
  int tag;
  at::Tensor data;  // uint8, the message's bytes
};

struct ProcessGroupXCCL::Pull {
  int src;
  int tag;
  int64_t bytes;
  std::shared_ptr<Pending> into;  // or nullptr: into temp, then arrived_
  at::Tensor temp;
};

namespace {
constexpr auto kPollFirst = std::chrono::microseconds(50);
constexpr auto kPollMax = std::chrono::microseconds(2000);

int64_t bytesOf(const at::Tensor &t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

bool matches(const ProcessGroupXCCL::P2P &want, int src, int tag) {
  return (want.peer < 0 || want.peer == src) && want.tag == tag;
}
}  // namespace

std::string ProcessGroupXCCL::p2pKey(int src, int dst, uint64_t n) const {
  return c10::str(keyPrefix_, "p2p/", src, ">", dst, "/", n);
}

std::chrono::steady_clock::time_point ProcessGroupXCCL::nextP2PPoll() const { return lastPoll_ + pollEvery_; }

void ProcessGroupXCCL::runP2P(std::vector<Op> &ops) {
  std::vector<Op> sends;
  try {
    for (auto &op : ops) {
      P2P &m = *op.msg;
      if (m.send) {
        m.tensor = m.tensor.contiguous();  // the bytes sent (the caller's tensor is not written)
        if (m.peer == rank_) {
          arrived_.push_back(std::make_shared<Arrived>(
              Arrived{rank_, m.tag, m.tensor.reshape({-1}).view(at::kByte).clone()}));
        } else {
          const std::string header = c10::str(m.tag, " ", bytesOf(m.tensor));
          store_->set(p2pKey(rank_, m.peer, announcedTo_[m.peer]++),
                      std::vector<uint8_t>(header.begin(), header.end()));
        }
        sends.push_back(std::move(op));
      } else {
        auto p = std::make_shared<Pending>();
        p->buf = m.tensor.is_contiguous() ? m.tensor : m.tensor.contiguous();
        p->deadline = std::chrono::steady_clock::now() + op.timeout;
        p->op = std::move(op);
        pending_.push_back(std::move(p));
      }
    }
    matchArrived();
    std::vector<Pull> pulls;
    readAnnouncements(!sends.empty(), pulls);
    issueP2PGroup(sends, pulls);
  } catch (...) {
    auto error = std::current_exception();
    for (auto &op : sends) {
      if (!op.work->isCompleted()) {
        op.work->complete(error);
      }
    }
    for (auto &p : pending_) {
      p->op.work->complete(error);
    }
    pending_.clear();
  }
  pollEvery_ = kPollFirst;
  lastPoll_ = std::chrono::steady_clock::now();
}

void ProcessGroupXCCL::progressP2P(bool allPeers) {
  size_t before = pending_.size();
  try {
    std::vector<Op> none;
    std::vector<Pull> pulls;
    readAnnouncements(allPeers, pulls);
    issueP2PGroup(none, pulls);
  } catch (...) {
    auto error = std::current_exception();
    for (auto &p : pending_) {
      p->op.work->complete(error);
    }
    pending_.clear();
  }
  expirePending();
  pollEvery_ = pending_.size() < before ? kPollFirst : std::min(kPollMax, pollEvery_ * 2);
  lastPoll_ = std::chrono::steady_clock::now();
}

// Reads the headers announced to this rank by every peer (allPeers) or by
// the peers the pending receives wait on, and plans a pull for each.
void ProcessGroupXCCL::readAnnouncements(bool allPeers, std::vector<Pull> &pulls) {
  std::vector<bool> ask(size_, allPeers);
  for (const auto &p : pending_) {
    if (p->op.msg->peer < 0) {
      std::fill(ask.begin(), ask.end(), true);
      break;
    }
    ask[p->op.msg->peer] = true;
  }
  ask[rank_] = false;
  for (int src = 0; src < size_; src++) {
    while (ask[src]) {
      const std::string key = p2pKey(src, rank_, readFrom_[src]);
      if (!store_->check({key})) {
        break;
      }
      const std::vector<uint8_t> v = store_->get(key);
      store_->deleteKey(key);
      readFrom_[src]++;
      int tag = 0;
      long long bytes = -1;
      const std::string header(v.begin(), v.end());
      TORCH_CHECK(std::sscanf(header.c_str(), "%d %lld", &tag, &bytes) == 2 && bytes >= 0,
                  "xccl: the header of a message from rank ", src, " under '", key, "' in the c10d store is '",
                  header, "'; something else wrote that key");
      Pull pull{src, tag, static_cast<int64_t>(bytes), nullptr, at::Tensor()};
      for (auto &p : pending_) {
        if (!p->pulling && matches(*p->op.msg, src, tag) && bytesOf(p->buf) == pull.bytes) {
          p->pulling = true;
          pull.into = p;
          break;
        }
        if (!p->pulling && matches(*p->op.msg, src, tag)) {
          break;  // the first match has another size: it takes the message, and fails (matchArrived)
        }
      }
      if (!pull.into) {
        pull.temp = at::empty({pull.bytes}, at::TensorOptions().dtype(at::kByte));
      }
      pulls.push_back(std::move(pull));
    }
  }
}

void ProcessGroupXCCL::issueP2PGroup(std::vector<Op> &sends, std::vector<Pull> &pulls) {
  if (sends.empty() && pulls.empty()) {
    return;
  }
  std::chrono::milliseconds longest = timeout();
  for (const auto &op : sends) {
    longest = std::max(longest, op.timeout);
  }
  setCommTimeout(longest);
  const uint64_t seq = sends.empty() ? pulls.front().into ? pulls.front().into->op.work->seq() : seq_
                                     : sends.front().work->seq();
  xcclResult_t rc = xcclGroupStart();
  if (rc != xcclSuccess) {
    throw XcclError(failureText("group start", seq, rc));
  }
  for (const auto &op : sends) {
    if (rc == xcclSuccess && op.msg->peer != rank_ && bytesOf(op.msg->tensor) > 0) {
      rc = xcclSend(op.msg->tensor.data_ptr(), static_cast<size_t>(bytesOf(op.msg->tensor)), xcclUint8,
                    op.msg->peer, comm_, nullptr);
    }
  }
  for (const auto &pull : pulls) {
    if (rc == xcclSuccess && pull.bytes > 0) {
      void *dst = pull.into ? pull.into->buf.data_ptr() : pull.temp.data_ptr();
      rc = xcclRecv(dst, static_cast<size_t>(pull.bytes), xcclUint8, pull.src, comm_, nullptr);
    }
  }
  const std::string refused = rc != xcclSuccess ? failureText("send/recv", seq, rc) : std::string();
  xcclResult_t end = xcclGroupEnd();
  if (!refused.empty()) {
    throw XcclError(refused);
  }
  if (end != xcclSuccess) {
    throw XcclError(failureText(c10::str("group of ", sends.size(), " sends and ", pulls.size(), " receives").c_str(),
                                seq, end));
  }
  for (auto &op : sends) {
    op.work->complete(nullptr);
  }
  for (auto &pull : pulls) {
    if (pull.into) {
      Pending &p = *pull.into;
      if (!p.buf.is_same(p.op.msg->tensor)) {
        p.op.msg->tensor.copy_(p.buf);
      }
      p.op.work->setSourceRank(pull.src);
      p.op.work->complete(nullptr);
      pending_.erase(std::find(pending_.begin(), pending_.end(), pull.into));
    } else {
      arrived_.push_back(std::make_shared<Arrived>(Arrived{pull.src, pull.tag, pull.temp}));
    }
  }
  matchArrived();
}

// Gives waiting receives, in posting order, the messages that arrived before
// them, oldest first.
void ProcessGroupXCCL::matchArrived() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending &p = **it;
    auto a = std::find_if(arrived_.begin(), arrived_.end(),
                          [&](const std::shared_ptr<Arrived> &m) { return matches(*p.op.msg, m->src, m->tag); });
    if (p.pulling || a == arrived_.end()) {
      ++it;
      continue;
    }
    std::shared_ptr<Arrived> m = *a;
    arrived_.erase(a);
    p.op.work->setSourceRank(m->src);
    if (bytesOf(m->data) != bytesOf(p.buf)) {
      p.op.work->complete(std::make_exception_ptr(XcclError(c10::str(
          "xccl ", p.op.work->name(), " (operation ", p.op.work->seq(), " of its process group, rank ", rank_,
          "): the message from rank ", m->src, " with tag ", m->tag, " has ", bytesOf(m->data),
          " bytes, but the tensor to receive it has ", bytesOf(p.buf),
          "; a send and its receive must have the same size in bytes"))));
    } else {
      if (m->data.numel() > 0) {
        std::memcpy(p.buf.data_ptr(), m->data.data_ptr(), static_cast<size_t>(m->data.numel()));
      }
      if (!p.buf.is_same(p.op.msg->tensor)) {
        p.op.msg->tensor.copy_(p.buf);
      }
      p.op.work->complete(nullptr);
    }
    it = pending_.erase(it);
  }
}

void ProcessGroupXCCL::expirePending() {
  const auto now = std::chrono::steady_clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    Pending &p = **it;
    if (now < p.deadline) {
      ++it;
      continue;
    }
    const P2P &m = *p.op.msg;
    p.op.work->complete(std::make_exception_ptr(XcclError(c10::str(
        "xccl ", p.op.work->name(), " (operation ", p.op.work->seq(), " of its process group, rank ", rank_,
        "): no message from ", m.peer < 0 ? std::string("any rank") : c10::str("rank ", m.peer), " with tag ",
        m.tag, " came within the ", p.op.timeout.count(), " ms timeout"))));
    it = pending_.erase(it);
  }
}

void ProcessGroupXCCL::failPending(const char *why) {
  for (auto &p : pending_) {
    p->op.work->complete(std::make_exception_ptr(
        XcclError(c10::str("xccl ", p->op.work->name(), " (operation ", p->op.work->seq(),
                           " of its process group, rank ", rank_, "): ", why))));
  }
  pending_.clear();
}

}  // namespace xccl_torch
