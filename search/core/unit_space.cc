#include "search/core/unit_space.h"

#include <algorithm>
#include <cmath>

namespace ladder::search {
namespace {

constexpr double kBelowOne = 0x1.fffffffffffffp-1;  // the largest double < 1

struct Scale {
  double a, b;  // transformed bounds
  bool log;
};

Scale ScaleOf(const ParamSpec& p) {
  const bool is_int = p.kind == ParamKind::kInt;
  double lo = is_int ? p.low - 0.5 : p.low, hi = is_int ? p.high + 0.5 : p.high;
  const bool log = p.log && lo > 0;
  return {log ? std::log(lo) : lo, log ? std::log(hi) : hi, log};
}

}  // namespace

UnitSpace::UnitSpace(SearchSpace space) : space_(std::move(space)) {
  parents_.assign(space_.params.size(), -1);
  enabling_.resize(space_.params.size());
  for (size_t i = 0; i < space_.params.size(); ++i) {
    const ParamSpec& p = space_.params[i];
    if (!p.conditional()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (space_.params[j].name != p.condition_param) continue;
      parents_[i] = static_cast<int>(j);
      const auto& ch = space_.params[j].choices;
      enabling_[i].assign(ch.size(), false);
      for (size_t k = 0; k < ch.size(); ++k) {
        enabling_[i][k] = std::find(p.condition_values.begin(), p.condition_values.end(), ch[k]) !=
                          p.condition_values.end();
      }
    }
  }
}

Value UnitSpace::FromUnit(size_t i, double u) const {
  const ParamSpec& p = space_.params[i];
  u = std::clamp(u, 0.0, kBelowOne);
  if (p.kind == ParamKind::kCategorical) {
    auto k = static_cast<size_t>(u * static_cast<double>(p.choices.size()));
    return p.choices[std::min(k, p.choices.size() - 1)];
  }
  Scale s = ScaleOf(p);
  double t = s.a + u * (s.b - s.a);
  double v = s.log ? std::exp(t) : t;
  if (p.kind == ParamKind::kInt) {
    return std::clamp<int64_t>(std::llround(v), static_cast<int64_t>(p.low), static_cast<int64_t>(p.high));
  }
  return std::clamp(v, p.low, p.high);
}

std::optional<double> UnitSpace::ToUnit(size_t i, const Value& v) const {
  const ParamSpec& p = space_.params[i];
  double x;
  if (p.kind == ParamKind::kCategorical) {
    const auto* s = std::get_if<std::string>(&v);
    if (s == nullptr) return std::nullopt;
    auto it = std::find(p.choices.begin(), p.choices.end(), *s);
    if (it == p.choices.end()) return std::nullopt;
    return (static_cast<double>(it - p.choices.begin()) + 0.5) / static_cast<double>(p.choices.size());
  }
  if (const auto* d = std::get_if<double>(&v)) {
    x = *d;
  } else if (const auto* n = std::get_if<int64_t>(&v)) {
    x = static_cast<double>(*n);
  } else {
    return std::nullopt;
  }
  Scale s = ScaleOf(p);
  x = std::clamp(x, p.low, p.high);
  double t = s.log ? std::log(x) : x;
  return std::clamp((t - s.a) / (s.b - s.a), 0.0, kBelowOne);
}

double UnitSpace::Snap(size_t i, double u) const {
  const ParamSpec& p = space_.params[i];
  u = std::clamp(u, 0.0, kBelowOne);
  if (p.kind == ParamKind::kFloat) return u;
  return *ToUnit(i, FromUnit(i, u));
}

uint64_t UnitSpace::levels(size_t i) const {
  const ParamSpec& p = space_.params[i];
  if (p.kind != ParamKind::kInt) return 0;
  return static_cast<uint64_t>(p.high - p.low) + 1;
}

double UnitSpace::LevelEdge(size_t i, uint64_t k) const {
  const ParamSpec& p = space_.params[i];
  Scale s = ScaleOf(p);
  double x = p.low - 0.5 + static_cast<double>(k);
  double t = s.log ? std::log(x) : x;
  return std::clamp((t - s.a) / (s.b - s.a), 0.0, 1.0);
}

bool UnitSpace::ActiveUnder(size_t i, const std::vector<double>& u) const {
  const int j = parents_[i];
  if (j < 0) return true;
  if (!ActiveUnder(static_cast<size_t>(j), u)) return false;
  const size_t k = choices(static_cast<size_t>(j));
  auto c = static_cast<size_t>(std::clamp(u[static_cast<size_t>(j)], 0.0, kBelowOne) * static_cast<double>(k));
  return enabling_[i][std::min(c, k - 1)];
}

Params UnitSpace::Decode(const std::vector<double>& u) const {
  Params out;
  for (size_t i = 0; i < space_.params.size(); ++i) {
    if (ActiveUnder(i, u)) out[space_.params[i].name] = FromUnit(i, u[i]);
  }
  return out;
}

std::vector<double> UnitSpace::Encode(const Params& params, std::vector<bool>* present, double fill) const {
  std::vector<double> u(space_.params.size(), fill);
  if (present != nullptr) present->assign(space_.params.size(), false);
  for (size_t i = 0; i < space_.params.size(); ++i) {
    auto it = params.find(space_.params[i].name);
    if (it == params.end()) continue;
    if (auto x = ToUnit(i, it->second)) {
      u[i] = *x;
      if (present != nullptr) (*present)[i] = true;
    }
  }
  return u;
}

}  // namespace ladder::search
