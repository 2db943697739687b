// Gloo through LibTorch's c10d: rendezvous at MASTER_ADDR:MASTER_PORT (rendezvous.h; rank 0 hosts it). Each rank's
// Gloo pairs listen on its own node's address toward MASTER_ADDR (not on MASTER_ADDR, which only rank 0's node has).
// Sub-communicators (Split) are new ProcessGroupGloo instances over a c10d::PrefixStore of the same store, one
// prefix per split and color, so their rendezvous keys never collide.
//
// Threading: c10d's ProcessGroupGloo is thread-safe and runs each operation on its own worker threads, in
// submission order; Split is collective and meant for setup time.
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "trainer/comm/communicator.h"
#include "trainer/comm/bound_store.h"
#include "trainer/comm/rendezvous.h"

namespace ladder::trainer::comm {

namespace {

constexpr std::chrono::seconds kGlooTimeout{300};

class GlooWork final : public Work {
 public:
  explicit GlooWork(c10::intrusive_ptr<c10d::Work> w) : w_(std::move(w)) {}
  void Wait() override { w_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> w_;
};

class Gloo final : public GroupCommunicator {
 public:
  Gloo(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> opts,
       c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank, int size, int local_rank)
      : store_(std::move(store)),
        opts_(std::move(opts)),
        pg_(std::move(pg)),
        rank_(rank),
        size_(size),
        local_rank_(local_rank) {}
  std::string backend() const override { return "gloo"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    std::vector<at::Tensor> v{t};
    return std::make_unique<GlooWork>(pg_->allreduce(v));
  }
  void Broadcast(torch::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    pg_->broadcast(v, o)->wait();
  }
  void Barrier() override { pg_->barrier()->wait(); }
  void ReduceSum(torch::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::ReduceOptions o;
    o.rootRank = root;
    o.reduceOp = c10d::ReduceOp::SUM;
    pg_->reduce(v, o)->wait();
  }

  bool Split(int color, int key, std::unique_ptr<GroupCommunicator>* out, std::string* error) override {
    const int split = splits_++;  // the same on every rank: Split is collective
    try {
      // Everyone learns everyone's (color, key).
      std::vector<at::Tensor> mine{torch::tensor({int64_t{color}, int64_t{key}}, torch::kInt64)};
      std::vector<std::vector<at::Tensor>> all(1);
      for (int r = 0; r < size_; ++r) all[0].push_back(torch::empty({2}, torch::kInt64));
      pg_->allgather(all, mine)->wait();
      if (color < 0) {
        out->reset();
        return true;
      }
      std::vector<std::pair<int64_t, int>> members;  // (key, parent rank) of my color
      for (int r = 0; r < size_; ++r) {
        auto ck = all[0][r];
        if (ck[0].item<int64_t>() == color) members.emplace_back(ck[1].item<int64_t>(), r);
      }
      std::sort(members.begin(), members.end());
      const int sub_rank = static_cast<int>(
          std::find(members.begin(), members.end(), std::make_pair(int64_t{key}, rank_)) - members.begin());
      const int sub_size = static_cast<int>(members.size());
      auto sub_store = c10::make_intrusive<c10d::PrefixStore>(
          "split" + std::to_string(split) + "/color" + std::to_string(color), store_);
      auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(sub_store, sub_rank, sub_size, opts_);
      *out = std::make_unique<Gloo>(sub_store, opts_, std::move(pg), sub_rank, sub_size, sub_rank);
      return true;
    } catch (const std::exception& e) {
      *error = "gloo backend: split into color " + std::to_string(color) + " failed: " + e.what();
      return false;
    }
  }

 private:
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo::Options> opts_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int rank_, size_, local_rank_;
  int splits_ = 0;
};

}  // namespace

std::unique_ptr<GroupCommunicator> MakeGloo(std::string* error) {
  Rendezvous rv;
  if (!JoinRendezvous("gloo", kGlooTimeout, &rv, error)) return nullptr;
  try {
    auto opts = c10d::ProcessGroupGloo::Options::create();
    opts->timeout = kGlooTimeout;
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(LocalAddressToward(rv.addr)));
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(rv.store, rv.rank, rv.size, opts);
    return std::make_unique<Gloo>(std::move(rv.store), std::move(opts), std::move(pg), rv.rank, rv.size,
                                  rv.local_rank);
  } catch (const std::exception& e) {
    *error = std::string("gloo backend: rendezvous at ") + rv.addr + ":" + rv.port + " failed: " + e.what();
    return nullptr;
  }
}

}  // namespace ladder::trainer::comm
