// Searches as Slurm batch jobs (cli/slurm_job.h) on a real Slurm cluster (tests/support/local_slurm.h): `ladder
// search submit` writes and submits the job, the job's `ladder up` checkpoints its trials at the time limit's
// warning and resubmits itself, and the next job resumes the search with nothing acknowledged lost.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iostream>
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

// Every trial of ResumableSpec in `db`: its points are the steps 1..N, each stored once (nothing acknowledged lost,
// nothing twice), and N > 20: it ran, stopped, and ran its 20 steps after resuming from its checkpoint.
void ExpectEveryStepOnceAndAResume(const std::filesystem::path& db) {
  const auto rows = testing::Query(db, "SELECT trial_id, COUNT(*), COUNT(DISTINCT step), MIN(step), MAX(step) "
                                       "FROM metrics WHERE name = 'score' GROUP BY trial_id");
  EXPECT_FALSE(rows.empty());
  for (const auto& r : rows) {
    EXPECT_EQ(r[1], r[2]) << "trial " << r[0] << ": a step stored twice";
    EXPECT_EQ(r[3], "1") << "trial " << r[0];
    EXPECT_EQ(r[4], r[1]) << "trial " << r[0] << ": a step missing";
    EXPECT_GT(std::stoi(r[4]), 20) << "trial " << r[0] << ": it ran, then 20 steps after its resume";
  }
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

// A time limit the default warning does not fit in: Slurm runs 0:01:30 as 2:00 (whole minutes, rounded up), and
// the default 120 s warning would come at the job's start; the lead is halved, and both are said. An explicit lead
// that does not fit, or a --time Slurm does not read, is refused before anything is written.
TEST(SlurmSubmit, ATimeLimitShorterThanItsWarningIsShortenedOrRefusedSayingWhy) {
  testing::TempDir dir("submit-time");
  std::ofstream(dir / "spec.yaml") << ResumableSpec();
  auto submit = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {testing::BinDir() + "/ladder", "--db", (dir / "runs.db").string(), "search",
                                     "submit", "spec.yaml", "--nodes", "1", "--dry-run"};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::RunCommand(args, dir);
  };
  auto shortened = submit({"--time", "0:01:30"});
  ASSERT_EQ(shortened.exit_code, 0) << shortened.err;
  EXPECT_NE(shortened.out.find("#SBATCH --signal=B:USR1@60\n"), std::string::npos) << shortened.out;
  EXPECT_NE(shortened.err.find("Slurm rounds time limits up to whole minutes: --time 0:01:30 runs for 0:02:00"),
            std::string::npos)
      << shortened.err;
  EXPECT_NE(shortened.err.find("the warning comes 60 s before the end instead"), std::string::npos) << shortened.err;
  auto refused = submit({"--time", "0:01:30", "--signal-lead", "120"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_NE(refused.err.find("--signal-lead 120: a warning 120 s before the end of a job of 0:02:00 would come at "
                             "its start"),
            std::string::npos)
      << refused.err;
  auto garbled = submit({"--time", "1:2:3:4"});
  EXPECT_EQ(garbled.exit_code, 2);
  EXPECT_NE(garbled.err.find("--time '1:2:3:4' is not a Slurm time limit"), std::string::npos) << garbled.err;
  auto fits = submit({"--time", "10"});
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.out.find("#SBATCH --signal=B:USR1@120\n"), std::string::npos) << fits.out;
  EXPECT_EQ(fits.err, "") << "nothing to say about a 10-minute job";
  EXPECT_FALSE(std::filesystem::exists(dir / "ladder-jobs")) << "--dry-run writes nothing";
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
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
       std::chrono::steady_clock::now() < until && !(JobRecords(db).size() >= 2 && QueueEmpty());) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  records = JobRecords(db);
  const std::string outputs = JobOutputs();
  ASSERT_GE(records.size(), 2u) << "the first job did not resubmit itself:\n" << outputs;
  ASSERT_TRUE(QueueEmpty()) << outputs;
  EXPECT_EQ(records[1]["previous_job_id"], first) << "the resubmission continues the first job";
  EXPECT_NE(outputs.find("time-limit warning (SIGUSR1)"), std::string::npos) << outputs;
  EXPECT_NE(outputs.find("resubmitted as Slurm job " + records[1]["job_id"].get<std::string>()), std::string::npos)
      << outputs;
  EXPECT_NE(outputs.find("resuming search 1 'resumable'"), std::string::npos) << outputs;
  EXPECT_NE(outputs.find("search 1 ended (completed)"), std::string::npos) << outputs;
  // The job's output file is kept (0644 on a shared filesystem): where the admin token is, never the token; no
  // Ctrl-C advice nobody can follow; no "0 such node(s) up" from a resumed job before its workers registered.
  std::string token;
  std::getline(std::ifstream(db.string() + ".token"), token);
  ASSERT_EQ(token.size(), 64u);
  EXPECT_EQ(outputs.find(token), std::string::npos) << "the admin token is in the job's output";
  EXPECT_NE(outputs.find("log in with the token in " + db.string() + ".token"), std::string::npos) << outputs;
  EXPECT_EQ(outputs.find("Ctrl-C"), std::string::npos) << outputs;
  EXPECT_EQ(outputs.find("such node(s) up"), std::string::npos) << outputs;

  // The trials completed on their first attempt: the stop at the time limit cost no attempt, and each resumed from
  // its checkpoint.
  const auto trials = testing::Query(db, "SELECT id, state, attempt FROM trials ORDER BY id");
  ASSERT_EQ(trials.size(), 2u);
  for (const auto& t : trials) {
    EXPECT_EQ(t[1], "3") << "trial " << t[0] << " COMPLETED";
    EXPECT_EQ(t[2], "0") << "trial " << t[0] << ": the time limit is not the trial's failure";
  }
  // Nothing acknowledged was lost and nothing came twice (the first run's steps, then 20 after the resume).
  ExpectEveryStepOnceAndAResume(db);
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
  // ... and the search's results, from its database read-only.
  ASSERT_EQ(doc["searches"].size(), 1u) << list.out;
  EXPECT_EQ(doc["searches"][0]["state"], "SEARCH_COMPLETED") << list.out;
  auto read_back = slurm_.Run({ladder, "--db", db.string(), "trials", "1"});
  EXPECT_EQ(read_back.exit_code, 0) << read_back.err;
  EXPECT_NE(read_back.out.find("2 completed"), std::string::npos) << read_back.out;
}

