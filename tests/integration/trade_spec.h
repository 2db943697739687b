#pragma once
// A search with two objectives whose front is known (cli_pareto_test, dashboard_views_test): (loss, cost) = (x, y)
// at four known points; trials 0, 1 and 2 (ids 1-3) trade one against the other, trial 3 (0.6, 0.6) is dominated
// by trial 1 (0.5, 0.5).
namespace ladder::testing {

inline constexpr const char* kTradeSpec = R"(name: trade
objectives: [{metric: loss, mode: min}, {metric: cost, mode: min}]
budget: {max_trials: 4, parallelism: 1}
sampler: random
command: [/bin/sh, -c, 'echo "{{\"loss\": {x}, \"cost\": {y}}}"']
space:
  x: {type: float, low: 0, high: 1}
  y: {type: float, low: 0, high: 1}
enqueue: [{x: 0.1, y: 0.9}, {x: 0.5, y: 0.5}, {x: 0.9, y: 0.1}, {x: 0.6, y: 0.6}]
)";

}  // namespace ladder::testing
