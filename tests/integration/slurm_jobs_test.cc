// Searches as Slurm batch jobs (cli/slurm_job.h) on a real Slurm cluster (tests/support/local_slurm.h): `ladder
// search submit` writes and submits the job, the job's `ladder up` checkpoints its trials at the time limit's
// warning and resubmits itself, and the next job resumes the search with nothing acknowledged lost.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "tests/integration/slurm_fixture.h"

namespace ladder {
namespace {

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A trial that checkpoints on SIGTERM like ladder-train (its step, in LADDER_CHECKPOINT_DIR/step) and resumes from
// it. Its first run never ends by itself (only a stop ends it); a resumed run ends 20 steps after where it
// resumed: so the search completes only through a checkpoint and a resume, whenever the time limit comes.
std::string ResumableSpec() {
  const std::string script =
      "ck=$LADDER_CHECKPOINT_DIR/step; s=0; r=0; if [ -f $ck ]; then s=$(cat $ck); r=1; fi; "
      "trap \"echo \\$s > $ck.tmp && mv $ck.tmp $ck; exit 143\" TERM; e=$((s + 20)); "
      "while [ $r = 0 ] || [ $s -lt $e ]; do s=$((s + 1)); echo \"{{\\\"step\\\": $s, \\\"score\\\": $s}}\"; "
      "sleep 0.1; done";
  return "name: resumable\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, parallelism: 2}\n"
         "command: [/bin/sh, -c, '" + script + "']\nspace:\n  x: {type: float, low: 0, high: 1}\n";
}

TEST(SlurmSubmit, DryRunPrintsTheBatchScriptAndWritesNothing) {
  testing::TempDir dir("submit-dry");
  std::ofstream(dir / "spec.yaml") << ResumableSpec();
  auto r = testing::RunCommand({testing::BinDir() + "/ladder", "--db", (dir / "runs.db").string(), "search", "submit",
                                "spec.yaml", "--nodes", "3", "--time", "2:00:00", "--partition", "gpu", "--account",
                                "m1234", "--signal-lead", "300", "--dry-run"},
                               dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& want : std::vector<std::string>{"#SBATCH --nodes=3\n", "#SBATCH --time=2:00:00\n", "#SBATCH --partition=gpu\n", "#SBATCH --account=m1234\n",
        "#SBATCH --signal=B:USR1@300\n", "#SBATCH --no-kill\n", "#SBATCH --exclusive\n", "#SBATCH --open-mode=append\n",
        " up --slurm ", "--db '" + (dir / "runs.db").string() + "'", " --resubmit '" + (dir / "ladder-jobs").string()}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << "missing '" << want << "' in\n" << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "ladder-jobs")) << "--dry-run writes nothing";
  EXPECT_FALSE(std::filesystem::exists(dir / "runs.db.jobs"));
  // A spec that does not parse is refused before anything is written, naming the file.
  std::ofstream(dir / "bad.yaml") << "name: bad\n";
  auto bad = testing::RunCommand({testing::BinDir() + "/ladder", "search", "submit", "bad.yaml", "--nodes", "1",
                                  "--time", "10"},
                                 dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad.yaml"), std::string::npos) << bad.err;
}

// The records of <db>.jobs, in order.
std::vector<nlohmann::json> JobRecords(const std::filesystem::path& db) {
  std::vector<nlohmann::json> out;
  std::istringstream in(Slurp(db.string() + ".jobs"));
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line, nullptr, false));
  return out;
}

