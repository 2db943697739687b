// `scales:`: the batch x learning-rate sweep a scale fit needs. The spec section parses to exact windows (errors
// name the field); the sampler gives the grid, then extends a batch's learning rates beyond the edge where its
// best one sits, once that batch's trials have ended, until the best is bracketed or `extend` is used up.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

const std::string kHead =
    "name: s\nobjective: {metric: val_loss, mode: min}\ncommand: [t, --batch-size, \"{global_batch}\", --lr, \"{lr}\"]\n";

std::string AllErrors(const ParseResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

int64_t Batch(const Params& p) { return std::get<int64_t>(p.at("global_batch")); }
double Lr(const Params& p) { return std::get<double>(p.at("lr")); }

TEST(ScalesSpecTest, WindowsFollowTheBatchAndMaxTrialsDefaultsToGridPlusExtensions) {
  ParseResult r = ParseSpec(kHead + "scales:\n  global_batch: [16, 64]\n  lr: {low: 0.01, high: 0.04}\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const SearchSpec& s = *r.spec;
  EXPECT_EQ(s.sampler, "scales");
  ASSERT_EQ(s.space.params.size(), 2u);
  EXPECT_EQ(s.space.params[0].name, "global_batch");
  EXPECT_EQ(s.space.params[1].name, "lr");
  // per_octave 2 over 2 octaves: 5 points; sqrt follow: batch 64 is 4x, so its window is 2x higher.
  auto w16 = ScalesWindow(s.scales, 16), w64 = ScalesWindow(s.scales, 64);
  ASSERT_EQ(w16.size(), 5u);
  ASSERT_EQ(w64.size(), 5u);
  EXPECT_NEAR(w16.front(), 0.01, 1e-12);
  EXPECT_NEAR(w16.back(), 0.04, 1e-12);
  EXPECT_NEAR(w16[1], 0.01 * std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(w64.front(), 0.02, 1e-12);
  EXPECT_EQ(s.max_trials, 10 + 2 * 2);
  EXPECT_TRUE(s.scales.probes) << "probes: auto by default";
  EXPECT_DOUBLE_EQ(s.scales.probe_budget, 0.1);
  // The lr parameter's range covers the windows and the extensions.
  EXPECT_LE(s.space.params[1].low, 0.01 / 2 + 1e-12);
  EXPECT_GE(s.space.params[1].high, 0.08 * 2 - 1e-12);

  ParseResult lin = ParseSpec(kHead + "budget: {max_trials: 12}\nscales: {global_batch: [8, 32], lr: {low: 0.1, high: 0.2}, "
                                      "per_octave: 1, follow: linear, extend: 0}\n", "s.yaml");
  ASSERT_TRUE(lin.ok()) << AllErrors(lin);
  EXPECT_EQ(lin.spec->max_trials, 12);
  EXPECT_NEAR(ScalesWindow(lin.spec->scales, 32).front(), 0.4, 1e-12);
  EXPECT_EQ(ScalesWindow(lin.spec->scales, 32).size(), 2u);

  ParseResult probes = ParseSpec(kHead + "scales: {global_batch: [8, 32], lr: {low: 0.1, high: 0.2}, probes: off, "
                                         "probe_budget: 0.25}\n", "s.yaml");
  ASSERT_TRUE(probes.ok()) << AllErrors(probes);
  EXPECT_FALSE(probes.spec->scales.probes);
  EXPECT_DOUBLE_EQ(probes.spec->scales.probe_budget, 0.25);
  ParseResult whole = ParseSpec(kHead + "scales: {global_batch: [8, 32], lr: {low: 0.1, high: 0.2}, probes: auto, "
                                        "probe_budget: 1}\n", "s.yaml");
  ASSERT_TRUE(whole.ok()) << AllErrors(whole);
  EXPECT_TRUE(whole.spec->scales.probes);
  EXPECT_DOUBLE_EQ(whole.spec->scales.probe_budget, 1.0);
}

TEST(ScalesSpecTest, ErrorsNameTheField) {
  struct Case {
    std::string yaml, field, message;
  };
  const std::vector<Case> cases = {
      {"scales: {global_batch: [64], lr: {low: 0.1, high: 1}}\n", "scales.global_batch", "at least 2 global batches"},
      {"scales: {global_batch: [64, 32], lr: {low: 0.1, high: 1}}\n", "scales.global_batch[1]",
       "ascending and distinct: 32 follows 64"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.5, high: 0.1}}\n", "scales.lr.high", "must be > low (0.5), got 0.1"},
      {"scales: {global_batch: [32, 64], lr: {low: 0, high: 0.1}}\n", "scales.lr.low", "must be > 0, got 0"},
      {"scales: {global_batch: [32, 64]}\n", "scales.lr", "missing required field 'lr'"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}, follow: cubic}\n", "scales.follow",
       "expected 'none', 'sqrt', or 'linear', got 'cubic'"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}}\nspace:\n  x: {type: float, low: 0, high: 1}\n",
       "space", "leave space out"},
      {"sampler: tpe\nscales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}}\n", "sampler", "leave sampler out"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}, probes: always}\n", "scales.probes",
       "expected 'auto' or 'off', got 'always'"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}, probe_budget: 0}\n", "scales.probe_budget",
       "must be in (0, 1] (a fraction of the sweep's node-hours), got 0"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}, probe_budget: 1.5}\n", "scales.probe_budget",
       "must be in (0, 1] (a fraction of the sweep's node-hours), got 1.5"},
      {"scales: {global_batch: [32, 64], lr: {low: 0.1, high: 1}, probe_budget: lots}\n", "scales.probe_budget",
       "lots"},
      {"budget: {max_trials: 3}\nscales: {global_batch: [32, 64], lr: {low: 0.1, high: 0.2}}\n", "budget.max_trials",
       "plans 6 grid trials"},
  };
  for (const auto& c : cases) {
    ParseResult r = ParseSpec(kHead + c.yaml, "bad.yaml");
    ASSERT_EQ(r.errors.size(), 1u) << c.yaml << AllErrors(r);
    EXPECT_EQ(r.errors[0].field, c.field) << r.errors[0].ToString();
    EXPECT_NE(r.errors[0].message.find(c.message), std::string::npos) << r.errors[0].ToString();
  }
}

