// ParseSpec: good specs parse to exact values; every kind of bad spec reports the field, line and a message.
#include <gtest/gtest.h>

#include <string>

#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

constexpr const char* kFullSpec = R"(name: digits-mlp
objective:
  metric: val_accuracy
  mode: max
  scope: best
budget:
  max_trials: 40
  parallelism: 4
  max_failed_trials: 5
  max_retries: 1
sampler:
  type: random
  seed: 17
resources:
  nodes: 2
  ranks_per_node: 4
  gpus_per_rank: 1
command: [ladder-train, --lr, "{lr}", --batch-size, "{batch_size}", --seed, "{trial_number}"]
env: {OMP_NUM_THREADS: "1", RUN: "{search_id}-{trial_id}"}
space:
  lr: {type: float, low: 1.0e-4, high: 0.1, log: true}
  batch_size: {type: int, low: 16, high: 128, log: true}
  width: {type: int, low: 32, high: 256, grid_points: 3}
  optimizer: {type: categorical, values: [sgd, adam]}
)";

// A minimal valid spec with `extra` lines appended (they may override nothing; keys must be new).
std::string Minimal(const std::string& space = "  lr: {type: float, low: 0.001, high: 0.1}\n") {
  return "name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [train, \"{lr}\"]\n"
         "space:\n" + space;
}

std::string AllErrors(const ParseResult& r) {
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(SpecTest, FullSpecParsesToExactValues) {
  ParseResult r = ParseSpec(kFullSpec, "full.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const SearchSpec& s = *r.spec;
  EXPECT_EQ(s.name, "digits-mlp");
  EXPECT_EQ(s.objective.metric, "val_accuracy");
  EXPECT_TRUE(s.objective.maximize);
  EXPECT_EQ(s.objective.scope, Objective::Scope::kBest);
  EXPECT_EQ(s.max_trials, 40);
  EXPECT_EQ(s.parallelism, 4);
  EXPECT_EQ(s.max_failed_trials, 5);
  EXPECT_EQ(s.max_retries, 1);
  EXPECT_EQ(s.sampler, "random");
  EXPECT_EQ(s.seed, 17u);
  EXPECT_EQ(s.group.nodes, 2);
  EXPECT_EQ(s.group.ranks_per_node, 4);
  EXPECT_EQ(s.group.gpus_per_rank, 1);
  EXPECT_EQ(s.command, (std::vector<std::string>{"ladder-train", "--lr", "{lr}", "--batch-size", "{batch_size}",
                                                 "--seed", "{trial_number}"}));
  EXPECT_EQ(s.env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}, {"RUN", "{search_id}-{trial_id}"}}));
  ASSERT_EQ(s.space.params.size(), 4u);
  const auto& lr = s.space.params[0];
  EXPECT_EQ(lr.name, "lr");
  EXPECT_EQ(lr.kind, ParamKind::kFloat);
  EXPECT_EQ(lr.low, 1.0e-4);
  EXPECT_EQ(lr.high, 0.1);
  EXPECT_TRUE(lr.log);
  const auto& bs = s.space.params[1];
  EXPECT_EQ(bs.name, "batch_size");
  EXPECT_EQ(bs.kind, ParamKind::kInt);
  EXPECT_EQ(bs.low, 16);
  EXPECT_EQ(bs.high, 128);
  EXPECT_TRUE(bs.log);
  const auto& width = s.space.params[2];
  EXPECT_EQ(width.name, "width");
  EXPECT_FALSE(width.log);
  EXPECT_EQ(width.grid_points, 3);
  const auto& opt = s.space.params[3];
  EXPECT_EQ(opt.name, "optimizer");
  EXPECT_EQ(opt.kind, ParamKind::kCategorical);
  EXPECT_EQ(opt.choices, (std::vector<std::string>{"sgd", "adam"}));
}

