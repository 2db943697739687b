#include "trainer/data_sources.h"

#include <zlib.h>

#include <cmath>
#include <random>

#include "trainer/hdf5_dataset.h"

namespace ladder::trainer {

namespace {

// Reads a whole (optionally gzip) file.
bool ReadAll(const std::string& path, std::vector<unsigned char>* out, std::string* error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    *error = path + ": cannot open";
    return false;
  }
  out->clear();
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out->insert(out->end(), buf, buf + n);
  bool ok = n == 0;
  gzclose(f);
  if (!ok) *error = path + ": read error";
  return ok;
}

uint32_t BigEndian(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

}  // namespace

bool LoadMnistIdx(const std::string& images, const std::string& labels, Dataset* out, std::string* error) {
  std::vector<unsigned char> im, lb;
  if (!ReadAll(images, &im, error) || !ReadAll(labels, &lb, error)) return false;
  if (im.size() < 16 || BigEndian(im.data()) != 0x00000803) {
    *error = images + ": not an IDX image file (magic 0x00000803 expected)";
    return false;
  }
  if (lb.size() < 8 || BigEndian(lb.data()) != 0x00000801) {
    *error = labels + ": not an IDX label file (magic 0x00000801 expected)";
    return false;
  }
  const int64_t n = BigEndian(&im[4]), rows = BigEndian(&im[8]), cols = BigEndian(&im[12]);
  if (static_cast<int64_t>(im.size()) != 16 + n * rows * cols) {
    *error = images + ": " + std::to_string(n) + " images of " + std::to_string(rows) + "x" + std::to_string(cols) +
             " need " + std::to_string(16 + n * rows * cols) + " bytes, the file has " + std::to_string(im.size());
    return false;
  }
  if (static_cast<int64_t>(BigEndian(&lb[4])) != n || static_cast<int64_t>(lb.size()) != 8 + n) {
    *error = labels + ": " + std::to_string(BigEndian(&lb[4])) + " labels for " + std::to_string(n) + " images";
    return false;
  }
  Dataset d;
  d.rows = n;
  d.features = rows * cols;
  d.shape = {1, rows, cols};
  d.x.reserve(static_cast<size_t>(n * rows * cols));
  for (size_t i = 16; i < im.size(); ++i) d.x.push_back(static_cast<float>(im[i]));
  int64_t max_label = 0;
  for (int64_t i = 0; i < n; ++i) {
    d.y.push_back(lb[static_cast<size_t>(8 + i)]);
    max_label = std::max(max_label, d.y.back());
  }
  d.classes = max_label + 1;
  *out = std::move(d);
  return true;
}

bool LoadCifar10(const std::vector<std::string>& files, Dataset* out, std::string* error) {
  constexpr int64_t kRecord = 1 + 3072;
  Dataset d;
  d.features = 3072;
  d.classes = 10;
  d.shape = {3, 32, 32};
  for (const auto& f : files) {
    std::vector<unsigned char> bytes;
    if (!ReadAll(f, &bytes, error)) return false;
    if (bytes.empty() || static_cast<int64_t>(bytes.size()) % kRecord != 0) {
      *error = f + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of CIFAR-10 records (" +
               std::to_string(kRecord) + " bytes each)";
      return false;
    }
    for (size_t r = 0; r < bytes.size(); r += kRecord) {
      if (bytes[r] > 9) {
        *error = f + ": record " + std::to_string(r / kRecord) + " has label " + std::to_string(bytes[r]) + " (0..9)";
        return false;
      }
      d.y.push_back(bytes[r]);
      for (int64_t j = 1; j < kRecord; ++j) d.x.push_back(static_cast<float>(bytes[r + static_cast<size_t>(j)]));
      ++d.rows;
    }
  }
  *out = std::move(d);
  return true;
}

Dataset MakeSynthetic(int64_t rows, int64_t features, int64_t classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  // Class means on a sphere of radius 1.5: overlapping classes, so the task stays noisy at large batches.
  std::vector<float> means(static_cast<size_t>(classes * features));
  for (auto& m : means) m = g(rng);
  for (int64_t c = 0; c < classes; ++c) {
    double norm = 0;
    for (int64_t j = 0; j < features; ++j) norm += std::pow(means[static_cast<size_t>(c * features + j)], 2);
    for (int64_t j = 0; j < features; ++j) {
      means[static_cast<size_t>(c * features + j)] *= static_cast<float>(1.5 / std::sqrt(norm));
    }
  }
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.classes = classes;
  d.x.reserve(static_cast<size_t>(rows * features));
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t c = static_cast<int64_t>(rng() % static_cast<uint64_t>(classes));
    for (int64_t j = 0; j < features; ++j) d.x.push_back(means[static_cast<size_t>(c * features + j)] + g(rng));
    // 5% label noise.
    d.y.push_back(u(rng) < 0.05 ? static_cast<int64_t>(rng() % static_cast<uint64_t>(classes)) : c);
  }
  return d;
}

// Parses "A[:B[:C]]" into `values` (defaults kept for missing parts); `mins` are the smallest allowed values.
static bool ParseCounts(const std::string& kind, const std::string& rest, const std::string& usage,
                 std::vector<int64_t>& values, const std::vector<int64_t>& mins, std::string* error) {
  auto parts = Split(rest, ':');
  if (parts.size() > values.size()) {
    *error = "--data " + usage + ": too many fields in '" + kind + ":" + rest + "'";
    return false;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    char* end = nullptr;
    long long v = std::strtoll(parts[i].c_str(), &end, 10);
    if (parts[i].empty() || *end != '\0' || v < mins[i]) {
      *error = "--data " + usage + ": bad number '" + parts[i] + "' (at least " + std::to_string(mins[i]) + ")";
      return false;
    }
    values[i] = v;
  }
  return true;
}

std::vector<std::string> DataFiles(const std::string& spec) {
  auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "idx" || kind == "cifar10") return Split(rest, ',');
  if (kind == "synthetic" || kind == "teacher" || kind == "climate" || kind == "cosmo" || kind == "markov") return {};
  if (kind == "hdf5") {  // FILE or FILE:X,Y (hdf5_dataset.h ParseHdf5Spec)
    const auto c = rest.rfind(':');
    return {c != std::string::npos && rest.find(',', c) != std::string::npos ? rest.substr(0, c) : rest};
  }
  if (kind == "text") return {rest};
  return {spec};
}

