"""The warm-start part of bench/search_vs_optuna (issue 42): does a search warm-started from an earlier one
reach a cold search's final regret in at most half the evaluations?

Slice rule, the same for every table: the earlier search sees the table's odd seed columns (seed1, seed3, ...),
the measured searches its even ones (seed0, seed2, ...) -- the same configurations trained with other seeds, a
neighbouring task (bench/search_warm_start_bench.cc). Per table and seed: the earlier search runs the default
sampler (auto) with the same budget and its own seed; then a cold search and a search told the earlier one's
trials before its first suggestion (as the coordinator does for `warm_start:`), same sampler and seed, both on
the even columns, regret against the best mean over them. The cold searches' final median regret R is the
target; the warm searches need E evaluations for their median regret (over the seeds, after each evaluation) to
reach R; the table's ratio is E / budget (goal <= 0.5), null when the warm median never reaches R. Since the
incumbent is the best observed (noisy) value, a median regret curve can rise again after it reached R: the
"kept" ratio is the first evaluation from which the warm median stays at or below R to the end (null when it ends
above R), reported beside it.
"""
import concurrent.futures
import statistics


def _table_ratio(lines, budget):
    cold_final = statistics.median(l["cold"][budget - 1] for l in lines)
    warm_median = [statistics.median(l["warm"][n] for l in lines) for n in range(budget)]
    needed = next((n + 1 for n in range(budget) if warm_median[n] <= cold_final), None)
    # The incumbent is the best observed value, so a lucky noisy draw can make regret go up again: also the first
    # evaluation from which the warm median stays at or below the target to the end.
    kept = None
    for n in range(budget - 1, -1, -1):
        if warm_median[n] > cold_final:
            break
        kept = n + 1
    return {"cold_final_median": cold_final, "warm_median_at_1": warm_median[0],
            "warm_final_median": warm_median[-1], "evals": needed, "evals_kept": kept,
            "ratio": None if needed is None else round(needed / budget, 4),
            "ratio_kept": None if kept is None else round(kept / budget, 4), "sampler": lines[0]["resolved"]}


def run_part(binary, tables, seeds, budget, jobs, run_lines, table_name):
    """Runs every table (one ladder-search-bench process each, `jobs` at once); prints a table of the results and
    returns the keys the last JSON line adds: warm_start_eval_ratio (median over the tables, a table whose warm
    median never reached the cold target counted as above every ratio; null when more than half are) and
    warm_start_eval_ratio_per_table."""
    if not tables:
        return {"warm_start_eval_ratio": None, "warm_start_eval_ratio_per_table": {}}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {table_name(t): pool.submit(run_lines, [binary, "warm", "--table", t, "--seeds", str(seeds),
                                                       "--budget", str(budget)]) for t in tables}
        results = {name: _table_ratio(f.result(), budget) for name, f in futs.items()}
    print()
    print("warm start (earlier search on the odd seed columns, measured on the even ones; %d seeds x %d "
          "evaluations, median regret over the seeds):" % (seeds, budget))
    print("%-26s %-8s %14s %14s %14s %7s %7s %11s %11s" % ("table", "sampler", "cold final", "warm after 1",
                                                             "warm final", "evals", "ratio", "evals kept",
                                                             "ratio kept"))
    for name, r in results.items():
        print("%-26s %-8s %14.6g %14.6g %14.6g %7s %7s %11s %11s" % (
            name, r["sampler"], r["cold_final_median"], r["warm_median_at_1"], r["warm_final_median"],
            r["evals"] or "never", r["ratio"] if r["ratio"] is not None else "-", r["evals_kept"] or "never",
            r["ratio_kept"] if r["ratio_kept"] is not None else "-"))
    def summary(key):
        ratios = sorted(r[key] if r[key] is not None else float("inf") for r in results.values())
        median = statistics.median(ratios)
        return (None if median == float("inf") else round(median, 4)), sum(1 for x in ratios if x <= 0.5)

    (median, met), (median_kept, met_kept) = summary("ratio"), summary("ratio_kept")
    print("warm_start_eval_ratio (median over %d tables): %s, goal <= 0.5 met on %d; kept: %s, met on %d" %
          (len(results), median, met, median_kept, met_kept))
    return {"warm_start_eval_ratio": median,
            "warm_start_eval_ratio_per_table": {name: r["ratio"] for name, r in results.items()},
            "warm_start_eval_ratio_kept": median_kept,
            "warm_start_eval_ratio_kept_per_table": {name: r["ratio_kept"] for name, r in results.items()}}
