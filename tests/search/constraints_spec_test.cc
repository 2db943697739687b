// The spec's `constraints:` list (issue 42): read in order with their bounds and signed as the samplers are told
// them, built-in metrics and the objective's own metric allowed, and every refusal one error naming the file, the
// field and the value: a malformed entry (no metric, no bound, both bounds, a non-finite bound) and the parts that
// rank trials without regard to feasibility (pbt, an ensemble, a warm start, scales:); several objectives take
// them.
#include <gtest/gtest.h>

#include <string>

#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

std::string Spec(const std::string& constraints, const std::string& extra = "") {
  return "name: s\nobjective: {metric: val_loss, mode: min}\nbudget: {max_trials: 20}\ncommand: [train]\nspace:\n"
         "  lr: {type: float, low: 1.0e-4, high: 0.1, log: true}\n" + extra + constraints;
}
const std::string kOne = "constraints: [{metric: peak_mem_gb, max: 70}]\n";

std::string Errors(const std::string& yaml) {
  ParseResult r = ParseSpec(yaml, "my.yaml");
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(ConstraintsSpecTest, BoundsAreReadInOrderAndSignedAsOptunaDoes) {
  ParseResult r = ParseSpec(Spec("constraints:\n  - {metric: peak_mem_gb, max: 70}\n  - {metric: throughput, min: 1e3}\n"
                                 "  - {metric: val_loss, max: 2.5}\n  - {metric: node_hours, max: 0.5}\n"
                                 "  - {metric: wall_time, min: 10}\n"),
                            "my.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  const auto& c = r.spec->constraints;
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].metric, "peak_mem_gb");
  EXPECT_TRUE(c[0].max);
  EXPECT_EQ(c[0].bound, 70);
  EXPECT_EQ(c[0].Signed(75.5), 5.5) << "above a max: broken by how far";
  EXPECT_EQ(c[0].Signed(60), -10) << "under a max: holds";
  EXPECT_EQ(c[1].metric, "throughput");
  EXPECT_FALSE(c[1].max);
  EXPECT_EQ(c[1].bound, 1000);
  EXPECT_EQ(c[1].Signed(900), 100) << "under a min: broken";
  EXPECT_EQ(c[1].Signed(1200), -200);
  EXPECT_EQ(c[2].metric, "val_loss") << "the objective's own metric may be bounded";
  EXPECT_EQ(c[3].metric, "node_hours");
  EXPECT_EQ(c[4].metric, "wall_time");
  ParseResult none = ParseSpec(Spec(""), "my.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none.spec->constraints.empty());
  for (const char* ok : {"scheduler: {type: asha, max_resource: 9}\n", "sampler: gp\n", "sampler: random\n",
                         "enqueue: [{lr: 0.01}]\n"}) {
    ParseResult with = ParseSpec(Spec(kOne, ok), "my.yaml");
    EXPECT_TRUE(with.ok()) << ok << ": " << with.errors[0].ToString();
  }
}

TEST(ConstraintsSpecTest, AMalformedEntryIsOneErrorNamingItsFieldAndValue) {
  EXPECT_EQ(Errors(Spec("constraints: [{max: 70}]\n")),
            "my.yaml:7:15: constraints[0].metric: missing required field 'metric'\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: '', max: 70}]\n")),
            "my.yaml:7:24: constraints[0].metric: must not be empty\n");
  EXPECT_EQ(Errors(Spec("constraints:\n  - {metric: mem, max: 70}\n  - {metric: mem}\n")),
            "my.yaml:9:5: constraints[1]: needs a bound: max: X (the metric at most X) or min: X (at least X)\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: mem, max: 70, min: 10}]\n")),
            "my.yaml:7:38: constraints[0]: give max or min, not both (a range is two constraints on the same "
            "metric), got max: 70 and min: 10\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: mem, max: .inf}]\n")),
            "my.yaml:7:34: constraints[0].max: must be a finite number, got '.inf'\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: mem, min: .nan}]\n")),
            "my.yaml:7:34: constraints[0].min: must be a finite number, got '.nan'\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: mem, max: lots}]\n")),
            "my.yaml:7:34: constraints[0].max: expected a number, got 'lots'\n");
  EXPECT_EQ(Errors(Spec("constraints: [{metric: mem, below: 3}]\n")),
            "my.yaml:7:15: constraints[0]: needs a bound: max: X (the metric at most X) or min: X (at least X)\n"
            "my.yaml:7:29: constraints[0].below: unknown field 'below'; allowed: 'metric', 'max', or 'min'\n");
  EXPECT_EQ(Errors(Spec("constraints: peak_mem_gb\n")),
            "my.yaml:7:14: constraints: expected a list of {metric: NAME, max: X} or {metric: NAME, min: X}, got "
            "'peak_mem_gb'\n");
  EXPECT_EQ(Errors(Spec("constraints: []\n")),
            "my.yaml:7:14: constraints: expected a list of {metric: NAME, max: X} or {metric: NAME, min: X}, got "
            "an empty list (leave constraints out for none)\n");
}

TEST(ConstraintsSpecTest, SeveralObjectivesTakeConstraints) {
  const std::string two = "objectives: [{metric: val_loss, mode: min}, {metric: node_hours, mode: min}]\n";
  for (const std::string sampler : {"auto", "tpe", "nsga2"}) {
    ParseResult r = ParseSpec("name: s\n" + two + "sampler: " + sampler + "\nbudget: {max_trials: 9}\n"
                              "command: [train]\nspace:\n  lr: {type: float, low: 0.1, high: 1}\n" + kOne,
                              "my.yaml");
    ASSERT_TRUE(r.ok()) << sampler << ": " << r.errors[0].ToString();
    EXPECT_TRUE(r.spec->MultiObjective());
    ASSERT_EQ(r.spec->constraints.size(), 1u);
    EXPECT_EQ(r.spec->constraints[0].metric, "peak_mem_gb");
  }
}

TEST(ConstraintsSpecTest, PartsThatIgnoreFeasibilityAreRefusedNamingThem) {
  std::string pbt = Spec(kOne, "scheduler: {type: pbt, perturbation_interval: 2}\n");
  pbt.replace(pbt.find("{max_trials: 20}"), 16, "{max_trials: 20, parallelism: 4}");
  EXPECT_EQ(Errors(pbt),
            "my.yaml:8:1: constraints: pbt copies the best running trial whether or not it will be feasible: not "
            "with constraints\n");
  EXPECT_EQ(Errors(Spec(kOne, "ensemble: {predictions_file: \"{checkpoint_dir}/p.csv\"}\n")),
            "my.yaml:8:1: constraints: the ensemble selection ranks trials by the objective alone: not with "
            "constraints\n");
  EXPECT_EQ(Errors(Spec(kOne, "warm_start: {search: 2}\n")),
            "my.yaml:8:1: constraints: a warm start's earlier trials carry no constraint values: not with "
            "constraints\n");
  EXPECT_NE(Errors("name: s\nobjective: {metric: val_loss, mode: min}\ncommand: [train]\nscales: {global_batch: "
                   "[32, 64], lr: {low: 0.01, high: 0.1}}\n" + kOne)
                .find("constraints: scales: plans its sweep instead of sampling it: not with constraints"),
            std::string::npos);
}

}  // namespace
}  // namespace ladder::search
