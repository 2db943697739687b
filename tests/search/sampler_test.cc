// Samplers: random determinism and distribution, grid order and size.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

SearchSpec SpecWith(std::vector<ParamSpec> params, std::string sampler = "random", uint64_t seed = 0) {
  SearchSpec s;
  s.name = "t";
  s.sampler = std::move(sampler);
  s.seed = seed;
  s.space.params = std::move(params);
  return s;
}

ParamSpec Float(std::string name, double low, double high, bool log = false, int grid_points = 0) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = ParamKind::kFloat;
  p.low = low;
  p.high = high;
  p.log = log;
  p.grid_points = grid_points;
  return p;
}

ParamSpec Int(std::string name, double low, double high, bool log = false, int grid_points = 0) {
  ParamSpec p = Float(std::move(name), low, high, log, grid_points);
  p.kind = ParamKind::kInt;
  return p;
}

ParamSpec Cat(std::string name, std::vector<std::string> choices) {
  ParamSpec p;
  p.name = std::move(name);
  p.kind = ParamKind::kCategorical;
  p.choices = std::move(choices);
  return p;
}

TEST(RandomSamplerTest, AskIsDeterministicAndIndependentOfCallOrder) {
  SearchSpec spec = SpecWith({Float("lr", 1e-4, 0.1, true), Int("bs", 16, 128, true), Cat("opt", {"sgd", "adam"})},
                             "random", 42);
  auto a = MakeSampler(spec);
  auto b = MakeSampler(spec);
  EXPECT_FALSE(a->Size().has_value());
  std::vector<Params> forward;
  for (int64_t n = 0; n < 20; ++n) forward.push_back(*a->Ask(n));
  for (int64_t n = 19; n >= 0; --n) EXPECT_EQ(*b->Ask(n), forward[static_cast<size_t>(n)]) << n;
  EXPECT_EQ(*a->Ask(7), forward[7]);  // asking again gives the same configuration
  for (size_t n = 1; n < forward.size(); ++n) {
    EXPECT_NE(forward[n].at("lr"), forward[n - 1].at("lr")) << n;  // consecutive trials differ
  }
  auto other_seed = MakeSampler(SpecWith(spec.space.params, "random", 43));
  EXPECT_NE(*other_seed->Ask(0), forward[0]);
  EXPECT_FALSE(a->Ask(-1).has_value());
}

TEST(RandomSamplerTest, ValuesHaveTheParameterTypes) {
  auto s = MakeSampler(SpecWith({Float("x", 0, 1), Int("n", 1, 3), Cat("c", {"a"})}));
  Params p = *s->Ask(0);
  EXPECT_TRUE(std::holds_alternative<double>(p.at("x")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(p.at("n")));
  EXPECT_EQ(std::get<std::string>(p.at("c")), "a");
}

TEST(RandomSamplerTest, LogUniformFloatDistribution) {
  auto s = MakeSampler(SpecWith({Float("lr", 1e-4, 1e-1, true)}, "random", 1));
  const int kN = 10000;
  double sum_log = 0;
  int below_1e3 = 0;
  for (int n = 0; n < kN; ++n) {
    double v = std::get<double>(s->Ask(n)->at("lr"));
    ASSERT_GE(v, 1e-4);
    ASSERT_LE(v, 1e-1);
    sum_log += std::log10(v);
    below_1e3 += v < 1e-3 ? 1 : 0;
  }
  EXPECT_NEAR(sum_log / kN, -2.5, 0.03);            // log10 is uniform on [-4, -1]
  EXPECT_NEAR(below_1e3 / double(kN), 1.0 / 3, 0.02);  // one decade of three
}

TEST(RandomSamplerTest, UniformFloatDistribution) {
  auto s = MakeSampler(SpecWith({Float("x", -1, 3)}, "random", 2));
  double sum = 0;
  for (int n = 0; n < 10000; ++n) {
    double v = std::get<double>(s->Ask(n)->at("x"));
    ASSERT_GE(v, -1);
    ASSERT_LE(v, 3);
    sum += v;
  }
  EXPECT_NEAR(sum / 10000, 1.0, 0.05);
}

TEST(RandomSamplerTest, IntsCoverTheEndpoints) {
  auto s = MakeSampler(SpecWith({Int("n", 3, 7), Int("l", 1, 8, true)}, "random", 3));
  std::map<int64_t, int> n_counts, l_counts;
  for (int n = 0; n < 10000; ++n) {
    Params p = *s->Ask(n);
    n_counts[std::get<int64_t>(p.at("n"))]++;
    l_counts[std::get<int64_t>(p.at("l"))]++;
  }
  ASSERT_EQ(n_counts.size(), 5u);
  EXPECT_EQ(n_counts.begin()->first, 3);
  EXPECT_EQ(n_counts.rbegin()->first, 7);
  for (auto [v, c] : n_counts) EXPECT_NEAR(c, 2000, 200) << v;
  ASSERT_EQ(l_counts.size(), 8u);
  EXPECT_EQ(l_counts.begin()->first, 1);
  EXPECT_EQ(l_counts.rbegin()->first, 8);
  EXPECT_GT(l_counts[1], l_counts[8]);  // log-uniform favours small values
}

TEST(RandomSamplerTest, CategoricalIsUniform) {
  auto s = MakeSampler(SpecWith({Cat("c", {"a", "b", "c", "d"})}, "random", 4));
  std::map<std::string, int> counts;
  for (int n = 0; n < 8000; ++n) counts[std::get<std::string>(s->Ask(n)->at("c"))]++;
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [v, c] : counts) EXPECT_NEAR(c, 2000, 200) << v;
}

