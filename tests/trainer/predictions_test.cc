// ladder-train --save-predictions: the file the coordinator's ensemble selection reads (search/ensemble/ensemble.h).
#include <gtest/gtest.h>

#include <sstream>

#include "common/metrics_line.h"
#include "server/predictions_file.h"
#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"

namespace ladder {
namespace {

TEST(SavePredictions, WritesOneRowPerValidationExampleWhoseArgmaxGivesTheReportedAccuracy) {
  testing::TempDir dir("predictions");
  auto r = testing::RunCommand({testing::TrainerBinary(), "--epochs", "2", "--save-predictions",
                                (dir / "val.csv").string()},
                               dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The last evaluation line: its val_accuracy, and whole epochs on evaluation lines.
  double reported = -1, epoch = -1;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto m = ParseMetricsLine(line);
    if (m.metrics && m.metrics->values.count("val_accuracy")) {
      reported = m.metrics->values.at("val_accuracy");
      epoch = m.metrics->values.at("epoch");
    }
  }
  EXPECT_DOUBLE_EQ(epoch, 2.0) << "evaluation lines count whole epochs";
  auto read = server::ReadPredictionsFile((dir / "val.csv").string());
  ASSERT_EQ(read.error, "");
  const auto& p = read.value->predictions;
  EXPECT_EQ(p.rows, 359u) << "digits: 359 validation rows";
  ASSERT_EQ(p.cols, 10u);
  for (size_t i = 0; i < p.rows; ++i) {
    double sum = 0;
    for (size_t c = 0; c < p.cols; ++c) sum += p.at(i, c);
    ASSERT_NEAR(sum, 1.0, 1e-6) << "row " << i << " holds probabilities";
  }
  double acc = search::EnsembleScore(p, read.value->labels, search::EnsembleMetric::kAccuracy);
  EXPECT_NEAR(acc, reported, 1e-6) << "the file is the model that reported val_accuracy";
  EXPECT_FALSE(std::filesystem::exists(dir / "val.csv.tmp")) << "no temp file left";
}

TEST(SavePredictions, RefusesATaskWithoutPerExampleClasses) {
  testing::TempDir dir("predictions-lm");
  auto r = testing::RunCommand({testing::TrainerBinary(), "--data", "markov:256:16:8", "--epochs", "1",
                                "--save-predictions", (dir / "p.csv").string()},
                               dir.path);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--save-predictions"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ladder
