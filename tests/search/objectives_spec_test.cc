// The spec's `objectives:` list (several objectives): read in order with their modes, the built-in metrics
// node_hours and wall_time allowed there, and every refusal in one error naming the file, the field and the value:
// a malformed entry, objective: and objectives: both, a single-objective sampler, and the parts that rank trials by
// one value (a stopping rule, an ensemble, a warm start, scales:).
#include <gtest/gtest.h>

#include <string>

#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

std::string Spec(const std::string& objectives, const std::string& extra = "") {
  return "name: s\n" + objectives + "budget: {max_trials: 20}\ncommand: [train]\nspace:\n"
         "  lr: {type: float, low: 1.0e-4, high: 0.1, log: true}\n" + extra;
}
const std::string kTwo = "objectives: [{metric: val_loss, mode: min}, {metric: node_hours, mode: min}]\n";

std::string Errors(const std::string& yaml) {
  ParseResult r = ParseSpec(yaml, "my.yaml");
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(ObjectivesSpecTest, SeveralObjectivesAreReadInOrderAndTheFirstIsTheObjective) {
  ParseResult r = ParseSpec(Spec("objectives:\n  - {metric: val_acc, mode: max}\n  - {metric: wall_time, mode: min}\n"
                                 "  - {metric: params_m, mode: minimize}\n"),
                            "my.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_TRUE(r.spec->MultiObjective());
  ASSERT_EQ(r.spec->objectives.size(), 3u);
  EXPECT_EQ(r.spec->objectives[0].metric, "val_acc");
  EXPECT_TRUE(r.spec->objectives[0].maximize);
  EXPECT_EQ(r.spec->objectives[1].metric, "wall_time");
  EXPECT_FALSE(r.spec->objectives[1].maximize);
  EXPECT_FALSE(r.spec->objectives[2].maximize);
  EXPECT_EQ(r.spec->objective.metric, "val_acc") << "objective is objectives[0]";
  EXPECT_TRUE(r.spec->objective.maximize);
  EXPECT_EQ(r.spec->sampler, "auto");
  for (const char* sampler : {"tpe", "nsga2", "gp", "random", "sobol", "{type: nsga2, population: 8}", "{type: gp, max_history: 50}"}) {
    ParseResult s = ParseSpec(Spec(kTwo, std::string("sampler: ") + sampler + "\n"), "my.yaml");
    EXPECT_TRUE(s.ok()) << sampler << ": " << s.errors[0].ToString();
  }
  EXPECT_EQ(ParseSpec(Spec(kTwo, "sampler: {type: nsga2, population: 8}\n"), "my.yaml").spec->sampler_options.population,
            8);
  ParseResult one = ParseSpec(Spec("objective: {metric: loss, mode: min}\n"), "my.yaml");
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one.spec->MultiObjective());
  EXPECT_TRUE(one.spec->objectives.empty());
}

TEST(ObjectivesSpecTest, AMalformedEntryIsOneErrorNamingItsFieldAndValue) {
  EXPECT_EQ(Errors(Spec("objectives:\n  - {metric: val_loss, mode: min}\n  - {metric: node_hours, mode: lowest}\n")),
            "my.yaml:4:32: objectives[1].mode: expected 'max' or 'min', got 'lowest'\n");
  EXPECT_EQ(Errors(Spec("objectives:\n  - {metric: val_loss, mode: min}\n  - {mode: min}\n")),
            "my.yaml:4:5: objectives[1].metric: missing required field 'metric'\n");
  EXPECT_EQ(Errors(Spec("objectives:\n  - {metric: val_loss, mode: min}\n  - {metric: cost}\n")),
            "my.yaml:4:5: objectives[1].mode: missing required field 'mode' (max or min)\n");
  EXPECT_EQ(Errors(Spec("objectives:\n  - {metric: val_loss, mode: min}\n  - {metric: val_loss, mode: max}\n")),
            "my.yaml:4:5: objectives[1].metric: 'val_loss' is already objectives[0]: each metric once\n");
  EXPECT_EQ(Errors(Spec("objectives:\n  - {metric: val_loss, mode: min}\n  - {metric: c, mode: min, scope: best}\n")),
            "my.yaml:4:28: objectives[1].scope: unknown field 'scope'; allowed: 'metric' or 'mode'\n");
  EXPECT_EQ(Errors(Spec("objectives: [{metric: val_loss, mode: min}]\n")),
            "my.yaml:2:13: objectives: needs at least 2 objectives, got 1 (one objective is `objective:`)\n");
  EXPECT_EQ(Errors(Spec("objectives: val_loss\n")),
            "my.yaml:2:13: objectives: expected a list of {metric: NAME, mode: min | max}, got 'val_loss'\n");
  EXPECT_EQ(Errors(Spec("objective: {metric: loss, mode: min}\n" + kTwo)),
            "my.yaml:3:1: objectives: give objective (one) or objectives (several), not both; objective: is "
            "objectives[0]'s place\n");
  EXPECT_EQ(Errors(Spec("objective: {metric: node_hours, mode: min}\n")),
            "my.yaml:2:21: objective.metric: 'node_hours' is a built-in metric, measured once a trial has ended: "
            "name it in objectives: beside the metric it trades against\n");
}

TEST(ObjectivesSpecTest, ASingleObjectiveSamplerOrPartIsRefusedWithSeveralAndNsga2NeedsThem) {
  EXPECT_EQ(Errors(Spec(kTwo, "sampler: {type: cmaes, seed: 1}\n")),
            "my.yaml:7:10: sampler: the cmaes sampler has one objective; with objectives: use auto, tpe, nsga2, "
            "gp, random or sobol\n");
  EXPECT_EQ(Errors(Spec("objective: {metric: loss, mode: min}\n", "sampler: nsga2\n")),
            "my.yaml:7:10: sampler: the nsga2 sampler needs several objectives (objectives:)\n");
  EXPECT_EQ(Errors(Spec(kTwo, "scheduler: {type: asha, max_resource: 9}\n")),
            "my.yaml:7:1: scheduler: the stopping rule ranks trials by one objective: not with objectives:\n");
  EXPECT_EQ(Errors(Spec(kTwo, "warm_start: {search: 2}\n")),
            "my.yaml:7:1: warm_start: a warm start ranks trials by one objective: not with objectives:\n");
  EXPECT_EQ(Errors(Spec(kTwo, "ensemble: {predictions_file: \"{checkpoint_dir}/p.csv\"}\n")),
            "my.yaml:7:1: ensemble: the ensemble selection ranks trials by one objective: not with objectives:\n");
  EXPECT_NE(Errors("name: s\n" + kTwo + "command: [train]\nscales: {global_batch: [32, 64], lr: {low: 0.01, "
                   "high: 0.1}}\n")
                .find("objectives: scales: plans a batch x learning-rate sweep for one objective: not with "
                      "objectives:"),
            std::string::npos);
}

}  // namespace
}  // namespace ladder::search
