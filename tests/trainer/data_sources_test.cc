#include "trainer/data_sources.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace ladder::trainer
