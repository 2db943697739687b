#include "search/core/scales.h"

#include <cmath>

namespace ladder::search {

std::vector<double> ScalesWindow(const ScalesOptions& o, int64_t batch) {
  const double shift = std::pow(static_cast<double>(batch) / static_cast<double>(o.batches.front()), o.follow);
  const double octaves = std::log2(o.lr_high / o.lr_low);
  const int steps = static_cast<int>(std::floor(octaves * o.per_octave + 1e-9));
  std::vector<double> out;
  for (int k = 0; k <= steps; ++k) out.push_back(o.lr_low * shift * std::exp2(static_cast<double>(k) / o.per_octave));
  return out;
}

std::vector<Params> ScalesGrid(const ScalesOptions& o) {
  std::vector<Params> out;
  for (int64_t b : o.batches) {
    for (double lr : ScalesWindow(o, b)) out.push_back({{kScalesBatchParam, b}, {kScalesLrParam, lr}});
  }
  return out;
}

int64_t ScalesMaxTrials(const ScalesOptions& o) {
  return static_cast<int64_t>(ScalesGrid(o).size()) + static_cast<int64_t>(o.extend) * static_cast<int64_t>(o.batches.size());
}

SearchSpace ScalesSpace(const ScalesOptions& o) {
  SearchSpace s;
  ParamSpec b;
  b.name = kScalesBatchParam;
  b.kind = ParamKind::kInt;
  b.low = static_cast<double>(o.batches.front());
  b.high = static_cast<double>(o.batches.back());
  b.log = true;
  s.params.push_back(b);
  // Every window, widened by the extensions on both sides.
  const double margin = std::exp2(static_cast<double>(o.extend) / o.per_octave);
  ParamSpec lr;
  lr.name = kScalesLrParam;
  lr.kind = ParamKind::kFloat;
  lr.low = ScalesWindow(o, o.batches.front()).front() / margin;
  lr.high = ScalesWindow(o, o.batches.back()).back() * margin;
  lr.log = true;
  s.params.push_back(lr);
  return s;
}

}  // namespace ladder::search
