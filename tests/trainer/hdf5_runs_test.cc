// ladder-train on HDF5 files written by ladder-make-hdf5: the same rows from a CSV file (or generated) and from
// their HDF5 copy train to the same validation loss, and at two ranks each rank reads only its share of the file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>

#include "tests/support/process.h"
#include "tests/support/trainer_runs.h"

namespace ladder {
namespace {

std::string Bin(const std::string& name) {
  return std::filesystem::path(testing::TrainerBinary()).parent_path() / name;
}

// The last value of `key` in metrics lines; NaN when there is none.
double Last(const std::string& text, const std::string& key) {
  const auto p = text.rfind("\"" + key + "\": ");
  return p == std::string::npos ? NAN : std::stod(text.substr(p + key.size() + 4));
}

void MakeHdf5(const std::filesystem::path& dir, const std::string& data, const std::string& out) {
  auto r = testing::RunCommand({Bin("ladder-make-hdf5"), "--data", data, "--out", out, "--chunk-rows", "16"}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

testing::CommandResult TrainOn(const std::filesystem::path& dir, const std::string& data,
                               std::vector<std::string> extra) {
  std::vector<std::string> args = {testing::TrainerBinary(), "--data", data, "--seed", "4", "--comm", "none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::RunCommand(args, dir);
}

TEST(Hdf5Runs, ACsvAndItsHdf5CopyReachTheSameValidationLoss) {
  testing::TempDir dir("h5csv");
  // 300 rows of 12 features, 3 classes, written with every float32 digit.
  std::mt19937_64 rng(3);
  std::normal_distribution<float> g(0, 1);
  {
    std::ofstream csv(dir / "d.csv");
    for (int i = 0; i < 300; ++i) {
      const int label = i % 3;
      for (int j = 0; j < 12; ++j) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g,", g(rng) + (j % 3 == label ? 1.0f : 0.0f));
        csv << buf;
      }
      csv << label << "\n";
    }
  }
  MakeHdf5(dir, (dir / "d.csv").string(), (dir / "d.h5").string());
  const std::vector<std::string> opts = {"--epochs", "3", "--batch-size", "16", "--width", "32"};
  auto csv = TrainOn(dir, (dir / "d.csv").string(), opts);
  auto h5 = TrainOn(dir, "hdf5:" + (dir / "d.h5").string(), opts);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  ASSERT_EQ(h5.exit_code, 0) << h5.err;
  EXPECT_NE(h5.err.find("rank 0 read 16800 bytes"), std::string::npos) << h5.err;  // 300 × (12·4 + 8)
  const double a = Last(csv.out, "val_loss"), b = Last(h5.out, "val_loss");
  ASSERT_TRUE(std::isfinite(a)) << csv.out;
  EXPECT_NEAR(a, b, 1e-4) << csv.out << h5.out;
}

TEST(Hdf5Runs, GeneratedVolumesAndTheirHdf5CopyTrainTheSame3dRegression) {
  testing::TempDir dir("h5cosmo");
  MakeHdf5(dir, "cosmo:48:4", (dir / "c.h5").string());
  const std::vector<std::string> opts = {"--epochs", "1", "--batch-size", "8", "--width", "4", "--depth", "1",
                                         "--optimizer", "adam", "--lr", "0.01"};
  auto gen = TrainOn(dir, "cosmo:48:4", opts);
  auto h5 = TrainOn(dir, "hdf5:" + (dir / "c.h5").string(), opts);
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  ASSERT_EQ(h5.exit_code, 0) << h5.err;
  EXPECT_TRUE(std::isfinite(Last(h5.out, "val_r2"))) << h5.out;
  EXPECT_TRUE(std::isfinite(Last(h5.out, "val_mae"))) << h5.out;
  EXPECT_NEAR(Last(gen.out, "val_loss"), Last(h5.out, "val_loss"), 1e-4) << gen.out << h5.out;
}

TEST(Hdf5Runs, AtTwoRanksEachRankReadsItsShareOfTheFile) {
  testing::TempDir dir("h5two");
  MakeHdf5(dir, "synthetic:1001:6:4", (dir / "s.h5").string());
  const std::string port = std::to_string(testing::FreePort());
  std::string script;
  for (int r = 0; r < 2; ++r) {
    script += "RANK=" + std::to_string(r) + " LOCAL_RANK=" + std::to_string(r) +
              " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " '" + testing::TrainerBinary() +
              "' --comm gloo --data hdf5:s.h5 --epochs 2 --batch-size 16 --seed 1 > rank" + std::to_string(r) +
              ".log 2>&1 & ";
  }
  script += "fail=0; for p in $(jobs -p); do wait $p || fail=1; done; exit $fail";
  auto run = testing::RunCommand({"/bin/bash", "-c", script}, dir);
  std::string log[2];
  for (int r = 0; r < 2; ++r) {
    std::ifstream in(dir / ("rank" + std::to_string(r) + ".log"));
    log[r].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ASSERT_EQ(run.exit_code, 0) << log[0] << log[1];
  // 1001 rows: 200 validation rows, 801 training rows in two blocks of 400 (one left out); 6·4 + 8 bytes a row.
  EXPECT_NE(log[0].find("rank 0 read 19200 bytes of s.h5 (400 training, 200 validation rows)"), std::string::npos)
      << log[0];
  EXPECT_NE(log[1].find("rank 1 read 12800 bytes of s.h5 (400 training, 0 validation rows)"), std::string::npos)
      << log[1];
  EXPECT_TRUE(std::isfinite(Last(log[0], "val_loss"))) << log[0];
  EXPECT_LT(Last(log[0], "val_loss"), std::log(4.0)) << log[0];  // it learned: below chance
}

}  // namespace
}  // namespace ladder