TEST_F(SlurmTest, ASubmittedSearchCheckpointsAtItsTimeLimitAndResumesInItsResubmittedJob) {
  std::ofstream(dir_ / "spec.yaml") << ResumableSpec();
  const std::filesystem::path db = dir_ / "ladder.db";
  const std::string ladder = testing::BinDir() + "/ladder";
  // One minute, the warning 50 s before the end: slurmctld sends it within its 30 s check period, so 10-40 s in.
  auto sub = slurm_.Run({ladder, "--db", db.string(), "search", "submit", "spec.yaml", "--nodes", "2", "--time", "1",
                         "--signal-lead", "50"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  auto records = JobRecords(db);
  ASSERT_EQ(records.size(), 1u);
  const std::string first = records[0]["job_id"];
  EXPECT_NE(sub.out.find("Slurm job " + first), std::string::npos) << sub.out;

  // Until no job of the chain is left in the queue (each job's time limit is a minute; the search needs one resume).
  auto queue_empty = [&] {
    auto q = slurm_.Run({"squeue", "-h", "-o", "%i"});
    return q.exit_code == 0 && q.out.find_first_not_of(" \n") == std::string::npos;
  };
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
       std::chrono::steady_clock::now() < until && !(JobRecords(db).size() >= 2 && queue_empty());) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  records = JobRecords(db);
  std::string outputs;
  for (const auto& e : std::filesystem::directory_iterator(dir_ / "ladder-jobs")) {
    if (e.path().extension() == ".out") outputs += "== " + e.path().string() + "\n" + Slurp(e.path());
  }
  ASSERT_GE(records.size(), 2u) << "the first job did not resubmit itself:\n" << outputs;
  ASSERT_TRUE(queue_empty()) << outputs;
  EXPECT_EQ(records[1]["previous_job_id"], first) << "the resubmission continues the first job";
  EXPECT_NE(outputs.find("time-limit warning (SIGUSR1)"), std::string::npos) << outputs;
  EXPECT_NE(outputs.find("resubmitted as Slurm job " + records[1]["job_id"].get<std::string>()), std::string::npos)
      << outputs;
  EXPECT_NE(outputs.find("resuming search 1 'resumable'"), std::string::npos) << outputs;
  EXPECT_NE(outputs.find("search 1 ended (completed)"), std::string::npos) << outputs;

  // The trials completed on their first attempt: the stop at the time limit cost no attempt, and each resumed from
  // its checkpoint.
  const auto trials = testing::Query(db, "SELECT id, state, attempt FROM trials ORDER BY id");
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) {
    EXPECT_EQ(t[1], "3") << "trial " << t[0] << " COMPLETED";
    EXPECT_EQ(t[2], "0") << "trial " << t[0] << ": the time limit is not the trial's failure";
  }
  // Nothing acknowledged was lost and nothing came twice: every trial's points are the steps 1..N, each once,
  // N > 20 (the first run's steps, then 20 after the resume).
  for (const auto& r : testing::Query(db, "SELECT trial_id, COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) "
                                          "FROM metrics WHERE name = 'score' GROUP BY trial_id")) {
    EXPECT_EQ(r[1], r[2]) << "trial " << r[0] << ": a step stored twice";
    EXPECT_EQ(r[3], "1") << "trial " << r[0];
    EXPECT_EQ(r[4], r[1]) << "trial " << r[0] << ": a step missing";
    EXPECT_GT(std::stoi(r[4]), 20) << "trial " << r[0] << ": it ran before the time limit, then 20 steps after";
  }
  // Each trial's runs: stopped at the time limit (the worker stopping: "preempted", its checkpoint kept), then the
  // run in the next job that ended it.
  for (const auto& r : testing::Query(db, "SELECT trial_id, GROUP_CONCAT(outcome, ',') FROM (SELECT trial_id, "
                                          "outcome FROM allocations ORDER BY id) GROUP BY trial_id")) {
    EXPECT_EQ(r[1].rfind("preempted,", 0), 0u) << "trial " << r[0] << " runs: " << r[1];
    EXPECT_NE(r[1].find(",exited"), std::string::npos) << "trial " << r[0] << " runs: " << r[1];
  }

  // `ladder search list` on the login node: the chain of jobs and its state, with no coordinator running now.
  auto list = slurm_.Run({ladder, "--db", db.string(), "--json", "search", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  auto doc = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("slurm_jobs")) << list.out;
  ASSERT_EQ(doc["slurm_jobs"].size(), 1u) << "one chain: " << list.out;
  EXPECT_EQ(doc["slurm_jobs"][0]["first_job_id"], first);
  EXPECT_EQ(doc["slurm_jobs"][0]["jobs"], static_cast<int>(records.size()));
  EXPECT_EQ(doc["slurm_jobs"][0]["state"], "COMPLETED") << list.out;
  EXPECT_TRUE(doc.contains("coordinator")) << "no coordinator runs after the last job: " << list.out;
}

}  // namespace
}  // namespace ladder
