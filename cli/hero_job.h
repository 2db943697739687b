#pragma once
// ladder promote --submit: the hero run as its own Slurm batch job. The job's nodes each run a ladder-worker that
// connects to the coordinator ladder promote talks to, in a pool of their own (worker label pool=NAME, spec
// resources.pool): the hero run's trial runs there and nowhere else, and nothing else runs there. Its metrics flow
// into that coordinator like any trial's (the band watch works as for a hero run on the shared nodes). When the
// hero search ends the coordinator releases the job's workers and the job ends.
//
// Order: the script is submitted held (sbatch --hold), the hero search is created with the job's id, then the job
// is released — so the search knows its job from the start, and a job whose search could not be created is
// cancelled instead of idling on its nodes.
#include <functional>
#include <string>

#include "cli/client.h"
#include "cli/slurm_job.h"

namespace ladder::cli {

struct HeroJobOptions {
  BatchOptions batch;      // nodes, time, partition, account, signal lead
  std::string advertise;   // host:port the job's workers reach the coordinator at (default: --server's)
  bool dry_run = false;    // print the script; write and submit nothing
};

// `spec_for_pool(pool)` is the hero search's spec YAML with resources.pool = pool; `request` carries everything
// else (priority, plan). Prints what it did (or the script with dry_run); returns the exit code.
int SubmitHeroJob(Client& client, const GlobalOptions& g, const HeroJobOptions& o, int64_t source_search, const std::function<std::string(const std::string& pool)>& spec_for_pool,
                  v1::CreateSearchRequest request);

}  // namespace ladder::cli
