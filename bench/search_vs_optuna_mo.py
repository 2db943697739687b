"""The multi-objective part of bench/search_vs_optuna (imported by it; see its --help).

ladder's default multi-objective sampler (auto, search/multiobjective/mo_sampler.h: the sampler it picks from
the problem's space and budget alone; its runs are that sampler's runs), ladder-gp (ParEGO), ladder-tpe and
ladder-nsga2 against Optuna 3.1's
NSGAIISampler and multi-objective TPESampler, defaults, on ZDT1-3 (10 variables), DTLZ2 (3 objectives, 7
variables) and two bench-data tables as (error, training cost) (bench/mo_problems.h has the cost model and
the reference points). Cells: hypervolume after N evaluations, median [q1, q3] over the seeds. A problem is a
win at N when the default's median is >= both Optuna samplers' medians.

Constraints with several objectives (ladder alone, no Optuna peer): on a constrained ZDT1 and C2-DTLZ2
(bench/mo_problems.h), ladder's MOTPE and NSGA-II told the constraint values against the same sampler told the
objectives only: the hypervolume of the FEASIBLE configurations evaluated by N, median over the seeds.
"""
import concurrent.futures
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
PEER = os.path.join(HERE, "search_vs_optuna_mo_peer.py")
SYNTHETIC = ["zdt1", "zdt2", "zdt3", "dtlz2"]
# hpobench-car is left out: 2.5% of its configurations reach 100% accuracy, so its hypervolume is only the
# cost of the cheapest perfect configuration found; phoneme's and protein's errors do not saturate.
TABLES = ["hpobench-phoneme", "hpolib-protein_structure"]
QUICK = ["zdt1", "hpolib-protein_structure"]
SAMPLERS = ["ladder-gp", "ladder-tpe", "ladder-nsga2", "optuna-nsga2", "optuna-motpe"]
QUICK_SEEDS = 8
TIMING_HISTORY = 10000


def quartiles(xs):
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], q[1], q[2]


def cached(run_lines, cache_dir):
    """run_lines, but an Optuna run's lines are kept in cache_dir (one file per command line) and read back from
    there by a later run: Optuna's side does not change with ladder's code and is the slow one."""
    def run(cmd):
        if not cache_dir or cmd[0] != PY:
            return run_lines(cmd)
        key = hashlib.sha1(" ".join(cmd[2:]).encode()).hexdigest()[:16]
        path = os.path.join(cache_dir, "%s-%s.json" % (os.path.basename(cmd[1]), key))
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)
        lines = run_lines(cmd)
        os.makedirs(cache_dir, exist_ok=True)
        with open(path + ".tmp", "w") as f:
            json.dump(lines, f)
        os.replace(path + ".tmp", path)
        return lines
    return run


CONSTRAINED = ["czdt1", "c2dtlz2"]


def run_constrained(mo_binary, run_lines, seeds, checkpoints, fmt):
    """The constrained problems, each ladder sampler told the constraint or the objectives only; prints its table
    and returns its keys: mo_constrained_win_fraction (the (problem, sampler) pairs whose constrained median beats
    their objectives-only one at the last N) and the medians."""
    cps = ",".join(map(str, checkpoints))
    print()
    print("constrained multi-objective: hypervolume of the feasible configurations evaluated by N, median "
          "[q1, q3] over %d seeds; feasible: how many of the last N's were (median)" % seeds)
    print("%-8s %-14s %-18s" % ("problem", "sampler", "told") + "".join("%34s" % ("N=%d" % c) for c in checkpoints) +
          "  feasible")
    wins, medians = 0, {}
    for problem, sampler in [(p, s) for p in CONSTRAINED for s in ("tpe", "nsga2")]:
        lines = run_lines([mo_binary, "constrained", "--problem", problem, "--sampler", sampler, "--seeds",
                           str(seeds), "--checkpoints", cps])
        med = {}
        for key, told in (("constrained", "the constraint"), ("objectives_only", "objectives only")):
            cells, med[key] = [], []
            for i in range(len(checkpoints)):
                q1, m, q3 = quartiles([l["hv_" + key][i] for l in lines])
                cells.append("%s [%s, %s]" % (fmt(m), fmt(q1), fmt(q3)))
                med[key].append(m)
            feasible = statistics.median(l["feasible_" + key] for l in lines)
            print("%-8s %-14s %-18s" % (problem, "ladder-" + sampler, told) + "".join("%34s" % c for c in cells) +
                  "  %g" % feasible)
        wins += med["constrained"][-1] > med["objectives_only"][-1]
        medians["%s/ladder-%s" % (problem, sampler)] = {"constrained": med["constrained"][-1],
                                                        "objectives_only": med["objectives_only"][-1]}
    n = len(medians)
    print("constrained multi-objective at N=%d: told the constraint beats told the objectives only on %d of %d "
          "(problem, sampler) pairs" % (checkpoints[-1], wins, n))
    return {"mo_constrained_win_fraction": round(wins / n, 4), "mo_constrained_feasible_hv": medians}


