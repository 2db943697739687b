#include "bench/search_problems.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

namespace ladder::bench {
namespace {

using search::ParamKind;
using search::Params;
using search::ParamSpec;
using search::SearchSpace;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

ParamSpec Float(std::string name, double low, double high) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = ParamKind::kFloat;
  p.low = low;
  p.high = high;
  return p;
}

class Synthetic : public Problem {
 public:
  using Fn = double (*)(const std::vector<double>&);
  Synthetic(int dims, double low, double high, Fn f, double optimum) : f_(f), optimum_(optimum) {
    for (int i = 0; i < dims; ++i) space_.params.push_back(Float("x" + std::to_string(i), low, high));
  }
  Synthetic(std::vector<std::pair<double, double>> box, Fn f, double optimum) : f_(f), optimum_(optimum) {
    for (size_t i = 0; i < box.size(); ++i) space_.params.push_back(Float("x" + std::to_string(i), box[i].first, box[i].second));
  }
  const SearchSpace& space() const override { return space_; }
  bool maximize() const override { return false; }
  double Evaluate(const Params& p, uint64_t, int64_t) const override { return f_(X(p)); }
  double Regret(const Params& p) const override { return std::max(0.0, f_(X(p)) - optimum_); }
  double TrueValue(const Params& p) const override { return f_(X(p)); }

 private:
  std::vector<double> X(const Params& p) const {
    std::vector<double> x;
    for (const ParamSpec& s : space_.params) x.push_back(std::get<double>(p.at(s.name)));
    return x;
  }
  SearchSpace space_;
  Fn f_;
  double optimum_;
};

double Branin(const std::vector<double>& x) {
  const double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10, t = 1 / (8 * M_PI);
  return a * std::pow(x[1] - b * x[0] * x[0] + c * x[0] - r, 2) + s * (1 - t) * std::cos(x[0]) + s;
}

double Hartmann6(const std::vector<double>& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8},
                                 {17, 8, 0.05, 10, 0.1, 14}};
  static const double p[4][6] = {{1312, 1696, 5569, 124, 8283, 5886}, {2329, 4135, 8307, 3736, 1004, 9991},
                                 {2348, 1451, 3522, 2883, 3047, 6650}, {4047, 8828, 8732, 5743, 1091, 381}};
  double f = 0;
  for (int i = 0; i < 4; ++i) {
    double e = 0;
    for (int j = 0; j < 6; ++j) e += a[i][j] * std::pow(x[j] - p[i][j] * 1e-4, 2);
    f -= alpha[i] * std::exp(-e);
  }
  return f;
}

double Rosenbrock(const std::vector<double>& x) {
  double f = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i) f += 100 * std::pow(x[i + 1] - x[i] * x[i], 2) + std::pow(1 - x[i], 2);
  return f;
}

double Levy(const std::vector<double>& x) {
  auto w = [&](size_t i) { return 1 + (x[i] - 1) / 4; };
  const size_t d = x.size();
  double f = std::pow(std::sin(M_PI * w(0)), 2);
  for (size_t i = 0; i + 1 < d; ++i) {
    f += std::pow(w(i) - 1, 2) * (1 + 10 * std::pow(std::sin(M_PI * w(i) + 1), 2));
  }
  f += std::pow(w(d - 1) - 1, 2) * (1 + std::pow(std::sin(2 * M_PI * w(d - 1)), 2));
  return f;
}

class Table : public Problem {
 public:
  explicit Table(SeedSlice slice) : slice_(slice) {}
  const SearchSpace& space() const override { return space_; }
  bool maximize() const override { return maximize_; }

  double Evaluate(const Params& p, uint64_t run_seed, int64_t trial) const override {
    auto it = rows_.find(Key(p));
    if (it == rows_.end()) return worst_;
    const std::vector<double>& v = it->second;
    return v[NoiseIndex(run_seed, trial, v.size())];
  }

  double Regret(const Params& p) const override {
    const double m = TrueValue(p);
    return maximize_ ? best_mean_ - m : m - best_mean_;
  }
  double TrueValue(const Params& p) const override {
    auto it = means_.find(Key(p));
    return it == means_.end() ? worst_ : it->second;
  }
  double WorstValue() const override { return worst_; }
  double ColumnNumber(const Params& p, const std::string& name) const override {
    for (size_t j = 0; j < space_.params.size(); ++j) {
      if (space_.params[j].name != name || space_.params[j].kind != ParamKind::kInt) continue;
      const auto k = static_cast<size_t>(std::get<int64_t>(p.at(name)));
      return std::strtod(column_values_[j].at(k).c_str(), nullptr);
    }
    return std::numeric_limits<double>::quiet_NaN();
  }

