// cli/pareto_front.h: the front as `ladder trials --pareto` prints it (text and JSON), and the point `ladder promote`
// plans from: --pick, --weights over the objectives normalised across the front, and the refusals that list it.
#include "cli/pareto_front.h"
#include "cli/promote_plan.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ladder::cli {
namespace {

// Search 7 minimizes loss and maximizes acc; trials 0..3 (ids 10..13), 0, 1 and 2 on the front (by loss: 2, 0, 1).
struct Fixture {
  v1::Search search;
  std::vector<v1::Trial> trials;
  Fixture() {
    search.set_id(7);
    search.set_objective_metric("loss");
    auto* loss = search.add_objectives();
    loss->set_metric("loss");
    loss->set_direction(v1::MINIMIZE);
    auto* acc = search.add_objectives();
    acc->set_metric("acc");
    acc->set_direction(v1::MAXIMIZE);
    const double values[][2] = {{0.3, 0.5}, {0.5, 0.9}, {0.1, 0.2}, {0.6, 0.4}};
    for (int i = 0; i < 4; ++i) {
      v1::Trial& t = trials.emplace_back();
      t.set_id(10 + i);
      t.set_number(i);
      t.set_state(v1::TRIAL_COMPLETED);
      t.add_objectives(values[i][0]);
      t.add_objectives(values[i][1]);
      (*t.mutable_params())["lr"].set_float_value(0.01 * (i + 1));
    }
    for (int64_t id : {12, 10, 11}) search.add_pareto_front(id);
  }
};

TEST(ParetoFront, ListedInTheFrontsOrderWithEveryObjectiveAsTextAndJson) {
  Fixture f;
  const auto front = FrontTrials(f.search, f.trials);
  ASSERT_EQ(front.size(), 3u);
  std::ostringstream text;
  PrintParetoFront(f.search, front, text);
  EXPECT_EQ(text.str(),
            "Pareto front: 3 trials (min loss, max acc)\n"
            "trial  loss (min)  acc (max)  lr\n"
            "2      0.1         0.2        0.03\n"
            "0      0.3         0.5        0.01\n"
            "1      0.5         0.9        0.02\n");
  const nlohmann::json j = ParetoJson(f.search, front);
  EXPECT_EQ(j["search_id"], 7);
  EXPECT_EQ(j["objectives"][1]["metric"], "acc");
  EXPECT_EQ(j["objectives"][1]["mode"], "max");
  ASSERT_EQ(j["front"].size(), 3u);
  EXPECT_EQ(j["front"][0]["trial"], 2);
  EXPECT_EQ(j["front"][0]["trial_id"], 12);
  EXPECT_DOUBLE_EQ(j["front"][0]["objectives"]["loss"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(j["front"][0]["params"]["lr"].get<double>(), 0.03);
}

TEST(ParetoFront, PromoteTakesThePickedPointOrTheLowestNormalisedWeightedSum) {
  Fixture f;
  FrontChoice pick = ChooseFromFront(f.search, f.trials, 0, {});
  ASSERT_EQ(pick.error, "");
  EXPECT_EQ(pick.trial_id, 10);
  EXPECT_EQ(pick.how, "trial 0 of the Pareto front (loss 0.3, acc 0.5), by --pick 0");
  EXPECT_EQ(pick.json["pick"], 0);
  // Normalised over the front (loss 0.1..0.5, acc 0.2..0.9, 0 at the best): trial 2 (0, 1), 0 (0.5, 0.571),
  // 1 (1, 0). Weights 0.9,0.1 -> 0.1, 0.507, 0.9: trial 2; weights 0.2,0.8 -> 0.8, 0.557, 0.2: trial 1.
  FrontChoice loss = ChooseFromFront(f.search, f.trials, -1, {0.9, 0.1});
  ASSERT_EQ(loss.error, "");
  EXPECT_EQ(loss.number, 2);
  EXPECT_EQ(loss.how, "trial 2 of the Pareto front (loss 0.1, acc 0.2), by --weights 0.9,0.1: the lowest weighted "
                      "sum of the objectives normalised over the front (0.1 of 3 points)");
  EXPECT_DOUBLE_EQ(loss.json["score"].get<double>(), 0.1);
  EXPECT_EQ(loss.json["trial"], 2);
  EXPECT_DOUBLE_EQ(loss.json["objectives"]["acc"].get<double>(), 0.2);
  FrontChoice acc = ChooseFromFront(f.search, f.trials, -1, {0.2, 0.8});
  EXPECT_EQ(acc.number, 1) << acc.error;
}

TEST(ParetoFront, PromoteRefusesWithoutAChoiceListingTheFrontAndSaysWhatIsWrong) {
  Fixture f;
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, -1, {}).error,
            "search 7 has 2 objectives (min loss, max acc): say which point of its Pareto front to plan from, --pick "
            "TRIAL or --weights W1,W2,... (one weight per objective, each normalised over the front); its points:\n"
            "  trial 2: loss 0.1, acc 0.2\n  trial 0: loss 0.3, acc 0.5\n  trial 1: loss 0.5, acc 0.9");
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, 3, {}).error,
            "--pick 3: trial 3 is not on the Pareto front of search 7 (min loss, max acc); its points:\n"
            "  trial 2: loss 0.1, acc 0.2\n  trial 0: loss 0.3, acc 0.5\n  trial 1: loss 0.5, acc 0.9");
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, -1, {1}).error,
            "--weights: 1 weights for 2 objectives (min loss, max acc): one per objective, in that order");
  v1::Search one;
  one.set_id(3);
  one.set_objective_metric("val_loss");
  EXPECT_EQ(ChooseFromFront(one, {}, 1, {}).error,
            "search 3 has one objective (val_loss): --pick and --weights choose a point of the Pareto front of several");
  std::vector<double> w;
  std::string error;
  EXPECT_TRUE(ParseWeights("0.7,0.3", &w, &error));
  EXPECT_EQ(w, (std::vector<double>{0.7, 0.3}));
  EXPECT_FALSE(ParseWeights("0.7,x", &w, &error));
  EXPECT_EQ(error, "--weights: 'x' is not a number >= 0 (one weight per objective: --weights 0.7,0.3)");
  EXPECT_FALSE(ParseWeights("0,0", &w, &error));
  EXPECT_EQ(error, "--weights: every weight is 0; give at least one a positive weight");
  EXPECT_FALSE(ParseWeights("-1,2", &w, &error));
}

