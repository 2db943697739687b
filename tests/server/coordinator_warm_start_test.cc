// Warm starts (the spec's warm_start:): the earlier search's completed trials are told to the new search's sampler
// before its first suggestion, from this database or another; trials outside the new space are skipped and
// counted; a space or objective that does not match refuses the search; they are no trials of the new search and
// are told again after a restart.
#include <filesystem>

#include "search/samplers/sampler.h"
#include "search/spec/spec_reader.h"
#include "tests/server/coordinator_fixture.h"

namespace ladder::server {
namespace {

std::string Spec(const std::string& name, const std::string& x, const std::string& extra = "",
                 const std::string& objective = "{metric: score, mode: max}") {
  return "name: " + name + "\nobjective: " + objective +
         "\nbudget: {max_trials: 3, parallelism: 1}\nsampler: {type: tpe, seed: 4, n_startup_trials: 2}\n"
         "command: [run, \"--x={x}\", \"--opt={opt}\"]\nspace:\n  x: " + x +
         "\n  opt: {type: categorical, values: [sgd, adam]}\n" + extra;
}

std::string Arg(const v1::StartTrial& s, const std::string& prefix) {
  for (const auto& a : s.argv()) {
    if (a.rfind(prefix, 0) == 0) return a.substr(prefix.size());
  }
  return "";
}

class CoordinatorWarmStartTest : public CoordinatorTest {
 protected:
  // Search 1, run to its end: three trials, scores 0.9, 0.2, 0.5; their x and params in *params.
  int64_t EarlierSearch(const std::shared_ptr<FakeLink>& link, std::vector<search::Params>* params) {
    const int64_t id = CreateSearch(Spec("earlier", "{type: float, low: 0.0, high: 1.0}"));
    const double scores[] = {0.9, 0.2, 0.5};
    for (int i = 0; i < 3; ++i) {
      const v1::StartTrial s = link->Starts().back();
      params->push_back({{"x", std::stod(Arg(s, "--x="))}, {"opt", Arg(s, "--opt=")}});
      Report(link, s, scores[i]);
    }
    EXPECT_EQ(GetSearch(id).state(), v1::SEARCH_COMPLETED);
    return id;
  }
  grpc::Status TryCreate(const std::string& yaml) {
    v1::CreateSearchRequest req;
    req.set_spec_yaml(yaml);
    req.set_spec_path("warm.yaml");
    v1::CreateSearchResponse resp;
    grpc::Status st = coord_->CreateSearch(req, &resp);
    Drain();
    return st;
  }
  // What a TPE of `yaml` suggests for trial `n` once told `told` at -k..-1 (the warm start) and `own` at 0..
  static search::Params Expected(const std::string& yaml, const std::vector<std::pair<search::Params, double>>& told,
                                 const std::vector<std::pair<search::Params, double>>& own, int n) {
    auto spec = search::ParseSpec(yaml, "w.yaml").spec;
    auto sampler = search::MakeSampler(*spec);
    const auto k = static_cast<int64_t>(told.size());
    for (int64_t i = 0; i < k; ++i) {
      sampler->Tell(i - k, told[static_cast<size_t>(i)].first, told[static_cast<size_t>(i)].second);
    }
    for (size_t i = 0; i < own.size(); ++i) sampler->Tell(static_cast<int64_t>(i), own[i].first, own[i].second);
    return *sampler->Ask(n);
  }
};

TEST_F(CoordinatorWarmStartTest, TheEarlierTrialsInsideTheSpaceAreToldFirstAndAreNoTrialsOfTheSearch) {
  auto a = Connect("a", 1);
  std::vector<search::Params> earlier;
  const int64_t first = EarlierSearch(a, &earlier);
  // The new space's x ends at the smallest of the earlier x's that is above it: one earlier trial is outside.
  std::vector<double> xs;
  for (const auto& p : earlier) xs.push_back(std::get<double>(p.at("x")));
  std::vector<double> sorted = xs;
  std::sort(sorted.begin(), sorted.end());
  const double high = (sorted[1] + sorted[2]) / 2;
  const std::string yaml = Spec("warm", "{type: float, low: 0.0, high: " + std::to_string(high) + "}",
                                "warm_start: {search: " + std::to_string(first) + "}\n");
  const int64_t id = CreateSearch(yaml);
  const v1::Search s = GetSearch(id);
  EXPECT_EQ(s.warm_start_trials(), 2);
  EXPECT_EQ(s.warm_start_skipped(), 1) << "the trial with x " << sorted[2] << " is outside [0, " << high << "]";
  EXPECT_EQ(s.warm_start_source(), "search " + std::to_string(first));
  std::vector<std::pair<search::Params, double>> told;
  const double scores[] = {0.9, 0.2, 0.5};
  for (int i = 0; i < 3; ++i) {
    if (xs[i] <= high) told.push_back({earlier[i], scores[i]});
  }
  // Trial 0 is the TPE's model-based suggestion after the two warm trials (its 2 startup trials), not a Sobol point.
  ASSERT_EQ(a->Starts().size(), 4u);
  const v1::StartTrial t0 = a->Starts().back();
  const search::Params want = Expected(yaml, told, {}, 0);
  EXPECT_NEAR(std::stod(Arg(t0, "--x=")), std::get<double>(want.at("x")), 1e-9);
  EXPECT_EQ(Arg(t0, "--opt="), std::get<std::string>(want.at("opt")));
  EXPECT_NE(std::stod(Arg(t0, "--x=")), std::get<double>(Expected(yaml, {}, {}, 0).at("x")));
  for (int i = 0; i < 3; ++i) Report(a, a->Starts().back(), 0.1);
  const v1::Search done = GetSearch(id);
  EXPECT_EQ(done.state(), v1::SEARCH_COMPLETED) << "the warm trials are not counted against max_trials (3)";
  EXPECT_EQ(done.completed(), 3);
  v1::ListTrialsRequest req;
  req.set_search_id(id);
  v1::ListTrialsResponse list;
  ASSERT_TRUE(coord_->ListTrials(req, &list).ok());
  EXPECT_EQ(list.trials_size(), 3) << "not listed as trials of the search";
  EXPECT_NE(done.best_objective(), 0.9) << "never its best trial";
}

TEST_F(CoordinatorWarmStartTest, ASpaceOrObjectiveThatDoesNotMatchRefusesTheSearchSayingWhy) {
  auto a = Connect("a", 1);
  std::vector<search::Params> earlier;
  const int64_t first = EarlierSearch(a, &earlier);
  const std::string warm = "warm_start: {search: " + std::to_string(first) + "}\n";
  const std::string n = "search " + std::to_string(first);
  grpc::Status kind = TryCreate(Spec("w", "{type: int, low: 0, high: 10}", warm));
  EXPECT_EQ(kind.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(kind.error_message(), "warm.yaml: warm_start: " + n + "'s space is not this one: 'x' is float there and "
                                  "int here");
  std::string with_y = Spec("w", "{type: float, low: 0, high: 1}", warm);
  with_y.insert(with_y.find("  opt:"), "  y: {type: float, low: 0, high: 1}\n");
  grpc::Status more = TryCreate(with_y);
  EXPECT_NE(more.error_message().find("'y' is not a parameter of its space"), std::string::npos)
      << more.error_message();
  grpc::Status mode = TryCreate(Spec("w", "{type: float, low: 0, high: 1}", warm, "{metric: score, mode: min}"));
  EXPECT_NE(mode.error_message().find("warm_start: " + n + " maximizes score, this search minimizes score"),
            std::string::npos)
      << mode.error_message();
  grpc::Status none = TryCreate(Spec("w", "{type: float, low: 0, high: 1}", "warm_start: {search: 77}\n"));
  EXPECT_EQ(none.error_message(), "warm.yaml: warm_start: no search 77 in this database");
  grpc::Status no_db =
      TryCreate(Spec("w", "{type: float, low: 0, high: 1}", "warm_start: {db: /nonexistent/x.db, search: 1}\n"));
  EXPECT_NE(no_db.error_message().find("warm.yaml: warm_start.db: cannot read /nonexistent/x.db"), std::string::npos)
      << no_db.error_message();
}

TEST_F(CoordinatorWarmStartTest, AnotherDatabaseServesAndARestartTellsTheWarmTrialsAgain) {
  auto a = Connect("a", 1);
  std::vector<search::Params> earlier;
  const int64_t first = EarlierSearch(a, &earlier);
  Close();
  const std::string other = (dir_ / "other.db").string();
  std::filesystem::copy_file(dir_ / "ladder.db", other);
  std::filesystem::remove(dir_ / "ladder.db");  // a fresh database: the earlier search is only in other.db
  Open();
  auto b = Connect("b", 1);
  const std::string yaml = Spec("warm", "{type: float, low: 0.0, high: 1.0}",
                                "warm_start: {db: " + other + ", search: " + std::to_string(first) + "}\n");
  const int64_t id = CreateSearch(yaml);
  EXPECT_EQ(GetSearch(id).warm_start_trials(), 3);
  EXPECT_EQ(GetSearch(id).warm_start_source(), "search " + std::to_string(first) + " of " + other);
  const v1::StartTrial t0 = b->Starts().back();
  Report(b, t0, 0.4);
  const v1::StartTrial t1 = b->Starts().back();
  Close();
  std::filesystem::remove(other);  // told again from this database's copy, not read from the other one
  Open();
  EXPECT_EQ(GetSearch(id).warm_start_trials(), 3) << "kept with the search";
  auto again = Connect("b", 1, {{t1.trial_id(), t1.assignment_epoch()}});
  Report(again, t1, 0.3);
  ASSERT_EQ(again->Starts().size(), 1u);
  const double scores[] = {0.9, 0.2, 0.5};
  std::vector<std::pair<search::Params, double>> told;
  for (int i = 0; i < 3; ++i) told.push_back({earlier[i], scores[i]});
  const search::Params p0{{"x", std::stod(Arg(t0, "--x="))}, {"opt", Arg(t0, "--opt=")}};
  const search::Params p1{{"x", std::stod(Arg(t1, "--x="))}, {"opt", Arg(t1, "--opt=")}};
  const search::Params want = Expected(yaml, told, {{p0, 0.4}, {p1, 0.3}}, 2);
  EXPECT_NEAR(std::stod(Arg(again->Starts()[0], "--x=")), std::get<double>(want.at("x")), 1e-9)
      << "after the restart the sampler knows the warm trials as before";
}

}  // namespace
}  // namespace ladder::server
