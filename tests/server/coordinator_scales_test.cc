// A `scales:` search through the coordinator: the grid runs first; the sampler then waits for results (the
// search neither ends nor creates trials meanwhile) and adds the learning rates that bracket each batch's best.
#include <cmath>

#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

constexpr const char* kScalesSpec = R"(
name: scales
objective: {metric: score, mode: min}
budget: {parallelism: 8}
scales: {global_batch: [32, 64], lr: {low: 0.1, high: 0.2}, per_octave: 1, extend: 1}
command: [train, "--batch-size={global_batch}", "--lr={lr}"]
)";

std::string Arg(const v1::StartTrial& s, const std::string& prefix) {
  for (const auto& a : s.argv()) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

using CoordinatorScalesTest = CoordinatorTest;

TEST_F(CoordinatorScalesTest, TheSearchWaitsForResultsAndThenBracketsEachBatch) {
  auto a = Connect("a", 8);
  auto id = CreateSearch(kScalesSpec);
  EXPECT_EQ(GetSearch(id).max_trials(), 6) << "grid 4 + extend 1 x 2 batches";
  auto grid = a->Starts();
  ASSERT_EQ(grid.size(), 4u) << "only the grid: extensions need results";
  // score = |log2(lr / best)|, best 0.4 at batch 32 (above its grid: 0.1, 0.2) and 0.1 at batch 64 (below its
  // grid, which sqrt moved to 0.141, 0.283).
  auto score = [](const v1::StartTrial& s) {
    const double best = Arg(s, "--batch-size=") == "32" ? 0.4 : 0.1;
    return std::fabs(std::log2(std::stod(Arg(s, "--lr=")) / best));
  };
  for (size_t i = 0; i < grid.size(); ++i) {
    Report(a, grid[i], score(grid[i]));
    EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_RUNNING) << "after trial " << i;
  }
  auto all = a->Starts();
  ASSERT_EQ(all.size(), 6u) << "one extension per batch (both bests sit at an edge of their grid)";
  EXPECT_EQ(Arg(all[4], "--batch-size="), "32");
  EXPECT_NEAR(std::stod(Arg(all[4], "--lr=")), 0.4, 1e-9);
  EXPECT_EQ(Arg(all[5], "--batch-size="), "64");
  EXPECT_NEAR(std::stod(Arg(all[5], "--lr=")), 0.1 * std::sqrt(2.0) / 2, 1e-9) << "below batch 64's best grid point";
  Report(a, all[4], score(all[4]));
  Report(a, all[5], score(all[5]));
  EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(GetSearch(id).completed(), 6);
}

}  // namespace
}  // namespace ladder::server
