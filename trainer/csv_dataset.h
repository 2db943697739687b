#pragma once
// Tabular classification data from CSV (plain or gzip): numeric feature columns, then an integer class label
// 0..K-1 in the last column. A first line with non-numeric fields is taken as a header and skipped.
// Plain C++ (no LibTorch) so the loader is cheap to build and test.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace ladder::trainer {

// What the labels are: one class per sample, one class per pixel, the next token at every position, or
// label_size real numbers per sample (regression: Dataset::targets).
enum class Task { kClassify, kSegment, kLanguageModel, kRegress };
const char* TaskName(Task t);  // "classify", "segment", "lm", "regress"

struct Dataset {
  int64_t rows = 0, features = 0, classes = 0;
  std::vector<float> x;    // rows × features, row-major (token ids as exact floats for language models)
  std::vector<int64_t> y;  // rows × label_size (classify, segment, lm)
  std::vector<float> targets;  // rows × label_size (regress; `classes` is then label_size, the outputs)
  std::vector<int64_t> shape;  // one sample's shape, its product = features (empty: {features})
  int64_t label_size = 1;      // labels per sample: 1, H·W (segmentation) or T (language model)
  Task task = Task::kClassify;
  // 1, or how many ranks share the training rows: a training set that holds only this rank's rows (hdf5: at
  // several ranks, hdf5_shard.h) is sampled locally by every rank (train_loop.h).
  int64_t shard_world = 1;

  std::vector<int64_t> SampleShape() const { return shape.empty() ? std::vector<int64_t>{features} : shape; }
};

// Sets d->shape from "C,H,W" (or any comma list whose product is d->features). false with *error naming the
// value and the feature count otherwise.
bool SetSampleShape(const std::string& text, Dataset* d, std::string* error);

// Loads `path`; on failure returns false with *error naming the file and line ("d.csv:17: expected 65
// columns, found 64").
bool LoadCsv(const std::string& path, Dataset* out, std::string* error);

// Splits with a fixed seed (independent of the training seed, so every trial sees the same split).
void SplitDataset(const Dataset& all, double val_fraction, uint64_t split_seed, Dataset* train, Dataset* val);

// Standardizes with the mean and standard deviation of `train` (constant features → 0): per feature for
// vectors, per channel for (C,H,W) and (C,D,H,W) samples; token sequences and regression targets are left alone.
void Standardize(Dataset* train, Dataset* val);

// The default data file: $LADDER_DATA_DIR/digits.csv.gz, then <exe dir>/../../data/digits.csv.gz (a build
// tree), <exe dir>/../share/ladder/digits.csv.gz, ./data/digits.csv.gz. Returns "" and lists what it tried.
// `data_dir` stands for $LADDER_DATA_DIR (nullptr: unset).
std::string DefaultDataPath(std::string* tried, const char* data_dir = std::getenv("LADDER_DATA_DIR"));

}  // namespace ladder::trainer
