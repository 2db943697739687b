"""The constrained part of bench/search_vs_optuna (issue 42): with a constraint that rules out about 30% of the
space (bench/search_constrained_bench.h: a half-space of the unit cube holding the unconstrained optimum on its
infeasible side), does ladder's default sampler (auto: GP-BO on these problems) told each trial's constraint value
(Sampler::TellConstrained) reach a lower feasible regret after 100 evaluations than the same sampler told the
objective only, and than Optuna's constrained TPE (bench/search_constrained_peer.py)? Per problem and sampler: the median over the seeds of the
best feasible trial's regret (f - f*, +inf without a feasible trial) and the median share of infeasible trials.
A problem is a win when ladder's constrained median is at most both others'; constrained_win_fraction is the
share of problems won (goal >= 0.8). As in the main part, a close verdict (the bootstrap spread of the
constrained median overlaps either other's) is run again with `confirm` seeds in all, every sampler alike, and
judged on them; the rule looks only at the overlap, never at which side is ahead.
"""
import concurrent.futures
import os
import statistics

SAMPLERS = ("ladder-auto-constrained", "ladder-auto-unconstrained", "optuna-tpe-constrained")


def _value(r):
    return float("inf") if r["regret"] is None else r["regret"]


def _commands(binary, peer, python, problems, seed0, seeds, budget):
    common = ["--seeds", str(seeds), "--seed0", str(seed0), "--budget", str(budget)]
    cmds = {}
    for p in problems:
        for mode in ("constrained", "unconstrained"):
            cmds[(p, "ladder-auto-" + mode)] = [binary, "constrained", "--problem", p, "--sampler", "auto", "--mode",
                                                mode] + common
        cmds[(p, "optuna-tpe-constrained")] = [python, peer, "--problem", p] + common
    return cmds


def _run_all(cmds, jobs, run_lines):
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futs = {k: pool.submit(run_lines, c) for k, c in cmds.items()}
        return {k: f.result() for k, f in futs.items()}


def run_part(binary, peer, python, problems, seeds, budget, jobs, run_lines, median_spread=None, confirm=0):
    """Runs every problem and sampler (`jobs` processes at once); with `median_spread` and `confirm` > seeds, runs
    the close verdicts again to `confirm` seeds; prints the table and returns the keys the last JSON line adds:
    constrained_win_fraction and constrained_regret (problem -> sampler -> median)."""
    lines = _run_all(_commands(binary, peer, python, problems, 0, seeds, budget), jobs, run_lines)
    seeds_of = {p: seeds for p in problems}
    if median_spread and confirm > seeds:
        def close(p, other):
            a = median_spread([_value(r) for r in lines[(p, SAMPLERS[0])]])
            b = median_spread([_value(r) for r in lines[(p, other)]])
            return a[0] <= b[1] and b[0] <= a[1]

        again = [p for p in problems if any(close(p, s) for s in SAMPLERS[1:])]
        if again:
            print("  constrained, close verdicts on %s: %d seeds each" % (", ".join(again), confirm), flush=True)
            more = _run_all(_commands(binary, peer, python, again, seeds, confirm - seeds, budget), jobs, run_lines)
            for k, v in more.items():
                lines[k] = lines[k] + v
            for p in again:
                seeds_of[p] = confirm
    print()
    print("constrained (a half-space ruling out ~30%% of the space, the optimum on its infeasible side; %d seeds "
          "(%d where a verdict was close) x %d evaluations; median feasible regret f - f* [infeasible share]):"
          % (seeds, max(confirm, seeds), budget))
    print("%-14s" % "problem" + "".join("%30s" % s for s in SAMPLERS) + "   win  seeds")
    medians, wins = {}, 0
    for p in problems:
        medians[p] = {s: statistics.median(_value(r) for r in lines[(p, s)]) for s in SAMPLERS}
        share = {s: statistics.median(r["infeasible"] for r in lines[(p, s)]) for s in SAMPLERS}
        won = all(medians[p][SAMPLERS[0]] <= medians[p][s] for s in SAMPLERS[1:])
        wins += won
        print("%-14s" % p + "".join("%30s" % ("%.4g [%.2f]" % (medians[p][s], share[s])) for s in SAMPLERS) +
              "   " + ("yes" if won else "no ") + "  %d" % seeds_of[p])
    fraction = round(wins / len(problems), 4) if problems else None
    print("constrained_win_fraction: %s (%d of %d problems; goal >= 0.8)" % (fraction, wins, len(problems)))
    return {"constrained_win_fraction": fraction,
            "constrained_regret": {p: {s: (None if m == float("inf") else round(m, 6)) for s, m in v.items()}
                                   for p, v in medians.items()}}
