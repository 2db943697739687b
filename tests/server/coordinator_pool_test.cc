// Pools: a hero run submitted as its own Slurm job (ladder promote --submit) runs on that job's workers only
// (label pool=NAME, spec resources.pool), the shared nodes keep serving the other searches, and once the hero run's
// search has ended its workers are released (v1::Release) so the job ends; the search keeps its Slurm job id.
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kHeroSpec = R"(
name: hero
objective: {metric: score, mode: max}
budget: {max_trials: 1}
resources: {nodes: 1, pool: job-7}
command: [train]
space:
  x: {type: float, low: 0.0, high: 1.0}
)";

bool Released(const FakeLink& link) {
  for (const auto& m : link.sent) {
    if (m.has_release()) return true;
  }
  return false;
}

using CoordinatorPoolTest = CoordinatorTest;

TEST_F(CoordinatorPoolTest, AHeroRunsJobServesOnlyItAndIsReleasedWhenItEnds) {
  auto shared = Connect("a", 1);
  const int64_t searched = CreateSearch();  // kSpec: one-slot trials, 2 at a time
  EXPECT_EQ(shared->Starts().size(), 1u);

  // ladder promote --submit: the hero search first (its job is held until it exists), then the job's worker.
  v1::CreateSearchRequest req;
  req.set_spec_yaml(kHeroSpec);
  req.set_priority(v1::PRIORITY_HERO);
  req.set_slurm_job_id("7");
  v1::CreateSearchResponse resp;
  ASSERT_TRUE(coord_->CreateSearch(req, &resp).ok());
  Drain();
  const int64_t hero = resp.search().id();
  EXPECT_EQ(resp.search().group().pool(), "job-7");
  EXPECT_EQ(shared->Starts().size(), 1u) << "the hero run preempts nothing on the shared node";
  auto pool = Connect("h1", 1, {}, {{"pool", "job-7"}});
  EXPECT_FALSE(Released(*pool)) << "its search runs";
  ASSERT_EQ(pool->Starts().size(), 1u) << "the hero run starts on its job's node";
  EXPECT_EQ(pool->Starts()[0].search_id(), hero) << "and the shared search's second trial does not";
  EXPECT_EQ(GetSearch(searched).running(), 1);

  Report(pool, pool->Starts()[0], 0.9);
  EXPECT_EQ(GetSearch(hero).state(), v1::SEARCH_COMPLETED);
  EXPECT_TRUE(Released(*pool)) << "its search ended: the job's worker is released";
  EXPECT_FALSE(Released(*shared));

  // A worker of the pool that registers after its search ended (its job started late) is released at once.
  auto late = Connect("h2", 1, {}, {{"pool", "job-7"}});
  EXPECT_TRUE(Released(*late));
  EXPECT_TRUE(late->Starts().empty());

  // The job id is stored with the search.
  Close();
  Open();
  EXPECT_EQ(GetSearch(hero).slurm_job_id(), "7");
}

}  // namespace
}  // namespace ladder::server
