#include "server/store/schema.h"
#include "server/store/store.h"

#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace ladder::store {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ladder-store-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "ladder.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
  std::string path_;
};

v1::Search MakeSearch() {
  v1::Search s;
  s.set_name("s1");
  s.set_state(v1::SEARCH_RUNNING);
  s.set_spec_yaml("name: s1\n");
  s.set_objective_metric("acc");
  s.set_direction(v1::MAXIMIZE);
  s.set_max_trials(8);
  s.set_parallelism(2);
  s.mutable_group()->set_nodes(1);
  s.mutable_group()->set_ranks_per_node(1);
  s.set_created_unix(1000.5);
  return s;
}

TEST_F(StoreTest, MigratesToCurrentSchemaInWalMode) {
  Store st(path_);
  EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
  EXPECT_EQ(st.SchemaVersion(), 17);  // 17: trials' constraint values
  Db raw(path_);
  auto& q = raw.Prepare("PRAGMA journal_mode");
  ASSERT_TRUE(q.Step());
  EXPECT_EQ(q.Text(0), "wal");
}

TEST_F(StoreTest, RoundTripsSearchesTrialsParamsAndMetrics) {
  int64_t search_id = 0, trial_id = 0;
  {
    Store st(path_);
    auto s = MakeSearch();
    st.InsertSearch(&s);
    search_id = s.id();
    EXPECT_GT(search_id, 0);
    v1::Trial t;
    t.set_search_id(search_id);
    t.set_number(0);
    t.set_state(v1::TRIAL_PENDING);
    t.set_created_unix(1001);
    (*t.mutable_params())["lr"].set_float_value(0.003);
    (*t.mutable_params())["width"].set_int_value(128);
    (*t.mutable_params())["opt"].set_string_value("adam");
    st.InsertTrial(&t);
    trial_id = t.id();
    t.set_state(v1::TRIAL_COMPLETED);
    t.set_has_objective(true);
    t.set_objective(0.97);
    t.set_ignored_lines(3);
    t.set_last_ignored_line("garbage");
    t.add_command("ladder-train");
    t.add_command("--lr=0.003");
    auto* pl = t.add_placement();
    pl->set_node_id("n1");
    pl->add_slots(0);
    pl->add_slots(1);
    t.set_started_unix(1002);
    t.set_finished_unix(1010);
    st.UpdateTrial(t, 7, "node n2: its Slurm step was cancelled");
    v1::MetricPoint p;
    p.set_step(10);
    p.set_time_unix(1005);
    (*p.mutable_values())["loss"] = 0.5;
    (*p.mutable_values())["acc"] = 0.9;
    st.AppendMetrics(trial_id, p);
    p.set_step(20);
    p.set_time_unix(1006);
    (*p.mutable_values())["acc"] = 0.97;
    st.AppendMetrics(trial_id, p);
    s.set_state(v1::SEARCH_COMPLETED);
    s.set_finished_unix(1011);
    st.UpdateSearch(s);
    st.OpenAllocation(trial_id, 0, "n1", "0-1", 7, 1002);
    st.AppendEvent("trial_completed", search_id, trial_id, "", 1010);
    // No explicit Flush: the destructor commits the batch.
  }
  Store st(path_);
  auto searches = st.LoadSearches();
  ASSERT_EQ(searches.size(), 1u);
  EXPECT_EQ(searches[0].state(), v1::SEARCH_COMPLETED);
  EXPECT_EQ(searches[0].direction(), v1::MAXIMIZE);
  EXPECT_DOUBLE_EQ(searches[0].finished_unix(), 1011);
  std::vector<int64_t> epochs;
  std::vector<std::string> outside_stops;
  auto trials = st.LoadTrials(&epochs, &outside_stops);
  ASSERT_EQ(trials.size(), 1u);
  const auto& t = trials[0];
  EXPECT_EQ(t.id(), trial_id);
  EXPECT_EQ(epochs[0], 7);
  EXPECT_EQ(outside_stops, std::vector<std::string>{"node n2: its Slurm step was cancelled"});
  EXPECT_EQ(t.state(), v1::TRIAL_COMPLETED);
  EXPECT_TRUE(t.has_objective());
  EXPECT_DOUBLE_EQ(t.objective(), 0.97);
  EXPECT_EQ(t.ignored_lines(), 3);
  EXPECT_EQ(t.last_ignored_line(), "garbage");
  ASSERT_EQ(t.command_size(), 2);
  EXPECT_EQ(t.command(1), "--lr=0.003");
  ASSERT_EQ(t.placement_size(), 1);
  EXPECT_EQ(t.placement(0).node_id(), "n1");
  EXPECT_EQ(t.placement(0).slots_size(), 2);
  EXPECT_DOUBLE_EQ(t.params().at("lr").float_value(), 0.003);
  EXPECT_EQ(t.params().at("width").int_value(), 128);
  EXPECT_EQ(t.params().at("opt").string_value(), "adam");
  auto metrics = st.LoadMetrics(trial_id);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0].step(), 10);
  EXPECT_DOUBLE_EQ(metrics[1].values().at("acc"), 0.97);
  EXPECT_EQ(metrics[1].values().size(), 2u);
  EXPECT_EQ(st.MaxAssignmentEpoch(), 7);
}