// The 2-node `launcher: srun` variant of ResumableSpec (one trial): rank 0 prints the steps and writes the
// checkpoint on SIGTERM, then leaves once rank 1's handler has run (or 5 s): srun --kill-on-bad-exit ends the
// others when one exits non-zero. Its handler then takes half a second more (a trainer's checkpoint takes a while),
// and marks its end. Rank 1 counts the same steps silently and marks its handler's run. A run that found no
// checkpoint ends by itself after `first_steps` steps (default: only a stop ends it).
std::string TwoNodeSrunSpec(int first_steps = 1000000000) {
  const std::string script =
      "ck=$LADDER_CHECKPOINT_DIR/step; s=0; r=0; if [ -f $ck ]; then s=$(cat $ck); r=1; fi; "
      "if [ \"$SLURM_PROCID\" = 0 ]; then trap \"echo \\$s > $ck.tmp && mv $ck.tmp $ck; n=0; "
      "while [ ! -f $LADDER_CHECKPOINT_DIR/rank1-stopped ] && [ \\$n -lt 100 ]; do sleep 0.05; n=\\$((n + 1)); done; "
      "sleep 0.5; touch $LADDER_CHECKPOINT_DIR/rank0-stopped; exit 143\" TERM; "
      "else trap \"touch $LADDER_CHECKPOINT_DIR/rank$SLURM_PROCID-stopped; exit 0\" TERM; fi; e=$((s + 20)); "
      "[ $r = 0 ] && e=" + std::to_string(first_steps) + "; while [ $s -lt $e ]; do s=$((s + 1)); "
      "if [ \"$SLURM_PROCID\" = 0 ]; then echo \"{{\\\"step\\\": $s, \\\"score\\\": $s}}\"; fi; sleep 0.1; done";
  return SrunSpec("resumable", "{max_trials: 1}", "{nodes: 2, launcher: srun}", script);
}

// Whether rank `rank`'s SIGTERM handler ran to its end (its mark in the trial's checkpoint directory, under `dir`).
bool RankStopped(const std::filesystem::path& dir, int rank = 1) {
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.path().filename() == "rank" + std::to_string(rank) + "-stopped") return true;
  }
  return false;
}

