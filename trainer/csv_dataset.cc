#include "trainer/csv_dataset.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>

namespace ladder::trainer {

namespace {

std::vector<std::string> SplitFields(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    std::string f = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t')) f.pop_back();
    size_t lead = f.find_first_not_of(" \t");
    out.push_back(lead == std::string::npos ? "" : f.substr(lead));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool ParseNumber(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(s.c_str(), &end);
  return errno == 0 && *end == '\0' && std::isfinite(*v);
}

}  // namespace

namespace {

// The next line of `f` whole (however long), without its line ending; false at the end of the file.
bool ReadLine(gzFile f, std::vector<char>& buf, std::string* line) {
  line->clear();
  bool got = false;
  while (gzgets(f, buf.data(), static_cast<int>(buf.size()))) {
    got = true;
    *line += buf.data();
    if (!line->empty() && line->back() == '\n') break;
  }
  while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
  return got;
}

// One data line into `d` (its features, its label); "" when taken, else the error naming the line and column. A
// first line that is not numeric is a header and is skipped.
std::string AddRow(const std::string& path, int64_t lineno, const std::string& line, Dataset* d, int64_t* max_label) {
  const std::string at = path + ":" + std::to_string(lineno) + ": ";
  auto fields = SplitFields(line);
  std::vector<double> values(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (ParseNumber(fields[i], &values[i])) continue;
    if (d->rows == 0 && d->features == 0 && lineno == 1) return "";  // header
    return at + "column " + std::to_string(i + 1) + ": '" + fields[i] + "' is not a number";
  }
  if (fields.size() < 2) return at + "need at least one feature and a label";
  if (d->features == 0) d->features = static_cast<int64_t>(fields.size()) - 1;
  if (static_cast<int64_t>(fields.size()) != d->features + 1) {
    return at + "expected " + std::to_string(d->features + 1) + " columns, found " + std::to_string(fields.size());
  }
  double label = values.back();
  if (label < 0 || label != std::floor(label) || label > 1e6) {
    return at + "the label (last column) must be an integer >= 0, got '" + fields.back() + "'";
  }
  for (int64_t i = 0; i < d->features; ++i) d->x.push_back(static_cast<float>(values[static_cast<size_t>(i)]));
  d->y.push_back(static_cast<int64_t>(label));
  *max_label = std::max(*max_label, static_cast<int64_t>(label));
  ++d->rows;
  return "";
}

}  // namespace

bool LoadCsv(const std::string& path, Dataset* out, std::string* error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    *error = path + ": cannot open: " + std::strerror(errno ? errno : ENOENT);
    return false;
  }
  Dataset d;
  std::string line;
  std::vector<char> buf(1 << 16);
  int64_t lineno = 0;
  int64_t max_label = -1;
  bool ok = true;
  while (ok && ReadLine(f, buf, &line)) {
    ++lineno;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    *error = AddRow(path, lineno, line, &d, &max_label);
    ok = error->empty();
  }
  int errnum = 0;
  const char* zerr = gzerror(f, &errnum);
  if (ok && errnum != Z_OK && errnum != Z_STREAM_END) {
    *error = path + ": read error: " + (zerr ? zerr : "unknown");
    ok = false;
  }
  gzclose(f);
  if (!ok) return false;
  if (d.rows == 0) {
    *error = path + ": no data rows";
    return false;
  }
  d.classes = max_label + 1;
  if (d.classes < 2) {
    *error = path + ": need at least 2 classes (labels 0..K-1), found only label 0";
    return false;
  }
  *out = std::move(d);
  return true;
}

void SplitDataset(const Dataset& all, double val_fraction, uint64_t split_seed, Dataset* train, Dataset* val) {
  std::vector<int64_t> idx(static_cast<size_t>(all.rows));
  std::iota(idx.begin(), idx.end(), 0);
  std::mt19937_64 rng(split_seed);
  std::shuffle(idx.begin(), idx.end(), rng);
  int64_t n_val = std::clamp<int64_t>(std::llround(val_fraction * static_cast<double>(all.rows)), 1, all.rows - 1);
  auto take = [&](Dataset* d, size_t from, size_t to) {
    d->features = all.features;
    d->classes = all.classes;
    d->shape = all.shape;
    d->label_size = all.label_size;
    d->task = all.task;
    d->rows = static_cast<int64_t>(to - from);
    d->x.clear();
    d->y.clear();
    d->targets.clear();
    const auto f = static_cast<size_t>(all.features), l = static_cast<size_t>(all.label_size);
    auto rows_of = [l](const auto& from_v, auto& to_v, size_t r) {
      if (!from_v.empty()) to_v.insert(to_v.end(), from_v.begin() + static_cast<std::ptrdiff_t>(r * l),
                                       from_v.begin() + static_cast<std::ptrdiff_t>((r + 1) * l));
    };
    for (size_t i = from; i < to; ++i) {
      auto r = static_cast<size_t>(idx[i]);
      d->x.insert(d->x.end(), all.x.begin() + static_cast<std::ptrdiff_t>(r * f),
                  all.x.begin() + static_cast<std::ptrdiff_t>((r + 1) * f));
      rows_of(all.y, d->y, r);
      rows_of(all.targets, d->targets, r);
    }
  };
  take(val, 0, static_cast<size_t>(n_val));
  take(train, static_cast<size_t>(n_val), idx.size());
}

const char* TaskName(Task t) {
  switch (t) {
    case Task::kClassify: return "classify";
    case Task::kSegment: return "segment";
    case Task::kLanguageModel: return "lm";
    case Task::kRegress: return "regress";
  }
  return "?";
}

bool SetSampleShape(const std::string& text, Dataset* d, std::string* error) {
  std::vector<int64_t> shape;
  int64_t product = 1;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 1) {
      *error = "--input-shape '" + text + "': expected positive integers separated by commas (C,H,W)";
      return false;
    }
    shape.push_back(v);
    product *= v;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (product != d->features) {
    *error = "--input-shape '" + text + "' has " + std::to_string(product) + " elements, the data has " +
             std::to_string(d->features) + " features per sample";
    return false;
  }
  d->shape = shape;
  return true;
}