  bool Load(const std::string& path, std::string* error) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) {
      *error = path + ": cannot open";
      return false;
    }
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
    gzclose(f);
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line.rfind("#", 0) != 0) {
      *error = path + ":1: expected the '# bench/dataset: direction=... metric=...' comment";
      return false;
    }
    if (line.find("direction=maximize") != std::string::npos) {
      maximize_ = true;
    } else if (line.find("direction=minimize") == std::string::npos) {
      *error = path + ":1: no direction=minimize|maximize";
      return false;
    }
    std::getline(in, line);
    std::vector<std::string> header = Split(line);
    size_t params = 0;
    while (params < header.size() && header[params].rfind("seed", 0) != 0) ++params;
    if (params == 0 || params == header.size()) {
      *error = path + ":2: expected parameter columns then seed0..seedK-1";
      return false;
    }
    std::vector<std::vector<std::string>> cells;
    std::vector<std::vector<double>> values;
    int line_no = 2;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      std::vector<std::string> c = Split(line);
      // A row may lack some seeds' values (NAS-Bench-201 has such rows): it is evaluated on those it has.
      std::vector<double> v;
      bool any = false;
      for (size_t i = params; i < c.size() && i < header.size(); ++i) {
        any = any || !c[i].empty();
        if (!c[i].empty() && InSlice(i - params)) v.push_back(std::strtod(c[i].c_str(), nullptr));
      }
      if (c.size() > header.size() || !any) {
        *error = path + ":" + std::to_string(line_no) + ": expected " + std::to_string(params) +
                 " parameters and 1 to " + std::to_string(header.size() - params) + " seed values";
        return false;
      }
      cells.emplace_back(c.begin(), c.begin() + static_cast<long>(params));
      values.push_back(std::move(v));
    }
    // Columns: numeric -> ordinal index; else categorical.
    for (size_t j = 0; j < params; ++j) {
      bool numeric = true;
      std::set<std::string> distinct;
      for (const auto& row : cells) {
        distinct.insert(row[j]);
        char* end = nullptr;
        std::strtod(row[j].c_str(), &end);
        if (end == row[j].c_str() || *end != '\0') numeric = false;
      }
      std::vector<std::string> order(distinct.begin(), distinct.end());
      if (numeric) {
        std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
          return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
        });
      }
      ParamSpec p;
      p.name = header[j];
      if (numeric) {
        p.kind = ParamKind::kInt;
        p.low = 0;
        p.high = static_cast<double>(order.size() - 1);
      } else {
        p.kind = ParamKind::kCategorical;
        p.choices = order;
      }
      space_.params.push_back(p);
      std::map<std::string, int> index;
      for (size_t k = 0; k < order.size(); ++k) index[order[k]] = static_cast<int>(k);
      column_index_.push_back(index);
      column_values_.push_back(order);
    }
    best_mean_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    worst_ = -best_mean_;
    for (size_t r = 0; r < cells.size(); ++r) {
      if (values[r].empty()) continue;  // no value in this slice of the seeds: evaluated as the worst
      std::vector<int> key;
      for (size_t j = 0; j < params; ++j) key.push_back(column_index_[j].at(cells[r][j]));
      double mean = 0;
      for (double v : values[r]) mean += v;
      mean /= static_cast<double>(values[r].size());
      for (double v : values[r]) worst_ = maximize_ ? std::min(worst_, v) : std::max(worst_, v);
      best_mean_ = maximize_ ? std::max(best_mean_, mean) : std::min(best_mean_, mean);
      means_[key] = mean;
      rows_[key] = values[r];
    }
    return true;
  }

 private:
  static std::vector<std::string> Split(const std::string& line) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : line) {
      if (c == ',') {
        out.push_back(cur);
        cur.clear();
      } else if (c != '\r') {
        cur += c;
      }
    }
    out.push_back(cur);
    return out;
  }

  std::vector<int> Key(const Params& p) const {
    std::vector<int> key;
    for (size_t j = 0; j < space_.params.size(); ++j) {
      const ParamSpec& s = space_.params[j];
      const search::Value& v = p.at(s.name);
      if (s.kind == ParamKind::kInt) {
        key.push_back(static_cast<int>(std::get<int64_t>(v)));
      } else {
        key.push_back(column_index_[j].at(std::get<std::string>(v)));
      }
    }
    return key;
  }

  // Whether seed column k (0-based among the seed columns) is in the slice.
  bool InSlice(size_t k) const {
    return slice_ == SeedSlice::kAll || (slice_ == SeedSlice::kEven) == (k % 2 == 0);
  }

  SeedSlice slice_;
  SearchSpace space_;
  bool maximize_ = false;
  std::vector<std::map<std::string, int>> column_index_;
  std::vector<std::vector<std::string>> column_values_;  // per column: its values by ordinal index
  std::map<std::vector<int>, std::vector<double>> rows_;
  std::map<std::vector<int>, double> means_;
  double best_mean_ = 0, worst_ = 0;
};

}  // namespace

