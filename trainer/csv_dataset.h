#pragma once
// Tabular classification data from CSV (plain or gzip): numeric feature columns, then an integer class label
// 0..K-1 in the last column. A first line with non-numeric fields is taken as a header and skipped.
// Plain C++ (no LibTorch) so the loader is cheap to build and test.
#include <cstdint>
#include <string>
#include <vector>

namespace ladder::trainer {

struct Dataset {
  int64_t rows = 0, features = 0, classes = 0;
  std::vector<float> x;    // rows × features, row-major
  std::vector<int64_t> y;  // rows
};

// Loads `path`; on failure returns false with *error naming the file and line ("d.csv:17: expected 65
// columns, found 64").
bool LoadCsv(const std::string& path, Dataset* out, std::string* error);

// Splits with a fixed seed (independent of the training seed, so every trial sees the same split).
void SplitDataset(const Dataset& all, double val_fraction, uint64_t split_seed, Dataset* train, Dataset* val);

// Standardizes every feature with the mean and standard deviation of `train` (constant features → 0).
void Standardize(Dataset* train, Dataset* val);

// The default data file: $LADDER_DATA_DIR/digits.csv.gz, then <exe dir>/../../data/digits.csv.gz (a build
// tree), <exe dir>/../share/ladder/digits.csv.gz, ./data/digits.csv.gz. Returns "" and lists what it tried.
std::string DefaultDataPath(std::string* tried);

}  // namespace ladder::trainer
