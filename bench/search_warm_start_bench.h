#pragma once
// ladder-search-bench warm: the warm-start part of bench/search_vs_optuna (search_warm_start_bench.cc).
#include <map>
#include <string>

namespace ladder::bench {

// ladder-search-bench warm --table PATH [--sampler auto] [--seeds N] [--seed0 K] [--budget N]: per seed, an earlier
// search (the same sampler and budget) on the table's odd seed columns, then a cold and a warm-started search on its
// even ones; one JSON line per seed with both regret curves (after every evaluation).
int WarmStartRuns(const std::map<std::string, std::string>& args);

}  // namespace ladder::bench