// With constraints the front is the feasible trials' (the coordinator keeps it so): --pick of an infeasible trial
// (here one that would dominate the whole front) is refused naming the constraint it broke.
TEST(ParetoFront, PromoteRefusesAnInfeasiblePickNamingTheConstraintItBroke) {
  Fixture f;
  auto* mem = f.search.add_constraints();
  mem->set_metric("mem");
  mem->set_kind("max");
  mem->set_bound(0.5);
  v1::Trial& t = f.trials.emplace_back();
  t.set_id(14);
  t.set_number(4);
  t.set_state(v1::TRIAL_COMPLETED);
  t.add_objectives(0.05);
  t.add_objectives(0.95);
  t.add_constraints(0.25);
  t.set_infeasible(true);
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, 4, {}).error,
            "--pick 4: trial 4 is infeasible: it broke mem 0.75 > max 0.5 (search 7's constraints), so it is not on "
            "the Pareto front of the feasible trials; its points:\n"
            "  trial 2: loss 0.1, acc 0.2\n  trial 0: loss 0.3, acc 0.5\n  trial 1: loss 0.5, acc 0.9");
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, 0, {}).trial_id, 10) << "a feasible point of the front is taken";
}

// With every completed trial infeasible the front is empty: promote says why, naming a constraint a trial broke,
// not that no trial has completed yet.
TEST(ParetoFront, PromoteOfASearchWithNoFeasibleTrialSaysEveryTrialBrokeItsConstraints) {
  Fixture f;
  auto* mem = f.search.add_constraints();
  mem->set_metric("mem");
  mem->set_kind("max");
  mem->set_bound(0.5);
  for (auto& t : f.trials) {
    t.add_constraints(0.25);
    t.set_infeasible(true);
  }
  f.search.clear_pareto_front();  // the coordinator's front holds feasible trials only
  EXPECT_EQ(ChooseFromFront(f.search, f.trials, -1, {}).error,
            "search 7 has no feasible trial: every completed trial broke its constraints (trial 0: mem 0.75 > max "
            "0.5), so its Pareto front is empty: nothing to plan from");
}

TEST(ParetoFront, TheHeroRunsObjectiveIsTheFirstOneItsTrialPrints) {
  Fixture f;
  f.search.set_name("trade");
  f.search.mutable_objectives(0)->set_metric("node_hours");  // measured by the coordinator: no hero objective
  f.search.set_objective_metric("node_hours");
  const std::string yaml = HeroSpecYaml(f.search, {"train"}, HeroShape{});
  EXPECT_NE(yaml.find("objective: {metric: acc, mode: max}\n"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace ladder::cli
