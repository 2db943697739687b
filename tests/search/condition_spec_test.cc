// Conditional parameters and sampler options in the YAML spec: what parses, what is reported (with the field),
// and how an inactive parameter reads in a command.
#include <gtest/gtest.h>

#include <string>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

std::string WithSpace(const std::string& space, const std::string& sampler = "random") {
  return "name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\nsampler: " + sampler +
         "\ncommand: [train, \"{opt}\", \"--momentum={momentum}\", --epochs, \"3\"]\n"
         "env: {M: \"{momentum}\", O: \"{opt}\"}\nspace:\n" + space;
}

// The first error's "field: message" (without the position), or "" when the spec parsed.
std::string FirstError(const std::string& yaml) {
  ParseResult r = ParseSpec(yaml, "s.yaml");
  if (r.ok()) return "";
  return r.errors[0].field + ": " + r.errors[0].message;
}

TEST(ConditionSpecTest, ConditionParsesAndDrivesTheParameters) {
  ParseResult r = ParseSpec(WithSpace("  opt: {type: categorical, values: [sgd, adam]}\n"
                                      "  momentum: {type: float, low: 0.0, high: 0.99, condition: {param: opt, in: [sgd]}}\n"),
                            "s.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  const ParamSpec& m = r.spec->space.params[1];
  EXPECT_EQ(m.condition_param, "opt");
  EXPECT_EQ(m.condition_values, std::vector<std::string>{"sgd"});
  EXPECT_TRUE(IsActive(m, {{"opt", std::string("sgd")}}));
  EXPECT_FALSE(IsActive(m, {{"opt", std::string("adam")}}));
  EXPECT_FALSE(IsActive(m, {}));
  // The random sampler leaves momentum out exactly when opt is adam.
  auto s = MakeSampler(*r.spec);
  int adam = 0;
  for (int n = 0; n < 50; ++n) {
    Params p = *s->Ask(n);
    bool is_sgd = std::get<std::string>(p.at("opt")) == "sgd";
    EXPECT_EQ(p.count("momentum") != 0, is_sgd);
    adam += is_sgd ? 0 : 1;
    // A word or env value that mentions an inactive parameter is left out.
    Substituted sub = SubstituteCommand(*r.spec, p, {});
    ASSERT_TRUE(sub.error.empty()) << sub.error;
    if (is_sgd) {
      ASSERT_EQ(sub.argv.size(), 5u);
      EXPECT_EQ(sub.argv[2], "--momentum=" + FormatValue(p.at("momentum")));
      EXPECT_EQ(sub.env.count("M"), 1u);
    } else {
      EXPECT_EQ(sub.argv, (std::vector<std::string>{"train", "adam", "--epochs", "3"}));
      EXPECT_EQ(sub.env.count("M"), 0u);
    }
    EXPECT_EQ(sub.env.at("O"), std::get<std::string>(p.at("opt")));
  }
  EXPECT_GT(adam, 0);
}

TEST(ConditionSpecTest, ErrorsNameTheField) {
  const std::string opt = "  opt: {type: categorical, values: [sgd, adam]}\n";
  EXPECT_EQ(FirstError(WithSpace(opt + "  momentum: {type: float, low: 0, high: 1, condition: {param: optt, in: [sgd]}}\n")),
            "space.momentum.condition.param: 'optt' is not a parameter defined above 'momentum' (did you mean 'opt'?)");
  EXPECT_EQ(FirstError(WithSpace("  momentum: {type: float, low: 0, high: 1, condition: {param: opt, in: [sgd]}}\n" + opt)),
            "space.momentum.condition.param: 'opt' is not a parameter defined above 'momentum'");
  EXPECT_EQ(FirstError(WithSpace(opt + "  momentum: {type: float, low: 0, high: 1, condition: {param: opt, in: [sgdd]}}\n")),
            "space.momentum.condition.in[0]: 'sgdd' is not a value of 'opt'");
  EXPECT_EQ(FirstError(WithSpace("  opt: {type: float, low: 0, high: 1}\n"
                                 "  momentum: {type: float, low: 0, high: 1, condition: {param: opt, in: [1]}}\n")),
            "space.momentum.condition.param: 'opt' is a float parameter; a condition needs a categorical one");
  EXPECT_EQ(FirstError(WithSpace(opt + "  momentum: {type: float, low: 0, high: 1, condition: {param: opt}}\n")),
            "space.momentum.condition.in: missing required field 'in' (a list of that parameter's values)");
  EXPECT_EQ(FirstError(WithSpace(opt + "  momentum: {type: float, low: 0, high: 1, condition: {param: opt, in: []}}\n")),
            "space.momentum.condition.in: expected a non-empty list of values of 'opt', got a sequence");
  EXPECT_EQ(FirstError(WithSpace(opt + "  momentum: {type: float, low: 0, high: 1, grid_points: 2, "
                                       "condition: {param: opt, in: [sgd]}}\n",
                                 "grid")),
            "space.momentum.condition: the grid sampler does not take conditional parameters");
}

TEST(SamplerOptionsSpecTest, OptionsParseForTheirSamplers) {
  auto parse = [](const std::string& sampler) {
    return ParseSpec("name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\nsampler: " + sampler +
                         "\ncommand: [train]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                     "s.yaml");
  };
  for (std::string type : {"random", "grid", "sobol", "tpe", "gp", "cmaes"}) {
    if (type == "grid") continue;  // needs grid_points
    ParseResult r = parse(type);
    ASSERT_TRUE(r.ok()) << type << ": " << r.errors[0].ToString();
    EXPECT_EQ(r.spec->sampler, type);
  }
  ParseResult tpe = parse("{type: tpe, seed: 3, n_startup_trials: 5, n_ei_candidates: 48, gamma: 0.2}");
  ASSERT_TRUE(tpe.ok()) << tpe.errors[0].ToString();
  EXPECT_EQ(tpe.spec->seed, 3u);
  EXPECT_EQ(tpe.spec->sampler_options.n_startup_trials, 5);
  EXPECT_EQ(tpe.spec->sampler_options.n_ei_candidates, 48);
  EXPECT_EQ(tpe.spec->sampler_options.gamma, 0.2);
  ParseResult gp = parse("{type: gp, max_history: 300}");
  ASSERT_TRUE(gp.ok()) << gp.errors[0].ToString();
  EXPECT_EQ(gp.spec->sampler_options.max_history, 300);
  ParseResult cma = parse("{type: cmaes, population: 12, sigma0: 0.2}");
  ASSERT_TRUE(cma.ok()) << cma.errors[0].ToString();
  EXPECT_EQ(cma.spec->sampler_options.population, 12);
  ParseResult sobol = parse("{type: sobol, scramble: false}");
  ASSERT_TRUE(sobol.ok()) << sobol.errors[0].ToString();
  EXPECT_FALSE(sobol.spec->sampler_options.scramble);

  auto first = [&](const std::string& sampler) {
    ParseResult r = parse(sampler);
    return r.ok() ? std::string() : r.errors[0].field + ": " + r.errors[0].message;
  };
  EXPECT_EQ(first("{type: gp, gamma: 0.2}"), "sampler.gamma: applies only to the tpe sampler, not gp");
  EXPECT_EQ(first("{type: tpe, gamma: 1.5}"), "sampler.gamma: must be in (0, 1], got 1.5");
  EXPECT_EQ(first("{type: gp, max_history: 3}").substr(0, 20), "sampler.max_history:");
  EXPECT_EQ(first("{type: tpee}").substr(0, 13), "sampler.type:");
}

}  // namespace
}  // namespace ladder::search