// Per channel: every (C,H,W) or (C,D,H,W) sample's channel c is standardized with channel c's statistics over `train`.
static void StandardizeChannels(Dataset* train, Dataset* val) {
  const auto c = static_cast<size_t>(train->shape[0]);
  const auto plane = static_cast<size_t>(train->features) / c;
  std::vector<double> sum(c, 0), sq(c, 0);
  for (size_t r = 0; r < static_cast<size_t>(train->rows); ++r) {
    for (size_t k = 0; k < c; ++k) {
      const float* p = &train->x[(r * c + k) * plane];
      for (size_t j = 0; j < plane; ++j) sum[k] += p[j], sq[k] += static_cast<double>(p[j]) * p[j];
    }
  }
  const double n = static_cast<double>(train->rows) * static_cast<double>(plane);
  for (Dataset* d : {train, val}) {
    for (size_t r = 0; r < static_cast<size_t>(d->rows); ++r) {
      for (size_t k = 0; k < c; ++k) {
        const double mean = sum[k] / n, sd = std::sqrt(std::max(0.0, sq[k] / n - mean * mean));
        float* p = &d->x[(r * c + k) * plane];
        for (size_t j = 0; j < plane; ++j) p[j] = sd > 1e-12 ? static_cast<float>((p[j] - mean) / sd) : 0.0f;
      }
    }
  }
}

void Standardize(Dataset* train, Dataset* val) {
  if (train->task == Task::kLanguageModel) return;
  if (train->shape.size() >= 3) return StandardizeChannels(train, val);  // images (C,H,W), volumes (C,D,H,W)
  const auto f = static_cast<size_t>(train->features);
  std::vector<double> mean(f, 0), var(f, 0);
  for (size_t r = 0; r < static_cast<size_t>(train->rows); ++r) {
    for (size_t j = 0; j < f; ++j) mean[j] += train->x[r * f + j];
  }
  for (auto& m : mean) m /= static_cast<double>(train->rows);
  for (size_t r = 0; r < static_cast<size_t>(train->rows); ++r) {
    for (size_t j = 0; j < f; ++j) var[j] += std::pow(train->x[r * f + j] - mean[j], 2);
  }
  for (auto& v : var) v = std::sqrt(v / static_cast<double>(train->rows));
  for (Dataset* d : {train, val}) {
    for (size_t r = 0; r < static_cast<size_t>(d->rows); ++r) {
      for (size_t j = 0; j < f; ++j) {
        float& x = d->x[r * f + j];
        x = var[j] > 1e-12 ? static_cast<float>((x - mean[j]) / var[j]) : 0.0f;
      }
    }
  }
}

std::string DefaultDataPath(std::string* tried, const char* data_dir) {
  std::vector<std::string> candidates;
  if (data_dir && *data_dir) candidates.push_back(std::string(data_dir) + "/digits.csv.gz");
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back((exe.parent_path() / "../../data/digits.csv.gz").lexically_normal().string());
    candidates.push_back((exe.parent_path() / "../share/ladder/digits.csv.gz").lexically_normal().string());
  }
  candidates.push_back("data/digits.csv.gz");
  for (const auto& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) return c;
    *tried += (tried->empty() ? "" : ", ") + c;
  }
  return "";
}

}  // namespace ladder::trainer
