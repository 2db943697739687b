// bench/slurm (issue 20): ladder on a real Slurm cluster on this machine (tests/support/local_slurm.h: slurmctld and
// 4 slurmd, 2 CPUs each, every node its own hostname and node-local directory). Three figures, each through the
// real commands a user runs:
//   submit_to_first_trial_s  `ladder search submit` until the first trial's first metrics line is read (the job
//                            is scheduled, ladder up starts, its workers register, the search starts, a trial runs)
//   srun_launch_overhead_s   a trial started as an srun step (resources.launcher: srun) against the worker starting
//                            it directly: the median of (first metrics line - start decision) per trial, srun minus
//                            direct, both in one job, the two kinds of search alternating
//   requeue_resume_s         the time-limit warning (SIGUSR1 to the batch shell, as --signal=B:USR1 sends it; sent
//                            with scancel --batch so the bench does not wait for slurmctld's 30 s check) until the
//                            resubmitted job serves again (its coordinator up and every worker registered: it
//                            writes <db>.server then), the trials checkpointed and resumed
//   scontrol_requeue_resume_s (full run) the same, the job continued by `scontrol requeue` (ladder up --requeue)
//   multinode_warning_to_checkpoint_s  two 2-node `launcher: srun` trials on the 4 nodes: the time-limit warning
//                            until the last of them has written its checkpoint (its rank 0's TERM handler records
//                            when), the stop having gone from the coordinator through the workers to the steps' tasks
//   multinode_steps_repeated  the points those trials stored twice after their resume in the next job (goal 0)
//   stage_extract_per_node_s  a 2,000-file dataset (4 KiB each) as a tar archive, unpacked by ladder-stage
//                            --extract on each of the 4 nodes at once (one srun task per node, as a trial's rank
//                            runs it), the median over the nodes; stage_reuse_per_node_s the same again (reused);
//                            stage_shard_per_node_s ladder-stage --shard node of the same files (a quarter each);
//                            shared_read_per_node_s every file read from the shared directory instead (cat)
// Last line: {"submit_to_first_trial_s", "srun_launch_overhead_s", "requeue_resume_s", ...}.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/orchestration_support.h"
#include "common/wall_clock.h"
#include "tests/support/local_slurm.h"

