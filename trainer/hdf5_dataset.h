#pragma once
// HDF5 data for ladder-train (--data hdf5:FILE[:X,Y]), through the HDF5 C library (Debian's libhdf5; without it
// ladder-train is built without this source, and hdf5: says so). Plain C++, no LibTorch.
//
// The file holds two datasets with the samples along their first dimension (N rows):
//   X (default "x")  numbers (any float or integer type, read as float32): [N, F] vectors, [N, C, H, W] images or
//                    [N, C, D, H, W] volumes — the sample shape the models see (models.h)
//   Y (default "y")  integer [N]: a class per sample (classify); integer [N, H, W] for X [N, C, H, W]: a class per
//                    pixel (segment); float [N] or [N, K]: K regression targets (regress)
// Rows are read chunk by chunk: a block of rows at a time (X's chunk rows when it is chunked), with one hyperslab
// selection of the wanted rows in the block, straight into the Dataset's arrays — never the whole file at once,
// and only the rows asked for (ReadHdf5Shard: each rank its own). Every error is one line naming the file and the
// dataset: a missing dataset, a wrong rank, shape or type, an unreadable or truncated file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/csv_dataset.h"

namespace ladder::trainer {

// What follows "hdf5:": FILE, or FILE:X,Y.
struct Hdf5Spec {
  std::string file, x = "x", y = "y";
};
bool ParseHdf5Spec(const std::string& rest, Hdf5Spec* out, std::string* error);

// What the reader has read: the file bytes of the selected elements (rows × the file's bytes per row, X and Y)
// and the number of H5Dread calls.
struct Hdf5ReadStats {
  int64_t bytes = 0, reads = 0;
};

// The two datasets as their headers describe them.
struct Hdf5Layout {
  int64_t rows = 0;
  std::vector<int64_t> sample_shape;  // X's dimensions after the first
  int64_t label_size = 1;             // Y's elements per row
  Task task = Task::kClassify;
  int64_t x_row_bytes = 0, y_row_bytes = 0;  // in the file
  int64_t block_rows = 0;                    // rows per read: X's chunk rows, or what fits kHdf5BlockBytes
};
constexpr int64_t kHdf5BlockBytes = int64_t{32} << 20;  // a contiguous X is read in blocks of about 32 MiB

class Hdf5Reader {
 public:
  // nullptr with *error when the file or a dataset cannot be used.
  static std::unique_ptr<Hdf5Reader> Open(const Hdf5Spec& spec, std::string* error);
  virtual ~Hdf5Reader() = default;
  virtual const Hdf5Layout& layout() const = 0;
  // Appends the rows `rows` (file positions, ascending) to *out: X into out->x, Y into out->y (or out->targets
  // for regression); sets out's shape, task, label_size and rows, not classes. False with *error.
  virtual bool ReadRows(const std::vector<int64_t>& rows, Dataset* out, std::string* error) = 0;
  virtual const Hdf5ReadStats& stats() const = 0;
};

// The whole file as one Dataset (what LoadData("hdf5:...") returns): classes from the largest label.
bool LoadHdf5Spec(const std::string& rest, Dataset* out, std::string* error);

// One rank's part of the file, split as SplitDataset(all, val_fraction, split_seed) splits (the split depends on
// the row count alone, so no rank reads another's rows to make it). The training rows in ascending file order
// are cut in `world` equal contiguous blocks (a remainder of fewer than `world` rows is left out) and this rank
// reads its block; rank 0 also reads the validation rows (it evaluates). Both sets come in the order
// SplitDataset gives them, so at world 1 they are exactly its train and val; train->shard_world = world. Not
// standardized; classes from the labels this rank read. `stats` (optional) gets what this rank read.
bool ReadHdf5Shard(const Hdf5Spec& spec, double val_fraction, uint64_t split_seed, int rank, int world,
                   Dataset* train, Dataset* val, Hdf5ReadStats* stats, std::string* error);

// Writes `d` as X and Y datasets (float32 X shaped [N, sample shape...]; Y int64 classes, or float32 targets),
// chunked by `chunk_rows` rows, to a temporary file renamed to `path` when complete. False with *error.
bool WriteHdf5(const std::string& path, const Dataset& d, const std::string& x_name, const std::string& y_name,
               int64_t chunk_rows, std::string* error);

}  // namespace ladder::trainer
