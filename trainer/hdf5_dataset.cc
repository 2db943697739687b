#include "trainer/hdf5_dataset.h"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>

namespace ladder::trainer {

namespace {

// An HDF5 identifier closed with its own close function at scope exit.
class Hid {
 public:
  Hid(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Hid() {
    if (id_ >= 0) close_(id_);
  }
  Hid(const Hid&) = delete;
  Hid& operator=(const Hid&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// The most specific description on HDF5's error stack (its innermost entry), e.g. "truncated file: eof = ...".
std::string Hdf5Reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        if (e->desc && *e->desc) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason.empty() ? "unknown HDF5 error" : reason;
}

// HDF5 prints its error stack to stderr by default; ladder-train says one line of its own instead.
void QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string ShapeText(const std::vector<hsize_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// One opened dataset: its dimensions, its type class and element size in the file.
struct DatasetInfo {
  std::unique_ptr<Hid> id;
  std::vector<hsize_t> dims;
  H5T_class_t type_class = H5T_NO_CLASS;
  size_t element_size = 0;
  hsize_t chunk_rows = 0;  // 0: not chunked
};

const char* TypeClassName(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_OPAQUE: return "opaque";
    case H5T_BITFIELD: return "bitfield";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length";
    default: return "unknown";
  }
}

bool OpenDataset(hid_t file, const std::string& where, const std::string& name, DatasetInfo* out,
                 std::string* error) {
  const htri_t exists = H5Lexists(file, name.c_str(), H5P_DEFAULT);
  if (exists <= 0) {
    H5Eclear2(H5E_DEFAULT);
    *error = where + ": no dataset '" + name + "' in the file";
    return false;
  }
  out->id = std::make_unique<Hid>(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!out->id->ok()) {
    *error = where + ": dataset '" + name + "': cannot open: " + Hdf5Reason();
    return false;
  }
  Hid space(H5Dget_space(out->id->get()), H5Sclose), type(H5Dget_type(out->id->get()), H5Tclose);
  Hid plist(H5Dget_create_plist(out->id->get()), H5Pclose);
  const int ndims = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (ndims < 0 || !type.ok() || !plist.ok()) {
    *error = where + ": dataset '" + name + "': cannot read its header: " + Hdf5Reason();
    return false;
  }
  out->dims.assign(static_cast<size_t>(ndims), 0);
  H5Sget_simple_extent_dims(space.get(), out->dims.data(), nullptr);
  out->type_class = H5Tget_class(type.get());
  out->element_size = H5Tget_size(type.get());
  if (out->type_class != H5T_INTEGER && out->type_class != H5T_FLOAT) {
    *error = where + ": dataset '" + name + "' holds " + TypeClassName(out->type_class) +
             " values; ladder-train reads numbers (integer or float)";
    return false;
  }
  if (ndims > 0 && H5Pget_layout(plist.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<size_t>(ndims));
    if (H5Pget_chunk(plist.get(), ndims, chunk.data()) == ndims) out->chunk_rows = chunk[0];
  }
  return true;
}

class Hdf5ReaderImpl final : public Hdf5Reader {
 public:
  Hdf5ReaderImpl(const Hdf5Spec& spec, std::unique_ptr<Hid> file) : spec_(spec), file_(std::move(file)) {}

  // Opens X and Y and checks their ranks, shapes and types against each other.
  bool Init(std::string* error) {
    const std::string where = spec_.file;
    if (!OpenDataset(file_->get(), where, spec_.x, &x_, error) ||
        !OpenDataset(file_->get(), where, spec_.y, &y_, error)) {
      return false;
    }
    const auto& xd = x_.dims;
    if (xd.size() != 2 && xd.size() != 4 && xd.size() != 5) {
      *error = where + ": dataset '" + spec_.x + "' has rank " + std::to_string(xd.size()) + " (shape " +
               ShapeText(xd) + "); expected [N,F] vectors, [N,C,H,W] images or [N,C,D,H,W] volumes";
      return false;
    }
    if (y_.dims.empty() || y_.dims[0] != xd[0]) {
      *error = where + ": dataset '" + spec_.y + "' has shape " + ShapeText(y_.dims) + "; dataset '" + spec_.x +
               "' has " + std::to_string(xd[0]) + " rows and it needs as many";
      return false;
    }
    layout_.rows = static_cast<int64_t>(xd[0]);
    layout_.sample_shape.assign(xd.begin() + 1, xd.end());
    if (!ClassifyY(error)) return false;
    int64_t x_elems = 1;
    for (int64_t d : layout_.sample_shape) x_elems *= d;
    layout_.x_row_bytes = x_elems * static_cast<int64_t>(x_.element_size);
    layout_.y_row_bytes = layout_.label_size * static_cast<int64_t>(y_.element_size);
    layout_.block_rows = x_.chunk_rows > 0
                             ? static_cast<int64_t>(x_.chunk_rows)
                             : std::max<int64_t>(1, kHdf5BlockBytes / std::max<int64_t>(1, layout_.x_row_bytes));
    return true;
  }

  const Hdf5Layout& layout() const override { return layout_; }
  const Hdf5ReadStats& stats() const override { return stats_; }

  bool ReadRows(const std::vector<int64_t>& rows, Dataset* out, std::string* error) override {
    int64_t x_elems = 1;
    for (int64_t d : layout_.sample_shape) x_elems *= d;
    out->shape = layout_.sample_shape;
    out->features = x_elems;
    out->label_size = layout_.label_size;
    out->task = layout_.task;
    const bool regress = layout_.task == Task::kRegress;
    size_t i = 0;
    while (i < rows.size()) {
      // The wanted rows in this block of the file.
      const int64_t block = rows[i] / layout_.block_rows, block_end = (block + 1) * layout_.block_rows;
      size_t j = i;
      while (j < rows.size() && rows[j] < block_end) ++j;
      const auto n = static_cast<int64_t>(j - i);
      out->x.resize(static_cast<size_t>((out->rows + n) * x_elems));
      float* xdst = out->x.data() + out->rows * x_elems;
      void* ydst;
      if (regress) {
        out->targets.resize(static_cast<size_t>((out->rows + n) * layout_.label_size));
        ydst = out->targets.data() + out->rows * layout_.label_size;
      } else {
        out->y.resize(static_cast<size_t>((out->rows + n) * layout_.label_size));
        ydst = out->y.data() + out->rows * layout_.label_size;
      }
      if (!ReadBlock(x_, spec_.x, rows, i, j, H5T_NATIVE_FLOAT, xdst, error) ||
          !ReadBlock(y_, spec_.y, rows, i, j, regress ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64, ydst, error)) {
        return false;
      }
      stats_.bytes += n * (layout_.x_row_bytes + layout_.y_row_bytes);
      out->rows += n;
      i = j;
    }
    return true;
  }

 private:
  // Y's rank and type say the task.
  bool ClassifyY(std::string* error) {
    const auto& yd = y_.dims;
    const auto& xd = x_.dims;
    const bool integer = y_.type_class == H5T_INTEGER;
    if (integer && yd.size() == 1) {
      layout_.task = Task::kClassify;
      return true;
    }
    if (integer && xd.size() == 4 && yd.size() == 3 && yd[1] == xd[2] && yd[2] == xd[3]) {
      layout_.task = Task::kSegment;
      layout_.label_size = static_cast<int64_t>(yd[1] * yd[2]);
      return true;
    }
    if (!integer && yd.size() <= 2) {
      layout_.task = Task::kRegress;
      layout_.label_size = yd.size() == 2 ? static_cast<int64_t>(yd[1]) : 1;
      return layout_.label_size > 0;
    }
    *error = spec_.file + ": dataset '" + spec_.y + "' is " + TypeClassName(y_.type_class) + " of rank " +
             std::to_string(yd.size()) + " (shape " + ShapeText(yd) + "); expected integer [N] classes, integer " +
             "[N,H,W] pixel classes for an X of [N,C,H,W], or float [N] or [N,K] regression targets";
    return false;
  }

  // Reads rows[i, j) (ascending, within one block) of `d` into `dst`: one hyperslab of the runs of consecutive
  // rows, converted to `mem_type` by HDF5.
  bool ReadBlock(const DatasetInfo& d, const std::string& name, const std::vector<int64_t>& rows, size_t i, size_t j,
                 hid_t mem_type, void* dst, std::string* error) {
    Hid space(H5Dget_space(d.id->get()), H5Sclose);
    std::vector<hsize_t> start(d.dims.size(), 0), count = d.dims;
    bool first = true, ok = space.ok();
    for (size_t k = i; ok && k < j;) {
      size_t run = k + 1;
      while (run < j && rows[run] == rows[run - 1] + 1) ++run;
      start[0] = static_cast<hsize_t>(rows[k]);
      count[0] = static_cast<hsize_t>(run - k);
      ok = H5Sselect_hyperslab(space.get(), first ? H5S_SELECT_SET : H5S_SELECT_OR, start.data(), nullptr,
                               count.data(), nullptr) >= 0;
      first = false;
      k = run;
    }
    hsize_t elems = static_cast<hsize_t>(j - i);
    for (size_t k = 1; k < d.dims.size(); ++k) elems *= d.dims[k];
    Hid mem(H5Screate_simple(1, &elems, nullptr), H5Sclose);
    ++stats_.reads;
    if (!ok || !mem.ok() || H5Dread(d.id->get(), mem_type, mem.get(), space.get(), H5P_DEFAULT, dst) < 0) {
      *error = spec_.file + ": dataset '" + name + "': cannot read rows " + std::to_string(rows[i]) + ".." +
               std::to_string(rows[j - 1]) + ": " + Hdf5Reason();
      return false;
    }
    return true;
  }

  Hdf5Spec spec_;
  std::unique_ptr<Hid> file_;
  DatasetInfo x_, y_;
  Hdf5Layout layout_;
  Hdf5ReadStats stats_;
};

int64_t LargestLabel(const Dataset& d) {
  int64_t m = -1;
  for (int64_t v : d.y) m = std::max(m, v);
  return m;
}

// The rows of `in` (in ascending file order, file positions `file_rows`) reordered to `order` (file positions).
Dataset Reorder(const Dataset& in, const std::vector<int64_t>& file_rows, const std::vector<int64_t>& order) {
  Dataset out = in;
  const auto f = static_cast<std::ptrdiff_t>(in.features), l = static_cast<std::ptrdiff_t>(in.label_size);
  for (size_t k = 0; k < order.size(); ++k) {
    const auto at = static_cast<std::ptrdiff_t>(std::lower_bound(file_rows.begin(), file_rows.end(), order[k]) -
                                                file_rows.begin());
    const auto to = static_cast<std::ptrdiff_t>(k);
    std::copy_n(in.x.begin() + at * f, f, out.x.begin() + to * f);
    if (!in.y.empty()) std::copy_n(in.y.begin() + at * l, l, out.y.begin() + to * l);
    if (!in.targets.empty()) std::copy_n(in.targets.begin() + at * l, l, out.targets.begin() + to * l);
  }
  return out;
}

}  // namespace

bool ParseHdf5Spec(const std::string& rest, Hdf5Spec* out, std::string* error) {
  Hdf5Spec s;
  const auto colon = rest.rfind(':');
  s.file = rest;
  if (colon != std::string::npos && rest.find(',', colon) != std::string::npos) {
    const std::string names = rest.substr(colon + 1);
    const auto comma = names.find(',');
    s.file = rest.substr(0, colon);
    s.x = names.substr(0, comma);
    s.y = names.substr(comma + 1);
    if (s.x.empty() || s.y.empty() || s.y.find(',') != std::string::npos) {
      *error = "--data hdf5:FILE[:X,Y]: expected two dataset names after the file, got '" + names + "'";
      return false;
    }
  }
  if (s.file.empty()) {
    *error = "--data hdf5:FILE[:X,Y]: no file named";
    return false;
  }
  *out = s;
  return true;
}

std::unique_ptr<Hdf5Reader> Hdf5Reader::Open(const Hdf5Spec& spec, std::string* error) {
  QuietHdf5();
  const std::string where = spec.file + " (datasets '" + spec.x + "', '" + spec.y + "')";
  if (access(spec.file.c_str(), R_OK) != 0) {
    *error = where + ": cannot open: " + std::strerror(errno);
    return nullptr;
  }
  if (H5Fis_hdf5(spec.file.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    *error = where + ": not an HDF5 file";
    return nullptr;
  }
  auto file = std::make_unique<Hid>(H5Fopen(spec.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file->ok()) {
    *error = where + ": cannot open as HDF5: " + Hdf5Reason();
    return nullptr;
  }
  auto reader = std::make_unique<Hdf5ReaderImpl>(spec, std::move(file));
  if (!reader->Init(error)) return nullptr;
  return reader;
}

bool LoadHdf5Spec(const std::string& rest, Dataset* out, std::string* error) {
  Hdf5Spec spec;
  if (!ParseHdf5Spec(rest, &spec, error)) return false;
  auto reader = Hdf5Reader::Open(spec, error);
  if (!reader) return false;
  std::vector<int64_t> rows(static_cast<size_t>(reader->layout().rows));
  std::iota(rows.begin(), rows.end(), 0);
  Dataset d;
  if (!reader->ReadRows(rows, &d, error)) return false;
  if (d.rows < 2) {
    *error = spec.file + ": dataset '" + spec.x + "' has " + std::to_string(d.rows) + " rows; at least 2 are needed";
    return false;
  }
  d.classes = d.task == Task::kRegress ? d.label_size : LargestLabel(d) + 1;
  *out = std::move(d);
  return true;
}

bool ReadHdf5Shard(const Hdf5Spec& spec, double val_fraction, uint64_t split_seed, int rank, int world,
                   Dataset* train, Dataset* val, Hdf5ReadStats* stats, std::string* error) {
  auto reader = Hdf5Reader::Open(spec, error);
  if (!reader) return false;
  const int64_t n = reader->layout().rows;
  if (n < 2) {
    *error = spec.file + ": dataset '" + spec.x + "' has " + std::to_string(n) + " rows; at least 2 are needed";
    return false;
  }
  // SplitDataset's permutation: validation first, then training.
  std::vector<int64_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::mt19937_64 rng(split_seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  const int64_t n_val = std::clamp<int64_t>(std::llround(val_fraction * static_cast<double>(n)), 1, n - 1);
  std::vector<int64_t> train_sorted(idx.begin() + n_val, idx.end());
  std::sort(train_sorted.begin(), train_sorted.end());
  const int64_t per_rank = static_cast<int64_t>(train_sorted.size()) / world;
  if (per_rank < 1) {
    *error = spec.file + ": " + std::to_string(train_sorted.size()) + " training rows for " + std::to_string(world) +
             " ranks";
    return false;
  }
  std::vector<int64_t> mine(train_sorted.begin() + rank * per_rank, train_sorted.begin() + (rank + 1) * per_rank);
  std::vector<int64_t> mine_order;  // this rank's rows in SplitDataset's order
  for (int64_t k = n_val; k < n; ++k) {
    const int64_t r = idx[static_cast<size_t>(k)];
    if (std::binary_search(mine.begin(), mine.end(), r)) mine_order.push_back(r);
  }
  Dataset t, v;
  if (!reader->ReadRows(mine, &t, error)) return false;
  *train = Reorder(t, mine, mine_order);
  train->shard_world = world;
  std::vector<int64_t> val_rows, val_order(idx.begin(), idx.begin() + n_val);
  if (rank == 0) val_rows = val_order, std::sort(val_rows.begin(), val_rows.end());
  if (!reader->ReadRows(val_rows, &v, error)) return false;
  *val = rank == 0 ? Reorder(v, val_rows, val_order) : v;
  val->shape = train->shape, val->features = train->features, val->label_size = train->label_size;
  val->task = train->task;
  const int64_t classes =
      train->task == Task::kRegress ? train->label_size : std::max(LargestLabel(*train), LargestLabel(*val)) + 1;
  train->classes = val->classes = classes;
  if (stats) *stats = reader->stats();
  return true;
}

bool WriteHdf5(const std::string& path, const Dataset& d, const std::string& x_name, const std::string& y_name,
               int64_t chunk_rows, std::string* error) {
  QuietHdf5();
  if (d.task == Task::kLanguageModel) {
    *error = path + ": token sequences are not written as HDF5 (text: and markov: are read as they are)";
    return false;
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  auto fail = [&](const std::string& what) {
    *error = path + ": dataset '" + what + "': cannot write: " + Hdf5Reason();
    std::remove(tmp.c_str());
    return false;
  };
  bool ok;
  {
    Hid file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) return fail(x_name);
    auto write = [&](const std::string& name, std::vector<hsize_t> dims, hid_t file_type, hid_t mem_type,
                     const void* data) {
      std::vector<hsize_t> chunk = dims;
      chunk[0] = static_cast<hsize_t>(std::clamp<int64_t>(chunk_rows, 1, std::max<int64_t>(1, d.rows)));
      Hid space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
      Hid dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
      if (!space.ok() || !dcpl.ok() || H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()) < 0) {
        return false;
      }
      Hid set(H5Dcreate2(file.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
              H5Dclose);
      return set.ok() && H5Dwrite(set.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
    };
    std::vector<hsize_t> xdims = {static_cast<hsize_t>(d.rows)};
    for (int64_t s : d.SampleShape()) xdims.push_back(static_cast<hsize_t>(s));
    if (!write(x_name, xdims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, d.x.data())) return fail(x_name);
    std::vector<hsize_t> ydims = {static_cast<hsize_t>(d.rows)};
    if (d.task == Task::kSegment) ydims.insert(ydims.end(), xdims.end() - 2, xdims.end());
    if (d.task == Task::kRegress && d.label_size > 1) ydims.push_back(static_cast<hsize_t>(d.label_size));
    ok = d.task == Task::kRegress ? write(y_name, ydims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, d.targets.data())
                                  : write(y_name, ydims, H5T_STD_I64LE, H5T_NATIVE_INT64, d.y.data());
    if (!ok) return fail(y_name);
    ok = H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0;
  }
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = path + ": cannot write: " + (ok ? std::strerror(errno) : Hdf5Reason());
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace ladder::trainer
