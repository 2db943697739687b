#include "trainer/csv_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

namespace ladder::trainer {
namespace {

class CsvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ladder-csv-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text, bool gzip = false) {
    auto path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
      gzclose(f);
    } else {
      std::ofstream(path) << text;
    }
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(CsvTest, LoadsPlainAndGzipWithOrWithoutHeader) {
  const std::string body = "1,2,0\n3,4,1\n5,6,2\n";
  for (bool gz : {false, true}) {
    for (bool header : {false, true}) {
      Dataset d;
      std::string err;
      auto path = Write(std::string("d") + (gz ? ".csv.gz" : ".csv"), (header ? "a,b,label\n" : "") + body, gz);
      ASSERT_TRUE(LoadCsv(path, &d, &err)) << err;
      EXPECT_EQ(d.rows, 3);
      EXPECT_EQ(d.features, 2);
      EXPECT_EQ(d.classes, 3);
      EXPECT_FLOAT_EQ(d.x[3], 4.0f);
      EXPECT_EQ(d.y[2], 2);
    }
  }
}

TEST_F(CsvTest, ErrorsNameFileAndLine) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"1,2,0\n3,4,5,1\n", ":2: expected 3 columns, found 4"},
      {"1,2,0\n3,x,1\n", ":2: column 2: 'x' is not a number"},
      {"1,2,0\n3,4,-1\n", ":2: the label (last column) must be an integer >= 0"},
      {"1,2,0\n3,4,1.5\n", ":2: the label"},
      {"", ": no data rows"},
      {"1,2,0\n3,4,0\n", "need at least 2 classes"},
  };
  for (const auto& c : cases) {
    Dataset d;
    std::string err;
    auto path = Write("bad.csv", c.text);
    EXPECT_FALSE(LoadCsv(path, &d, &err)) << c.text;
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
  }
  Dataset d;
  std::string err;
  EXPECT_FALSE(LoadCsv((dir_ / "missing.csv").string(), &d, &err));
  EXPECT_NE(err.find("cannot open"), std::string::npos) << err;
}

TEST_F(CsvTest, SplitIsDeterministicAndStandardizationUsesTrainStatistics) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += std::to_string(i) + "," + std::to_string(i % 2) + "\n";
  Dataset all, tr1, va1, tr2, va2;
  std::string err;
  ASSERT_TRUE(LoadCsv(Write("s.csv", text), &all, &err)) << err;
  SplitDataset(all, 0.2, 42, &tr1, &va1);
  SplitDataset(all, 0.2, 42, &tr2, &va2);
  EXPECT_EQ(va1.rows, 20);
  EXPECT_EQ(tr1.rows, 80);
  EXPECT_EQ(va1.x, va2.x);
  Dataset tr3, va3;
  SplitDataset(all, 0.2, 43, &tr3, &va3);
  EXPECT_NE(va1.x, va3.x) << "a different split seed gives a different split";
  Standardize(&tr1, &va1);
  double mean = 0;
  for (float x : tr1.x) mean += x;
  EXPECT_NEAR(mean / tr1.rows, 0.0, 1e-5);
  double var = 0;
  for (float x : tr1.x) var += x * x;
  EXPECT_NEAR(var / tr1.rows, 1.0, 1e-4);
}

TEST(Standardize, ValidationUsesTrainingStatistics) {
  Dataset train, val;
  train.rows = 2;
  val.rows = 2;
  train.features = val.features = 2;
  train.x = {0, 5, 2, 5};   // feature 0: mean 1, std 1; feature 1: constant
  val.x = {3, 7, -1, 5};    // standardized with the training statistics, not its own
  Standardize(&train, &val);
  EXPECT_EQ(train.x, (std::vector<float>{-1, 0, 1, 0}));
  EXPECT_EQ(val.x, (std::vector<float>{2, 0, -2, 0}));
}

TEST(CsvShipped, DigitsDataLoads) {
  const char* src = std::getenv("LADDER_SOURCE_DIR");
  std::string path = std::string(src ? src : LADDER_TEST_SOURCE_DIR) + "/data/digits.csv.gz";
  Dataset d;
  std::string err;
  ASSERT_TRUE(LoadCsv(path, &d, &err)) << err;
  EXPECT_EQ(d.rows, 1797);
  EXPECT_EQ(d.features, 64);
  EXPECT_EQ(d.classes, 10);
}

}  // namespace
}  // namespace ladder::trainer
