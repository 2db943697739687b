#pragma once
// Helpers for the sampler tests: building specs and parameters in code.
#include <string>
#include <utility>
#include <vector>

#include "search/core/spec.h"

namespace ladder::search::testing {

inline SearchSpec SpecWith(std::vector<ParamSpec> params, std::string sampler, uint64_t seed = 0,
                           bool maximize = false) {
  SearchSpec s;
  s.name = "t";
  s.sampler = std::move(sampler);
  s.seed = seed;
  s.objective.maximize = maximize;
  s.space.params = std::move(params);
  return s;
}

inline ParamSpec FloatParam(std::string name, double low, double high, bool log = false) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = ParamKind::kFloat;
  p.low = low;
  p.high = high;
  p.log = log;
  return p;
}

inline ParamSpec IntParam(std::string name, double low, double high, bool log = false) {
  ParamSpec p = FloatParam(std::move(name), low, high, log);
  p.kind = ParamKind::kInt;
  return p;
}

inline ParamSpec CatParam(std::string name, std::vector<std::string> choices) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = ParamKind::kCategorical;
  p.choices = std::move(choices);
  return p;
}

inline ParamSpec When(ParamSpec p, std::string parent, std::vector<std::string> values) {
  p.condition_param = std::move(parent);
  p.condition_values = std::move(values);
  return p;
}

}  // namespace ladder::search::testing
