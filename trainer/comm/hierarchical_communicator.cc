// The hierarchical allreduce: reduce inside each node onto its leader (local rank 0), allreduce across the
// node leaders, broadcast back inside the node — the pattern of large GPU clusters, where the links inside a
// node are much faster than those between nodes.
//
// Composition: three GroupCommunicators of the same backend — the world, this rank's node (`local`), and the
// leaders (only on local rank 0). Every collective of this communicator, AllreduceSum included, runs on ONE
// worker thread in submission order: AllreduceSum returns at once (so bucket allreduces overlap the backward
// pass) and, as the trainer submits in the same order on every rank, the phases of successive operations meet
// in the same order on every rank too. Broadcast and Barrier go through the same queue, so they never overtake
// an allreduce in flight.
//
// Lifecycle: the worker thread is joined (after finishing the queued operations) before the sub-communicators
// are destroyed.
#include <unistd.h>

#include <cstdio>
#include <limits>

#include "trainer/comm/communicator.h"
#include "trainer/comm/serial_executor.h"

namespace ladder::trainer::comm {

namespace {

class Hierarchical final : public Communicator {
 public:
  Hierarchical(std::unique_ptr<GroupCommunicator> world, std::unique_ptr<GroupCommunicator> local,
               std::unique_ptr<GroupCommunicator> leaders)
      : world_(std::move(world)), local_(std::move(local)), leaders_(std::move(leaders)) {
    exec_ = std::make_unique<SerialExecutor>();
  }
  ~Hierarchical() override { exec_.reset(); }

  std::string backend() const override { return world_->backend() + "/hierarchical"; }
  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }
  // The rank within this rank's node.
  int local_rank() const override { return local_->rank(); }

  std::unique_ptr<Work> AllreduceSum(torch::Tensor& t) override {
    return std::make_unique<FutureWork>(exec_->Submit([this, t]() mutable {
      if (local_->size() > 1) local_->ReduceSum(t, 0);
      if (leaders_ && leaders_->size() > 1) leaders_->AllreduceSum(t)->Wait();
      if (local_->size() > 1) local_->Broadcast(t, 0);
    }));
  }
  void Broadcast(torch::Tensor& t, int root) override {
    exec_->Submit([this, t, root]() mutable { world_->Broadcast(t, root); }).get();
  }
  void Barrier() override {
    exec_->Submit([this] { world_->Barrier(); }).get();
  }

 private:
  std::unique_ptr<GroupCommunicator> world_, local_, leaders_;
  std::unique_ptr<SerialExecutor> exec_;  // reset first in the destructor
};

// A color shared by the ranks on this host (FNV-1a of the host name, non-negative). Two hosts whose names
// collide would only form one larger "node": the sum stays exact, only the traffic pattern changes.
int HostColor() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  uint32_t h = 2166136261u;
  for (const char* p = name; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
  return static_cast<int>(h & 0x7fffffff);
}

}  // namespace

std::unique_ptr<Communicator> MakeHierarchical(std::unique_ptr<GroupCommunicator> world, int ranks_per_node,
                                               const std::string& source, std::string* error) {
  const int rank = world->rank();
  const int color = ranks_per_node > 0 ? rank / ranks_per_node : HostColor();
  std::unique_ptr<GroupCommunicator> local, leaders;
  if (!world->Split(color, rank, &local, error)) return nullptr;
  if (!local) {
    *error = "hierarchical allreduce: this rank got no node communicator";
    return nullptr;
  }
  const bool leader = local->rank() == 0;
  if (!world->Split(leader ? 0 : GroupCommunicator::kNoGroup, rank, &leaders, error)) return nullptr;
  if (rank == 0) {
    std::fprintf(stderr, "ladder-train: hierarchical: %d nodes x %d ranks (ranks per node from %s), over %s\n",
                 leaders->size(), local->size(), source.c_str(), world->backend().c_str());
  }
  return std::make_unique<Hierarchical>(std::move(world), std::move(local), std::move(leaders));
}

}  // namespace ladder::trainer::comm
