#!/usr/bin/python3
"""The Optuna side of bench/search_vs_optuna's multi-objective part (Debian python3-optuna 3.1 through
/usr/bin/python3).

Defines the problems of bench/mo_problems.h the same way (ZDT1-3 with 10 variables, DTLZ2 with 3 objectives
and 7 variables; a bench-data table as (error, training cost) with the same cost model, reference point and
one seed's value per evaluation as search_vs_optuna_peer.py reads it) and prints one JSON line per seed with
the hypervolume of the true objectives of every configuration evaluated so far, after each checkpoint:
  search_vs_optuna_mo_peer.py hv (--problem NAME | --table PATH) --sampler nsga2|motpe [--seeds N] [--seed0 K]
                                 [--checkpoints 100,200]
Samplers with Optuna's defaults: NSGAIISampler(seed=s) (population 50, uniform crossover) and
TPESampler(seed=s) on a study with several directions (Optuna 3.1's multi-objective TPE). The hypervolume is
Optuna's own (optuna._hypervolume.WFG), over the points strictly inside the reference box.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import optuna
from optuna._hypervolume import WFG

sys.dont_write_bytecode = True  # no __pycache__ beside the script in a checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from search_vs_optuna_peer import Table  # noqa: E402  (the same table reading and noise rule)

optuna.logging.set_verbosity(optuna.logging.WARNING)


def zdt_g(x):
    return 1 + 9 * sum(x[1:]) / (len(x) - 1)


def zdt1(x):
    g = zdt_g(x)
    return [x[0], g * (1 - math.sqrt(x[0] / g))]


def zdt2(x):
    g = zdt_g(x)
    return [x[0], g * (1 - (x[0] / g) ** 2)]


def zdt3(x):
    g = zdt_g(x)
    return [x[0], g * (1 - math.sqrt(x[0] / g) - x[0] / g * math.sin(10 * math.pi * x[0]))]


def dtlz2(x):
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)]


SYNTHETIC = {"zdt1": (10, zdt1, [1.1, 11.0]), "zdt2": (10, zdt2, [1.1, 11.0]), "zdt3": (10, zdt3, [1.1, 11.0]),
             "dtlz2": (7, dtlz2, [2.5, 2.5, 2.5])}


class Synthetic:
    def __init__(self, name):
        self.dims, self.f, self.ref = SYNTHETIC[name]
        self.objectives = len(self.ref)

    def suggest(self, trial):
        return [trial.suggest_float("x%d" % i, 0, 1) for i in range(self.dims)]

    def evaluate(self, x, run_seed, n):
        return self.f(x)

    def true_values(self, x):
        return self.f(x)


class TableMo:
    """(error, cost / the table's largest cost); reference (median error of the configurations, 1.01)."""

    def __init__(self, path):
        self.t = Table(path)
        names = self.t.names
        if all(n in names for n in ("batch_size", "depth", "width")):
            self.model = "hpobench"
        elif all(n in names for n in ("batch_size", "n_units_1", "n_units_2")):
            self.model = "hpolib"
        else:
            raise SystemExit("%s: no cost model for its columns" % path)
        self.objectives = 2
        self.max_cost = max(self.raw_cost(k) for k in self.t.means)
        losses = sorted(self.loss(m) for m in self.t.means.values())
        self.ref = [losses[len(losses) // 2], 1.01]

    def number(self, key, name):
        j = self.t.names.index(name)
        return float(self.t.columns[j][1][key[j]])

    def raw_cost(self, key):
        batch = self.number(key, "batch_size")
        if self.model == "hpobench":
            w = self.number(key, "width")
            return self.number(key, "depth") * w * w * (1 + 32 / batch)
        a, b = self.number(key, "n_units_1"), self.number(key, "n_units_2")
        return (a * b + 16 * (a + b)) * (1 + 32 / batch)

    def loss(self, v):
        return -v if self.t.maximize else v

    def suggest(self, trial):
        return self.t.suggest(trial)

    def evaluate(self, key, run_seed, n):
        return [self.loss(self.t.evaluate(key, run_seed, n)), self.raw_cost(key) / self.max_cost]

    def true_values(self, key):
        return [self.loss(self.t.means.get(key, self.t.worst)), self.raw_cost(key) / self.max_cost]


def hypervolume(points, ref):
    inside = [p for p in points if all(a < r for a, r in zip(p, ref))]
    if not inside:
        return 0.0
    return float(WFG().compute(np.asarray(inside, dtype=float), np.asarray(ref, dtype=float)))


def hv(args):
    problem = Synthetic(args.problem) if args.problem else TableMo(args.table)
    name = args.problem or args.table
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    for s in range(args.seed0, args.seed0 + args.seeds):
        sampler = optuna.samplers.NSGAIISampler(seed=s) if args.sampler == "nsga2" else \
            optuna.samplers.TPESampler(seed=s)
        study = optuna.create_study(directions=["minimize"] * problem.objectives, sampler=sampler)
        seen, hvs = [], []
        t0 = time.perf_counter()
        for n in range(checkpoints[-1]):
            trial = study.ask()
            x = problem.suggest(trial)
            study.tell(trial, problem.evaluate(x, s, n))
            seen.append(problem.true_values(x))
            if n + 1 in checkpoints:
                hvs.append(hypervolume(seen, problem.ref))
        print(json.dumps({"problem": name, "sampler": "optuna-" + args.sampler, "seed": s,
                          "seconds": round(time.perf_counter() - t0, 4), "hv": hvs, "reference": problem.ref}),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("hv")
    r.add_argument("--problem", choices=sorted(SYNTHETIC))
    r.add_argument("--table")
    r.add_argument("--sampler", choices=["nsga2", "motpe"], default="motpe")
    r.add_argument("--seeds", type=int, default=20)
    r.add_argument("--seed0", type=int, default=0)
    r.add_argument("--checkpoints", default="100,200")
    args = ap.parse_args()
    if bool(args.problem) == bool(args.table):
        ap.error("hv needs exactly one of --problem and --table")
    hv(args)


if __name__ == "__main__":
    main()
