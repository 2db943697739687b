// ladder promote's probes read back from a search's trials: which are the sweep, which the probes, the last probe
// as the climb's step needs it, and what each probe batch measured.
#include "cli/promote_probes.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ladder::cli {
namespace {

// `created`, `finished`: when the coordinator created it and when it ended (one AddProbe creates its trials
// together, before any of them ends).
v1::Trial Trial(int number, int64_t batch, double lr, bool probe, int micro = 0, double created = 0,
                double finished = 0) {
  v1::Trial t;
  t.set_created_unix(created);
  t.set_finished_unix(finished);
  t.set_number(number);
  t.set_state(v1::TRIAL_COMPLETED);
  t.set_probe(probe);
  t.set_micro_batches(micro);
  (*t.mutable_params())["global_batch"].set_int_value(batch);
  (*t.mutable_params())["lr"].set_float_value(lr);
  return t;
}

search::ScaleTrial Scale(int number, int64_t batch, double lr, double loss) {
  search::ScaleTrial s;
  s.id = "trial " + std::to_string(number);
  s.global_batch = batch, s.peak_lr = lr, s.final_loss = loss, s.steps = 100;
  return s;
}

TEST(SplitProbes, SeparatesTheSweepFromItsProbesAndSaysWhatEachProbeMeasured) {
  std::vector<v1::Trial> trials = {Trial(0, 32, 0.1, false), Trial(1, 64, 0.2, false),
                                   Trial(2, 256, 0.2, true, 4, 100, 110), Trial(3, 256, 0.4, true, 4, 100, 111),
                                   Trial(4, 256, 0.8, true, 4, 100, 112), Trial(5, 256, 1.6, true, 4, 120, 130)};
  // Trial 5 (an extension) has no scale record: it failed other than by diverging.
  std::vector<search::ScaleTrial> scale = {Scale(0, 32, 0.1, 1.0), Scale(1, 64, 0.2, 0.9), Scale(2, 256, 0.2, 0.8),
                                           Scale(3, 256, 0.4, 0.7), Scale(4, 256, 0.8, 0.75)};
  const ProbeTrials split = SplitProbes(trials, scale);
  ASSERT_EQ(split.sweep.size(), 2u);
  ASSERT_EQ(split.probes.size(), 3u);
  EXPECT_EQ(split.probes.front().id, "trial 2");
  ASSERT_EQ(split.runs.size(), 1u);
  const ProbeRun& run = split.runs[0];
  EXPECT_EQ(run.batch, 256);
  EXPECT_EQ(run.micro_batches, 4);
  EXPECT_EQ(run.lrs, (std::vector<double>{0.2, 0.4, 0.8, 1.6}));
  EXPECT_EQ(run.trials, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(run.best_lr, 0.4);
  ASSERT_TRUE(split.last.has_value());
  EXPECT_EQ(split.last->global_batch, 256);
  EXPECT_EQ(split.last->micro_batches, 4);
  EXPECT_EQ(split.last->lrs, (std::vector<double>{0.2, 0.4, 0.8})) << "the probe as proposed; the rest extend it";
  // A second proposal at the same batch after that extension: the last probe is it, with every LR run there.
  for (int i = 0; i < 3; ++i) trials.push_back(Trial(6 + i, 256, 0.5 + 0.1 * i, true, 4, 140, 150 + i));
  const ProbeTrials again = SplitProbes(trials, scale);
  ASSERT_TRUE(again.last.has_value());
  EXPECT_EQ(again.last->lrs.size(), 7u);
  ASSERT_EQ(again.runs.size(), 1u) << "one batch, one entry";
  // A proposal at another batch, then its extension: the last probe is at that batch.
  for (int i = 0; i < 3; ++i) trials.push_back(Trial(9 + i, 512, 0.5 + 0.2 * i, true, 8, 160, 170 + i));
  trials.push_back(Trial(12, 512, 1.4, true, 8, 180, 190));
  const ProbeTrials third = SplitProbes(trials, scale);
  ASSERT_TRUE(third.last.has_value());
  EXPECT_EQ(third.last->global_batch, 512);
  EXPECT_EQ(third.last->micro_batches, 8);
  EXPECT_EQ(third.last->lrs.size(), 3u);
  EXPECT_EQ(third.runs.size(), 2u);
}

TEST(SplitProbes, ASearchWithoutProbesIsAllSweep) {
  const ProbeTrials split = SplitProbes({Trial(0, 32, 0.1, false)}, {Scale(0, 32, 0.1, 1.0)});
  EXPECT_EQ(split.sweep.size(), 1u);
  EXPECT_TRUE(split.probes.empty());
  EXPECT_TRUE(split.runs.empty());
  EXPECT_FALSE(split.last.has_value());
}

}  // namespace
}  // namespace ladder::cli
