// The model-based samplers (tpe, gp, cmaes) and the others through the common contract: values in bounds with
// the right types and conditions, log scales, determinism under replay, distinct pending suggestions, and
// better than random search on simple functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "search/samplers/sampler.h"
#include "sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::CatParam;
using testing::FloatParam;
using testing::IntParam;
using testing::SpecWith;
using testing::When;

std::vector<ParamSpec> MixedSpace() {
  return {FloatParam("lr", 1e-5, 1e-1, true),
          IntParam("width", 8, 512, true),
          IntParam("depth", 1, 4),
          CatParam("opt", {"sgd", "adam", "rmsprop"}),
          When(FloatParam("momentum", 0.0, 0.99), "opt", {"sgd"}),
          When(CatParam("nesterov", {"yes", "no"}), "opt", {"sgd"}),
          When(FloatParam("dampening", 0.0, 0.5), "nesterov", {"no"}),
          FloatParam("dropout", 0.0, 0.5)};
}

double Num(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return static_cast<double>(std::get<int64_t>(v));
}

// A toy objective on the mixed space (minimized): best near lr = 1e-3, width = 128, opt = adam.
double MixedLoss(const Params& p) {
  double l = std::pow(std::log10(Num(p.at("lr"))) + 3, 2) + std::pow(std::log2(Num(p.at("width"))) - 7, 2) * 0.3 +
             0.1 * Num(p.at("depth")) + Num(p.at("dropout"));
  const std::string& opt = std::get<std::string>(p.at("opt"));
  if (opt == "sgd") l += 0.5 - Num(p.at("momentum")) * 0.4;
  if (opt == "rmsprop") l += 0.3;
  return l;
}

void ExpectValid(const SearchSpace& space, const Params& p) {
  Params seen;
  for (const ParamSpec& s : space.params) {
    const bool active = IsActive(s, seen);
    auto it = p.find(s.name);
    ASSERT_EQ(it != p.end(), active) << s.name;
    if (!active) continue;
    seen[s.name] = it->second;
    switch (s.kind) {
      case ParamKind::kFloat: {
        ASSERT_TRUE(std::holds_alternative<double>(it->second)) << s.name;
        double v = std::get<double>(it->second);
        EXPECT_GE(v, s.low) << s.name;
        EXPECT_LE(v, s.high) << s.name;
        break;
      }
      case ParamKind::kInt: {
        ASSERT_TRUE(std::holds_alternative<int64_t>(it->second)) << s.name;
        auto v = std::get<int64_t>(it->second);
        EXPECT_GE(v, static_cast<int64_t>(s.low)) << s.name;
        EXPECT_LE(v, static_cast<int64_t>(s.high)) << s.name;
        break;
      }
      case ParamKind::kCategorical: {
        ASSERT_TRUE(std::holds_alternative<std::string>(it->second)) << s.name;
        const auto& v = std::get<std::string>(it->second);
        EXPECT_NE(std::find(s.choices.begin(), s.choices.end(), v), s.choices.end()) << s.name;
        break;
      }
    }
  }
  EXPECT_EQ(p.size(), seen.size());
}

class EverySamplerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EverySamplerTest, RespectsTypesBoundsAndConditions) {
  SearchSpec spec = SpecWith(MixedSpace(), GetParam(), 11);
  auto s = MakeSampler(spec);
  std::set<std::string> opts_seen;
  int with_momentum = 0;
  for (int n = 0; n < 60; ++n) {
    Params p = *s->Ask(n);
    ExpectValid(spec.space, p);
    opts_seen.insert(std::get<std::string>(p.at("opt")));
    with_momentum += p.count("momentum") != 0 ? 1 : 0;
    s->Tell(n, p, MixedLoss(p));
  }
  EXPECT_EQ(opts_seen.size(), 3u);  // every choice was tried
  EXPECT_GT(with_momentum, 0);
}

