#include "trainer/data_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace ladder::trainer {
namespace {

class DataSources : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ladder-data-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::vector<unsigned char>& bytes) {
    auto path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return path;
  }
  static void Be32(std::vector<unsigned char>* v, uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v->push_back(static_cast<unsigned char>(x >> s));
  }
  std::filesystem::path dir_;
};

TEST_F(DataSources, MnistIdx) {
  std::vector<unsigned char> im, lb;
  Be32(&im, 0x803);
  Be32(&im, 3);  // 3 images of 2x2
  Be32(&im, 2);
  Be32(&im, 2);
  for (int i = 0; i < 12; ++i) im.push_back(static_cast<unsigned char>(i * 10));
  Be32(&lb, 0x801);
  Be32(&lb, 3);
  for (unsigned char l : {7, 0, 9}) lb.push_back(l);
  auto ip = Write("img", im), lp = Write("lbl", lb);
  Dataset d;
  std::string err;
  ASSERT_TRUE(LoadData("idx:" + ip + "," + lp, &d, &err)) << err;
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.features, 4);
  EXPECT_EQ(d.classes, 10);
  EXPECT_FLOAT_EQ(d.x[5], 50.0f);
  EXPECT_EQ(d.y, (std::vector<int64_t>{7, 0, 9}));
  im.pop_back();
  auto bad = Write("img-short", im);
  EXPECT_FALSE(LoadData("idx:" + bad + "," + lp, &d, &err));
  EXPECT_NE(err.find("need 28 bytes, the file has 27"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("idx:" + lp + "," + lp, &d, &err));
  EXPECT_NE(err.find("not an IDX image file"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("idx:" + ip, &d, &err));
  EXPECT_NE(err.find("two files"), std::string::npos) << err;
}

TEST_F(DataSources, Cifar10Binary) {
  std::vector<unsigned char> a, b;
  for (unsigned char label : {3, 8}) {
    a.push_back(label);
    for (int j = 0; j < 3072; ++j) a.push_back(static_cast<unsigned char>(j % 251));
  }
  b.push_back(1);
  for (int j = 0; j < 3072; ++j) b.push_back(200);
  auto pa = Write("data_batch_1.bin", a), pb = Write("data_batch_2.bin", b);
  Dataset d;
  std::string err;
  ASSERT_TRUE(LoadData("cifar10:" + pa + "," + pb, &d, &err)) << err;
  EXPECT_EQ(d.rows, 3);
  EXPECT_EQ(d.features, 3072);
  EXPECT_EQ(d.y, (std::vector<int64_t>{3, 8, 1}));
  EXPECT_FLOAT_EQ(d.x[3072 + 260], 9.0f);
  EXPECT_FLOAT_EQ(d.x[2 * 3072], 200.0f);
  b.pop_back();
  auto bad = Write("short.bin", b);
  EXPECT_FALSE(LoadData("cifar10:" + bad, &d, &err));
  EXPECT_NE(err.find("not a whole number of CIFAR-10 records"), std::string::npos) << err;
}

TEST_F(DataSources, SyntheticIsDeterministicAndLearnable) {
  Dataset a, b;
  std::string err;
  ASSERT_TRUE(LoadData("synthetic:5000:8:4", &a, &err)) << err;
  ASSERT_TRUE(LoadData("synthetic:5000:8:4", &b, &err)) << err;
  EXPECT_EQ(a.rows, 5000);
  EXPECT_EQ(a.features, 8);
  EXPECT_EQ(a.classes, 4);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  std::vector<int> counts(4, 0);
  for (auto y : a.y) ++counts[static_cast<size_t>(y)];
  for (int c : counts) EXPECT_GT(c, 1000);
  EXPECT_FALSE(LoadData("synthetic:abc", &a, &err));
  EXPECT_NE(err.find("bad number 'abc'"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("synthetic:10:4:1", &a, &err));
}

TEST_F(DataSources, TextFileBecomesNextByteSequences) {
  const std::string text = "abcdefghijklmnopqrstuvwxyz";
  auto path = Write("t.txt", std::vector<unsigned char>(text.begin(), text.end()));
  Dataset d;
  std::string err;
  DataOptions o;
  o.seq_len = 5;
  ASSERT_TRUE(LoadData("text:" + path, o, &d, &err)) << err;
  EXPECT_EQ(d.task, Task::kLanguageModel);
  EXPECT_EQ(d.rows, 5);  // (26 - 1) / 5 windows
  EXPECT_EQ(d.classes, 256);
  EXPECT_EQ(d.label_size, 5);
  // Row 1 is "fghij", its labels "ghijk".
  EXPECT_EQ(d.x[5], static_cast<float>('f'));
  EXPECT_EQ(d.y[5], 'g');
  EXPECT_EQ(d.y[9], 'k');
  o.seq_len = 20;
  EXPECT_FALSE(LoadData("text:" + path, o, &d, &err));
  EXPECT_NE(err.find("fewer than 2 sequences"), std::string::npos) << err;
  EXPECT_FALSE(LoadData("text:" + (dir_ / "missing").string(), o, &d, &err));
  EXPECT_NE(err.find("missing: cannot open"), std::string::npos) << err;
}

TEST_F(DataSources, MarkovSequencesAreLearnableNotUniform) {
  Dataset d;
  std::string err;
  ASSERT_TRUE(LoadData("markov:200:32:16", &d, &err)) << err;
  EXPECT_EQ(d.rows, 200);
  EXPECT_EQ(d.features, 32);
  EXPECT_EQ(d.classes, 16);
  // Labels are the inputs shifted by one.
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t t = 0; t + 1 < 32; ++t) EXPECT_EQ(d.x[r * 32 + t + 1], static_cast<float>(d.y[r * 32 + t]));
  }
  // The most frequent successor of a (previous, current) pair carries far more than 1/16 of the mass.
  std::map<std::pair<int, int>, std::map<int, int>> counts;
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t t = 1; t < 32; ++t) {
      counts[{static_cast<int>(d.x[r * 32 + t - 1]), static_cast<int>(d.x[r * 32 + t])}][static_cast<int>(d.y[r * 32 + t])]++;
    }
  }
  double top = 0, all = 0;
  for (auto& [pair, next] : counts) {
    int best = 0, sum = 0;
    for (auto& [tok, c] : next) best = std::max(best, c), sum += c;
    top += best;
    all += sum;
  }
  EXPECT_GT(top / all, 0.4);
  EXPECT_FALSE(LoadData("markov:100:1", &d, &err));
  EXPECT_NE(err.find("bad number '1'"), std::string::npos) << err;
}