TEST(GridSamplerTest, CartesianProductLastParameterFastest) {
  SearchSpec spec = SpecWith({Cat("opt", {"sgd", "adam"}), Int("width", 32, 256, false, 3), Float("lr", 0.001, 0.1, true, 3)},
                             "grid");
  auto s = MakeSampler(spec);
  ASSERT_EQ(s->Size(), 18);
  EXPECT_EQ(GridSize(spec.space), 18);
  Params first = *s->Ask(0);
  EXPECT_EQ(std::get<std::string>(first.at("opt")), "sgd");
  EXPECT_EQ(std::get<int64_t>(first.at("width")), 32);
  EXPECT_EQ(std::get<double>(first.at("lr")), 0.001);
  Params second = *s->Ask(1);
  EXPECT_EQ(std::get<std::string>(second.at("opt")), "sgd");
  EXPECT_EQ(std::get<int64_t>(second.at("width")), 32);
  EXPECT_NEAR(std::get<double>(second.at("lr")), 0.01, 1e-15);
  Params fourth = *s->Ask(3);
  EXPECT_EQ(std::get<int64_t>(fourth.at("width")), 144);
  EXPECT_EQ(std::get<double>(fourth.at("lr")), 0.001);
  Params last = *s->Ask(17);
  EXPECT_EQ(std::get<std::string>(last.at("opt")), "adam");
  EXPECT_EQ(std::get<int64_t>(last.at("width")), 256);
  EXPECT_EQ(std::get<double>(last.at("lr")), 0.1);
  EXPECT_FALSE(s->Ask(18).has_value());
  EXPECT_FALSE(s->Ask(-1).has_value());
  std::set<Params> all;
  for (int64_t n = 0; n < 18; ++n) all.insert(*s->Ask(n));
  EXPECT_EQ(all.size(), 18u);
}

TEST(GridSamplerTest, IntPointsAreRoundedAndDeduplicated) {
  std::vector<Value> v = GridValues(Int("n", 1, 3, false, 5));
  EXPECT_EQ(v, (std::vector<Value>{int64_t{1}, int64_t{2}, int64_t{3}}));
  std::vector<Value> l = GridValues(Int("bs", 16, 256, true, 5));
  EXPECT_EQ(l, (std::vector<Value>{int64_t{16}, int64_t{32}, int64_t{64}, int64_t{128}, int64_t{256}}));
  std::vector<Value> f = GridValues(Float("x", 0, 1, false, 5));
  EXPECT_EQ(f, (std::vector<Value>{0.0, 0.25, 0.5, 0.75, 1.0}));
  auto s = MakeSampler(SpecWith({Int("n", 1, 3, false, 5)}, "grid"));
  EXPECT_EQ(s->Size(), 3);
}

TEST(GridSamplerTest, SpecGridSizeBecomesMaxTrials) {
  ParseResult r = ParseSpec(R"(name: g
objective: {metric: loss, mode: min}
sampler: grid
command: [t, "{a}", "{b}"]
space:
  a: {type: int, low: 1, high: 4, grid_points: 4}
  b: {type: categorical, values: [x, y, z]}
)", "g.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  EXPECT_EQ(r.spec->max_trials, 12);
  EXPECT_EQ(MakeSampler(*r.spec)->Size(), 12);
}

}  // namespace
}  // namespace ladder::search
