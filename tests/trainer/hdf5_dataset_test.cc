// HDF5 data (trainer/hdf5_dataset.h): written and read back for vectors, images and volumes; every error one line
// naming the file and the dataset; each rank of two reads its share of the rows, chunk by chunk.
#include "trainer/hdf5_dataset.h"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "tests/support/process.h"
#include "trainer/data_sources.h"

namespace ladder::trainer {
namespace {

Dataset Vectors(int64_t rows, int64_t features, int64_t classes) {
  Dataset d = MakeSynthetic(rows, features, classes, 9);
  return d;
}

TEST(Hdf5Dataset, VectorsImagesAndVolumesRoundTrip) {
  testing::TempDir dir("hdf5rt");
  std::string err;
  const Dataset vectors = Vectors(50, 6, 3), images = MakeClimate(12, 8, 4), volumes = MakeCosmo(10, 4, 4);
  for (const Dataset* d : {&vectors, &images, &volumes}) {
    const std::string path = (dir / ("d" + std::to_string(d->features) + ".h5")).string();
    ASSERT_TRUE(WriteHdf5(path, *d, "x", "y", 7, &err)) << err;
    Dataset back;
    ASSERT_TRUE(LoadData("hdf5:" + path, &back, &err)) << err;
    EXPECT_EQ(back.rows, d->rows);
    EXPECT_EQ(back.SampleShape(), d->SampleShape());
    EXPECT_EQ(back.task, d->task);
    EXPECT_EQ(back.label_size, d->label_size);
    EXPECT_EQ(back.classes, d->classes);
    EXPECT_EQ(back.x, d->x);
    EXPECT_EQ(back.y, d->y);
    EXPECT_EQ(back.targets, d->targets);
  }
  // Other dataset names, given in the spec; the file's own names for DataFiles.
  const std::string named = (dir / "named.h5").string();
  ASSERT_TRUE(WriteHdf5(named, vectors, "features", "labels", 16, &err)) << err;
  Dataset back;
  ASSERT_TRUE(LoadData("hdf5:" + named + ":features,labels", &back, &err)) << err;
  EXPECT_EQ(back.x, vectors.x);
  EXPECT_EQ(DataFiles("hdf5:" + named + ":features,labels"), std::vector<std::string>{named});
  EXPECT_EQ(DataFiles("hdf5:runs/a:b.h5"), std::vector<std::string>{"runs/a:b.h5"});  // a colon in the path
}

// A file with one dataset `name` of `type` and `dims` (zeros), beside a valid X or Y.
void WriteRaw(const std::string& path, const std::vector<std::pair<std::string, std::vector<hsize_t>>>& sets,
              hid_t type) {
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (const auto& [name, dims] : sets) {
    hid_t t = name == "bad" ? type : (name == "y" ? H5T_STD_I64LE : H5T_IEEE_F32LE);
    hid_t s = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    hid_t d = H5Dcreate2(f, name.c_str(), t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(s);
  }
  H5Fclose(f);
}

// One line that names the file and the dataset, and says what is wrong.
void ExpectOneLineError(const std::string& spec, const std::string& file, const std::string& dataset,
                        const std::string& what) {
  Dataset d;
  std::string err;
  ASSERT_FALSE(LoadData(spec, &d, &err)) << spec;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("'" + dataset + "'"), std::string::npos) << err;
  EXPECT_NE(err.find(what), std::string::npos) << err;
}

TEST(Hdf5Dataset, EachErrorIsOneLineNamingTheFileAndTheDataset) {
  testing::TempDir dir("hdf5err");
  std::string err;
  const std::string good = (dir / "good.h5").string();
  ASSERT_TRUE(WriteHdf5(good, Vectors(40, 5, 2), "x", "y", 8, &err)) << err;
  // A missing dataset.
  ExpectOneLineError("hdf5:" + good + ":x,labels", good, "labels", "no dataset");
  // A wrong rank: X of rank 1, and X of rank 3.
  const std::string rank1 = (dir / "rank1.h5").string();
  WriteRaw(rank1, {{"bad", {10}}, {"y", {10}}}, H5T_IEEE_F32LE);
  ExpectOneLineError("hdf5:" + rank1 + ":bad,y", rank1, "bad", "rank 1");
  const std::string rank3 = (dir / "rank3.h5").string();
  WriteRaw(rank3, {{"bad", {10, 4, 4}}, {"y", {10}}}, H5T_IEEE_F32LE);
  ExpectOneLineError("hdf5:" + rank3 + ":bad,y", rank3, "bad", "rank 3");
  // Y with other rows than X.
  const std::string rows = (dir / "rows.h5").string();
  WriteRaw(rows, {{"x", {10, 3}}, {"y", {9}}}, H5T_IEEE_F32LE);
  ExpectOneLineError("hdf5:" + rows, rows, "y", "10 rows");
  // A wrong dtype: strings as labels, strings as features.
  hid_t str = H5Tcopy(H5T_C_S1);
  H5Tset_size(str, 8);
  const std::string strings = (dir / "strings.h5").string();
  WriteRaw(strings, {{"x", {10, 3}}, {"bad", {10}}}, str);
  ExpectOneLineError("hdf5:" + strings + ":x,bad", strings, "bad", "string");
  WriteRaw(strings, {{"bad", {10, 3}}, {"y", {10}}}, str);
  ExpectOneLineError("hdf5:" + strings + ":bad,y", strings, "bad", "string");
  H5Tclose(str);
  // A truncated file: the first half of a good one.
  const std::string truncated = (dir / "truncated.h5").string();
  std::filesystem::copy_file(good, truncated);
  std::filesystem::resize_file(truncated, std::filesystem::file_size(good) / 2);
  ExpectOneLineError("hdf5:" + truncated, truncated, "x", "truncated");
  // Not HDF5 at all, and no file.
  const std::string text = (dir / "text.h5").string();
  { std::ofstream(text) << "1,2,3\n"; }
  ExpectOneLineError("hdf5:" + text, text, "x", "not an HDF5 file");
  ExpectOneLineError("hdf5:" + (dir / "none.h5").string(), "none.h5", "x", "No such file");
}

TEST(Hdf5Dataset, AtOneRankTheShardIsSplitDatasetsTrainAndValExactly) {
  testing::TempDir dir("hdf5one");
  std::string err;
  const Dataset all = Vectors(101, 4, 3);
  const std::string path = (dir / "d.h5").string();
  ASSERT_TRUE(WriteHdf5(path, all, "x", "y", 10, &err)) << err;
  Dataset want_train, want_val, train, val;
  SplitDataset(all, 0.2, 77, &want_train, &want_val);
  Hdf5ReadStats stats;
  ASSERT_TRUE(ReadHdf5Shard(Hdf5Spec{path}, 0.2, 77, 0, 1, &train, &val, &stats, &err)) << err;
  EXPECT_EQ(train.x, want_train.x);
  EXPECT_EQ(train.y, want_train.y);
  EXPECT_EQ(val.x, want_val.x);
  EXPECT_EQ(val.y, want_val.y);
  EXPECT_EQ(train.classes, 3);
  EXPECT_EQ(stats.bytes, 101 * (4 * 4 + 8));  // every row once: float32 features, an int64 label
}

TEST(Hdf5Dataset, EachOfTwoRanksReadsItsShareChunkByChunk) {
  testing::TempDir dir("hdf5two");
  std::string err;
  const Dataset all = Vectors(1001, 6, 4);
  const std::string path = (dir / "d.h5").string();
  const int64_t chunk = 32;
  ASSERT_TRUE(WriteHdf5(path, all, "x", "y", chunk, &err)) << err;
  const int64_t row_bytes = 6 * 4 + 8, n_val = 200, per_rank = (1001 - n_val) / 2;  // 400: one row left out
  Dataset train[2], val[2];
  Hdf5ReadStats stats[2];
  std::set<std::vector<float>> seen;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(ReadHdf5Shard(Hdf5Spec{path}, 0.2, 77, r, 2, &train[r], &val[r], &stats[r], &err)) << err;
    EXPECT_EQ(train[r].rows, per_rank);
    EXPECT_EQ(train[r].shard_world, 2);
    for (int64_t i = 0; i < per_rank; ++i) {
      seen.insert(std::vector<float>(train[r].x.begin() + i * 6, train[r].x.begin() + (i + 1) * 6));
    }
  }
  EXPECT_EQ(seen.size(), 2u * per_rank);  // no row on both ranks
  // Rank 1 reads its training rows only; rank 0 its own and the validation rows it evaluates.
  EXPECT_EQ(stats[1].bytes, per_rank * row_bytes);
  EXPECT_EQ(val[1].rows, 0);
  EXPECT_EQ(val[0].rows, n_val);
  EXPECT_EQ(stats[0].bytes, (per_rank + n_val) * row_bytes);
  // Chunk by chunk: rank 1's rows lie in the file's second half, about 16 chunks, X and Y read per chunk.
  EXPECT_GE(stats[1].reads, 2 * 14);
  EXPECT_LE(stats[1].reads, 2 * 18);
  EXPECT_EQ(train[0].classes, train[1].classes);
}

}  // namespace
}  // namespace ladder::trainer