TEST_P(EverySamplerTest, PendingTrialsGetDistinctSuggestions) {
  SearchSpec spec = SpecWith({FloatParam("x", -5, 5), FloatParam("y", -5, 5), IntParam("k", 1, 1000, true)},
                             GetParam(), 3);
  auto s = MakeSampler(spec);
  auto loss = [](const Params& p) {
    return std::pow(Num(p.at("x")) - 1, 2) + std::pow(Num(p.at("y")) + 2, 2) + std::abs(std::log(Num(p.at("k"))) - 3);
  };
  for (int n = 0; n < 30; ++n) {
    Params p = *s->Ask(n);
    s->Tell(n, p, loss(p));
  }
  std::vector<Params> batch;
  for (int n = 30; n < 38; ++n) batch.push_back(*s->Ask(n));  // eight at once, none told
  for (size_t i = 0; i < batch.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const double dx = (Num(batch[i].at("x")) - Num(batch[j].at("x"))) / 10;
      const double dy = (Num(batch[i].at("y")) - Num(batch[j].at("y"))) / 10;
      EXPECT_GT(std::hypot(dx, dy), 1e-3) << GetParam() << ": suggestions " << i << " and " << j;
    }
  }
  EXPECT_EQ(*s->Ask(33), batch[3]);  // asking again for a pending trial gives its configuration
}

TEST_P(EverySamplerTest, ReplayedHistoryGivesTheSameSuggestions) {
  // A search with 3 trials in flight; at a few points, a fresh sampler that is told the finished trials (in a
  // shuffled order) and the running ones must suggest what the original suggests.
  SearchSpec spec = SpecWith(MixedSpace(), GetParam(), 5, /*maximize=*/true);
  auto original = MakeSampler(spec);
  std::map<int64_t, Params> running;
  std::vector<std::pair<int64_t, Params>> finished;
  std::mt19937_64 shuffle_rng(1);
  int64_t next = 0;
  for (; next < 3; ++next) running[next] = *original->Ask(next);
  for (int step = 0; step < 40; ++step) {
    auto it = running.begin();
    std::advance(it, static_cast<long>(shuffle_rng() % running.size()));  // trials finish out of order
    original->Tell(it->first, it->second, -MixedLoss(it->second));
    finished.emplace_back(it->first, it->second);
    running.erase(it);
    if (step % 13 == 12) {
      auto replayed = MakeSampler(spec);
      auto order = finished;
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      for (const auto& [n, p] : order) replayed->Tell(n, p, -MixedLoss(p));
      for (const auto& [n, p] : running) replayed->AddPending(n, p);
      Params expected = *original->Ask(next);
      EXPECT_EQ(*replayed->Ask(next), expected) << GetParam() << " at trial " << next;
      running[next++] = expected;
    } else {
      running[next] = *original->Ask(next);
      ++next;
    }
  }
}

TEST_P(EverySamplerTest, LogScaleParametersSpreadOverDecades) {
  if (GetParam() == "cmaes") GTEST_SKIP() << "CMA-ES concentrates by design";
  SearchSpec spec = SpecWith({FloatParam("lr", 1e-6, 1, true), IntParam("n", 1, 100000, true)}, GetParam(), 9);
  auto s = MakeSampler(spec);
  // A flat objective: the startup points and the models' priors must spread evenly over the decades.
  int lr_small = 0, n_small = 0;
  const int kTrials = 40;
  for (int i = 0; i < kTrials; ++i) {
    Params p = *s->Ask(i);
    lr_small += std::get<double>(p.at("lr")) < 1e-3 ? 1 : 0;
    n_small += std::get<int64_t>(p.at("n")) < 316 ? 1 : 0;
    s->Tell(i, p, 1.0);
  }
  // Half of the log range lies below 1e-3 (resp. 316); a linear scale would put almost nothing there.
  EXPECT_GT(lr_small, kTrials / 5) << GetParam();
  EXPECT_LT(lr_small, kTrials * 4 / 5) << GetParam();
  EXPECT_GT(n_small, kTrials / 5) << GetParam();
  EXPECT_LT(n_small, kTrials * 4 / 5) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Samplers, EverySamplerTest, ::testing::Values("random", "sobol", "tpe", "gp", "cmaes"),
                         [](const auto& info) { return info.param; });