// A 2-node `launcher: srun` trial at the time limit: the stop reaches the step's tasks as SIGTERM (scancel --signal,
// not srun's forced termination, which SIGKILLs them), so rank 0 writes its checkpoint and rank 1's handler runs; the
// resubmitted job resumes it from that checkpoint, every step stored once. Rank 1 counts the same steps silently.
// The job has 3 nodes, the trial 2 of them: scancel without --ctld asked all 3, the third answered "invalid job id",
// and the worker's fallback SIGUSR1 cut rank 0's handler short (bench/slurm's multi-node failures).
TEST_F(SlurmTest, ATwoNodeSrunTrialCheckpointsAtTheTimeLimitAndResumesWithNoStepRepeated) {
  std::ofstream(dir_ / "spec.yaml") << TwoNodeSrunSpec();
  const std::filesystem::path db = dir_ / "ladder.db";
  const std::string ladder = testing::BinDir() + "/ladder";
  auto sub = slurm_.Run({ladder, "--db", db.string(), "search", "submit", "spec.yaml", "--nodes", "3", "--time", "1",
                         "--signal-lead", "50"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
       std::chrono::steady_clock::now() < until && !(JobRecords(db).size() >= 2 && QueueEmpty());) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const std::string outputs = JobOutputs();
  ASSERT_GE(JobRecords(db).size(), 2u) << "the first job did not resubmit itself:\n" << outputs;
  ASSERT_TRUE(QueueEmpty()) << outputs;
  const auto trials = testing::Query(db, "SELECT id, state, attempt FROM trials");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0][1], "3") << "COMPLETED\n" << outputs;
  EXPECT_EQ(trials[0][2], "0") << "the time limit is not the trial's failure";
  ExpectEveryStepOnceAndAResume(db);
  const auto runs = testing::Query(db, "SELECT GROUP_CONCAT(outcome, ',') FROM (SELECT outcome FROM allocations "
                                       "ORDER BY id)");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0][0].rfind("preempted,", 0), 0u) << runs[0][0];
  // The rank on the second node got SIGTERM (its handler ran), not srun's SIGKILL; rank 0's handler ran to its end.
  EXPECT_TRUE(RankStopped(dir_)) << outputs;
  EXPECT_TRUE(RankStopped(dir_, 0)) << "rank 0's checkpoint handler was cut short\n" << outputs << WorkerLogs();
}

