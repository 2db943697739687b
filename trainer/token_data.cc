// Token-sequence data for the language-model workload (data_sources.h: text:, markov:). A sample is T token
// ids (stored as exact floats in Dataset::x) and its labels are the T next tokens.
#include <zlib.h>

#include <algorithm>
#include <random>

#include "trainer/data_sources.h"

namespace ladder::trainer {

bool LoadText(const std::string& path, int64_t seq_len, Dataset* out, std::string* error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) {
    *error = path + ": cannot open";
    return false;
  }
  std::vector<unsigned char> bytes;
  unsigned char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  gzclose(f);
  if (n < 0) {
    *error = path + ": read error";
    return false;
  }
  // Non-overlapping windows of seq_len + 1 bytes: inputs are the first seq_len, labels the last seq_len.
  const int64_t rows = bytes.size() > 0 ? (static_cast<int64_t>(bytes.size()) - 1) / seq_len : 0;
  if (rows < 2) {
    *error = path + ": " + std::to_string(bytes.size()) + " bytes make fewer than 2 sequences of " +
             std::to_string(seq_len) + " tokens (+1); use a larger file or a smaller --seq-len";
    return false;
  }
  Dataset d;
  d.rows = rows;
  d.features = seq_len;
  d.classes = 256;
  d.shape = {seq_len};
  d.label_size = seq_len;
  d.task = Task::kLanguageModel;
  d.x.reserve(static_cast<size_t>(rows * seq_len));
  d.y.reserve(static_cast<size_t>(rows * seq_len));
  for (int64_t r = 0; r < rows; ++r) {
    const size_t base = static_cast<size_t>(r * seq_len);
    for (int64_t t = 0; t < seq_len; ++t) {
      d.x.push_back(static_cast<float>(bytes[base + static_cast<size_t>(t)]));
      d.y.push_back(bytes[base + static_cast<size_t>(t) + 1]);
    }
  }
  *out = std::move(d);
  return true;
}

Dataset MakeMarkovText(int64_t rows, int64_t seq_len, int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  // A sparse second-order chain: each (previous, current) pair prefers 3 successors (90% of the mass), so the
  // task rewards attending beyond the last token; the rest is uniform.
  constexpr int kPreferred = 3;
  const int64_t pairs = vocab * vocab;
  std::vector<int64_t> succ(static_cast<size_t>(pairs * kPreferred));
  for (auto& s : succ) s = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
  Dataset d;
  d.rows = rows;
  d.features = seq_len;
  d.classes = vocab;
  d.shape = {seq_len};
  d.label_size = seq_len;
  d.task = Task::kLanguageModel;
  d.x.reserve(static_cast<size_t>(rows * seq_len));
  d.y.reserve(static_cast<size_t>(rows * seq_len));
  std::vector<int64_t> seq(static_cast<size_t>(seq_len + 1));
  for (int64_t r = 0; r < rows; ++r) {
    seq[0] = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
    seq[1] = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
    for (size_t t = 2; t < seq.size(); ++t) {
      const double p = u(rng);
      if (p < 0.9) {
        const auto k = static_cast<size_t>(p < 0.6 ? 0 : p < 0.8 ? 1 : 2);
        seq[t] = succ[static_cast<size_t>((seq[t - 2] * vocab + seq[t - 1]) * kPreferred) + k];
      } else {
        seq[t] = static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab));
      }
    }
    for (int64_t t = 0; t < seq_len; ++t) {
      d.x.push_back(static_cast<float>(seq[static_cast<size_t>(t)]));
      d.y.push_back(seq[static_cast<size_t>(t + 1)]);
    }
  }
  return d;
}

}  // namespace ladder::trainer
