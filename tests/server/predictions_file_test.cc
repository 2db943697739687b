// The coordinator's reader of a trial's validation predictions file (server/predictions_file.h).
#include "server/predictions_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace ladder::server {
namespace {

using search::PredictionsReadResult;

TEST(PredictionsCsvTest, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "ensemble_test_predictions.csv";
  {
    std::ofstream out(path);
    out << "label,p0,p1\n1,0.3,0.7\n0,0.6,0.4\n";
  }
  PredictionsReadResult r = ReadPredictionsFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.value->labels, (std::vector<double>{1, 0}));
  EXPECT_EQ(ReadPredictionsFile(path).error, path + ": cannot open the predictions file");
}

}  // namespace
}  // namespace ladder::server
