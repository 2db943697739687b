#include "bench/mo_problems.h"

#include <algorithm>
#include <cmath>

#include "bench/search_problems.h"

namespace ladder::bench {
namespace {

using search::ParamKind;
using search::Params;
using search::ParamSpec;
using search::SearchSpace;

class Synthetic : public MoProblem {
 public:
  using Fn = std::vector<double> (*)(const std::vector<double>&);
  Synthetic(int dims, Fn f, std::vector<double> ref) : f_(f), ref_(std::move(ref)) {
    for (int i = 0; i < dims; ++i) {
      ParamSpec p;
      p.name = "x" + std::to_string(i);
      p.kind = ParamKind::kFloat;
      p.low = 0;
      p.high = 1;
      space_.params.push_back(p);
    }
  }
  const SearchSpace& space() const override { return space_; }
  std::vector<double> Evaluate(const Params& p, uint64_t, int64_t) const override { return TrueValues(p); }
  std::vector<double> TrueValues(const Params& p) const override {
    std::vector<double> x;
    for (const ParamSpec& s : space_.params) x.push_back(std::get<double>(p.at(s.name)));
    return f_(x);
  }
  std::vector<double> Reference() const override { return ref_; }

 private:
  SearchSpace space_;
  Fn f_;
  std::vector<double> ref_;
};

double ZdtG(const std::vector<double>& x) {
  double s = 0;
  for (size_t i = 1; i < x.size(); ++i) s += x[i];
  return 1 + 9 * s / static_cast<double>(x.size() - 1);
}

std::vector<double> Zdt1(const std::vector<double>& x) {
  const double g = ZdtG(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g))};
}

std::vector<double> Zdt2(const std::vector<double>& x) {
  const double g = ZdtG(x);
  return {x[0], g * (1 - std::pow(x[0] / g, 2))};
}

std::vector<double> Zdt3(const std::vector<double>& x) {
  const double g = ZdtG(x);
  return {x[0], g * (1 - std::sqrt(x[0] / g) - x[0] / g * std::sin(10 * M_PI * x[0]))};
}