double Problem::WorstValue() const { return std::numeric_limits<double>::quiet_NaN(); }
double Problem::ColumnNumber(const Params&, const std::string&) const { return std::numeric_limits<double>::quiet_NaN(); }

uint64_t NoiseIndex(uint64_t run_seed, int64_t trial, uint64_t seeds) {
  return SplitMix64((run_seed << 20) ^ static_cast<uint64_t>(trial)) % seeds;
}

// The timing space (the peer uses the same): 5 floats (one log), 2 ints (one log), 2 categoricals.
search::SearchSpec TimingSpec(const std::string& sampler) {
  search::SearchSpec spec;
  spec.name = "timing";
  spec.sampler = sampler;
  spec.seed = 1;
  auto add = [&](std::string name, search::ParamKind kind, double lo, double hi, bool log, std::vector<std::string> ch = {}) {
    search::ParamSpec p;
    p.name = std::move(name);
    p.kind = kind;
    p.low = lo;
    p.high = hi;
    p.log = log;
    p.choices = std::move(ch);
    spec.space.params.push_back(p);
  };
  add("lr", search::ParamKind::kFloat, 1e-5, 1e-1, true);
  for (int i = 0; i < 4; ++i) add("x" + std::to_string(i), search::ParamKind::kFloat, 0, 1, false);
  add("width", search::ParamKind::kInt, 8, 1024, true);
  add("depth", search::ParamKind::kInt, 1, 8, false);
  add("act", search::ParamKind::kCategorical, 0, 0, false, {"relu", "tanh", "gelu"});
  add("opt", search::ParamKind::kCategorical, 0, 0, false, {"sgd", "adam"});
  return spec;
}

double TimingObjective(const Params& p) {
  double v = std::pow(std::log10(std::get<double>(p.at("lr"))) + 3, 2);
  for (int i = 0; i < 4; ++i) v += std::pow(std::get<double>(p.at("x" + std::to_string(i))) - 0.3, 2);
  v += std::abs(std::log2(static_cast<double>(std::get<int64_t>(p.at("width")))) - 7) * 0.1;
  v += std::get<std::string>(p.at("act")) == "gelu" ? 0 : 0.2;
  return v;
}

std::vector<std::string> SyntheticProblemNames() { return {"branin", "hartmann6", "rosenbrock20", "levy10"}; }

search::SearchSpec RunSpec(const Problem& problem, const std::string& sampler, uint64_t seed, int budget) {
  search::SearchSpec spec;
  spec.name = "bench";
  spec.sampler = sampler;
  spec.seed = seed;
  spec.objective.maximize = problem.maximize();
  spec.space = problem.space();
  spec.max_trials = budget;
  spec.parallelism = 1;
  return spec;
}

std::unique_ptr<Problem> MakeSyntheticProblem(const std::string& name) {
  if (name == "branin") return std::make_unique<Synthetic>(std::vector<std::pair<double, double>>{{-5, 10}, {0, 15}}, &Branin, 0.397887357729738);
  if (name == "hartmann6") return std::make_unique<Synthetic>(6, 0.0, 1.0, &Hartmann6, -3.32236801141551);
  if (name == "rosenbrock20") return std::make_unique<Synthetic>(20, -5.0, 10.0, &Rosenbrock, 0.0);
  if (name == "levy10") return std::make_unique<Synthetic>(10, -10.0, 10.0, &Levy, 0.0);
  return nullptr;
}

std::unique_ptr<Problem> LoadTableProblem(const std::string& path, std::string* error, SeedSlice slice) {
  auto t = std::make_unique<Table>(slice);
  if (!t->Load(path, error)) return nullptr;
  return t;
}

}  // namespace ladder::bench