// ladder promote --submit: the hero run as a Slurm job of its own on 2 nodes, its workers in the job's pool,
// reporting to the coordinator the CLI talks to (here a ladder-server outside Slurm, as on a login node). The hero
// trial runs on the job's two nodes only, its metrics reach the coordinator, and when the hero search completes its
// workers are released and the job ends; `ladder search show` reports the job's state.
TEST_F(SlurmTest, AHeroRunSubmittedAsItsOwnJobRunsOnItsNodesAndEndsWithItsSearch) {
  const std::string ladder = testing::BinDir() + "/ladder";
  std::ofstream(dir_ / "sweep.yaml")
      << "name: sweep\nobjective: {metric: val_loss, mode: min}\nbudget: {parallelism: 2}\n"
         "scales:\n  global_batch: [16, 32]\n  lr: {low: 0.02, high: 0.16}\n  per_octave: 1\n  follow: sqrt\n"
         "command: [ladder-train, --optimizer, sgd, --momentum, '0.9', --lr, '{lr}', --batch-size, "
         "'{global_batch}', --epochs, '2', --warmup-steps, '5', --decay, cosine, --seed, '1', --threads, '1']\n";
  auto sweep = testing::RunCommand({ladder, "--server", "127.0.0.1:0", "demo", "--spec", "sweep.yaml", "--db",
                                    "ladder.db"},
                                   dir_);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out << sweep.err;
  const std::string address = "127.0.0.1:" + std::to_string(testing::FreePort());
  const std::string db = (dir_ / "ladder.db").string();
  testing::Child server;
  testing::Spawn(&server, {testing::BinDir() + "/ladder-server", "--listen", address, "--db", db}, true);
  ASSERT_EQ(testing::ReadListenAddress(server), address);
  // 2 nodes x 32 samples: global batch 64, for 6,400 examples (100 steps).
  const std::vector<std::string> promote = {ladder,   "--server",         address, "--db",     db,     "promote",
                                            "1",      "--nodes",          "2",     "--per-node-batch", "32",
                                            "--budget", "6400",           "--submit", "--time", "5"};

  auto dry = promote;
  dry.push_back("--dry-run");
  auto shown = slurm_.Run(dry);
  ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
  for (const std::string& want : {std::string("#SBATCH --nodes=2\n"), std::string("--label 'pool=hero-1-"),
                                  std::string("ladder-worker' --server '" + address + "'")}) {
    EXPECT_NE(shown.out.find(want), std::string::npos) << want << "\n" << shown.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "ladder-jobs")) << "--dry-run writes and submits nothing";

  auto sub = slurm_.Run(promote);
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const auto at = sub.out.find("hero run submitted as Slurm job ");
  ASSERT_NE(at, std::string::npos) << sub.out;
  std::istringstream words(sub.out.substr(at + 32));
  std::string job;
  words >> job;
  // The job ends by itself once the hero search completes (its workers are released).
  bool gone = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(180);
       !gone && std::chrono::steady_clock::now() < until;) {
    auto q = slurm_.Run({"squeue", "-h", "-j", job, "-o", "%T"});
    gone = q.out.find_first_not_of(" \n") == std::string::npos || q.out.find("COMPLETED") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const std::string outputs = JobOutputs();
  ASSERT_TRUE(gone) << "the hero job is still in the queue:\n" << outputs;

  auto show = slurm_.Run({ladder, "--server", address, "--json", "search", "show", "2"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  auto s = nlohmann::json::parse(show.out, nullptr, false);
  EXPECT_EQ(s.value("state", ""), "SEARCH_COMPLETED") << show.out << outputs;
  EXPECT_EQ(s.value("slurm_job_id", ""), job);
  EXPECT_EQ(s.value("slurm_job_state", ""), "COMPLETED") << show.out;
  EXPECT_EQ(s.value("priority", ""), "PRIORITY_HERO");
  auto text = slurm_.Run({ladder, "--server", address, "search", "show", "2"});
  EXPECT_NE(text.out.find("slurm job: " + job + " (COMPLETED)"), std::string::npos) << text.out;

  auto trials = nlohmann::json::parse(slurm_.Run({ladder, "--server", address, "--json", "trials", "2"}).out, nullptr, false);
  ASSERT_TRUE(trials.is_object() && trials["trials"].size() == 1u) << trials.dump();
  const auto& t = trials["trials"][0];
  EXPECT_EQ(t.value("state", ""), "TRIAL_COMPLETED") << t.dump() << outputs;
  ASSERT_EQ(t["placement"].size(), 2u) << t.dump();
  std::set<std::string> nodes;
  for (const auto& p : t["placement"]) nodes.insert(p["node_id"].get<std::string>());
  EXPECT_EQ(nodes.size(), 2u);
  for (const auto& n : nodes) EXPECT_EQ(n.rfind("n", 0), 0u) << "a node of the job, not the sweep's local worker: " << n;
  EXPECT_GT(std::stoi(t.value("metric_count", "0")), 0) << "its metrics reached the coordinator";
  EXPECT_NE(outputs.find("released"), std::string::npos) << outputs;

  auto list = slurm_.Run({ladder, "--server", address, "--db", db, "--json", "search", "list"});
  auto l = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(l.is_object() && l.contains("slurm_jobs")) << list.out;
  EXPECT_EQ(l["slurm_jobs"][0].value("kind", ""), "hero") << list.out;
  server.Kill(SIGTERM);
}

// A spec whose trials check that `stage:` put SRC into LOCAL on their node, byte for byte, before they ran.
std::string StagedSpec(const std::string& src, const std::string& local, int trials, int parallelism) {
  return "name: staged\nobjective: {metric: score, mode: max}\nbudget: {max_trials: " + std::to_string(trials) +
         ", parallelism: " + std::to_string(parallelism) + "}\nstage:\n  - {from: " + src + ", to: " + local +
         "}\ncommand: [/bin/sh, -c, 'cmp " + src + " " + local +
         "/data.bin && echo \"{{\\\"step\\\": 1, \\\"score\\\": 1}}\"']\nspace:\n  x: {type: float, low: 0, high: 1}\n";
}

// Where a trial's ladder-stage said what it did (its stderr.log).
std::string StageNotes(const std::filesystem::path& trial_dirs) {
  std::string out;
  for (const auto& e : std::filesystem::directory_iterator(trial_dirs)) {
    std::istringstream log(Slurp(e.path() / "stderr.log"));
    for (std::string line; std::getline(log, line);) {
      if (line.rfind("ladder-stage:", 0) == 0) out += line + "\n";
    }
  }
  return out;
}

// Without Slurm: the local worker's first trial copies the file, the later ones reuse the copy.
TEST(Staging, TheFirstTrialOnANodeCopiesTheFileAndTheOthersReuseIt) {
  testing::TempDir dir("stage-local");
  std::filesystem::create_directories(dir / "shared");
  std::ofstream(dir / "shared" / "data.bin") << std::string(1 << 20, 'd');
  const std::string local = (dir / "node-local").string();
  std::ofstream(dir / "spec.yaml") << StagedSpec((dir / "shared" / "data.bin").string(), local, 3, 1);
  auto run = testing::RunCommand({testing::BinDir() + "/ladder", "--server", "127.0.0.1:0", "demo", "--spec",
                                  "spec.yaml", "--db", "ladder.db"},
                                 dir);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::string notes = StageNotes(dir / "ladder-trials");
  size_t copied = 0, reused = 0;
  for (size_t at = notes.find("copied from"); at != std::string::npos; at = notes.find("copied from", at + 1)) ++copied;
  for (size_t at = notes.find(": reused"); at != std::string::npos; at = notes.find(": reused", at + 1)) ++reused;
  EXPECT_EQ(copied, 1u) << notes;
  EXPECT_EQ(reused, 2u) << notes;
  EXPECT_TRUE(std::filesystem::exists(local + "/.data.bin.ladder-stage"));
}

// Under Slurm: a submitted search's ladder up broadcasts the file with sbcast to its job's nodes before any trial;
// each node's first trial checks the delivery and takes it, the later ones reuse it; nodes outside the job get
// nothing. Every node has storage of its own here (LocalSlurm::NodeLocalDir).
TEST_F(SlurmTest, AStagedSearchGetsItsDataBySbcastOnEveryNodeOfItsJob) {
  std::filesystem::create_directories(dir_ / "shared");
  std::string data(3 << 20, 0);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  std::ofstream(dir_ / "shared" / "data.bin", std::ios::binary) << data;
  std::ofstream(dir_ / "spec.yaml") << StagedSpec((dir_ / "shared" / "data.bin").string(),
                                                  slurm_.NodeLocalDir().string(), 8, 4);
  const std::filesystem::path db = dir_ / "ladder.db";
  auto sub = slurm_.Run({testing::BinDir() + "/ladder", "--db", db.string(), "search", "submit", "spec.yaml",
                         "--nodes", "2", "--time", "5"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const bool gone = WaitForEmptyQueue(std::chrono::seconds(120));
  const std::string outputs = JobOutputs();
  ASSERT_TRUE(gone) << outputs;
  EXPECT_NE(outputs.find("search 1 ended (completed)"), std::string::npos) << outputs;
  // The job's output file is kept (0644 on a shared filesystem): where the admin token is, never the token; no
  // Ctrl-C advice nobody can follow; no "0 such node(s) up" from a resumed job before its workers registered.
  std::string token;
  std::getline(std::ifstream(db.string() + ".token"), token);
  ASSERT_EQ(token.size(), 64u);
  EXPECT_EQ(outputs.find(token), std::string::npos) << "the admin token is in the job's output";
  EXPECT_NE(outputs.find("log in with the token in " + db.string() + ".token"), std::string::npos) << outputs;
  EXPECT_EQ(outputs.find("Ctrl-C"), std::string::npos) << outputs;
  EXPECT_EQ(outputs.find("such node(s) up"), std::string::npos) << outputs;
  EXPECT_NE(outputs.find("(3.0 MiB) sent to the 2 nodes' " + slurm_.NodeLocalDir().string() + " with sbcast"),
            std::string::npos)
      << outputs;
  const std::string notes = StageNotes(dir_ / "ladder-trials");
  int staged_nodes = 0;
  for (int i = 1; i <= 4; ++i) {
    const auto copy = slurm_.NodeLocalDir(i) / "data.bin";
    if (!std::filesystem::exists(copy)) continue;
    ++staged_nodes;
    EXPECT_EQ(Slurp(copy), data) << "node n" << i;
    EXPECT_TRUE(std::filesystem::exists(slurm_.NodeLocalDir(i) / ".data.bin.ladder-stage")) << "node n" << i;
    EXPECT_NE(notes.find("node n" + std::to_string(i) + ": " + slurm_.NodeLocalDir().string() +
                         "/data.bin: taken from sbcast"),
              std::string::npos)
        << "n" << i << "\n" << notes;
  }
  EXPECT_EQ(staged_nodes, 2) << "the job's two nodes, and only them";
  EXPECT_EQ(notes.find("copied from"), std::string::npos) << "no node read the shared file itself:\n" << notes;
  EXPECT_NE(notes.find(": reused"), std::string::npos) << notes;
}

// Preemption: a higher-priority job needs the search job's nodes; Slurm signals every process of the job (its
// trials checkpoint on SIGTERM and are requeued, never failed), and requeues the job at the end of the partition's
// GraceTime (10 s here) — a job that ended by itself before would just be done, so ladder up, once everything is
// committed, waits for that. The same job, started again by Slurm, resumes the search, nothing acknowledged lost.
class SlurmPreemptionTest : public SlurmTest {
 protected:
  void SetUp() override {
    if (!testing::LocalSlurm::Available()) GTEST_SKIP() << "Slurm is not installed, or not root";
    ASSERT_EQ(slurm_.Start(dir_, 4, 2, true, testing::LocalSlurm::Preemption{10, 10}), "");
  }
};

TEST_F(SlurmPreemptionTest, ASearchJobPreemptedByAHigherPriorityJobResumesWhenSlurmRequeuesIt) {
  std::ofstream(dir_ / "spec.yaml") << ResumableSpec();
  const std::filesystem::path db = dir_ / "ladder.db";
  auto sub = slurm_.Run({testing::BinDir() + "/ladder", "--db", db.string(), "--json", "search", "submit",
                         "spec.yaml", "--nodes", "2", "--time", "10"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const std::string job = nlohmann::json::parse(sub.out).at("job_id");
  // Both trials run (their points reach the database), then a job of the higher partition wants every node.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    auto doc = nlohmann::json::parse(
        slurm_.Run({testing::BinDir() + "/ladder", "--db", db.string(), "--json", "trials", "1"}).out, nullptr, false);
    int printing = 0;
    for (const auto& t : doc.is_object() ? doc.value("trials", nlohmann::json::array()) : nlohmann::json::array()) {
      printing += t.value("metric_count", "0") != "0";
    }
    if (printing == 2) break;
  }
  auto high = slurm_.Run({"sbatch", "--parsable", "--partition=high", "--nodes=4", "--exclusive",
                          "--output=/dev/null", "--wrap", "sleep 3"});
  ASSERT_EQ(high.exit_code, 0) << high.err;
  const bool gone = WaitForEmptyQueue(std::chrono::seconds(150));
  const std::string out = JobOutputs();
  ASSERT_TRUE(gone) << out;
  EXPECT_EQ(JobRecords(db).size(), 1u) << "Slurm requeued the same job; ladder resubmitted nothing";
  EXPECT_NE(out.find("ladder up: Slurm is preempting job " + job), std::string::npos) << out;
  EXPECT_NE(out.find("resuming search 1 'resumable'"), std::string::npos) << "the requeued job resumed:\n" << out;
  EXPECT_NE(out.find("search 1 ended (completed)"), std::string::npos) << out;
  for (const auto& t : testing::Query(db, "SELECT id, state, attempt FROM trials")) {
    EXPECT_EQ(t[1], "3") << "trial " << t[0] << " COMPLETED";
    EXPECT_LE(std::stoi(t[2]), 1) << "trial " << t[0];
  }
  ExpectEveryStepOnceAndAResume(db);
}


// A 2-node `launcher: srun` trial when Slurm preempts the job holding ladder's workers: Slurm SIGTERMs every step's
// tasks at once (GraceTime), the trial's and the workers'. The trial's srun runs outside the workers' step
// (ladder-detach), so the signal reaches the ranks from Slurm and srun waits for them: rank 0 writes its checkpoint
// and rank 1's handler runs. Whichever the workers hear first, the trial's exit or their own SIGTERM, the run is a
// preemption (attempt unchanged, run `preempted`) and the trial resumes from its checkpoint in the requeued job,
// every step stored once. Before ladder-detach, srun — a worker's child, in the workers' step — got the SIGTERM
// too and SIGKILLed the ranks: both handlers ran in 2 of 6 runs (docs/ARCHITECTURE.md).
TEST_F(SlurmPreemptionTest, ATwoNodeSrunTrialPreemptedWithItsJobCheckpointsAndResumesWithNoStepRepeated) {
  // 300 steps (30 s) when no checkpoint was written: the requeued job runs the trial from step 1, steps repeated.
  std::ofstream(dir_ / "spec.yaml") << TwoNodeSrunSpec(300);
  const std::filesystem::path db = dir_ / "ladder.db";
  // Its points reach the database, then a job of the higher partition wants every node.
  std::string outputs;
  const bool gone = SubmitThenPreemptOnceItRuns(db, &outputs);
  ASSERT_TRUE(gone) << outputs;
  const auto trials = testing::Query(db, "SELECT id, state, attempt FROM trials");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0][1], "3") << "COMPLETED\n" << outputs;
  EXPECT_EQ(trials[0][2], "0") << "a preemption is not the trial's failure\n" << outputs;
  const auto runs = testing::Query(db, "SELECT GROUP_CONCAT(outcome, ',') FROM (SELECT outcome FROM allocations "
                                       "ORDER BY id)");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0][0].rfind("preempted,", 0), 0u) << runs[0][0] << "\n" << outputs;
  const auto steps = testing::Query(db, "SELECT COUNT(*), COUNT(DISTINCT step) FROM metrics WHERE name = 'score'");
  std::cout << "steps stored " << steps.at(0).at(0) << ", distinct " << steps.at(0).at(1) << "; rank 1's handler "
            << (RankStopped(dir_) ? "ran" : "did not run (srun's forced end came first)") << "\n";
  ExpectEveryStepOnceAndAResume(db);
  EXPECT_TRUE(RankStopped(dir_)) << "the rank on the second node got SIGTERM, not srun's SIGKILL\n" << outputs;
}