TEST(SpecTest, DefaultsAreFilledIn) {
  ParseResult r = ParseSpec(Minimal(), "min.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const SearchSpec& s = *r.spec;
  EXPECT_FALSE(s.objective.maximize);
  EXPECT_EQ(s.objective.scope, Objective::Scope::kLast);
  EXPECT_EQ(s.max_trials, 4);
  EXPECT_EQ(s.parallelism, 1);
  EXPECT_EQ(s.max_failed_trials, 3);  // max(3, 4 / 10)
  EXPECT_EQ(s.max_retries, 2);
  EXPECT_EQ(s.sampler, "auto");  // resolved by search/samplers/auto_sampler.h (tests/search/auto_sampler_test.cc)
  EXPECT_EQ(s.seed, 0u);
  EXPECT_EQ(s.group.nodes, 1);
  EXPECT_EQ(s.group.ranks_per_node, 1);
  EXPECT_EQ(s.group.gpus_per_rank, 0);
  EXPECT_TRUE(s.env.empty());
}

TEST(SpecTest, MaxFailedTrialsDefaultsToTenPercent) {
  std::string yaml = Minimal();
  yaml.replace(yaml.find("max_trials: 4"), 13, "max_trials: 200");
  ParseResult r = ParseSpec(yaml, "x.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->max_failed_trials, 20);
}

TEST(SpecTest, SamplerAsStringAndCommandAsShellString) {
  ParseResult r = ParseSpec(R"(name: grid-1
objective: {metric: loss, mode: minimize}
sampler: grid
command: python3 'my script.py' --lr "{lr}" --tag a\ b --opt="{opt}" --json '{{"k":1}}'
space:
  lr: {type: float, low: 0.001, high: 0.1, log: true, grid_points: 3}
  opt: {type: categorical, values: [sgd, adam]}
)", "g.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  const SearchSpec& s = *r.spec;
  EXPECT_EQ(s.sampler, "grid");
  EXPECT_FALSE(s.objective.maximize);
  EXPECT_EQ(s.max_trials, 6);  // the grid size
  EXPECT_EQ(s.command, (std::vector<std::string>{"python3", "my script.py", "--lr", "{lr}", "--tag", "a b",
                                                 "--opt={opt}", "--json", "{{\"k\":1}}"}));
}

TEST(SpecTest, GridMaxTrialsIsCappedAtTheGridSize) {
  ParseResult r = ParseSpec(R"(name: g
objective: {metric: loss, mode: min}
budget: {max_trials: 100}
sampler: {type: grid}
command: [train]
space:
  opt: {type: categorical, values: [a, b, c]}
)", "g.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->max_trials, 3);
}

TEST(SpecTest, CategoricalValuesKeepTheirSpelling) {
  ParseResult r = ParseSpec(Minimal("  bs: {type: categorical, values: [16, 32, 1.0e-3, \"yes\", no]}\n"), "c.yaml");
  // the command references {lr}, which is gone: expect exactly that error
  ASSERT_EQ(r.errors.size(), 1u) << AllErrors(r);
  EXPECT_EQ(r.errors[0].field, "command[1]");
  r = ParseSpec("name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [t, \"{bs}\"]\n"
                "space:\n  bs: {type: categorical, values: [16, 32, 1.0e-3, \"yes\", no]}\n", "c.yaml");
  ASSERT_TRUE(r.ok()) << AllErrors(r);
  EXPECT_EQ(r.spec->space.params[0].choices, (std::vector<std::string>{"16", "32", "1.0e-3", "yes", "no"}));
}

TEST(SpecTest, ErrorToString) {
  SpecError e{"spec.yaml", 12, 5, "space.lr.low", "must be > 0 when log: true"};
  EXPECT_EQ(e.ToString(), "spec.yaml:12:5: space.lr.low: must be > 0 when log: true");
  SpecError no_pos{"spec.yaml", 0, 0, "", "the spec is empty"};
  EXPECT_EQ(no_pos.ToString(), "spec.yaml: the spec is empty");
}

struct BadCase {
  const char* what;
  std::string yaml;
  std::string field;
  int line;
  int column;  // 0: don't check
  std::string message;  // substring
};

class BadSpecTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadSpecTest, ReportsFieldLineAndMessage) {
  const BadCase& c = GetParam();
  ParseResult r = ParseSpec(c.yaml, "bad.yaml");
  ASSERT_FALSE(r.ok()) << c.what;
  EXPECT_FALSE(r.spec.has_value());
  ASSERT_EQ(r.errors.size(), 1u) << c.what << "\n" << AllErrors(r);
  const SpecError& e = r.errors[0];
  EXPECT_EQ(e.file, "bad.yaml");
  EXPECT_EQ(e.field, c.field) << e.ToString();
  EXPECT_EQ(e.line, c.line) << e.ToString();
  if (c.column != 0) {
    EXPECT_EQ(e.column, c.column) << e.ToString();
  }
  EXPECT_NE(e.message.find(c.message), std::string::npos) << e.ToString() << "\nwanted: " << c.message;
}