TEST_F(DataSources, ClimateFieldsHaveCyclonesRiversAndMatchingChannels) {
  Dataset d;
  std::string err;
  ASSERT_TRUE(LoadData("climate:64:32", &d, &err)) << err;
  EXPECT_EQ(d.task, Task::kSegment);
  EXPECT_EQ(d.shape, (std::vector<int64_t>{16, 32, 32}));
  EXPECT_EQ(d.label_size, 32 * 32);
  ASSERT_EQ(d.y.size(), static_cast<size_t>(64 * 32 * 32));
  std::vector<int64_t> count(3, 0);
  for (int64_t l : d.y) count[static_cast<size_t>(l)]++;
  // Unbalanced, as real climate data: mostly background, some of each event.
  EXPECT_GT(count[0], count[1] + count[2]);
  EXPECT_GT(count[1], 0);
  EXPECT_GT(count[2], 0);
  // Physics: sea-level pressure (channel 7) is lower inside cyclones than elsewhere; water vapour (channel 0)
  // is higher inside rivers than in the background.
  double psl[3] = {0, 0, 0}, tmq[3] = {0, 0, 0};
  for (int64_t r = 0; r < d.rows; ++r) {
    for (int64_t p = 0; p < 32 * 32; ++p) {
      auto l = static_cast<size_t>(d.y[static_cast<size_t>(r * 1024 + p)]);
      psl[l] += d.x[static_cast<size_t>(r * 16 * 1024 + 7 * 1024 + p)];
      tmq[l] += d.x[static_cast<size_t>(r * 16 * 1024 + 0 * 1024 + p)];
    }
  }
  for (int c = 0; c < 3; ++c) psl[c] /= static_cast<double>(count[static_cast<size_t>(c)]), tmq[c] /= static_cast<double>(count[static_cast<size_t>(c)]);
  EXPECT_LT(psl[1], psl[0] - 1.0);
  EXPECT_GT(tmq[2], tmq[0] + 1.0);
  EXPECT_FALSE(LoadData("climate:10:30", &d, &err));
  EXPECT_NE(err.find("multiple of 4"), std::string::npos) << err;
}

TEST_F(DataSources, InputShapeMustMatchTheFeatureCount) {
  Dataset d;
  d.features = 64;
  std::string err;
  EXPECT_TRUE(SetSampleShape("1,8,8", &d, &err)) << err;
  EXPECT_EQ(d.SampleShape(), (std::vector<int64_t>{1, 8, 8}));
  EXPECT_FALSE(SetSampleShape("3,8,8", &d, &err));
  EXPECT_NE(err.find("has 192 elements, the data has 64"), std::string::npos) << err;
  EXPECT_FALSE(SetSampleShape("1,x,8", &d, &err));
}

}  // namespace
}  // namespace ladder::trainer
