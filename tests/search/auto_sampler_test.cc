// The `auto` sampler: the rule's decision for typical specs (search/samplers/auto_sampler.h), the spec default and the
// `sampler: auto` spellings, and that MakeSampler runs the sampler the rule names.
#include <gtest/gtest.h>

#include <string>

#include "search/samplers/auto_sampler.h"
#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"
#include "sampler_test_util.h"

namespace ladder::search {
namespace {

using testing::CatParam;
using testing::FloatParam;
using testing::IntParam;
using testing::SpecWith;

SearchSpec AutoSpec(std::vector<ParamSpec> params, int max_trials, int parallelism = 1) {
  SearchSpec s = SpecWith(std::move(params), "auto", 7);
  s.max_trials = max_trials;
  s.parallelism = parallelism;
  return s;
}

std::vector<ParamSpec> Numeric(int n) {
  std::vector<ParamSpec> out;
  for (int i = 0; i < n; ++i) out.push_back(FloatParam("x" + std::to_string(i), 0, 1));
  return out;
}

TEST(AutoSamplerTest, SmallBudgetNumericSpaceGetsGp) {
  // hpobench-like: five ordinal ints, 200 trials, one at a time.
  std::vector<ParamSpec> p;
  for (int i = 0; i < 5; ++i) p.push_back(IntParam("p" + std::to_string(i), 0, 9));
  SamplerChoice c = ResolveSampler(AutoSpec(p, 200));
  EXPECT_EQ(c.sampler, "gp");
  EXPECT_EQ(c.reason, "0 of 5 parameters categorical, 200 trials, 1 at a time: GP-BO after 10 Sobol points");
  // A third categorical (hpolib: 3 of 9) is still mostly numeric.
  std::vector<ParamSpec> mixed = Numeric(6);
  for (int i = 0; i < 3; ++i) mixed.push_back(CatParam("c" + std::to_string(i), {"a", "b"}));
  EXPECT_EQ(ResolveSampler(AutoSpec(mixed, 100, 8)).sampler, "gp");
}

TEST(AutoSamplerTest, MostlyCategoricalSpaceGetsTpe) {
  std::vector<ParamSpec> p;  // nasbench201-like: six operations of five choices
  for (int i = 0; i < 6; ++i) p.push_back(CatParam("op" + std::to_string(i), {"a", "b", "c", "d", "e"}));
  SamplerChoice c = ResolveSampler(AutoSpec(p, 100));
  EXPECT_EQ(c.sampler, "tpe");
  EXPECT_EQ(c.reason, "6 of 6 parameters categorical (more than half)");
}

TEST(AutoSamplerTest, LargeBudgetManyParametersOrWideParallelismGetTpe) {
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(4), 1001)).sampler, "tpe");
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(4), 1000)).sampler, "gp");
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(4), 100000)).reason, "100000 trials (more than 1000)");
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(33), 500)).sampler, "tpe");
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(32), 500)).sampler, "gp");
  SamplerChoice wide = ResolveSampler(AutoSpec(Numeric(4), 500, 65));
  EXPECT_EQ(wide.sampler, "tpe");
  EXPECT_EQ(wide.reason, "65 trials at a time (more than 64)");
}

TEST(AutoSamplerTest, BudgetWithinTheStartupGetsSobolAndNoParametersRandom) {
  // GP-BO would spend clamp(2 * 3, 5, 20) = 6 trials on Sobol points anyway.
  SamplerChoice c = ResolveSampler(AutoSpec(Numeric(3), 6));
  EXPECT_EQ(c.sampler, "sobol");
  EXPECT_EQ(c.reason, "6 trials, no more than GP-BO's 6 startup points");
  EXPECT_EQ(ResolveSampler(AutoSpec(Numeric(3), 7)).sampler, "gp");
  EXPECT_EQ(ResolveSampler(AutoSpec({}, 10)).sampler, "random");
}

TEST(AutoSamplerTest, NamedSamplerIsKeptWithoutReason) {
  SearchSpec s = AutoSpec(Numeric(3), 100);
  s.sampler = "random";
  SamplerChoice c = ResolveSampler(s);
  EXPECT_EQ(c.sampler, "random");
  EXPECT_EQ(c.reason, "");
}

TEST(AutoSamplerTest, MakeSamplerRunsTheResolvedSampler) {
  SearchSpec a = AutoSpec(Numeric(2), 50);
  SearchSpec g = a;
  g.sampler = "gp";
  auto sa = MakeSampler(a), sg = MakeSampler(g);
  for (int64_t n = 0; n < 8; ++n) {  // past the startup (5 points), so GP-BO's model chooses the last ones
    Params pa = *sa->Ask(n), pg = *sg->Ask(n);
    ASSERT_EQ(pa, pg) << "trial " << n;
    const double y = std::get<double>(pa.at("x0")) + std::get<double>(pa.at("x1"));
    sa->Tell(n, pa, y);
    sg->Tell(n, pg, y);
  }
}

constexpr const char* kSpecHead = "name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 40}\n"
                                  "command: [train, \"{x}\"]\nspace:\n  x: {type: float, low: 0, high: 1}\n";

TEST(AutoSamplerTest, SpecDefaultsToAutoAndAcceptsItByName) {
  ParseResult none = ParseSpec(kSpecHead, "none.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.spec->sampler, "auto");
  EXPECT_EQ(ResolveSampler(*none.spec).sampler, "gp");
  ParseResult named = ParseSpec(std::string(kSpecHead) + "sampler: auto\n", "named.yaml");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named.spec->sampler, "auto");
  ParseResult mapping = ParseSpec(std::string(kSpecHead) + "sampler: {type: auto, seed: 3}\n", "map.yaml");
  ASSERT_TRUE(mapping.ok());
  EXPECT_EQ(mapping.spec->seed, 3u);
  // Options of one sampler do not apply to auto (it picks the sampler, with that sampler's defaults).
  ParseResult option = ParseSpec(std::string(kSpecHead) + "sampler: {type: auto, gamma: 0.2}\n", "opt.yaml");
  ASSERT_EQ(option.errors.size(), 1u);
  EXPECT_EQ(option.errors[0].field, "sampler.gamma");
  EXPECT_NE(option.errors[0].message.find("applies only to the tpe sampler, not auto"), std::string::npos)
      << option.errors[0].message;
}

}  // namespace
}  // namespace ladder::search