const std::string kHead = "name: s\nobjective: {metric: loss, mode: min}\n";  // lines 1-2

INSTANTIATE_TEST_SUITE_P(
    Cases, BadSpecTest,
    ::testing::Values(
        BadCase{"syntax", "name: s\nobjective: [a, b\n", "objective", 3, 0, "end of sequence flow not found"},
        BadCase{"empty", "", "", 1, 1, "the spec is empty"},
        BadCase{"top not a mapping", "- a\n- b\n", "", 1, 1, "expected a mapping"},
        BadCase{"unknown top field", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\nsamplr: grid\n",
                "samplr", 7, 1, "unknown field 'samplr' (did you mean 'sampler'?)"},
        BadCase{"unknown nested field, transposition", kHead + "budget: {max_trials: 4, paralellism: 2}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.paralellism", 3, 25, "unknown field 'paralellism' (did you mean 'parallelism'?)"},
        BadCase{"unknown field lists allowed", kHead + "budget: {max_trials: 4, zzz: 2}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.zzz", 3, 0, "allowed: 'max_trials', 'parallelism', 'max_failed_trials', or 'max_retries'"},
        BadCase{"W&B spelling", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, min: 0, high: 1}\n",
                "space.x.min", 6, 0, "did you mean 'low'?"},
        BadCase{"wrong type", kHead + "budget:\n  max_trials: eight\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 4, 15, "expected an integer, got 'eight'"},
        BadCase{"empty value points at its key", kHead + "budget:\n  max_trials:\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 4, 3, "expected an integer, got nothing"},
        BadCase{"empty section reads as empty", kHead + "budget:\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 3, 1, "missing required field 'max_trials'"},
        BadCase{"float for int", kHead + "budget: {max_trials: 2.5}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 3, 0, "expected an integer, got '2.5'"},
        BadCase{"max_trials out of range", kHead + "budget: {max_trials: 1000001}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 3, 0, "between 1 and 1000000"},
        BadCase{"max_trials zero", kHead + "budget: {max_trials: 0}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 3, 0, "between 1 and 1000000"},
        BadCase{"parallelism zero", kHead + "budget: {max_trials: 3, parallelism: 0}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.parallelism", 3, 0, "must be between 1 and 1000000"},
        BadCase{"missing max_trials", kHead + "command: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "budget.max_trials", 1, 1, "missing required field 'max_trials'"},
        BadCase{"missing name", "objective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "name", 1, 1, "missing required field 'name'"},
        BadCase{"bad name", "name: my search\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "name", 1, 7, "[A-Za-z0-9._-]+"},
        BadCase{"name too long", "name: " + std::string(65, 'a') + "\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "name", 1, 7, "at most 64"},
        BadCase{"missing mode", "name: s\nobjective:\n  metric: loss\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "objective.mode", 3, 3, "missing required field 'mode'"},
        BadCase{"bad mode", "name: s\nobjective: {metric: loss, mode: up}\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "objective.mode", 2, 33, "expected 'max' or 'min', got 'up'"},
        BadCase{"bad sampler", kHead + "budget: {max_trials: 4}\nsampler: bayes\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "sampler", 4, 10, "expected 'auto', 'random', 'grid', 'sobol', 'tpe', 'gp', 'cmaes', or 'nsga2', got 'bayes'"},
        BadCase{"negative seed", kHead + "budget: {max_trials: 4}\nsampler: {type: random, seed: -1}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "sampler.seed", 4, 0, "non-negative integer"},
        BadCase{"resources nodes", kHead + "budget: {max_trials: 4}\nresources: {nodes: 0}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "resources.nodes", 4, 0, "must be between 1 and 65536"},
        BadCase{"empty float range", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 1, high: 1}\n",
                "space.x.low", 6, 25, "empty range"},
        BadCase{"inverted int range", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: int, low: 5, high: 4}\n",
                "space.x.low", 6, 23, "empty range"},
        BadCase{"log with low 0", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  lr: {type: float, low: 0, high: 1, log: true}\n",
                "space.lr.low", 6, 0, "must be > 0 when log: true"},
        BadCase{"int log with low 0", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  n: {type: int, low: 0, high: 8, log: true}\n",
                "space.n.low", 6, 0, "must be >= 1 when log: true"},
        BadCase{"int bound not an integer", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  n: {type: int, low: 0.5, high: 8}\n",
                "space.n.low", 6, 0, "expected an integer, got '0.5'"},
        BadCase{"float bound not a number", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: small, high: 8}\n",
                "space.x.low", 6, 0, "expected a number, got 'small'"},
        BadCase{"missing high", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0}\n",
                "space.x.high", 6, 6, "missing required field 'high'"},
        BadCase{"bad type", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: double, low: 0, high: 1}\n",
                "space.x.type", 6, 0, "expected 'float', 'int', or 'categorical', got 'double'"},
        BadCase{"missing type", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {low: 0, high: 1}\n",
                "space.x.type", 6, 0, "missing required field 'type'"},
        BadCase{"low on categorical", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: categorical, values: [a], low: 0}\n",
                "space.x.low", 6, 0, "unknown field 'low'"},
        BadCase{"empty values", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  opt: {type: categorical, values: []}\n",
                "space.opt.values", 6, 0, "at least one value"},
        BadCase{"duplicate values", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  opt: {type: categorical, values: [sgd, adam, sgd]}\n",
                "space.opt.values[2]", 6, 48, "duplicate value 'sgd'"},
        BadCase{"bad parameter name", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  learning-rate: {type: float, low: 0, high: 1}\n",
                "space.learning-rate", 6, 3, "[A-Za-z_][A-Za-z0-9_]*"},
        BadCase{"parameter named like a built-in", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  trial_id: {type: float, low: 0, high: 1}\n",
                "space.trial_id", 6, 3, "built-in"},
        BadCase{"empty space", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace: {}\n",
                "space", 5, 8, "at least one parameter"},
        BadCase{"empty command", kHead + "budget: {max_trials: 4}\ncommand: []\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "command", 4, 10, "must not be empty"},
        BadCase{"blank command string", kHead + "budget: {max_trials: 4}\ncommand: \"  \"\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "command", 4, 10, "must not be empty"},
        BadCase{"unterminated quote", kHead + "budget: {max_trials: 4}\ncommand: \"train 'oops\"\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "command", 4, 10, "unterminated single quote"},
        BadCase{"unquoted placeholder", kHead + "budget: {max_trials: 4}\ncommand: [t, {x}]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "command[1]", 4, 14, "quote placeholders"},
        BadCase{"unknown placeholder", kHead + "budget: {max_trials: 4}\ncommand: [t, --lr, \"{lrr}\"]\nspace:\n  lr: {type: float, low: 0, high: 1}\n",
                "command[2]", 4, 20, "unknown placeholder {lrr} (did you mean {lr}?)"},
        BadCase{"unknown placeholder in a command string", kHead + "budget: {max_trials: 4}\ncommand: t --lr {lrr}\nspace:\n  lr: {type: float, low: 0, high: 1}\n",
                "command[2]", 4, 10, "unknown placeholder {lrr}"},
        BadCase{"unknown placeholder in env", kHead + "budget: {max_trials: 4}\ncommand: [t]\nenv:\n  SEED: \"{trial_numbr}\"\nspace:\n  lr: {type: float, low: 0, high: 1}\n",
                "env.SEED", 6, 9, "unknown placeholder {trial_numbr} (did you mean {trial_number}?)"},
        BadCase{"lone brace", kHead + "budget: {max_trials: 4}\ncommand: [t, \"a}b\"]\nspace:\n  lr: {type: float, low: 0, high: 1}\n",
                "command[1]", 4, 14, "unmatched '}'"},
        BadCase{"bad env name", kHead + "budget: {max_trials: 4}\ncommand: [t]\nenv: {1X: a}\nspace:\n  lr: {type: float, low: 0, high: 1}\n",
                "env", 5, 7, "environment variable name"},
        BadCase{"grid without grid_points", kHead + "sampler: grid\ncommand: [t]\nspace:\n  opt: {type: categorical, values: [a]}\n  lr: {type: float, low: 0, high: 1}\n",
                "space.lr.grid_points", 7, 7, "grid_points"},
        BadCase{"grid_points too small", kHead + "sampler: grid\ncommand: [t]\nspace:\n  lr: {type: float, low: 0, high: 1, grid_points: 1}\n",
                "space.lr.grid_points", 6, 0, "between 2 and"},
        BadCase{"grid too big", kHead + "sampler: grid\ncommand: [t]\nspace:\n  a: {type: float, low: 0, high: 1, grid_points: 1000}\n  b: {type: float, low: 0, high: 1, grid_points: 1001}\n",
                "space", 6, 0, "more than 1000000 points"},
        BadCase{"duplicate key", "name: s\nname: t\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: 1}\n",
                "name", 2, 1, "duplicate field 'name'"},
        BadCase{"infinite bound", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 0, high: .inf}\n",
                "space.x.high", 6, 0, "must be a finite number"},
        BadCase{"log not a bool", kHead + "budget: {max_trials: 4}\ncommand: [t]\nspace:\n  x: {type: float, low: 1, high: 2, log: maybe}\n",
                "space.x.log", 6, 0, "expected true or false, got 'maybe'"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name;
      for (const char* p = info.param.what; *p; ++p) name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
      return name;
    });

TEST(SpecTest, SeveralErrorsAreAllReportedInFileOrder) {
  ParseResult r = ParseSpec(R"(name: bad name
objective:
  metric: loss
  mode: sideways
budget:
  max_trials: eight
  paralellism: 2
command: [train, "{lrr}"]
space:
  lr: {type: float, low: 0.1, high: 0.01}
  opt: {type: categorical, values: []}
)", "multi.yaml");
  ASSERT_FALSE(r.ok());
  std::vector<std::pair<std::string, int>> got;
  for (const auto& e : r.errors) got.emplace_back(e.field, e.line);
  std::vector<std::pair<std::string, int>> want = {{"name", 1},
                                                   {"objective.mode", 4},
                                                   {"budget.max_trials", 6},
                                                   {"budget.paralellism", 7},
                                                   {"command[1]", 8},
                                                   {"space.lr.low", 10},
                                                   {"space.opt.values", 11}};
  EXPECT_EQ(got, want) << AllErrors(r);
  EXPECT_EQ(r.errors[4].ToString(), "multi.yaml:8:18: command[1]: unknown placeholder {lrr} (did you mean {lr}?)");
}

TEST(SpecTest, NeverThrowsOnGarbage) {
  for (const char* text : {"{", "[", "\t", "!!binary x", "a: *b", "? [a]\n: b\n", "name: [1, {2: 3}]", "---\n...\n"}) {
    ParseResult r;
    EXPECT_NO_THROW(r = ParseSpec(text, "g.yaml")) << text;
    EXPECT_FALSE(r.ok()) << text;
  }
}

// stage: a list of {from: FILE, to: DIR}, absolute paths; each wrong entry names its field.
TEST(SpecTest, StageListsFilesForNodeLocalStorage) {
  auto ok = ParseSpec(Minimal() + "stage:\n  - {from: /lustre/me/data.tar, to: /tmp/stage/}\n"
                                  "  - {from: /lustre/me/labels.csv, to: /tmp/stage}\n", "s.yaml");
  ASSERT_TRUE(ok.ok()) << AllErrors(ok);
  ASSERT_EQ(ok.spec->stage.size(), 2u);
  EXPECT_EQ(ok.spec->stage[0].from, "/lustre/me/data.tar");
  EXPECT_EQ(ok.spec->stage[0].to, "/tmp/stage") << "a trailing slash is dropped";
  EXPECT_EQ(StagedName(ok.spec->stage[1]), "labels.csv");
  auto bad = ParseSpec(Minimal() + "stage:\n  - {from: data.tar, to: /tmp/s}\n  - {from: /d/, to: /tmp/s}\n"
                                   "  - {to: /tmp/s}\n  - {from: /a/x.tar, to: /tmp/s, mode: fast}\n"
                                   "  - {from: /b/x.tar, to: /tmp/s/}\n  - {from: /c/y.tar, to: /tmp/s}\n",
                       "s.yaml");
  const std::string errors = AllErrors(bad);
  for (const char* want : {"stage[0].from: must be an absolute path, got 'data.tar'", "stage[1].from: must name a file",
                           "stage[2].from: missing required field 'from'", "stage[3].mode: unknown field 'mode'"}) {
    EXPECT_NE(errors.find(want), std::string::npos) << want << "\n" << errors;
  }
  auto twice = ParseSpec(Minimal() + "stage:\n  - {from: /a/x.tar, to: /tmp/s}\n  - {from: /b/x.tar, to: /tmp/s/}\n",
                         "s.yaml");
  EXPECT_NE(AllErrors(twice).find("stage[1]: stages onto /tmp/s/x.tar like an earlier entry"), std::string::npos)
      << AllErrors(twice);
  auto scalar = ParseSpec(Minimal() + "stage: /a/x.tar\n", "s.yaml");
  EXPECT_NE(AllErrors(scalar).find("stage: expected a list of {from: FILE, to: DIR}"), std::string::npos)
      << AllErrors(scalar);
}

// stage: extract: true takes an archive into to/STEM; shard: node a directory of shards (into to/NAME) or a list
// (into to itself); each wrong combination named.
TEST(SpecTest, StageExtractsArchivesAndShardsFilesPerNode) {
  auto ok = ParseSpec(Minimal() + "stage:\n  - {from: /lustre/me/imagenet.tar.gz, to: /tmp/s, extract: true}\n"
                                  "  - {from: /lustre/me/shards/, to: /tmp/s, shard: node}\n"
                                  "  - {from: [/lustre/a.h5, /lustre/b.h5], to: /tmp/l, shard: node}\n", "s.yaml");
  ASSERT_TRUE(ok.ok()) << AllErrors(ok);
  ASSERT_EQ(ok.spec->stage.size(), 3u);
  EXPECT_TRUE(ok.spec->stage[0].extract);
  EXPECT_EQ(StagedName(ok.spec->stage[0]), "imagenet");
  EXPECT_TRUE(ok.spec->stage[1].shard_node);
  EXPECT_EQ(ok.spec->stage[1].from, "/lustre/me/shards") << "a trailing slash is dropped";
  EXPECT_EQ(StagedName(ok.spec->stage[1]), "shards");
  EXPECT_EQ(ok.spec->stage[2].from, "");
  EXPECT_EQ(ok.spec->stage[2].shards, (std::vector<std::string>{"/lustre/a.h5", "/lustre/b.h5"}));
  auto bad = ParseSpec(Minimal() + "stage:\n  - {from: /a/data.bin, to: /tmp/s, extract: true}\n"
                                   "  - {from: [/a/x, /b/y], to: /tmp/s}\n"
                                   "  - {from: /a/x.tar, to: /tmp/t, extract: true, shard: node}\n"
                                   "  - {from: /a/d, to: /tmp/u, shard: rank}\n"
                                   "  - {from: [/a/x, /b/x], to: /tmp/v, shard: node}\n"
                                   "  - {from: [], to: /tmp/w, shard: node}\n"
                                   "  - {from: /a/one.tar, to: /tmp/z, extract: true}\n"
                                   "  - {from: /b/one.tgz, to: /tmp/z, extract: true}\n", "s.yaml");
  const std::string errors = AllErrors(bad);
  for (const char* want : {"stage[0].from: extract: true needs an archive (.tar, .tar.gz",
                           "stage[1].from: a list of files needs shard: node",
                           "stage[2]: extract and shard cannot be combined",
                           "stage[3].shard: expected 'node', got 'rank'",
                           "stage[4].from[1]: a second shard named 'x'",
                           "stage[5].from: expected at least one file",
                           "stage[7]: stages onto /tmp/z/one like an earlier entry"}) {
    EXPECT_NE(errors.find(want), std::string::npos) << want << "\n" << errors;
  }
}

}  // namespace
}  // namespace ladder::search