// The same trial where the site sets SlurmctldParameters=preempt_send_user_signal: a preemption sends the job's own
// --signal (B:USR1 for `ladder search submit`'s jobs: to `ladder up` alone) instead of SIGTERM to every step, so the
// stop takes ladder's own path, the time-limit warning's (the coordinator pauses; the srun step's tasks get SIGTERM by
// scancel --signal), then ladder up waits for Slurm to requeue the job rather than resubmitting it.
class SlurmUserSignalPreemptionTest : public SlurmTest {
 protected:
  void SetUp() override {
    if (!testing::LocalSlurm::Available()) GTEST_SKIP() << "Slurm is not installed, or not root";
    ASSERT_EQ(slurm_.Start(dir_, 4, 2, true, testing::LocalSlurm::Preemption{10, 10, true}), "");
  }
};

TEST_F(SlurmUserSignalPreemptionTest, ATwoNodeSrunTrialCheckpointsThroughLadderUpsPauseAndResumes) {
  std::ofstream(dir_ / "spec.yaml") << TwoNodeSrunSpec(300);
  const std::filesystem::path db = dir_ / "ladder.db";
  // Its points reach the database, then a job of the higher partition wants every node.
  std::string outputs;
  const bool gone = SubmitThenPreemptOnceItRuns(db, &outputs);
  ASSERT_TRUE(gone) << outputs;
  EXPECT_EQ(JobRecords(db).size(), 1u) << "Slurm requeued the same job; ladder resubmitted nothing\n" << outputs;
  EXPECT_NE(outputs.find("ladder up: Slurm is preempting the job and sent its --signal (SIGUSR1)"), std::string::npos)
      << "ladder up got the job's signal and knew it for a preemption\n" << outputs;
  const auto trials = testing::Query(db, "SELECT id, state, attempt FROM trials");
  ASSERT_EQ(trials.size(), 1u);
  EXPECT_EQ(trials[0][1], "3") << "COMPLETED\n" << outputs;
  EXPECT_EQ(trials[0][2], "0") << outputs;
  const auto runs = testing::Query(db, "SELECT GROUP_CONCAT(outcome, ',') FROM (SELECT outcome FROM allocations "
                                       "ORDER BY id)");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0][0].rfind("preempted,", 0), 0u) << runs[0][0] << "\n" << outputs;
  ExpectEveryStepOnceAndAResume(db);
  EXPECT_TRUE(RankStopped(dir_)) << outputs;
}

}  // namespace
}  // namespace ladder