// Best loss found in `budget` trials on `f` over a continuous box.
template <typename F>
double BestOf(const std::string& sampler, uint64_t seed, int budget, int dims, F f) {
  std::vector<ParamSpec> params;
  for (int d = 0; d < dims; ++d) params.push_back(FloatParam("x" + std::to_string(d), -5, 5));
  auto s = MakeSampler(SpecWith(params, sampler, seed));
  double best = INFINITY;
  for (int n = 0; n < budget; ++n) {
    Params p = *s->Ask(n);
    std::vector<double> x;
    for (int d = 0; d < dims; ++d) x.push_back(std::get<double>(p.at("x" + std::to_string(d))));
    double y = f(x);
    best = std::min(best, y);
    s->Tell(n, p, y);
  }
  return best;
}

double ShiftedSphere(const std::vector<double>& x) {
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += std::pow(x[i] - 1.3 + 0.4 * static_cast<double>(i), 2);
  return s;
}

// Seeds are fixed, so the outcome is deterministic; the margins are wide (the measured medians are far
// apart), so a small change in a sampler does not flip the result.
void ExpectBeatsRandom(const std::string& sampler, int budget, int dims) {
  const int kSeeds = 10;
  std::vector<double> model, random;
  int wins = 0;
  for (int seed = 0; seed < kSeeds; ++seed) {
    double m = BestOf(sampler, static_cast<uint64_t>(seed), budget, dims, ShiftedSphere);
    double r = BestOf("random", static_cast<uint64_t>(seed), budget, dims, ShiftedSphere);
    model.push_back(m);
    random.push_back(r);
    wins += m < r ? 1 : 0;
  }
  std::sort(model.begin(), model.end());
  std::sort(random.begin(), random.end());
  const double model_median = (model[4] + model[5]) / 2, random_median = (random[4] + random[5]) / 2;
  EXPECT_GE(wins, 8) << sampler;
  EXPECT_LT(model_median, 0.5 * random_median) << sampler << ": median best " << model_median << " vs random "
                                                << random_median;
}

TEST(ModelSamplerTest, TpeBeatsRandomSearch) { ExpectBeatsRandom("tpe", 80, 4); }
TEST(ModelSamplerTest, GpBeatsRandomSearch) { ExpectBeatsRandom("gp", 40, 4); }
TEST(ModelSamplerTest, CmaEsBeatsRandomSearch) { ExpectBeatsRandom("cmaes", 120, 4); }

TEST(ModelSamplerTest, MaximizeIsHandled) {
  // The same problem as a maximization must give the same suggestions as the minimization.
  for (std::string name : {"tpe", "gp", "cmaes"}) {
    auto mn = MakeSampler(SpecWith({FloatParam("x", -5, 5), FloatParam("y", -5, 5)}, name, 2, false));
    auto mx = MakeSampler(SpecWith({FloatParam("x", -5, 5), FloatParam("y", -5, 5)}, name, 2, true));
    for (int n = 0; n < 30; ++n) {
      Params a = *mn->Ask(n), b = *mx->Ask(n);
      ASSERT_EQ(a, b) << name << " trial " << n;
      double y = ShiftedSphere({std::get<double>(a.at("x")), std::get<double>(a.at("y"))});
      mn->Tell(n, a, y);
      mx->Tell(n, b, -y);
    }
  }
}

TEST(ModelSamplerTest, FailedTrialsAreSkipped) {
  auto s = MakeSampler(SpecWith({FloatParam("x", 0, 1)}, "tpe", 1));
  for (int n = 0; n < 30; ++n) {
    Params p = *s->Ask(n);
    s->Tell(n, p, n % 3 == 0 ? std::nullopt : std::optional<double>(std::get<double>(p.at("x"))));
  }
  Params p = *s->Ask(30);
  EXPECT_GE(std::get<double>(p.at("x")), 0.0);
  EXPECT_LE(std::get<double>(p.at("x")), 1.0);
}

}  // namespace
}  // namespace ladder::search