std::vector<double> Dtlz2(const std::vector<double>& x) {  // 3 objectives
  double g = 0;
  for (size_t i = 2; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  const double a = x[0] * M_PI / 2, b = x[1] * M_PI / 2;
  return {(1 + g) * std::cos(a) * std::cos(b), (1 + g) * std::cos(a) * std::sin(b), (1 + g) * std::sin(a)};
}

std::vector<double> Dtlz2Of2(const std::vector<double>& x) {  // 2 objectives
  double g = 0;
  for (size_t i = 1; i < x.size(); ++i) g += (x[i] - 0.5) * (x[i] - 0.5);
  const double a = x[0] * M_PI / 2;
  return {(1 + g) * std::cos(a), (1 + g) * std::sin(a)};
}

// C2-DTLZ2 with 2 objectives: feasible within kC2Radius of either end of the front or of its middle.
constexpr double kC2Radius = 0.2;
class C2Dtlz2 : public Synthetic {
 public:
  C2Dtlz2() : Synthetic(6, &Dtlz2Of2, {1.1, 1.1}) {}
  std::vector<double> Constraints(const Params& p) const override {
    const std::vector<double> f = TrueValues(p);
    const double r2 = kC2Radius * kC2Radius, m = 1 / std::sqrt(2.0);
    const double ends = std::min((f[0] - 1) * (f[0] - 1) + f[1] * f[1], f[0] * f[0] + (f[1] - 1) * (f[1] - 1));
    const double middle = (f[0] - m) * (f[0] - m) + (f[1] - m) * (f[1] - m);
    return {std::min(ends, middle) - r2};
  }
};

// ZDT1 subject to x0 >= 0.3: the signed value 0.3 - x0 rules out 30% of the space and the front's steep left part.
class CZdt1 : public Synthetic {
 public:
  CZdt1() : Synthetic(10, &Zdt1, {1.1, 11}) {}
  std::vector<double> Constraints(const Params& p) const override { return {0.3 - std::get<double>(p.at("x0"))}; }
};

class TableMo : public MoProblem {
 public:
  // Every configuration of the table's grid is visited once: the largest cost, and the median error.
  TableMo(std::unique_ptr<Problem> t, bool hpobench) : t_(std::move(t)), hpobench_(hpobench) {
    const std::vector<ParamSpec>& ps = t_->space().params;
    std::vector<size_t> at(ps.size(), 0);  // an odometer over the grid
    std::vector<double> losses;
    double max_cost = 0;
    for (bool more = true; more;) {
      Params p;
      for (size_t j = 0; j < ps.size(); ++j) {
        if (ps[j].kind == ParamKind::kInt) {
          p[ps[j].name] = static_cast<int64_t>(at[j]);
        } else {
          p[ps[j].name] = ps[j].choices[at[j]];
        }
      }
      losses.push_back(Loss(t_->TrueValue(p)));
      max_cost = std::max(max_cost, RawCost(p));
      more = false;
      for (size_t j = 0; j < ps.size() && !more; ++j) {
        const size_t size = ps[j].kind == ParamKind::kInt ? static_cast<size_t>(ps[j].high) + 1 : ps[j].choices.size();
        more = ++at[j] < size;
        if (!more) at[j] = 0;
      }
    }
    max_cost_ = max_cost;
    std::nth_element(losses.begin(), losses.begin() + static_cast<long>(losses.size() / 2), losses.end());
    ref_ = {losses[losses.size() / 2], 1.01};
  }
  const SearchSpace& space() const override { return t_->space(); }
  std::vector<double> Evaluate(const Params& p, uint64_t run_seed, int64_t trial) const override {
    return {Loss(t_->Evaluate(p, run_seed, trial)), RawCost(p) / max_cost_};
  }
  std::vector<double> TrueValues(const Params& p) const override {
    return {Loss(t_->TrueValue(p)), RawCost(p) / max_cost_};
  }
  std::vector<double> Reference() const override { return ref_; }

 private:
  double Loss(double v) const { return t_->maximize() ? -v : v; }
  double RawCost(const Params& p) const {
    const double batch = t_->ColumnNumber(p, "batch_size");
    if (hpobench_) {
      const double w = t_->ColumnNumber(p, "width");
      return t_->ColumnNumber(p, "depth") * w * w * (1 + 32 / batch);
    }
    const double a = t_->ColumnNumber(p, "n_units_1"), b = t_->ColumnNumber(p, "n_units_2");
    return (a * b + 16 * (a + b)) * (1 + 32 / batch);
  }

  std::unique_ptr<Problem> t_;
  bool hpobench_;
  double max_cost_ = 1;
  std::vector<double> ref_;
};

bool HasColumns(const SearchSpace& s, std::vector<std::string> names) {
  return std::all_of(names.begin(), names.end(), [&](const std::string& n) {
    return std::any_of(s.params.begin(), s.params.end(),
                       [&](const ParamSpec& p) { return p.name == n && p.kind == ParamKind::kInt; });
  });
}

}  // namespace

std::vector<std::string> SyntheticMoProblemNames() { return {"zdt1", "zdt2", "zdt3", "dtlz2"}; }

std::unique_ptr<MoProblem> MakeSyntheticMoProblem(const std::string& name) {
  if (name == "zdt1") return std::make_unique<Synthetic>(10, &Zdt1, std::vector<double>{1.1, 11});
  if (name == "zdt2") return std::make_unique<Synthetic>(10, &Zdt2, std::vector<double>{1.1, 11});
  if (name == "zdt3") return std::make_unique<Synthetic>(10, &Zdt3, std::vector<double>{1.1, 11});
  if (name == "dtlz2") return std::make_unique<Synthetic>(7, &Dtlz2, std::vector<double>{2.5, 2.5, 2.5});
  if (name == "c2dtlz2") return std::make_unique<C2Dtlz2>();
  if (name == "czdt1") return std::make_unique<CZdt1>();
  return nullptr;
}

std::unique_ptr<MoProblem> LoadTableMoProblem(const std::string& path, std::string* error) {
  std::unique_ptr<Problem> t = LoadTableProblem(path, error);
  if (!t) return nullptr;
  if (HasColumns(t->space(), {"batch_size", "depth", "width"})) return std::make_unique<TableMo>(std::move(t), true);
  if (HasColumns(t->space(), {"batch_size", "n_units_1", "n_units_2"})) {
    return std::make_unique<TableMo>(std::move(t), false);
  }
  *error = path + ": no cost model for its columns (hpobench: batch_size, depth, width; hpolib: batch_size, "
                  "n_units_1, n_units_2)";
  return nullptr;
}

}  // namespace ladder::bench
