// The teacher: data source (trainer/teacher_data.cc): deterministic, its dials do what they say.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "trainer/data_sources.h"

namespace ladder::trainer {
namespace {

TEST(TeacherData, DeterministicWithTheShapesAsked) {
  Dataset a, b;
  std::string err;
  ASSERT_TRUE(LoadData("teacher:3000:16:5:0.2:4", &a, &err)) << err;
  ASSERT_TRUE(LoadData("teacher:3000:16:5:0.2:4", &b, &err)) << err;
  EXPECT_EQ(a.rows, 3000);
  EXPECT_EQ(a.features, 16);
  EXPECT_EQ(a.classes, 5);
  EXPECT_EQ(a.x.size(), 3000u * 16u);
  EXPECT_EQ(a.y.size(), 3000u);
  EXPECT_EQ(a.task, Task::kClassify);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_TRUE(DataFiles("teacher:3000").empty());
  // The defaults: 32 features, 10 classes, no noise, full rank; every class is used.
  Dataset d;
  ASSERT_TRUE(LoadData("teacher:5000", &d, &err)) << err;
  EXPECT_EQ(d.features, 32);
  EXPECT_EQ(d.classes, 10);
  std::vector<int> counts(10, 0);
  for (auto y : d.y) ++counts[static_cast<size_t>(y)];
  for (int c : counts) EXPECT_GT(c, 100) << "an unbalanced teacher";
}

TEST(TeacherData, MeasuredLabelNoiseMatchesTheDial) {
  for (double noise : {0.0, 0.1, 0.5}) {
    std::vector<int64_t> clean;
    Dataset d = MakeTeacher({.rows = 20000, .features = 16, .classes = 4, .label_noise = noise}, 7, &clean);
    int64_t flipped = 0;
    for (size_t i = 0; i < clean.size(); ++i) flipped += d.y[i] != clean[i];
    const double measured = static_cast<double>(flipped) / 20000;
    EXPECT_NEAR(measured, noise, 0.015) << "label noise " << noise;  // sd about 0.0035 at 0.5
  }
  // The dial changes only the labels: the same inputs at every noise level.
  Dataset quiet = MakeTeacher({.rows = 500, .label_noise = 0.0}, 7);
  Dataset loud = MakeTeacher({.rows = 500, .label_noise = 0.6}, 7);
  EXPECT_EQ(quiet.x, loud.x);
  EXPECT_NE(quiet.y, loud.y);
}

// The inputs' singular values: RANK large ones, then a drop to the isotropic noise floor.
TEST(TeacherData, SingularValuesFallOffPastTheRank) {
  for (int64_t rank : {3, 8}) {
    Dataset d = MakeTeacher({.rows = 4000, .features = 24, .classes = 3, .rank = rank}, 11);
    auto x = torch::from_blob(d.x.data(), {d.rows, d.features}, torch::kFloat).to(torch::kDouble);
    auto s = torch::linalg_svdvals(x - x.mean(0));
    // Inside the subspace: equal variances (within sampling noise); past it: below 1/50 of the smallest inside.
    EXPECT_GT(s[rank - 1].item<double>(), s[0].item<double>() / 1.5) << "rank " << rank;
    EXPECT_LT(s[rank].item<double>(), s[rank - 1].item<double>() / 50) << "rank " << rank;
  }
  // Full rank (the default): isotropic, no drop.
  Dataset full = MakeTeacher({.rows = 4000, .features = 24, .classes = 3}, 11);
  auto x = torch::from_blob(full.x.data(), {full.rows, full.features}, torch::kFloat).to(torch::kDouble);
  auto s = torch::linalg_svdvals(x - x.mean(0));
  EXPECT_GT(s[23].item<double>(), s[0].item<double>() / 1.5);
}

TEST(TeacherData, ErrorsNameTheFieldAndValue) {
  Dataset d;
  std::string err;
  EXPECT_FALSE(LoadData("teacher:100:8:4:1.5", &d, &err));
  EXPECT_NE(err.find("LABEL_NOISE must be a fraction in [0, 1), got '1.5'"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("teacher:100:8:4:0.1:9", &d, &err));
  EXPECT_NE(err.find("RANK must be at most FEATURES (8), got '9'"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("teacher:100:8:1", &d, &err));
  EXPECT_NE(err.find("CLASSES must be an integer of at least 2, got '1'"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("teacher:abc", &d, &err));
  EXPECT_NE(err.find("ROWS must be an integer of at least 2, got 'abc'"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("teacher:100:8:4:0.1:2:7", &d, &err));
  EXPECT_NE(err.find("too many fields"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line";
}

}  // namespace
}  // namespace ladder::trainer
