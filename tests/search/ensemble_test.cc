// Ensemble selection on hand-built prediction matrices whose best ensemble is known, and the predictions
// file reader's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "search/ensemble/ensemble.h"

namespace ladder::search {
namespace {

EnsembleCandidate Candidate(int64_t n, size_t cols, std::vector<double> values) {
  EnsembleCandidate c;
  c.trial_number = n;
  c.predictions.cols = cols;
  c.predictions.rows = values.size() / cols;
  c.predictions.values = std::move(values);
  return c;
}

// Two classes, four examples (labels 0, 1, 0, 1). A is right and sure on the first two, unsure and wrong on
// the last two; B the other way round. Their average gives the right class p = 0.65 everywhere.
const std::vector<double> kLabels = {0, 1, 0, 1};
EnsembleCandidate A() { return Candidate(10, 2, {0.9, 0.1, 0.1, 0.9, 0.4, 0.6, 0.6, 0.4}); }
EnsembleCandidate B() { return Candidate(11, 2, {0.4, 0.6, 0.6, 0.4, 0.9, 0.1, 0.1, 0.9}); }

TEST(EnsembleTest, TwoComplementaryModelsBeatBoth) {
  EnsembleResult r = SelectEnsemble({A(), B()}, kLabels, EnsembleMetric::kLogLoss, 5);
  ASSERT_TRUE(r.ok()) << r.error;
  const double single = -(std::log(0.9) + std::log(0.4)) / 2;
  EXPECT_NEAR(r.best_single_metric, single, 1e-12);
  EXPECT_EQ(r.best_single_trial, 10);  // a tie: the earlier candidate
  EXPECT_NEAR(r.ensemble_metric, -std::log(0.65), 1e-12);
  EXPECT_LT(r.ensemble_metric, r.best_single_metric);
  EXPECT_EQ(r.picks, (std::vector<int64_t>{10, 11}));  // round 3 (2:1 either way) is worse, so 2 rounds
  ASSERT_EQ(r.members.size(), 2u);
  EXPECT_EQ(r.members[0].trial_number, 10);
  EXPECT_EQ(r.members[0].count, 1);
  EXPECT_DOUBLE_EQ(r.members[0].weight, 0.5);
  EXPECT_DOUBLE_EQ(r.members[1].weight, 0.5);
  ASSERT_EQ(r.metric_by_round.size(), 5u);
  EXPECT_NEAR(r.metric_by_round[0], single, 1e-12);
  EXPECT_GT(r.metric_by_round[2], r.metric_by_round[1]);

  EnsembleResult acc = SelectEnsemble({A(), B()}, kLabels, EnsembleMetric::kAccuracy, 3);
  ASSERT_TRUE(acc.ok()) << acc.error;
  EXPECT_DOUBLE_EQ(acc.best_single_metric, 0.5);
  EXPECT_DOUBLE_EQ(acc.ensemble_metric, 1.0);
}

TEST(EnsembleTest, AUselessCandidateIsNotPicked) {
  EnsembleCandidate flat = Candidate(3, 2, {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  EnsembleResult r = SelectEnsemble({flat, A(), B()}, kLabels, EnsembleMetric::kLogLoss, 6);
  ASSERT_TRUE(r.ok()) << r.error;
  for (const EnsembleMember& m : r.members) EXPECT_NE(m.trial_number, 3);
  EXPECT_NEAR(r.ensemble_metric, -std::log(0.65), 1e-12);
}

TEST(EnsembleTest, SelectionWithReplacementFindsTheWeights) {
  // Regression, labels 0: A predicts 1, B predicts -2. (2A + B) / 3 = 0 exactly: A twice, B once.
  const std::vector<double> labels = {0, 0, 0};
  EnsembleResult r = SelectEnsemble({Candidate(1, 1, {1, 1, 1}), Candidate(2, 1, {-2, -2, -2})}, labels,
                                    EnsembleMetric::kMse, 4);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.best_single_trial, 1);
  EXPECT_DOUBLE_EQ(r.best_single_metric, 1.0);
  EXPECT_EQ(r.picks, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_NEAR(r.ensemble_metric, 0.0, 1e-12);
  ASSERT_EQ(r.members.size(), 2u);
  EXPECT_EQ(r.members[0].trial_number, 1);
  EXPECT_EQ(r.members[0].count, 2);
  EXPECT_NEAR(r.members[0].weight, 2.0 / 3, 1e-12);
  EXPECT_NEAR(r.members[1].weight, 1.0 / 3, 1e-12);
}

TEST(EnsembleTest, RegressionErrorsCancel) {
  const std::vector<double> labels = {1, 2, 3};
  EnsembleResult r = SelectEnsemble({Candidate(5, 1, {2, 3, 4}), Candidate(6, 1, {0, 1, 2})}, labels,
                                    EnsembleMetric::kMse, 2);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.best_single_metric, 1.0);
  EXPECT_DOUBLE_EQ(r.ensemble_metric, 0.0);
}

TEST(EnsembleTest, InconsistentInputsAreErrorsNamingTheTrial) {
  EnsembleResult rows = SelectEnsemble({A(), Candidate(7, 2, {0.5, 0.5})}, kLabels, EnsembleMetric::kLogLoss, 2);
  EXPECT_EQ(rows.error, "trial 7: has predictions for 1 validation examples, expected 4");
  EnsembleResult cols = SelectEnsemble({A(), Candidate(8, 1, {1, 1, 1, 1})}, kLabels, EnsembleMetric::kLogLoss, 2);
  EXPECT_EQ(cols.error, "trial 8: has 1 prediction columns, the first candidate 2");
  EnsembleResult label = SelectEnsemble({A()}, {0, 1, 2, 1}, EnsembleMetric::kAccuracy, 2);
  EXPECT_EQ(label.error, "validation example 3: label 2 is not a class index 0..1");
  EnsembleResult mse = SelectEnsemble({A()}, kLabels, EnsembleMetric::kMse, 2);
  EXPECT_EQ(mse.error, "mse needs one prediction column (regression), got 2");
  EXPECT_FALSE(SelectEnsemble({}, kLabels, EnsembleMetric::kLogLoss, 2).ok());
  EXPECT_FALSE(SelectEnsemble({A()}, kLabels, EnsembleMetric::kLogLoss, 0).ok());
}

TEST(EnsembleTest, FromFilesChecksTheLabels) {
  auto file = [](int64_t n, const std::string& text) {
    PredictionsReadResult r = ParsePredictionsCsv(text, "t" + std::to_string(n) + ".csv");
    EXPECT_TRUE(r.error.empty()) << r.error;
    return TrialPredictions{n, *r.value};
  };
  // A and B of TwoComplementaryModelsBeatBoth, as files.
  TrialPredictions a = file(4, "label,p0,p1\n0,0.9,0.1\n1,0.1,0.9\n0,0.4,0.6\n1,0.6,0.4\n");
  TrialPredictions b = file(9, "0,0.4,0.6\n1,0.6,0.4\n0,0.9,0.1\n1,0.1,0.9\n");
  EnsembleResult r = SelectEnsemble({a, b}, EnsembleMetric::kLogLoss, 4);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.picks, (std::vector<int64_t>{4, 9}));
  EXPECT_NEAR(r.ensemble_metric, -std::log(0.65), 1e-12);
  TrialPredictions shuffled = file(12, "0,0.4,0.6\n0,0.6,0.4\n1,0.9,0.1\n1,0.1,0.9\n");
  EXPECT_EQ(SelectEnsemble({a, shuffled}, EnsembleMetric::kLogLoss, 4).error,
            "trial 12: its validation labels differ from trial 4's (example 2 has label 0 against 1): the trials "
            "must predict the same validation examples in the same order");
  TrialPredictions shorter = file(13, "0,0.4,0.6\n");
  EXPECT_NE(SelectEnsemble({a, shorter}, EnsembleMetric::kLogLoss, 4).error.find("1 examples against 4"),
            std::string::npos);
}

TEST(PredictionsCsvTest, ParsesLabelsAndColumnsWithAHeader) {
  PredictionsReadResult r = ParsePredictionsCsv("label,p0,p1,p2\r\n2,0.1,0.2,0.7\r\n\n0, 0.8 ,1.5e-1,5e-2\n", "p.csv");
  ASSERT_TRUE(r.error.empty()) << r.error;
  const ValidationPredictions& v = *r.value;
  EXPECT_EQ(v.labels, (std::vector<double>{2, 0}));
  EXPECT_EQ(v.predictions.rows, 2u);
  EXPECT_EQ(v.predictions.cols, 3u);
  EXPECT_EQ(v.predictions.values, (std::vector<double>{0.1, 0.2, 0.7, 0.8, 0.15, 0.05}));
  PredictionsReadResult reg = ParsePredictionsCsv("1.5,1.4\n-2,-2.25", "r.csv");  // regression, no header
  ASSERT_TRUE(reg.error.empty()) << reg.error;
  EXPECT_EQ(reg.value->predictions.cols, 1u);
  EXPECT_EQ(reg.value->labels, (std::vector<double>{1.5, -2}));
}

TEST(PredictionsCsvTest, ErrorsNameTheFileAndLine) {
  EXPECT_EQ(ParsePredictionsCsv("0,0.5,0.5\n1,0.5\n", "p.csv").error,
            "p.csv:2: expected 3 fields like the lines before, got 2");
  EXPECT_EQ(ParsePredictionsCsv("0,0.5,0.5\n1,0.5,x\n", "p.csv").error,
            "p.csv:2: field 3 ('x') is not a finite number");
  EXPECT_EQ(ParsePredictionsCsv("label,p\n0,0.5\ncat,0.5\n", "p.csv").error,
            "p.csv:3: the label 'cat' is not a number");
  EXPECT_EQ(ParsePredictionsCsv("0,nan\n", "p.csv").error, "p.csv:1: field 2 ('nan') is not a finite number");
  EXPECT_EQ(ParsePredictionsCsv("3\n", "p.csv").error,
            "p.csv:1: expected the label and at least one prediction, got 1 field");
  EXPECT_EQ(ParsePredictionsCsv("label,p0\n\n", "p.csv").error,
            "p.csv: no predictions (expected one line per validation example: label,p0,p1,...)");
}

}  // namespace
}  // namespace ladder::search
