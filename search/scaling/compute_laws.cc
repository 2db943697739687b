// Power laws lr = a·C^α and B = b·C^β against compute, over every configuration within a tolerance of the best
// loss at its budget (DeepSeek LLM, 2024, section 3.1); the trials grouped into compute budgets.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "search/scaling/extrapolation.h"
#include "search/scaling/extrapolation_internal.h"
#include "search/scaling/scale_math.h"

namespace ladder::search {
namespace extrapolation_internal {

// ---- power laws against compute ----------------------------------------------------------------------------
namespace {

using internal::FitLine;

double ComputeOf(const ScaleTrial& t) {
  return t.compute > 0 ? t.compute : static_cast<double>(t.steps) * static_cast<double>(t.global_batch);
}

}  // namespace

std::vector<Group> ComputeGroups(const std::vector<const ScaleTrial*>& convergent, double tolerance) {
  std::vector<const ScaleTrial*> sorted = convergent;
  std::sort(sorted.begin(), sorted.end(),
            [](const ScaleTrial* a, const ScaleTrial* b) { return ComputeOf(*a) < ComputeOf(*b); });
  std::vector<Group> groups;
  for (const ScaleTrial* t : sorted) {
    if (groups.empty() || ComputeOf(*t) > ComputeOf(*groups.back().front()) * (1 + tolerance)) groups.emplace_back();
    groups.back().push_back(t);
  }
  return groups;
}

std::optional<LawPair> FitComputeLaws(const std::vector<Group>& groups, double tolerance) {
  std::vector<double> lc, llr, lb;
  for (const Group& g : groups) {
    if (g.empty()) continue;
    double best = g.front()->final_loss, c = 0;
    for (const ScaleTrial* t : g) best = std::min(best, t->final_loss), c += std::log(ComputeOf(*t));
    c /= static_cast<double>(g.size());
    for (const ScaleTrial* t : g) {
      if (t->final_loss <= best + tolerance * std::abs(best)) {
        lc.push_back(c);
        llr.push_back(std::log(t->peak_lr));
        lb.push_back(std::log(static_cast<double>(t->global_batch)));
      }
    }
  }
  auto lr = FitLine(lc, llr);
  auto b = FitLine(lc, lb);
  if (!lr || !b) return std::nullopt;
  return LawPair{*lr, *b, static_cast<int>(lc.size())};
}

}  // namespace extrapolation_internal
}  // namespace ladder::search