namespace ladder::bench {
namespace {

std::vector<double> QueryDoubles(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::vector<double> out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return out;
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) out.push_back(sqlite3_column_double(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Waits until `done()` (polled every 20 ms) or `seconds` pass; false on the deadline.
template <class F>
bool WaitFor(double seconds, F done) {
  for (auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    if (done()) return true;
  }
  return done();
}

class SlurmBench {
 public:
  SlurmBench(testing::LocalSlurm& slurm, const std::filesystem::path& dir) : slurm_(slurm), dir_(dir) {}

  bool QueueEmpty() {
    auto q = slurm_.Run({"squeue", "-h", "-o", "%i"});
    return q.exit_code == 0 && q.out.find_first_not_of(" \n") == std::string::npos;
  }
  testing::CommandResult Ladder(std::vector<std::string> args) {
    args.insert(args.begin(), OwnDir() + "/ladder");
    return slurm_.Run(args);
  }
  void Spec(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  // `ladder search submit` of `trials` one-line trials on 2 nodes; seconds to the first metrics line.
  double SubmitToFirstTrial(int trials) {
    Spec("first.yaml", "name: first\nobjective: {metric: score, mode: max}\nbudget: {max_trials: " +
                           std::to_string(trials) + ", parallelism: 4}\n"
                           "command: [/bin/sh, -c, 'echo \"{{\\\"step\\\": 1, \\\"score\\\": {x}}}\"']\n"
                           "space:\n  x: {type: float, low: 0, high: 1}\n");
    const std::string db = (dir_ / "first.db").string();
    const double t0 = WallNow();
    auto sub = Ladder({"--db", db, "search", "submit", "first.yaml", "--nodes", "2", "--time", "10"});
    if (sub.exit_code != 0) throw std::runtime_error("search submit failed: " + sub.err);
    if (!WaitFor(120, [&] { return QueueEmpty(); })) throw std::runtime_error("the first job did not end");
    const auto first = QueryDoubles(db, "SELECT MIN(time) FROM metrics");
    if (first.empty() || first[0] <= 0) throw std::runtime_error("the first job ran no trial");
    return first[0] - t0;
  }

  // One `ladder up --slurm` job on 2 nodes; `rounds` x (a direct search, an srun search) of `trials` trials each.
  // Per trial: first metrics line - start decision. Returns {direct median, srun median}.
  std::pair<double, double> LaunchOverhead(int rounds, int trials) {
    const std::string db = (dir_ / "launch.db").string();
    std::ofstream(dir_ / "up.sh") << "#!/bin/sh\nexec " << OwnDir() << "/ladder up --slurm --listen 0.0.0.0:0 --http '' "
                                  << "--db " << db << "\n";
    auto job = slurm_.Run({"sbatch", "--parsable", "--nodes=2", "--exclusive", "--no-kill",
                           "--output=" + (dir_ / "up.out").string(), (dir_ / "up.sh").string()});
    if (job.exit_code != 0) throw std::runtime_error("sbatch failed: " + job.err);
    if (!WaitFor(60, [&] { return std::filesystem::exists(db + ".server"); })) {
      throw std::runtime_error("ladder up --slurm did not serve: " + Slurp(dir_ / "up.out"));
    }
    const std::string body = "objective: {metric: score, mode: max}\nbudget: {max_trials: " + std::to_string(trials) +
                             ", parallelism: 1}\ncommand: [/bin/sh, -c, 'echo \"{{\\\"step\\\": 1, \\\"score\\\": "
                             "{x}}}\"']\nspace:\n  x: {type: float, low: 0, high: 1}\n";
    Spec("direct.yaml", "name: direct\n" + body);
    Spec("srun.yaml", "name: srun\nresources: {nodes: 1, launcher: srun}\n" + body);
    std::vector<double> direct, srun;
    for (int r = 0; r < rounds; ++r) {
      for (const std::string kind : {"direct", "srun"}) {
        auto run = Ladder({"--db", db, "search", "start", kind + ".yaml", "--wait"});
        if (run.exit_code != 0) throw std::runtime_error(kind + " search failed: " + run.out + run.err);
      }
    }
    const std::string per_trial =
        "SELECT (SELECT MIN(m.time) FROM metrics m WHERE m.trial_id = t.id) - t.started_at FROM trials t "
        "JOIN searches s ON s.id = t.search_id WHERE s.name = '";
    direct = QueryDoubles(db, per_trial + "direct'");
    srun = QueryDoubles(db, per_trial + "srun'");
    const std::string id = job.out.substr(0, job.out.find_first_of(";\n"));
    slurm_.Run({"scancel", id});
    WaitFor(60, [&] { return QueueEmpty(); });
    std::fprintf(stderr, "bench/slurm: launch to first metrics line, median of %zu trials: direct %.3f s, srun %.3f s\n",
                 direct.size(), Median(direct), Median(srun));
    return {Median(direct), Median(srun)};
  }

  // A submitted search whose trials run until stopped; the warning signal; until the next job serves. With
  // `scontrol_requeue` the job script says --requeue instead of --resubmit: the same job is requeued by Slurm,
  // which holds it back for its CredExpire (120 s by default) before it may start again.
  double RequeueResume(bool scontrol_requeue = false) {
    const std::string script =
        "ck=$LADDER_CHECKPOINT_DIR/step; s=0; r=0; if [ -f $ck ]; then s=$(cat $ck); r=1; fi; "
        "trap \"echo \\$s > $ck.tmp && mv $ck.tmp $ck; exit 143\" TERM; e=$((s + 20)); "
        "while [ $r = 0 ] || [ $s -lt $e ]; do s=$((s + 1)); echo \"{{\\\"step\\\": $s, \\\"score\\\": $s}}\"; "
        "sleep 0.1; done";
    Spec("resume.yaml", "name: resume\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, parallelism: 2}\n"
                        "command: [/bin/sh, -c, '" + script + "']\nspace:\n  x: {type: float, low: 0, high: 1}\n");
    const std::string db = (dir_ / "resume.db").string();
    std::string job;
    if (!scontrol_requeue) {
      auto sub = Ladder({"--db", db, "--json", "search", "submit", "resume.yaml", "--nodes", "2", "--time", "10"});
      if (sub.exit_code != 0) throw std::runtime_error("search submit failed: " + sub.err);
      job = nlohmann::json::parse(sub.out).at("job_id");
    } else {
      auto dry = Ladder({"--db", db, "--json", "search", "submit", "resume.yaml", "--nodes", "2", "--time", "10",
                         "--dry-run"});
      if (dry.exit_code != 0) throw std::runtime_error("search submit --dry-run failed: " + dry.err);
      const auto plan = nlohmann::json::parse(dry.out);
      std::string text = plan.at("text");
      const auto at = text.find(" --resubmit ");
      if (at == std::string::npos) throw std::runtime_error("no --resubmit in the script");
      text = text.substr(0, at) + " --requeue\n";
      std::filesystem::create_directories(std::filesystem::path(plan.at("spec").get<std::string>()).parent_path());
      std::filesystem::copy_file(dir_ / "resume.yaml", plan.at("spec").get<std::string>());
      std::ofstream(dir_ / "requeue.sbatch") << text;
      auto sub = slurm_.Run({"sbatch", "--parsable", "--requeue", (dir_ / "requeue.sbatch").string()});
      if (sub.exit_code != 0) throw std::runtime_error("sbatch failed: " + sub.err);
      job = sub.out.substr(0, sub.out.find_first_of(";\n"));
    }
    // Until both trials print (the running trials are what the warning stops).
    if (!WaitFor(60, [&] {
          auto c = QueryDoubles(db, "SELECT COUNT(DISTINCT trial_id) FROM metrics");
          return !c.empty() && c[0] >= 2;
        })) {
      throw std::runtime_error("the trials did not start");
    }
    const std::string first_server = Slurp(db + ".server");
    const double t_signal = WallNow();
    slurm_.Run({"scancel", "--batch", "--signal=USR1", job});
    if (!WaitFor(scontrol_requeue ? 400 : 120, [&] {
          const std::string now = Slurp(db + ".server");
          return !now.empty() && now != first_server;
        })) {
      throw std::runtime_error("the resubmitted job did not serve");
    }
    const double resumed = WallNow() - t_signal;
    WaitFor(120, [&] { return QueueEmpty(); });
    auto done = QueryDoubles(db, "SELECT COUNT(*) FROM trials WHERE state = 3 AND attempt = 0");
    if (done.empty() || done[0] != 2) throw std::runtime_error("the resumed search did not complete both trials");
    return resumed;
  }

  // Two 2-node srun trials that checkpoint on SIGTERM (rank 0 writes the step, then the time, <ck>.at); the warning
  // signal once both print; the next job resumes them. Returns {warning to the last checkpoint written (s), points
  // stored more than once}.
  std::pair<double, double> MultiNodeCheckpoint() {
    const std::string script =
        "ck=$LADDER_CHECKPOINT_DIR/step; s=0; r=0; if [ -f $ck ]; then s=$(cat $ck); r=1; fi; "
        "if [ \"$SLURM_PROCID\" = 0 ]; then trap \"echo \\$s > $ck.tmp && mv $ck.tmp $ck && date +%s.%N > $ck.at; "
        "exit 143\" TERM; else trap \"exit 0\" TERM; fi; e=$((s + 20)); while [ $r = 0 ] || [ $s -lt $e ]; do "
        "s=$((s + 1)); if [ \"$SLURM_PROCID\" = 0 ]; then echo \"{{\\\"step\\\": $s, \\\"score\\\": $s}}\"; fi; "
        "sleep 0.1; done";
    Spec("multinode.yaml", "name: multinode\nobjective: {metric: score, mode: max}\nbudget: {max_trials: 2, "
                           "parallelism: 2}\nresources: {nodes: 2, launcher: srun}\ncommand: [/bin/sh, -c, '" +
                               script + "']\nspace:\n  x: {type: float, low: 0, high: 1}\n");
    const std::string db = (dir_ / "multinode.db").string();
    auto sub = Ladder({"--db", db, "--json", "search", "submit", "multinode.yaml", "--nodes", "4", "--time", "10"});
    if (sub.exit_code != 0) throw std::runtime_error("search submit failed: " + sub.err);
    const std::string job = nlohmann::json::parse(sub.out).at("job_id");
    if (!WaitFor(90, [&] {
          auto c = QueryDoubles(db, "SELECT COUNT(DISTINCT trial_id) FROM metrics");
          return !c.empty() && c[0] >= 2;
        })) {
      throw std::runtime_error("the 2-node trials did not start");
    }
    const std::string first_server = Slurp(db + ".server");
    const double t_signal = WallNow();
    slurm_.Run({"scancel", "--batch", "--signal=USR1", job});
    if (!WaitFor(150, [&] {
          const std::string now = Slurp(db + ".server");
          return !now.empty() && now != first_server;
        })) {
      throw std::runtime_error("the resubmitted job did not serve");
    }
    WaitFor(150, [&] { return QueueEmpty(); });
    auto done = QueryDoubles(db, "SELECT COUNT(*) FROM trials WHERE state = 3");
    if (done.empty() || done[0] != 2) throw std::runtime_error("the resumed search did not complete both trials");
    double last = -1;
    int written = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(db + ".checkpoints", ec)) {
      if (e.path().filename() != "step.at") continue;
      ++written;
      last = std::max(last, std::stod(Slurp(e.path())) - t_signal);
    }
    if (written != 2) throw std::runtime_error(std::to_string(written) + " of the 2 trials wrote a checkpoint");
    const auto repeated = QueryDoubles(db, "SELECT COUNT(*) - (SELECT COUNT(*) FROM (SELECT DISTINCT trial_id, step "
                                           "FROM metrics WHERE name = 'score')) FROM metrics WHERE name = 'score'");
    return {last, repeated.empty() ? -1 : repeated[0]};
  }

  // Staging a dataset of `files` small files on the 4 nodes, one srun task per node running ladder-stage as a
  // trial's rank does, each task timing itself: the tar archive unpacked (extract: true), then reused, the files
  // sharded (shard: node, a quarter per node), against reading the same files from the shared directory. Per node
  // (seconds, medians over the nodes): {extract, reuse, shard, shared read}.
  std::vector<double> Staging(int files) {
    const auto shared = dir_ / "stage-shared";
    std::filesystem::create_directories(shared / "dataset");
    for (int k = 0; k < files; ++k) {
      std::ofstream(shared / "dataset" / ("f-" + std::to_string(k) + ".bin")) << std::string(4096, 'a' + k % 26);
    }
    if (slurm_.Run({"tar", "-C", shared.string(), "-cf", (shared / "data.tar").string(), "dataset"}).exit_code != 0) {
      throw std::runtime_error("tar failed");
    }
    const std::string local = slurm_.NodeLocalDir().string(), stage = OwnDir() + "/ladder-stage";
    auto ns = [] { return std::string("$(date +%s%N)"); };
    // Each task prints: node, extract, reuse, shard, shared read (ns).
    const std::string script =
        "t0=" + ns() + "; " + stage + " --extract --from " + (shared / "data.tar").string() + " --to " + local +
        "/x -- true 2>/dev/null; t1=" + ns() + "; " + stage + " --extract --from " + (shared / "data.tar").string() +
        " --to " + local + "/x -- true 2>/dev/null; t2=" + ns() + "; " + stage + " --shard node --from " +
        (shared / "dataset").string() + "/ --to " + local + "/s -- true 2>/dev/null; t3=" + ns() + "; cat " +
        (shared / "dataset").string() + "/* > /dev/null; t4=" + ns() +
        "; echo \"$SLURMD_NODENAME $((t1-t0)) $((t2-t1)) $((t3-t2)) $((t4-t3))\"";
    auto r = slurm_.Run({"srun", "--nodes=4", "--ntasks-per-node=1", "--export=ALL,LADDER_LAUNCHER=srun",
                         "/bin/sh", "-c", script});
    if (r.exit_code != 0) throw std::runtime_error("the staging step failed: " + r.out + r.err);
    std::vector<std::vector<double>> per(4);
    std::istringstream lines(r.out);
    for (std::string node; lines >> node;) {
      double v[4];
      for (double& x : v) lines >> x;
      for (int i = 0; i < 4; ++i) per[i].push_back(v[i] / 1e9);
      std::fprintf(stderr, "bench/slurm: %s: %d files unpacked %.3f s, reused %.3f s, its shard %.3f s; read from "
                   "the shared directory %.3f s\n", node.c_str(), files, v[0] / 1e9, v[1] / 1e9, v[2] / 1e9,
                   v[3] / 1e9);
    }
    if (per[0].size() != 4) throw std::runtime_error("the staging step printed " + r.out);
    return {Median(per[0]), Median(per[1]), Median(per[2]), Median(per[3])};
  }

 private:
  testing::LocalSlurm& slurm_;
  std::filesystem::path dir_;
};

}  // namespace
}  // namespace ladder::bench

int main(int argc, char** argv) {
  using namespace ladder::bench;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: bench/slurm [--quick]\n");
      return 2;
    }
  }
  if (!ladder::testing::LocalSlurm::Available()) {
    std::fprintf(stderr, "bench/slurm: needs root and Debian's slurmctld, slurmd and slurm-client "
                         "(scripts/bootstrap.sh installs them)\n");
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  TempDir dir("slurm");
  nlohmann::json out;
  try {
    ladder::testing::LocalSlurm slurm;
    if (std::string err = slurm.Start(dir.path, 4, 2); !err.empty()) throw std::runtime_error(err);
    SlurmBench b(slurm, dir.path);
    const int rounds = quick ? 2 : 4, trials = quick ? 5 : 10;
    std::vector<double> submit;
    for (int i = 0; i < (quick ? 1 : 3); ++i) {
      submit.push_back(b.SubmitToFirstTrial(8));
      std::filesystem::remove(dir.path / "first.db");
      std::fprintf(stderr, "bench/slurm: submit to first trial %.3f s\n", submit.back());
    }
    const auto [direct, srun] = b.LaunchOverhead(rounds, trials);
    std::vector<double> resume;
    for (int i = 0; i < (quick ? 1 : 3); ++i) {
      resume.push_back(b.RequeueResume());
      std::filesystem::remove(dir.path / "resume.db");
      std::fprintf(stderr, "bench/slurm: warning signal to the next job serving %.3f s\n", resume.back());
    }
    std::vector<double> to_checkpoint;
    double repeated = 0;
    for (int i = 0; i < (quick ? 1 : 3); ++i) {
      const auto [seconds, twice] = b.MultiNodeCheckpoint();
      to_checkpoint.push_back(seconds);
      repeated += twice;
      std::filesystem::remove_all(dir.path / "multinode.db.checkpoints");
      std::filesystem::remove(dir.path / "multinode.db");
      std::fprintf(stderr, "bench/slurm: warning to the 2-node trials' checkpoints %.3f s, %g points repeated\n",
                   seconds, twice);
    }
    const int stage_files = 2000;
    const auto staged = b.Staging(stage_files);
    // The other way to continue a job, once (full run only: Slurm holds a requeued job back for about two minutes).
    double by_scontrol = -1;
    if (!quick) {
      by_scontrol = b.RequeueResume(/*scontrol_requeue=*/true);
      std::fprintf(stderr, "bench/slurm: warning signal to the same job requeued (scontrol requeue) serving %.3f s\n",
                   by_scontrol);
    }
    out = {{"submit_to_first_trial_s", Median(submit)},
           {"srun_launch_overhead_s", srun - direct},
           {"requeue_resume_s", Median(resume)},
           {"scontrol_requeue_resume_s", quick ? nlohmann::json(nullptr) : nlohmann::json(by_scontrol)},
           {"multinode_warning_to_checkpoint_s", Median(to_checkpoint)},
           {"multinode_steps_repeated", repeated},
           {"stage_extract_per_node_s", staged[0]},
           {"stage_reuse_per_node_s", staged[1]},
           {"stage_shard_per_node_s", staged[2]},
           {"shared_read_per_node_s", staged[3]},
           {"stage_files", stage_files},
           {"direct_launch_s", direct},
           {"srun_launch_s", srun},
           {"launch_trials_per_kind", rounds * trials},
           {"repeats", submit.size()},
           {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench/slurm: %s\n", e.what());
    dir.keep = true;  // the databases, the jobs' output and the trials' logs
    return 1;
  }
  std::cout << out.dump() << std::endl;
  return 0;
}
