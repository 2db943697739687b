// The spec's `scheduler:` and `ensemble:` mappings: good ones parse to exact values, bad ones report the
// field, line, column and a message.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "search/spec/spec_reader.h"
#include "search/stopping/stopping_rule.h"

namespace ladder::search {
namespace {

// Lines 1-6; the test's section starts at line 7.
const std::string kHead =
    "name: s\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: 8, parallelism: 4}\n"
    "sampler: {type: random, seed: 11}\ncommand: [t, \"{lr}\"]\nspace:\n  lr: {type: float, low: 0.001, high: 0.1}\n";

std::string AllErrors(const ParseResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(SchedulerSpecTest, AbsentMeansNoneAndNoEnsemble) {
  ParseResult r = ParseSpec(kHead, "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->scheduler.type, StoppingRuleType::kNone);
  EXPECT_FALSE(r.spec->ensemble.enabled);
}

TEST(SchedulerSpecTest, AshaWithEveryFieldAndDefaults) {
  ParseResult r = ParseSpec(kHead + "scheduler:\n  type: hyperband\n  resource: step\n  min_resource: 100\n"
                                    "  max_resource: 8100\n  reduction_factor: 3\n  brackets: 3\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const StoppingOptions& o = r.spec->scheduler;
  EXPECT_EQ(o.type, StoppingRuleType::kHyperband);
  EXPECT_EQ(o.resource, "step");
  EXPECT_EQ(o.min_resource, 100);
  EXPECT_EQ(o.max_resource, 8100);
  EXPECT_EQ(o.reduction_factor, 3);
  EXPECT_EQ(o.brackets, 3);
  ParseResult d = ParseSpec(kHead + "scheduler: {type: asha, max_resource: 20}\n", "s.yaml");
  ASSERT_TRUE(d.ok()) << AllErrors(d);
  EXPECT_EQ(d.spec->scheduler.type, StoppingRuleType::kAsha);
  EXPECT_EQ(d.spec->scheduler.resource, "epoch");
  EXPECT_EQ(d.spec->scheduler.min_resource, kDefaultMinResource);
  EXPECT_EQ(d.spec->scheduler.reduction_factor, kDefaultReductionFactor);
  EXPECT_EQ(d.spec->scheduler.brackets, 0);
}

TEST(SchedulerSpecTest, MedianAndPbt) {
  ParseResult m = ParseSpec(kHead + "scheduler: median\n", "s.yaml");
  ASSERT_TRUE(m.ok()) << AllErrors(m);
  EXPECT_EQ(m.spec->scheduler.type, StoppingRuleType::kMedian);
  EXPECT_EQ(m.spec->scheduler.grace_period, kDefaultGracePeriod);
  EXPECT_EQ(m.spec->scheduler.min_trials, kDefaultMedianMinTrials);
  ParseResult m2 = ParseSpec(kHead + "scheduler: {type: median, grace_period: 0, min_trials: 5}\n", "s.yaml");
  ASSERT_TRUE(m2.ok()) << AllErrors(m2);
  EXPECT_EQ(m2.spec->scheduler.grace_period, 0);
  EXPECT_EQ(m2.spec->scheduler.min_trials, 5);
  ParseResult p = ParseSpec(kHead + "scheduler: {type: pbt, perturbation_interval: 4, quantile: 0.5, "
                                    "resample_probability: 0, seed: 3}\n", "s.yaml");
  ASSERT_TRUE(p.ok()) << AllErrors(p);
  EXPECT_EQ(p.spec->scheduler.perturbation_interval, 4);
  EXPECT_EQ(p.spec->scheduler.quantile, 0.5);
  EXPECT_EQ(p.spec->scheduler.resample_probability, 0);
  EXPECT_EQ(p.spec->scheduler.seed, 3u);
  // Without its own seed, pbt takes the sampler's.
  ParseResult p2 = ParseSpec(kHead + "scheduler: {type: pbt, perturbation_interval: 2}\n", "s.yaml");
  ASSERT_TRUE(p2.ok()) << AllErrors(p2);
  EXPECT_EQ(p2.spec->scheduler.seed, 11u);
  EXPECT_EQ(p2.spec->scheduler.quantile, kDefaultPbtQuantile);
  EXPECT_EQ(p2.spec->scheduler.resample_probability, kDefaultResampleProbability);
}

TEST(SchedulerSpecTest, Ensemble) {
  ParseResult r = ParseSpec(kHead + "ensemble:\n  size: 5\n  top_k: 8\n  metric: accuracy\n"
                                    "  predictions_file: \"{checkpoint_dir}/val_predictions.csv\"\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const EnsembleOptions& e = r.spec->ensemble;
  EXPECT_TRUE(e.enabled);
  EXPECT_EQ(e.size, 5);
  EXPECT_EQ(e.top_k, 8);
  EXPECT_EQ(e.metric, EnsembleMetric::kAccuracy);
  EXPECT_EQ(e.predictions_file, "{checkpoint_dir}/val_predictions.csv");
  ParseResult d = ParseSpec(kHead + "ensemble: {predictions_file: \"p-{trial_number}-{lr}.csv\"}\n", "s.yaml");
  ASSERT_TRUE(d.ok()) << AllErrors(d);
  EXPECT_EQ(d.spec->ensemble.size, kDefaultEnsembleSize);
  EXPECT_EQ(d.spec->ensemble.top_k, kDefaultEnsembleTopK);
  EXPECT_EQ(d.spec->ensemble.metric, EnsembleMetric::kLogLoss);
}

TEST(SchedulerSpecTest, EnsembleRetrainStep) {
  ParseResult r = ParseSpec(kHead + "ensemble:\n  predictions_file: p.csv\n"
                                    "  retrain: \"retrain --members '{ensemble_file}' --epochs 30\"\n", "s.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->ensemble.retrain,
            (std::vector<std::string>{"retrain", "--members", "{ensemble_file}", "--epochs", "30"}));
  ParseResult l = ParseSpec(kHead + "ensemble: {predictions_file: p.csv, retrain: [a, \"{ensemble_file}\"]}\n", "s.yaml");
  ASSERT_TRUE(l.ok()) << AllErrors(l);
  EXPECT_EQ(l.spec->ensemble.retrain, (std::vector<std::string>{"a", "{ensemble_file}"}));
  ParseResult bad = ParseSpec(kHead + "ensemble: {predictions_file: p.csv, retrain: []}\n", "s.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(AllErrors(bad).find("ensemble.retrain: must not be empty"), std::string::npos) << AllErrors(bad);
  ParseResult bad2 = ParseSpec(kHead + "ensemble: {predictions_file: p.csv, retrain: {x: 1}}\n", "s.yaml");
  EXPECT_NE(AllErrors(bad2).find("ensemble.retrain: expected a command"), std::string::npos) << AllErrors(bad2);
}

struct BadCase {
  const char* what;
  std::string section;  // appended at line 8
  std::string field;
  int line;
  int column;  // 0: don't check
  std::string message;  // substring
};

class BadSchedulerSpecTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadSchedulerSpecTest, ReportsFieldLineAndMessage) {
  const BadCase& c = GetParam();
  ParseResult r = ParseSpec(kHead + c.section, "bad.yaml");
  ASSERT_FALSE(r.ok()) << c.what;
  ASSERT_EQ(r.errors.size(), 1u) << c.what << "\n" << AllErrors(r);
  const SpecError& e = r.errors[0];
  EXPECT_EQ(e.field, c.field) << e.ToString();
  EXPECT_EQ(e.line, c.line) << e.ToString();
  if (c.column != 0) {
    EXPECT_EQ(e.column, c.column) << e.ToString();
  }
  EXPECT_NE(e.message.find(c.message), std::string::npos) << e.ToString() << "\nwanted: " << c.message;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSchedulerSpecTest,
    ::testing::Values(
        BadCase{"unknown type", "scheduler: {type: bohb}\n", "scheduler.type", 8, 19,
                "expected 'none', 'asha', 'hyperband', 'median', or 'pbt', got 'bohb'"},
        BadCase{"unknown type as a name", "scheduler: sha\n", "scheduler", 8, 12, "got 'sha'"},
        BadCase{"asha as a bare name", "scheduler: asha\n", "scheduler", 8, 12, "asha needs max_resource"},
        BadCase{"missing type", "scheduler: {max_resource: 9}\n", "scheduler.type", 8, 12,
                "missing required field 'type'"},
        BadCase{"missing max_resource", "scheduler:\n  type: asha\n", "scheduler.max_resource", 9, 3,
                "missing required field 'max_resource'"},
        BadCase{"reduction factor 1", "scheduler:\n  type: asha\n  max_resource: 9\n  reduction_factor: 1\n",
                "scheduler.reduction_factor", 11, 21, "must be > 1, got 1"},
        BadCase{"reduction factor a word", "scheduler: {type: asha, max_resource: 9, reduction_factor: three}\n",
                "scheduler.reduction_factor", 8, 60, "expected a number, got 'three'"},
        BadCase{"typo in a field", "scheduler: {type: asha, max_resource: 9, reduction_facter: 2}\n",
                "scheduler.reduction_facter", 8, 0, "did you mean 'reduction_factor'?"},
        BadCase{"min not below max", "scheduler:\n  type: hyperband\n  min_resource: 9\n  max_resource: 9\n",
                "scheduler.min_resource", 10, 17, "must be < max_resource (9), got 9"},
        BadCase{"too many brackets", "scheduler: {type: hyperband, max_resource: 27, brackets: 5}\n",
                "scheduler.brackets", 8, 58, "at most 4"},
        BadCase{"brackets on asha", "scheduler: {type: asha, max_resource: 27, brackets: 2}\n",
                "scheduler.brackets", 8, 43, "applies only to the hyperband scheduler, not asha"},
        BadCase{"grace period on asha", "scheduler: {type: asha, max_resource: 27, grace_period: 2}\n",
                "scheduler.grace_period", 8, 0, "applies only to the median scheduler, not asha"},
        BadCase{"max_resource on median", "scheduler: {type: median, max_resource: 27}\n",
                "scheduler.max_resource", 8, 0, "applies only to the asha and hyperband schedulers, not median"},
        BadCase{"negative grace period", "scheduler: {type: median, grace_period: -1}\n",
                "scheduler.grace_period", 8, 0, "must be >= 0, got -1"},
        BadCase{"min_trials zero", "scheduler: {type: median, min_trials: 0}\n", "scheduler.min_trials", 8, 39,
                "must be between 1 and 1000000, got 0"},
        BadCase{"pbt without interval", "scheduler: {type: pbt}\n", "scheduler.perturbation_interval", 8, 12,
                "missing required field 'perturbation_interval'"},
        BadCase{"pbt quantile too big", "scheduler: {type: pbt, perturbation_interval: 2, quantile: 0.6}\n",
                "scheduler.quantile", 8, 0, "must be in (0, 0.5], got 0.6"},
        BadCase{"pbt resample probability", "scheduler: {type: pbt, perturbation_interval: 2, resample_probability: 2}\n",
                "scheduler.resample_probability", 8, 0, "must be in [0, 1], got 2"},
        BadCase{"pbt negative seed", "scheduler: {type: pbt, perturbation_interval: 2, seed: -4}\n",
                "scheduler.seed", 8, 0, "non-negative integer"},
        BadCase{"resource is the objective", "scheduler: {type: median, resource: val_loss}\n",
                "scheduler.resource", 8, 37, "must differ from objective.metric ('val_loss')"},
        BadCase{"empty resource", "scheduler: {type: median, resource: \"\"}\n", "scheduler.resource", 8, 0,
                "must not be empty"},
        BadCase{"field on none", "scheduler: {type: none, quantile: 0.2}\n", "scheduler.quantile", 8, 0,
                "applies only to the pbt scheduler, not none"},
        BadCase{"scheduler a list", "scheduler: [asha]\n", "scheduler", 8, 12, "expected a scheduler type"},
        BadCase{"nodes on median", "scheduler: {type: median, resource: nodes}\n", "scheduler.resource", 8, 37,
                "nodes (node count as the fidelity) needs type asha or hyperband, got median"},
        BadCase{"nodes with a fractional rung", "scheduler: {type: asha, resource: nodes, max_resource: 9, "
                "reduction_factor: 2.5}\n", "scheduler.reduction_factor", 8, 77, "gives 2.5: use a whole reduction_factor"},
        BadCase{"nodes not whole", "scheduler: {type: asha, resource: nodes, min_resource: 0.5, max_resource: 4, "
                "reduction_factor: 2}\n", "scheduler.resource", 8, 0, "node counts (whole numbers >= 1), got 0.5 and 4"},
        BadCase{"nodes and resources.nodes", "resources: {nodes: 2}\nscheduler: {type: asha, resource: nodes, "
                "max_resource: 4, reduction_factor: 2}\n", "resources.nodes", 9, 0, "leave resources.nodes out, got 2"},
        BadCase{"ensemble without file", "ensemble: {size: 3}\n", "ensemble.predictions_file", 8, 11,
                "missing required field 'predictions_file'"},
        BadCase{"ensemble unknown placeholder", "ensemble: {predictions_file: \"{checkpoint_dri}/p.csv\"}\n",
                "ensemble.predictions_file", 8, 30, "unknown placeholder {checkpoint_dri} (did you mean {checkpoint_dir}?)"},
        BadCase{"ensemble bad metric", "ensemble: {predictions_file: p.csv, metric: auc}\n", "ensemble.metric", 8, 0,
                "expected 'accuracy', 'log_loss', or 'mse', got 'auc'"},
        BadCase{"ensemble size zero", "ensemble: {predictions_file: p.csv, size: 0}\n", "ensemble.size", 8, 0,
                "between 1 and 1000"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name;
      for (const char* p = info.param.what; *p; ++p) name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
      return name;
    });

TEST(SchedulerSpecTest, NodeCountAsTheFidelityGivesWholeNodeLevelsPerBracket) {
  ParseResult a = ParseSpec(kHead + "scheduler: {type: asha, resource: nodes, max_resource: 8, reduction_factor: 2}\n"
                                    "resources: {nodes: 8}\n", "s.yaml");
  ASSERT_TRUE(a.ok()) << AllErrors(a);
  EXPECT_TRUE(ScalesNodes(a.spec->scheduler));
  EXPECT_EQ(NodeLevels(a.spec->scheduler, 0), (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(NodeLevels(a.spec->scheduler, 5), (std::vector<int>{1, 2, 4, 8})) << "asha: one bracket";
  // hyperband: a trial's levels start at its bracket's first rung; the last bracket runs at 4 nodes only.
  ParseResult h = ParseSpec(kHead + "scheduler: {type: hyperband, resource: nodes, max_resource: 4, "
                                    "reduction_factor: 2}\n", "s.yaml");
  ASSERT_TRUE(h.ok()) << AllErrors(h);
  std::set<std::vector<int>> seen;
  for (int n = 0; n < 20; ++n) {
    auto levels = NodeLevels(h.spec->scheduler, n);
    int bracket = HyperbandBracket(h.spec->scheduler, MaxBrackets(h.spec->scheduler), n);
    EXPECT_EQ(levels.front(), 1 << bracket) << "trial " << n;
    EXPECT_EQ(levels.back(), 4);
    seen.insert(levels);
  }
  EXPECT_EQ(seen, (std::set<std::vector<int>>{{1, 2, 4}, {2, 4}, {4}}));
  // Another resource name is an ordinary metric.
  ParseResult e = ParseSpec(kHead + "scheduler: {type: asha, resource: epoch, max_resource: 8}\n", "s.yaml");
  ASSERT_TRUE(e.ok()) << AllErrors(e);
  EXPECT_FALSE(ScalesNodes(e.spec->scheduler));
  // {nodes} is a built-in placeholder (and so not a parameter name).
  ParseResult p = ParseSpec("name: s\nobjective: {metric: v, mode: min}\nbudget: {max_trials: 2}\n"
                            "command: [t, \"{nodes}\"]\nspace:\n  nodes: {type: int, low: 1, high: 4}\n", "p.yaml");
  ASSERT_EQ(p.errors.size(), 1u) << AllErrors(p);
  EXPECT_NE(p.errors[0].message.find("'nodes' is a built-in placeholder"), std::string::npos) << AllErrors(p);
}

TEST(SchedulerSpecTest, PbtNeedsParallelism) {
  const std::string spec =
      "name: s\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: 8}\ncommand: [t, \"{lr}\"]\n"
      "space:\n  lr: {type: float, low: 0.001, high: 0.1}\nscheduler:\n  type: pbt\n  perturbation_interval: 2\n";
  ParseResult r = ParseSpec(spec, "p.yaml");
  ASSERT_EQ(r.errors.size(), 1u) << AllErrors(r);
  EXPECT_EQ(r.errors[0].ToString(),
            "p.yaml:8:9: scheduler.type: pbt needs a population of trials running at once: set "
            "budget.parallelism >= 2 (got 1)");
}

}  // namespace
}  // namespace ladder::search
