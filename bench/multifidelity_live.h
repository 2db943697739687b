#pragma once
// bench/multifidelity's live mode: the stopping rules on real ladder-train processes (digits data, --threads 1,
// the record_curves space drawn afresh with the seed), W at once, each started with --epochs R and killed
// (SIGTERM) when its stopping rule stops it or the budget is spent. Runs fork from one `ladder-train --zygote` (as
// ladder-worker starts ladder-train trials: worker/warm_start.h) unless cold starts are asked for.
#include <sys/types.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "search/stopping/stopping_rule.h"

namespace ladder::bench {

struct LiveOptions {
  std::string train;  // the ladder-train binary
  int budget = 100;   // epochs, all trials together
  int workers = 2;    // trials at once
  std::vector<std::string> workload;  // more ladder-train options (--data, --model): empty, the digits MLP
};

struct LiveResult {
  double best = std::numeric_limits<double>::infinity();
  int trials = 0;
  double seconds = 0;
  // Where a trial's start and end go, summed over trials: starting it (Spawn), from then to its first epoch's
  // line (set-up and the first epoch), and stopping it (Reap: until its exit status is known).
  double spawn_s = 0, first_line_s = 0, reap_s = 0;
  // Each new best val_loss with its time (seconds since the search began), in order.
  std::vector<std::pair<double, double>> improvements;
};

// The seconds until `r` first found a val_loss at or below `target`; NaN when it never did.
double SecondsToReach(const LiveResult& r, double target);

// ladder-train --zygote, started once: each live run is forked from it (trainer/zygote_protocol.h).
class WarmTrainer {
 public:
  explicit WarmTrainer(const std::string& train);
  ~WarmTrainer();
  // Forks `args` with stdout to `out_fd` and stderr to /dev/null; returns its pid and sets *status_fd, from which
  // its wait status is read when it has ended.
  pid_t Spawn(const std::vector<std::string>& args, int out_fd, int* status_fd);

 private:
  [[noreturn]] static void Fail(const std::string& what);
  pid_t pid_ = -1;
  int sock_ = -1;
};

// One search with `algorithm`'s stopping rule (type kNone: random search) on real runs; `warm` null: cold starts.
LiveResult RunLive(const search::StoppingOptions& algorithm, const LiveOptions& o, int max_epochs,
                   uint64_t seed, WarmTrainer* warm);

}  // namespace ladder::bench
