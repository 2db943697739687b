#include "search/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ladder::search {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The generator of one trial: a function of (seed, trial_number) only, so Ask(n) does not depend on which
// trials were asked before.
std::mt19937_64 TrialRng(uint64_t seed, int64_t trial_number) {
  return std::mt19937_64(SplitMix64(SplitMix64(seed) ^ SplitMix64(static_cast<uint64_t>(trial_number) + 1)));
}

// The conversions below are written out (not std::*_distribution) so samples are the same with every
// standard library.
double Uniform01(std::mt19937_64& rng) {  // [0, 1)
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {  // [0, n), n >= 1, unbiased
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(const SearchSpec& spec) : space_(spec.space), seed_(spec.seed) {}

  std::optional<Params> Ask(int64_t trial_number) override {
    if (trial_number < 0) return std::nullopt;
    std::mt19937_64 rng = TrialRng(seed_, trial_number);
    Params params;
    for (const ParamSpec& p : space_.params) params[p.name] = Sample(p, rng);
    return params;
  }

  void Tell(int64_t, const Params&, std::optional<double>) override {}

 private:
  static Value Sample(const ParamSpec& p, std::mt19937_64& rng) {
    switch (p.kind) {
      case ParamKind::kFloat: {
        double u = Uniform01(rng);
        double v = p.log ? std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)))
                         : p.low + u * (p.high - p.low);
        return std::clamp(v, p.low, p.high);
      }
      case ParamKind::kInt: {
        const auto low = static_cast<int64_t>(p.low), high = static_cast<int64_t>(p.high);
        if (!p.log) {
          return low + static_cast<int64_t>(UniformBelow(rng, static_cast<uint64_t>(high - low) + 1));
        }
        // Log-uniform over [low - 0.5, high + 0.5], rounded: every integer gets its share, endpoints included.
        double a = std::log(p.low - 0.5), b = std::log(p.high + 0.5);
        auto v = static_cast<int64_t>(std::llround(std::exp(a + Uniform01(rng) * (b - a))));
        return std::clamp(v, low, high);
      }
      case ParamKind::kCategorical:
        return p.choices[UniformBelow(rng, p.choices.size())];
    }
    return 0.0;
  }

  SearchSpace space_;
  uint64_t seed_;
};

class GridSampler : public Sampler {
 public:
  explicit GridSampler(const SearchSpec& spec) {
    for (const ParamSpec& p : spec.space.params) {
      names_.push_back(p.name);
      axes_.push_back(GridValues(p));
      size_ *= static_cast<int64_t>(axes_.back().size());
    }
  }

  std::optional<Params> Ask(int64_t trial_number) override {
    if (trial_number < 0 || trial_number >= size_) return std::nullopt;
    Params params;
    int64_t rest = trial_number;
    for (size_t i = axes_.size(); i-- > 0;) {  // the last parameter varies fastest
      const auto n = static_cast<int64_t>(axes_[i].size());
      params[names_[i]] = axes_[i][static_cast<size_t>(rest % n)];
      rest /= n;
    }
    return params;
  }

  void Tell(int64_t, const Params&, std::optional<double>) override {}
  std::optional<int64_t> Size() const override { return size_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Value>> axes_;
  int64_t size_ = 1;
};

}  // namespace

int64_t GridSize(const SearchSpace& space) {
  int64_t size = 1;
  for (const ParamSpec& p : space.params) {
    const auto n = static_cast<int64_t>(GridValues(p).size());
    if (n == 0) return 0;
    size = size > INT64_MAX / n ? INT64_MAX : size * n;
  }
  return size;
}

std::unique_ptr<Sampler> MakeSampler(const SearchSpec& spec) {
  if (spec.sampler == "grid") return std::make_unique<GridSampler>(spec);
  return std::make_unique<RandomSampler>(spec);
}

}  // namespace ladder::search
