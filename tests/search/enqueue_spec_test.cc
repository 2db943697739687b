// The spec's `enqueue:` list: points read against the space, and every way a point is refused, each error
// naming the spec file, the point's index, the field and the value; and its `warm_start:` mapping.
#include <gtest/gtest.h>

#include <string>

#include "search/core/point.h"
#include "search/spec/spec_reader.h"

namespace ladder::search {
namespace {

std::string Spec(const std::string& enqueue, const std::string& sampler = "tpe", int max_trials = 10) {
  return "name: s\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: " + std::to_string(max_trials) +
         "}\nsampler: " + sampler +
         "\ncommand: [train]\nspace:\n"
         "  lr: {type: float, low: 1.0e-4, high: 0.1, log: true}\n"
         "  batch_size: {type: int, low: 16, high: 256, grid_points: 2}\n"
         "  opt: {type: categorical, values: [sgd, adam]}\n"
         "  momentum: {type: float, low: 0.0, high: 0.99, condition: {param: opt, in: [sgd]}}\n" +
         enqueue;
}

// Every error as ToString() prints it, one per line.
std::string Errors(const std::string& yaml) {
  ParseResult r = ParseSpec(yaml, "my.yaml");
  std::string out;
  for (const auto& e : r.errors) out += e.ToString() + "\n";
  return out;
}

TEST(EnqueueSpecTest, PointsAreReadTypedAndInOrder) {
  ParseResult r = ParseSpec(Spec("enqueue:\n"
                                 "  - {lr: 0.01, batch_size: 64, opt: sgd, momentum: 0.9}\n"
                                 "  - {lr: 1e-3, batch_size: 256, opt: adam}\n"),
                            "my.yaml");
  ASSERT_TRUE(r.ok()) << r.errors[0].ToString();
  ASSERT_EQ(r.spec->enqueue.size(), 2u);
  const Params& a = r.spec->enqueue[0];
  EXPECT_EQ(std::get<double>(a.at("lr")), 0.01);
  EXPECT_EQ(std::get<int64_t>(a.at("batch_size")), 64);
  EXPECT_EQ(std::get<std::string>(a.at("opt")), "sgd");
  EXPECT_EQ(std::get<double>(a.at("momentum")), 0.9);
  const Params& b = r.spec->enqueue[1];
  EXPECT_EQ(b.size(), 3u) << "momentum is inactive under adam";
  EXPECT_EQ(std::get<double>(b.at("lr")), 0.001);
  EXPECT_EQ(FormatPoint(r.spec->space, b), "lr=0.001, batch_size=256, opt=adam");
  EXPECT_TRUE(ParseSpec(Spec(""), "my.yaml").spec->enqueue.empty()) << "no enqueue: none";
}

TEST(EnqueueSpecTest, EachRefusalNamesTheFileTheIndexTheFieldAndTheValue) {
  const std::string errors = Errors(Spec("enqueue:\n"
                                         "  - {lr: 0.5, batch_size: 64, opt: adam}\n"                 // line 12
                                         "  - {lr: 0.01, batch_size: 64.5, opt: rmsprop}\n"           // 17
                                         "  - {lr: 0.01, batch_size: 64, opt: adam, momentum: 0.9}\n"  // 16
                                         "  - {lr: 0.01, batch_size: 64, opt: sgd}\n"                 // 17
                                         "  - {lr: 0.01, batchsize: 64, opt: adam}\n"                 // 16
                                         "  - {lr: abc, batch_size: 300, opt: adam}\n"));             // 17
  EXPECT_NE(errors.find("my.yaml:12:10: enqueue[0].lr: 0.5 is out of range [1e-04, 0.1]"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("my.yaml:13:28: enqueue[1].batch_size: '64.5' is not an integer"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("enqueue[1].opt: 'rmsprop' is not one of its values [sgd, adam]"), std::string::npos)
      << errors;
  EXPECT_NE(errors.find("my.yaml:14:53: enqueue[2].momentum: 0.9 is given, but 'momentum' is inactive here: its "
                        "condition is opt in [sgd] and opt is adam (leave it out)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("my.yaml:15:5: enqueue[3].momentum: missing: 'momentum' is active (opt is sgd) and needs a "
                        "value"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("enqueue[4].batchsize: unknown parameter 'batchsize' (did you mean 'batch_size'?)"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("enqueue[4].batch_size: missing: 'batch_size' is active and needs a value"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("enqueue[5].lr: 'abc' is not a number"), std::string::npos) << errors;
  EXPECT_NE(errors.find("enqueue[5].batch_size: 300 is out of range [16, 256]"), std::string::npos) << errors;
}

TEST(EnqueueSpecTest, ShapeSamplerAndBudgetAreChecked) {
  EXPECT_NE(Errors(Spec("enqueue: {lr: 0.01}\n")).find("enqueue: expected a list of points"), std::string::npos);
  EXPECT_NE(Errors(Spec("enqueue: [[0.01, 64]]\n")).find("enqueue[0]: expected a mapping of parameter name"),
            std::string::npos);
  EXPECT_NE(Errors(Spec("enqueue: [{lr: [0.01], batch_size: 64, opt: adam}]\n"))
                .find("enqueue[0].lr: expected a single value, got a sequence"),
            std::string::npos);
  const std::string point = "  - {lr: 0.01, batch_size: 64, opt: adam}\n";
  EXPECT_NE(Errors(Spec("enqueue:\n" + point + point, "tpe", 1))
                .find("enqueue: 2 points, more than budget.max_trials (1): enqueued points are trials of the search"),
            std::string::npos);
  std::string grid = "name: g\nobjective: {metric: loss, mode: min}\nsampler: grid\ncommand: [train]\nspace:\n"
                     "  batch_size: {type: int, low: 16, high: 256, grid_points: 2}\n"
                     "enqueue: [{batch_size: 32}]\n";
  EXPECT_NE(Errors(grid).find("enqueue: the grid sampler visits its own points"), std::string::npos) << Errors(grid);
  // A space with an error: its points are not checked against it (no cascade of errors).
  std::string bad_space = "name: b\nobjective: {metric: loss, mode: min}\nbudget: {max_trials: 3}\ncommand: [t]\n"
                          "space:\n  x: {type: float, low: 1, high: 0}\nenqueue: [{x: 5}]\n";
  EXPECT_EQ(Errors(bad_space).find("enqueue"), std::string::npos) << Errors(bad_space);
}

TEST(EnqueueSpecTest, ParsePointTakesTheTextOfEveryKind) {
  ParseResult r = ParseSpec(Spec(""), "my.yaml");
  ASSERT_TRUE(r.ok());
  PointResult p = ParsePoint(r.spec->space, {{"lr", "1e-2"}, {"batch_size", "+32"}, {"opt", "adam"}});
  ASSERT_TRUE(p.ok()) << p.errors[0].message;
  EXPECT_EQ(std::get<int64_t>(p.params.at("batch_size")), 32);
  PointResult twice = ParsePoint(r.spec->space, {{"lr", "0.01"}, {"lr", "0.02"}, {"batch_size", "32"}, {"opt", "adam"}});
  ASSERT_EQ(twice.errors.size(), 1u);
  EXPECT_EQ(twice.errors[0].param, "lr");
  EXPECT_EQ(twice.errors[0].message, "given twice");
  EXPECT_TRUE(twice.params.empty()) << "a refused point has no params";
}

TEST(EnqueueSpecTest, WarmStartNamesAnEarlierSearchAndNeedsASamplerThatLearns) {
  ParseResult here = ParseSpec(Spec("warm_start: {search: 3}\n"), "my.yaml");
  ASSERT_TRUE(here.ok()) << here.errors[0].ToString();
  EXPECT_EQ(here.spec->warm_start.search_id, 3);
  EXPECT_EQ(here.spec->warm_start.db, "");
  ParseResult other = ParseSpec(Spec("warm_start: {db: /data/old.db, search: 7}\n"), "my.yaml");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other.spec->warm_start.db, "/data/old.db");
  EXPECT_EQ(ParseSpec(Spec(""), "my.yaml").spec->warm_start.search_id, 0) << "none without the field";
  EXPECT_NE(Errors(Spec("warm_start: {db: x.db}\n")).find("my.yaml:11:13: warm_start.search: missing required field "
                                                         "'search'"),
            std::string::npos)
      << Errors(Spec("warm_start: {db: x.db}\n"));
  EXPECT_NE(Errors(Spec("warm_start: {search: 0}\n")).find("warm_start.search"), std::string::npos);
  EXPECT_NE(Errors(Spec("warm_start: {search: 2, db: \"\"}\n")).find("warm_start.db: must not be empty"),
            std::string::npos);
  EXPECT_NE(Errors(Spec("warm_start: {search: 2}\n", "random"))
                .find("warm_start: the random sampler learns nothing from earlier trials: warm_start needs tpe, gp, "
                      "cmaes or auto"),
            std::string::npos);
}

}  // namespace
}  // namespace ladder::search