TEST_F(StoreTest, UnflushedBatchIsInvisibleToOtherConnectionsUntilFlush) {
  Store st(path_);
  auto s = MakeSearch();
  st.InsertSearch(&s);
  Db other(path_);
  auto count = [&] {
    auto& q = other.Prepare("SELECT COUNT(*) FROM searches");
    q.Step();
    int64_t n = q.Int(0);
    q.Reset();
    return n;
  };
  EXPECT_EQ(count(), 0);
  st.Flush();
  EXPECT_EQ(count(), 1);
}

// A database written before probes existed (schema 8, a trial in it) opens at the current schema: its trial is
// no probe; a probe trial stored afterwards reads back marked, with its micro-batches.
TEST_F(StoreTest, MigratesADatabaseFromBeforeProbes) {
  {
    Db raw(path_);
    for (int i = 0; i < 8; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=8");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',2,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
    raw.Exec("INSERT INTO trials(id,search_id,number,state,attempt,created_at,command) VALUES(1,1,0,3,0,2.0,'[]')");
  }
  Store st(path_);
  EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
  auto trials = st.LoadTrials(nullptr);
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_FALSE(trials[0].probe());
  EXPECT_EQ(trials[0].micro_batches(), 0);
  v1::Trial probe;
  probe.set_search_id(1);
  probe.set_number(1);
  probe.set_state(v1::TRIAL_PENDING);
  probe.set_probe(true);
  probe.set_micro_batches(4);
  st.InsertTrial(&probe);
  st.Flush();
  trials = st.LoadTrials(nullptr);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_TRUE(trials[1].probe());
  EXPECT_EQ(trials[1].micro_batches(), 4);
}

// Schema 10: the state a probe reopened a search from, stored with the search until it ends again.
TEST_F(StoreTest, MigratesADatabaseFromBeforeTheReopenedState) {
  {
    Db raw(path_);
    for (int i = 0; i < 9; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=9");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',1,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
  }
  Store st(path_);
  EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
  EXPECT_TRUE(st.LoadReopened().empty()) << "a search stored before schema 10 says nothing";
  ASSERT_EQ(st.LoadSearches().size(), 1u);
  st.SetSearchReopened(1, {v1::SEARCH_FAILED, "3 trials failed"});
  st.Flush();
  auto reopened = st.LoadReopened();
  ASSERT_EQ(reopened.size(), 1u);
  EXPECT_EQ(reopened[1].state, v1::SEARCH_FAILED);
  EXPECT_EQ(reopened[1].error, "3 trials failed");
  st.SetSearchReopened(1, {});
  st.Flush();
  EXPECT_TRUE(st.LoadReopened().empty());
}

TEST_F(StoreTest, RefusesDatabaseFromNewerLadder) {
  {
    Db raw(path_);
    raw.Exec("PRAGMA user_version=99");
  }
  try {
    Store st(path_);
    FAIL() << "expected an error";
  } catch (const SqliteError& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, RefusesFileThatIsNotADatabase) {
  {
    FILE* f = fopen(path_.c_str(), "w");
    fputs("this is not sqlite, just text that is long enough to fill a header..........................", f);
    fclose(f);
  }
  EXPECT_THROW(Store st(path_), SqliteError);
}

TEST_F(StoreTest, IntegrityCheckRunsInTheBackgroundAndReportsCorruption) {
  {
    Store st(path_);
    EXPECT_EQ(st.IntegrityProblem(), std::nullopt);
    auto s = MakeSearch();
    st.InsertSearch(&s);
    v1::Trial t;
    t.set_search_id(s.id());
    st.InsertTrial(&t);
    v1::MetricPoint p;
    for (int i = 0; i < 5000; ++i) {
      p.set_step(i);
      (*p.mutable_values())["loss"] = 1.0 / (i + 1);
      st.AppendMetrics(t.id(), p);
    }
    st.Flush();
  }  // the last connection closes: the WAL is checkpointed into the file
  auto size = std::filesystem::file_size(path_);
  ASSERT_GT(size, 16u * 4096);
  {
    // Scribble over the page headers of pages 3..10 (the tables' b-trees), keeping page 1 (the schema) intact.
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    std::string junk(64, '\xff');
    for (int page = 3; page <= 10; ++page) {
      f.seekp((page - 1) * 4096);
      f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
  }
  Store st(path_);  // opens at once: the check does not hold up start-up
  auto problem = st.IntegrityProblem();
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("quick_check"), std::string::npos) << *problem;
  EXPECT_NE(problem->find(path_), std::string::npos) << *problem;
}

TEST_F(StoreTest, TransactionRollsBackUnlessCommitted) {
  Db db(path_);
  db.Exec("CREATE TABLE t(x)");
  {
    Transaction txn(db);
    db.Exec("INSERT INTO t VALUES(1)");
  }
  {
    Transaction txn(db);
    db.Exec("INSERT INTO t VALUES(2)");
    txn.Commit();
  }
  auto& q = db.Prepare("SELECT GROUP_CONCAT(x) FROM t");
  ASSERT_TRUE(q.Step());
  EXPECT_EQ(q.Text(0), "2");
}

// A trial's points for a reader (GetTrial): all of them while its steps span the budget, else the multiples of a
// round stride and the last step, within the row budget too.
TEST_F(StoreTest, MetricsViewThinsALongCurveToRoundStepsAndKeepsTheLast) {
  Store st(path_);
  auto s = MakeSearch();
  st.InsertSearch(&s);
  v1::Trial t;
  t.set_search_id(s.id());
  t.set_state(v1::TRIAL_RUNNING);
  st.InsertTrial(&t);
  for (int step = 1; step <= 1003; ++step) {  // loss every step, val_loss every 100th and at the end
    v1::MetricPoint p;
    p.set_step(step);
    p.set_time_unix(2000 + step);
    (*p.mutable_values())["loss"] = 1.0 / step;
    if (step % 100 == 0 || step == 1003) (*p.mutable_values())["val_loss"] = 2.0 / step;
    st.AppendMetrics(t.id(), p);
  }
  st.Flush();

  auto all = st.LoadMetricsView(t.id(), 2000, 100000);  // 1,003 steps fit: every point, nothing thinned
  EXPECT_EQ(all.step_stride, 0);
  ASSERT_EQ(all.points.size(), 1003u);
  EXPECT_EQ(all.points[0].step(), 1);
  EXPECT_EQ(all.points.back().values().at("val_loss"), 2.0 / 1003);

  auto thin = st.LoadMetricsView(t.id(), 100, 100000);
  EXPECT_EQ(thin.step_stride, 20);  // 1,003 steps in at most 100 points: every 11th at least, rounded to 20
  ASSERT_LE(thin.points.size(), 100u);
  ASSERT_EQ(thin.points.size(), 51u);  // 20, 40, ..., 1000 and 1003
  int val_points = 0;
  for (size_t i = 0; i + 1 < thin.points.size(); ++i) {
    EXPECT_EQ(thin.points[i].step(), 20 * static_cast<int64_t>(i + 1));
    EXPECT_DOUBLE_EQ(thin.points[i].values().at("loss"), 1.0 / thin.points[i].step());
    val_points += thin.points[i].values().count("val_loss");
  }
  EXPECT_EQ(val_points, 10) << "a round stride keeps the evaluations logged every 100 steps";
  EXPECT_EQ(thin.points.back().step(), 1003);
  EXPECT_DOUBLE_EQ(thin.points.back().values().at("val_loss"), 2.0 / 1003);

  // Two values per step (the last step's count) and 50 rows: at most 25 points.
  auto rows = st.LoadMetricsView(t.id(), 100, 50);
  EXPECT_EQ(rows.step_stride, 50);
  EXPECT_LE(rows.points.size(), 25u);
  EXPECT_EQ(rows.points.back().step(), 1003);

  EXPECT_TRUE(st.LoadMetricsView(t.id() + 1, 100, 100).points.empty());
}

}  // namespace
}  // namespace ladder::store

namespace ladder::store {
namespace {

// Schema 13: the points `ladder search enqueue` gives a running search, kept until their trial's batch deletes
// them; a database from before it opens with none.
TEST_F(StoreTest, MigratesADatabaseFromBeforeEnqueuedPointsAndKeepsThemUntilDeleted) {
  {
    Db raw(path_);
    for (int i = 0; i < 12; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=12");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',1,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
  }
  {
    Store st(path_);
    EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
    EXPECT_TRUE(st.LoadEnqueued().empty());
    v1::StoredPoint a, b;
    (*a.mutable_params())["lr"].set_float_value(0.1);
    (*a.mutable_params())["opt"].set_string_value("adam");
    (*b.mutable_params())["batch"].set_int_value(256);
    const int64_t first = st.InsertEnqueued(1, a, 5.0);
    st.InsertEnqueued(1, b, 6.0);
    st.Flush();
    st.DeleteEnqueued(first);
    st.Flush();
  }
  Store st(path_);
  auto rows = st.LoadEnqueued();
  ASSERT_EQ(rows.size(), 1u) << "the deleted point is gone, the other kept";
  EXPECT_EQ(rows[0].search_id, 1);
  EXPECT_EQ(rows[0].point.params().at("batch").int_value(), 256);
}

// Schema 15: a completed trial's value of each of several objectives, kept with the trial (a NaN as null).
TEST_F(StoreTest, MigratesADatabaseFromBeforeSeveralObjectivesAndKeepsEachTrialsValues) {
  {
    Db raw(path_);
    for (int i = 0; i < 14; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=14");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',2,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
    raw.Exec("INSERT INTO trials(id,search_id,number,state,attempt,created_at,command,objective) "
             "VALUES(1,1,0,3,0,2.0,'[]',0.5)");
  }
  {
    Store st(path_);
    EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
    auto trials = st.LoadTrials(nullptr);
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(trials[0].objectives_size(), 0) << "an older trial has one objective";
    EXPECT_EQ(trials[0].objective(), 0.5);
    v1::Trial t;
    t.set_search_id(1);
    t.set_number(1);
    t.set_state(v1::TRIAL_PENDING);
    st.InsertTrial(&t);
    t.set_state(v1::TRIAL_COMPLETED);
    t.add_objectives(0.25);
    t.add_objectives(1.5e-3);
    t.add_objectives(std::nan(""));
    st.UpdateTrial(t, 0, "");
    st.Flush();
  }
  Store st(path_);
  auto trials = st.LoadTrials(nullptr);
  ASSERT_EQ(trials.size(), 2u);
  ASSERT_EQ(trials[1].objectives_size(), 3);
  EXPECT_EQ(trials[1].objectives(0), 0.25);
  EXPECT_EQ(trials[1].objectives(1), 1.5e-3);
  EXPECT_TRUE(std::isnan(trials[1].objectives(2)));
}

// Schema 16: a trial that is a known point (enqueue:, ladder search enqueue) is marked, stored with it.
TEST_F(StoreTest, MigratesADatabaseFromBeforeKnownPointsWereMarked) {
  {
    Db raw(path_);
    for (int i = 0; i < 15; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=15");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',1,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
    raw.Exec("INSERT INTO trials(id,search_id,number,state,attempt,created_at,command) VALUES(1,1,0,1,0,2.0,'[]')");
  }
  {
    Store st(path_);
    v1::Trial t;
    t.set_search_id(1);
    t.set_number(1);
    t.set_state(v1::TRIAL_PENDING);
    t.set_enqueued(true);
    st.InsertTrial(&t);
    st.Flush();
  }
  Store st(path_);
  auto trials = st.LoadTrials(nullptr);
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_FALSE(trials[0].enqueued()) << "an older trial is no known point";
  EXPECT_TRUE(trials[1].enqueued());
}

// Schema 17: a completed trial's signed constraint values, kept with it (a database from before has none).
TEST_F(StoreTest, MigratesADatabaseFromBeforeConstraintsAndKeepsEachTrialsSignedValues) {
  {
    Db raw(path_);
    for (int i = 0; i < 16; ++i) raw.Exec(Migrations()[static_cast<size_t>(i)]);
    raw.Exec("PRAGMA user_version=16");
    raw.Exec("INSERT INTO searches(id,name,state,spec_yaml,objective_metric,direction,max_trials,parallelism,"
             "nodes,ranks_per_node,gpus_per_rank,created_at) VALUES(1,'old',1,'name: old\n','loss',1,4,1,1,1,0,"
             "1.0)");
    raw.Exec("INSERT INTO trials(id,search_id,number,state,attempt,created_at,command) VALUES(1,1,0,3,0,2.0,'[]')");
  }
  {
    Store st(path_);
    EXPECT_EQ(st.SchemaVersion(), static_cast<int>(Migrations().size()));
    EXPECT_TRUE(st.LoadTrialConstraints().empty()) << "an older trial has no constraint values";
    v1::Trial t;
    t.set_search_id(1);
    t.set_number(1);
    t.set_state(v1::TRIAL_COMPLETED);
    st.InsertTrial(&t);
    st.SetTrialConstraints(t.id(), {5.5, -10});
    st.UpdateTrial(t, 0, "");  // a later write of the row keeps them
    st.Flush();
  }
  Store st(path_);
  const auto values = st.LoadTrialConstraints();
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values.begin()->first, 2);
  EXPECT_EQ(values.begin()->second, (std::vector<double>{5.5, -10}));
}

}  // namespace
}  // namespace ladder::store
