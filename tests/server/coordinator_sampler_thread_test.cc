// The samplers run off the coordinator's loop (server/sampler_thread.h): a sampler held inside Ask (a test sampler
// that blocks until the test releases it) holds nothing else — another search's trial reports, ends and is
// acknowledged, the search completes, ListSearches answers — and the held search's trial is created and runs once
// the answer comes; a search cancelled while its sampler is asked takes no trial from the late answer.
#include <condition_variable>
#include <mutex>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

// Holds every Ask of the samplers it wraps until Release (or, so that a test on a path that asks on the loop fails
// instead of hanging, until kGiveUp).
class AskGate {
 public:
  static constexpr std::chrono::seconds kGiveUp{30};

  void Hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    held_ = false;
    cv_.notify_all();
  }
  // Called by the sampler, on whichever thread asks it.
  void Pass() {
    std::unique_lock lock(mu_);
    ++asks_;
    ++inside_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, kGiveUp, [this] { return !held_; })) gave_up_ = true;
    --inside_;
  }
  // Waits (generously) until an Ask is held inside; false if none is (an Ask on the test's own thread gave up).
  bool WaitInside() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return inside_ > 0 || gave_up_; });
    return inside_ > 0;
  }
  bool inside() {
    std::lock_guard lock(mu_);
    return inside_ > 0;
  }
  int asks() {
    std::lock_guard lock(mu_);
    return asks_;
  }
  bool gave_up() {
    std::lock_guard lock(mu_);
    return gave_up_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
  int inside_ = 0;
  int asks_ = 0;
  bool gave_up_ = false;
};

class GatedSampler : public search::Sampler {
 public:
  GatedSampler(AskGate& gate, std::unique_ptr<search::Sampler> inner) : gate_(gate), inner_(std::move(inner)) {}
  std::optional<search::Params> Ask(int64_t n) override {
    gate_.Pass();
    return inner_->Ask(n);
  }
  void Tell(int64_t n, const search::Params& p, std::optional<double> objective) override {
    inner_->Tell(n, p, objective);
  }

 private:
  AskGate& gate_;
  std::unique_ptr<search::Sampler> inner_;
};

std::string Spec(const std::string& name, int max_trials) {
  return "name: " + name + R"(
objective: {metric: score, mode: max}
budget: {max_trials: )" + std::to_string(max_trials) + R"(, parallelism: 1}
sampler: {type: random, seed: 5}
command: [run, "--x={x}"]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";
}

class CoordinatorSamplerThreadTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    CoordinatorTest::SetUp();
    Close();
    lease_ = std::chrono::hours(1);  // the fake worker does not beat while the test runs the loop
    // The search named "held" gets a sampler behind the gate; every other its spec's own.
    options_.make_sampler = [this](const search::SearchSpec& spec) -> std::unique_ptr<search::Sampler> {
      if (spec.name != "held") return search::MakeSampler(spec);
      return std::make_unique<GatedSampler>(gate_, search::MakeSampler(spec));
    };
    Open();
  }
  void TearDown() override {
    gate_.Release();
    CoordinatorTest::TearDown();
  }
  // Runs the loop until `done` (or a generous deadline: false).
  template <class Done>
  bool RunUntil(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      loop_.restart();
      loop_.run_one_for(std::chrono::milliseconds(20));
      loop_.poll();
    }
    return true;
  }
  bool ExitAcknowledged(const FakeLink& link, int64_t trial_id) {
    for (const auto& m : link.sent) {
      for (const auto& ack : m.ack().trials()) {
        if (ack.trial_id() == trial_id && ack.exit_durable()) return true;
      }
    }
    return false;
  }

  AskGate gate_;
};

TEST_F(CoordinatorSamplerThreadTest, ASamplerHeldInAskHoldsNothingElseAndItsTrialRunsOnceReleased) {
  auto a = Connect("a", 2);
  const int64_t other = CreateSearch(Spec("other", 1));
  ASSERT_EQ(a->Starts().size(), 1u);
  const v1::StartTrial other_start = a->Starts().at(0);

  gate_.Hold();
  wait_for_samplers_ = false;
  const int64_t held = CreateSearch(Spec("held", 1));
  EXPECT_TRUE(gate_.WaitInside()) << "no Ask held on another thread";

  // While the held search's sampler is inside Ask: the other search's trial reports and ends, its exit is stored
  // and acknowledged, and that search completes; calls are answered.
  Report(a, other_start, 0.7);
  ASSERT_TRUE(RunUntil([&] { return ExitAcknowledged(*a, other_start.trial_id()); }));
  EXPECT_EQ(GetSearch(other).state(), v1::SEARCH_COMPLETED);
  v1::ListSearchesResponse list;
  ASSERT_TRUE(coord_->ListSearches({}, &list).ok());
  EXPECT_EQ(list.searches_size(), 2);
  EXPECT_EQ(GetSearch(held).state(), v1::SEARCH_RUNNING);
  EXPECT_EQ(GetSearch(held).pending() + GetSearch(held).running(), 0) << "no trial before its sampler answers";
  EXPECT_TRUE(gate_.inside()) << "all of the above happened while the sampler was held";
  EXPECT_EQ(gate_.asks(), 1) << "the passes meanwhile did not ask the held search again";

  gate_.Release();
  wait_for_samplers_ = true;
  ASSERT_TRUE(RunUntil([&] { return a->Starts().size() == 2; })) << "the held search's trial never started";
  const v1::StartTrial held_start = a->Starts().at(1);
  EXPECT_EQ(GetTrial(held_start.trial_id()).search_id(), held);
  Report(a, held_start, 0.4);
  EXPECT_EQ(GetSearch(held).state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(GetSearch(held).completed(), 1);
  EXPECT_FALSE(gate_.gave_up()) << "the sampler was asked on the loop: nothing else ran while it waited";
}

TEST_F(CoordinatorSamplerThreadTest, ASearchCancelledWhileItsSamplerIsAskedTakesNoTrialFromTheAnswer) {
  auto a = Connect("a", 1);
  gate_.Hold();
  wait_for_samplers_ = false;
  const int64_t held = CreateSearch(Spec("held", 2));
  EXPECT_TRUE(gate_.WaitInside()) << "no Ask held on another thread";
  v1::CancelSearchRequest req;
  req.set_search_id(held);
  v1::CancelSearchResponse resp;
  ASSERT_TRUE(coord_->CancelSearch(req, &resp).ok());
  EXPECT_TRUE(gate_.inside()) << "cancelled while the sampler was held";

  gate_.Release();
  wait_for_samplers_ = true;
  Drain();  // the answer comes back, and the passes after it run
  v1::ListTrialsRequest lreq;
  lreq.set_search_id(held);
  v1::ListTrialsResponse trials;
  ASSERT_TRUE(coord_->ListTrials(lreq, &trials).ok());
  EXPECT_EQ(trials.trials_size(), 0) << "a trial was created from the cancelled search's suggestion";
  EXPECT_TRUE(a->Starts().empty());
  EXPECT_EQ(GetSearch(held).state(), v1::SEARCH_CANCELLED);
  EXPECT_FALSE(gate_.gave_up()) << "the sampler was asked on the loop";
}

}  // namespace
}  // namespace ladder::server
