#pragma once
// Internal to search/: the stopping rules' factories (one file each) and what they share.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "search/stopping/stopping_rule.h"

namespace ladder::search::internal {

std::unique_ptr<StoppingRule> MakeAshaRule(const StoppingOptions& options, bool maximize,
                                                  int brackets);                     // asha.cc
// median_stopping.cc
std::unique_ptr<StoppingRule> MakeMedianStopping(const StoppingOptions& options, bool maximize);
std::unique_ptr<StoppingRule> MakePbtRule(const StoppingOptions& options, bool maximize,
                                                 const SearchSpace& space);          // pbt.cc

// The objective as a loss (lower is better): negated when maximizing; not finite: +inf.
inline double AsLoss(double value, bool maximize) {
  if (!std::isfinite(value)) return std::numeric_limits<double>::infinity();
  return maximize ? -value : value;
}

// Relative tolerance when comparing resources with rungs and intervals (R / r = eta^k computed in floating
// point must still land on the rung).
inline constexpr double kResourceTolerance = 1e-9;
inline bool Reached(double resource, double milestone) {
  return resource >= milestone - kResourceTolerance * std::abs(milestone);
}

// A number for a reason line: 4 significant digits.
inline std::string Fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace ladder::search::internal