TEST(ScalesSamplerTest, GridThenExtensionsBracketEachBatchsBestLearningRate) {
  ParseResult r = ParseSpec(kHead + "scales: {global_batch: [32, 128], lr: {low: 0.1, high: 0.4}, per_octave: 1}\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  auto sampler = MakeSampler(*r.spec);
  // The grid: batch 32 at 0.1, 0.2, 0.4; batch 128 (sqrt: 2x) at 0.2, 0.4, 0.8.
  std::vector<Params> asked;
  for (int n = 0; n < 6; ++n) {
    auto p = sampler->Ask(n);
    ASSERT_TRUE(p) << n;
    asked.push_back(*p);
  }
  EXPECT_EQ(Batch(asked[0]), 32);
  EXPECT_NEAR(Lr(asked[2]), 0.4, 1e-12);
  EXPECT_EQ(Batch(asked[3]), 128);
  EXPECT_NEAR(Lr(asked[5]), 0.8, 1e-12);
  EXPECT_EQ(sampler->Ask(0), asked[0]) << "asking again for a trial gives its configuration";
  // Nothing ended yet: no extension, but the sampler waits (it is not done).
  EXPECT_FALSE(sampler->Ask(6));
  EXPECT_TRUE(sampler->Waiting());
  // Loss is a parabola in log2 LR with its minimum at 0.6 for batch 32 and 1.6 for batch 128: both bests sit
  // at the upper edge of their grids.
  auto loss = [](const Params& p) {
    const double best = Batch(p) == 32 ? 0.6 : 1.6;
    return 1.0 + std::pow(std::log2(Lr(p) / best), 2);
  };
  for (int n = 0; n < 3; ++n) sampler->Tell(n, asked[static_cast<size_t>(n)], loss(asked[static_cast<size_t>(n)]));
  auto e1 = sampler->Ask(6);
  ASSERT_TRUE(e1) << "batch 32's trials have all ended and its best (0.4) is at the top edge";
  EXPECT_EQ(Batch(*e1), 32);
  EXPECT_NEAR(Lr(*e1), 0.8, 1e-12);
  // Batch 32 has a pending extension and batch 128 has pending grid trials: wait.
  EXPECT_FALSE(sampler->Ask(7));
  EXPECT_TRUE(sampler->Waiting());
  sampler->Tell(6, *e1, loss(*e1));  // 0.8 beats 0.4: the best again, and at the edge again
  for (int n = 3; n < 6; ++n) sampler->Tell(n, asked[static_cast<size_t>(n)], loss(asked[static_cast<size_t>(n)]));
  auto e2 = sampler->Ask(7);
  ASSERT_TRUE(e2);
  EXPECT_EQ(Batch(*e2), 32) << "batch 32 first: 0.8 is still its best and at the edge";
  EXPECT_NEAR(Lr(*e2), 1.6, 1e-12);
  auto e3 = sampler->Ask(8);
  ASSERT_TRUE(e3);
  EXPECT_EQ(Batch(*e3), 128);
  EXPECT_NEAR(Lr(*e3), 1.6, 1e-12);
  sampler->Tell(7, *e2, loss(*e2));  // 1.6 is worse than 0.8 at batch 32: bracketed
  sampler->Tell(8, *e3, loss(*e3));  // 1.6 is batch 128's optimum and at the edge: one more (extend 2)
  auto e4 = sampler->Ask(9);
  ASSERT_TRUE(e4);
  EXPECT_EQ(Batch(*e4), 128);
  EXPECT_NEAR(Lr(*e4), 3.2, 1e-12);
  sampler->Tell(9, *e4, loss(*e4));
  EXPECT_FALSE(sampler->Ask(10)) << "both batches bracketed";
  EXPECT_FALSE(sampler->Waiting()) << "and nothing pending: done";
}

TEST(ScalesSamplerTest, AFailedRateBracketsAndRestartedSamplersContinueTheSame) {
  ParseResult r = ParseSpec(kHead + "scales: {global_batch: [32, 64], lr: {low: 0.1, high: 0.2}, per_octave: 1}\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  auto a = MakeSampler(*r.spec);
  std::vector<Params> grid;
  for (int n = 0; n < 4; ++n) grid.push_back(*a->Ask(n));
  // Batch 32: 0.2 best (edge); batch 64: its higher rate failed (diverged), the lower one is best and at the
  // lower edge.
  a->Tell(0, grid[0], 2.0);
  a->Tell(1, grid[1], 1.0);
  a->Tell(2, grid[2], 1.5);
  a->Tell(3, grid[3], std::nullopt);
  auto x = a->Ask(4);
  ASSERT_TRUE(x);
  EXPECT_EQ(Batch(*x), 32);
  EXPECT_NEAR(Lr(*x), 0.4, 1e-12);
  auto y = a->Ask(5);
  ASSERT_TRUE(y);
  EXPECT_EQ(Batch(*y), 64);
  EXPECT_NEAR(Lr(*y), Lr(grid[2]) / 2, 1e-12);
  // A restarted coordinator replays Tell and AddPending: the next suggestion is the same.
  a->Tell(4, *x, 3.0);  // worse: batch 32 bracketed
  auto next = a->Ask(6);
  auto b = MakeSampler(*r.spec);
  for (int n = 0; n < 4; ++n) b->Tell(n, grid[static_cast<size_t>(n)], n == 3 ? std::nullopt : std::optional<double>(std::vector<double>{2.0, 1.0, 1.5}[static_cast<size_t>(n)]));
  b->Tell(4, *x, 3.0);
  b->AddPending(5, *y);
  EXPECT_EQ(b->Ask(6), next);
  EXPECT_FALSE(next) << "batch 64 waits for its extension";
  EXPECT_TRUE(b->Waiting());
}

}  // namespace
}  // namespace ladder::search
