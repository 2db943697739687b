#pragma once
// Internal to search/: TPE's choice of a configuration from its good and bad groups, shared by the
// single-objective TPE (tpe_sampler.cc) and the multi-objective one (search/multiobjective/motpe_sampler.cc),
// which differ only in how they split the trials into the two groups.
//
// The always-active coordinates (`joint`) are modelled jointly: `candidates` points are drawn from l(x), the
// Parzen mixture of the good group, and scored by log l(x) - log g(x) (g: the bad group's). Each conditional
// coordinate gets its own one-dimensional pair over the trials in which it was active, drawn and added to a
// candidate's score only when the candidate activates it (never seen active: drawn from its prior). The
// candidate with the largest score wins. split(group) gives group 0 (the joint coordinates) and 1 + i
// (conditional[i]); it is called in that order, once each, group 0 before any draw from `rng`.
#include <cstddef>
#include <functional>
#include <random>
#include <vector>

#include "search/core/unit_space.h"

namespace ladder::search::internal {

struct TpeGroups {
  std::vector<const std::vector<double>*> good, bad;  // the trials' unit coordinates
  std::vector<double> good_w, bad_w;                  // their weights in the mixtures
};

std::vector<double> ChooseTpeCandidate(const UnitSpace& unit, const std::vector<size_t>& joint,
                                       const std::vector<size_t>& conditional,
                                       const std::function<TpeGroups(size_t group)>& split, int candidates,
                                       std::mt19937_64& rng);

}  // namespace ladder::search::internal