def run_mo(args, mo_binary, data_dir, run_lines, fmt, die):
    """Runs the part; prints its table; returns the keys it adds to the last JSON line."""
    start = time.time()
    run_lines = cached(run_lines, args.peer_cache)
    seeds = args.seeds or (QUICK_SEEDS if args.quick else 20)
    checkpoints = [25, 50] if args.quick else [100, 200]
    cps = ",".join(map(str, checkpoints))
    problems = [(n, ["--problem", n]) for n in SYNTHETIC]
    for t in TABLES:
        path = os.path.join(data_dir, t + ".csv.gz")
        if os.path.exists(path):
            problems.append((t, ["--table", path]))
        else:
            print("bench/search_vs_optuna: multi-objective: %s not found, left out" % path, file=sys.stderr)
    if args.quick:
        problems = [p for p in problems if p[0] in QUICK]
    if args.mo_problem:
        unknown = set(args.mo_problem) - set(n for n, _ in problems)
        if unknown:
            die("--mo-problem %s: not one of %s" % (", ".join(sorted(unknown)), ", ".join(n for n, _ in problems)), 2)
        problems = [p for p in problems if p[0] in args.mo_problem]
    auto, reference = {}, {}
    for name, where in problems:
        (line,) = run_lines([mo_binary, "resolve"] + where + ["--budget", str(checkpoints[-1])])
        auto[name] = (line["sampler"], line["reason"])
        reference[name] = line["reference"]
        if "ladder-" + line["sampler"] not in SAMPLERS:
            die("%s: auto picks %s, which this bench does not run" % (name, line["sampler"]))
    print("bench/search_vs_optuna: multi-objective: %d problems x %d samplers x %d seeds, checkpoints %s" %
          (len(problems), len(SAMPLERS), seeds, cps), flush=True)
    for name, _ in problems:
        print("  default (auto) on %s: %s (%s)" % (name, auto[name][0], auto[name][1]), flush=True)
    jobs = []
    for name, where in problems:
        for sampler in SAMPLERS:
            chunk = seeds if sampler in ("ladder-nsga2", "optuna-nsga2") else max(1, min(4, seeds))
            for s0 in range(0, seeds, chunk):
                n = min(chunk, seeds - s0)
                side = [mo_binary, "hv"] if sampler.startswith("ladder-") else [PY, PEER, "hv"]
                jobs.append((name, sampler, side + where + ["--sampler", sampler.split("-", 1)[1], "--seeds", str(n),
                                                            "--seed0", str(s0), "--checkpoints", cps]))
    results, seconds = {}, {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futs = {pool.submit(run_lines, cmd): (name, sampler) for name, sampler, cmd in jobs}
        for done, fut in enumerate(concurrent.futures.as_completed(futs), 1):
            name, sampler = futs[fut]
            try:
                lines = fut.result()
            except RuntimeError as e:
                die(str(e))
            for l in lines:
                # Both sides define the problems (bench/mo_problems.h, the peer): their reference points must agree.
                ref = l.get("reference", reference[name])
                if any(abs(a - b) > 1e-9 * max(1.0, abs(b)) for a, b in zip(ref, reference[name])):
                    die("%s: %s's reference point %s differs from ladder's %s" % (name, sampler, ref, reference[name]))
                results.setdefault((name, sampler), []).append(l["hv"])
                seconds[(name, sampler)] = seconds.get((name, sampler), 0.0) + l["seconds"]
            if done % 10 == 0 or done == len(futs):
                print("  multi-objective: %d/%d runs done (%.0f s)" % (done, len(futs), time.time() - start),
                      file=sys.stderr, flush=True)
    (timing,) = run_lines([mo_binary, "timing", "--sampler", "auto", "--history", str(TIMING_HISTORY), "--asks", "20",
                           "--budget", str(TIMING_HISTORY)])

    print()
    print("hypervolume after N evaluations (larger is better): median [q1, q3] over %d seeds; ladder-auto is the "
          "sampler auto picks (its runs)" % seeds)
    print("%-26s %-20s" % ("problem", "sampler") + "".join("%34s" % ("N=%d" % c) for c in checkpoints) + "  s/run")
    wins = {c: 0 for c in checkpoints}
    for name, _ in problems:
        med = {}
        for sampler in SAMPLERS:
            runs = results.get((name, sampler), [])
            if len(runs) != seeds:
                die("%s/%s: %d of %d seeds came back" % (name, sampler, len(runs), seeds))
            cells, med[sampler] = [], []
            for i in range(len(checkpoints)):
                q1, m, q3 = quartiles([r[i] for r in runs])
                cells.append("%s [%s, %s]" % (fmt(m), fmt(q1), fmt(q3)))
                med[sampler].append(m)
            print("%-26s %-20s" % (name, sampler) + "".join("%34s" % c for c in cells) +
                  "  %.2f" % (seconds[(name, sampler)] / seeds))
        picked = "ladder-" + auto[name][0]
        verdicts = []
        for i, c in enumerate(checkpoints):
            win = all(med[picked][i] >= med[o][i] for o in ("optuna-nsga2", "optuna-motpe"))
            wins[c] += win
            verdicts.append("N=%d %s" % (c, "WIN" if win else "loss"))
        print("%-26s -> default (%s): %s" % (name, auto[name][0], ", ".join(verdicts)))
    n = len(problems)
    last = checkpoints[-1]
    print()
    for c in checkpoints:
        print("multi-objective at N=%d: the default is >= both Optuna samplers on %d of %d" % (c, wins[c], n))
    per = timing["seconds_per_suggestion"]
    print("multi-objective default (%s) at %d completed trials: %s s per suggestion (goal < 0.01: %s)" %
          (timing["resolved"], TIMING_HISTORY, fmt(per), "met" if per < 0.01 else "NOT met"))
    constrained = run_constrained(mo_binary, run_lines, seeds, checkpoints, fmt)
    print("multi-objective part finished in %.0f s" % (time.time() - start))
    return {**constrained, "mo_problems": n, "mo_win_fraction": round(wins[last] / n, 4),
            "mo_win_fraction_at": {str(c): round(w / n, 4) for c, w in wins.items()},
            "mo_default_samplers": {name: auto[name][0] for name, _ in problems},
            "mo_s_per_suggestion_at_10000": per}
