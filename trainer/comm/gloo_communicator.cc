// Gloo through LibTorch's c10d: TCPStore rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts it).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>

#include "trainer/comm/communicator.h"

namespace ladder::trainer::comm {

namespace {

class GlooWork final : public Work {
 public:
  explicit GlooWork(c10::intrusive_ptr<c10d::Work> w) : w_(std::move(w)) {}
  void Wait() override { w_->wait(); }

 private:
  c10::intrusive_ptr<c10d::Work> w_;
};

class Gloo final : public Communicator {
 public:
  Gloo(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank, int size, int local_rank)
      : pg_(std::move(pg)), rank_(rank), size_(size), local_rank_(local_rank) {}
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

 private:
  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int rank_, size_, local_rank_;
};

bool Env(const char* name, std::string* out, std::string* error) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    *error = std::string("gloo backend: environment variable ") + name +
             " is not set (start ranks with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, as torchrun does)";
    return false;
  }
  *out = v;
  return true;
}

}  // namespace

std::unique_ptr<Communicator> MakeGloo(std::string* error) {
  std::string rank_s, size_s, addr, port_s;
  if (!Env("RANK", &rank_s, error) || !Env("WORLD_SIZE", &size_s, error) || !Env("MASTER_ADDR", &addr, error) ||
      !Env("MASTER_PORT", &port_s, error)) {
    return nullptr;
  }
  const int rank = std::atoi(rank_s.c_str()), size = std::atoi(size_s.c_str()), port = std::atoi(port_s.c_str());
  if (size < 1 || rank < 0 || rank >= size || port <= 0 || port > 65535) {
    *error = "gloo backend: bad RANK/WORLD_SIZE/MASTER_PORT (" + rank_s + "/" + size_s + "/" + port_s + ")";
    return nullptr;
  }
  const char* lr = std::getenv("LOCAL_RANK");
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(port);
    so.isServer = rank == 0;
    so.numWorkers = size;
    so.waitWorkers = true;
    so.timeout = std::chrono::seconds(300);
    auto store = c10::make_intrusive<c10d::TCPStore>(addr, so);
    auto opts = c10d::ProcessGroupGloo::Options::create();
    opts->timeout = std::chrono::seconds(300);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
    return std::make_unique<Gloo>(std::move(pg), rank, size, lr ? std::atoi(lr) : rank);
  } catch (const std::exception& e) {
    *error = std::string("gloo backend: rendezvous at ") + addr + ":" + port_s + " failed: " + e.what();
    return nullptr;
  }
}

}  // namespace ladder::trainer::comm