bool LoadData(const std::string& spec, const DataOptions& options, Dataset* out, std::string* error) {
  auto colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? "" : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  constexpr uint64_t kDataSeed = 20261122;  // generated data is the same for every trial
  if (kind == "idx") {
    auto parts = Split(rest, ',');
    if (parts.size() != 2) {
      *error = "--data idx:IMAGES,LABELS expects two files, got '" + rest + "'";
      return false;
    }
    return LoadMnistIdx(parts[0], parts[1], out, error);
  }
  if (kind == "cifar10") return LoadCifar10(Split(rest, ','), out, error);
  if (kind == "synthetic") {
    std::vector<int64_t> v = {0, 32, 10};
    if (!ParseCounts(kind, rest, "synthetic:ROWS[:FEATURES[:CLASSES]]", v, {2, 1, 2}, error)) return false;
    *out = MakeSynthetic(v[0], v[1], v[2], kDataSeed);
    return true;
  }
  if (kind == "teacher") {
    TeacherOptions o;
    if (!ParseTeacher(rest, &o, error)) return false;
    *out = MakeTeacher(o, kDataSeed);
    return true;
  }
  if (kind == "climate") {
    std::vector<int64_t> v = {0, 32};
    if (!ParseCounts(kind, rest, "climate:ROWS[:SIZE]", v, {2, 8}, error)) return false;
    if (v[1] % 4 != 0) {
      *error = "--data climate:ROWS[:SIZE]: SIZE must be a multiple of 4, got " + std::to_string(v[1]);
      return false;
    }
    *out = MakeClimate(v[0], v[1], kDataSeed);
    return true;
  }
  if (kind == "cosmo") {
    std::vector<int64_t> v = {0, 16};
    if (!ParseCounts(kind, rest, "cosmo:ROWS[:SIZE]", v, {2, 4}, error)) return false;
    if (v[1] % 2 != 0) {
      *error = "--data cosmo:ROWS[:SIZE]: SIZE must be even, got " + std::to_string(v[1]);
      return false;
    }
    *out = MakeCosmo(v[0], v[1], kDataSeed);
    return true;
  }
  if (kind == "hdf5") return LoadHdf5Spec(rest, out, error);
  if (kind == "markov") {
    std::vector<int64_t> v = {0, options.seq_len, 64};
    if (!ParseCounts(kind, rest, "markov:ROWS[:SEQ[:VOCAB]]", v, {2, 2, 2}, error)) return false;
    *out = MakeMarkovText(v[0], v[1], v[2], kDataSeed);
    return true;
  }
  if (kind == "text") return LoadText(rest, options.seq_len, out, error);
  return LoadCsv(spec, out, error);
}

}  // namespace ladder::trainer
