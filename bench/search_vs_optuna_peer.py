#!/usr/bin/python3
"""The Optuna side of bench/search_vs_optuna (Debian python3-optuna 3.1 through /usr/bin/python3).

Defines the same problems as bench/search_problems.cc (synthetic functions; tables in the bench-data format
with numeric columns as ordinal int parameters over their sorted distinct values and other columns as
categoricals, one seed's value per evaluation chosen by the same SplitMix64 rule) and prints one JSON line
per seed, like ladder-search-bench:
  search_vs_optuna_peer.py regret (--problem NAME | --table PATH) --sampler tpe|random [--seeds N] [--seed0 K]
                                  [--checkpoints 25,50,100,200]
  search_vs_optuna_peer.py timing [--history 100,1000,10000] [--asks K]
Optuna's samplers run with their defaults (TPESampler(seed=s): univariate, 10 random startup trials).
"""
import argparse
import csv
import gzip
import io
import json
import math
import random
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def noise_index(run_seed, trial, seeds):
    return splitmix64(((run_seed << 20) & MASK) ^ trial) % seeds


def branin(x):
    a, b, c, r, s, t = 1, 5.1 / (4 * math.pi ** 2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return a * (x[1] - b * x[0] ** 2 + c * x[0] - r) ** 2 + s * (1 - t) * math.cos(x[0]) + s


H_ALPHA = [1.0, 1.2, 3.0, 3.2]
H_A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
H_P = [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
       [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]


def hartmann6(x):
    f = 0.0
    for i in range(4):
        e = sum(H_A[i][j] * (x[j] - H_P[i][j] * 1e-4) ** 2 for j in range(6))
        f -= H_ALPHA[i] * math.exp(-e)
    return f


def rosenbrock(x):
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(len(x) - 1))


def levy(x):
    w = [1 + (v - 1) / 4 for v in x]
    d = len(x)
    f = math.sin(math.pi * w[0]) ** 2
    for i in range(d - 1):
        f += (w[i] - 1) ** 2 * (1 + 10 * math.sin(math.pi * w[i] + 1) ** 2)
    f += (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    return f


SYNTHETIC = {
    "branin": ([(-5, 10), (0, 15)], branin, 0.397887357729738),
    "hartmann6": ([(0, 1)] * 6, hartmann6, -3.32236801141551),
    "rosenbrock20": ([(-5, 10)] * 20, rosenbrock, 0.0),
    "levy10": ([(-10, 10)] * 10, levy, 0.0),
}


class Synthetic:
    def __init__(self, name):
        self.box, self.f, self.opt = SYNTHETIC[name]
        self.maximize = False

    def suggest(self, trial):
        return [trial.suggest_float("x%d" % i, lo, hi) for i, (lo, hi) in enumerate(self.box)]

    def evaluate(self, x, run_seed, n):
        return self.f(x)

    def regret(self, x):
        return max(0.0, self.f(x) - self.opt)


def is_number(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


class Table:
    def __init__(self, path):
        with gzip.open(path, "rt") as f:
            text = f.read()
        first, rest = text.split("\n", 1)
        if not first.startswith("#"):
            raise SystemExit("%s:1: expected the '# bench/dataset: direction=...' comment" % path)
        self.maximize = "direction=maximize" in first
        rows = list(csv.reader(io.StringIO(rest)))
        header, rows = rows[0], [r for r in rows[1:] if r]
        k = 0
        while k < len(header) and not header[k].startswith("seed"):
            k += 1
        self.names = header[:k]
        self.columns = []
        for j in range(k):
            values = sorted(set(r[j] for r in rows))
            numeric = all(is_number(v) for v in values)
            if numeric:
                values.sort(key=float)
            self.columns.append((numeric, values, {v: i for i, v in enumerate(values)}))
        self.rows, self.means = {}, {}
        best = None
        worst = None
        for r in rows:
            key = tuple(self.columns[j][2][r[j]] for j in range(k))
            vals = [float(v) for v in r[k:] if v != ""]  # some rows lack some seeds' values
            self.rows[key] = vals
            m = sum(vals) / len(vals)
            self.means[key] = m
            if best is None or (m > best if self.maximize else m < best):
                best = m
            for v in vals:
                if worst is None or (v < worst if self.maximize else v > worst):
                    worst = v
        self.best, self.worst = best, worst

    def suggest(self, trial):
        key = []
        for name, (numeric, values, index) in zip(self.names, self.columns):
            if numeric:
                key.append(trial.suggest_int(name, 0, len(values) - 1))
            else:
                key.append(index[trial.suggest_categorical(name, values)])
        return tuple(key)

    def evaluate(self, key, run_seed, n):
        vals = self.rows.get(key)
        if vals is None:
            return self.worst
        return vals[noise_index(run_seed, n, len(vals))]

    def regret(self, key):
        m = self.means.get(key, self.worst)
        return self.best - m if self.maximize else m - self.best


def regret(args):
    problem = Synthetic(args.problem) if args.problem else Table(args.table)
    name = args.problem or args.table
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    for s in range(args.seed0, args.seed0 + args.seeds):
        sampler = optuna.samplers.TPESampler(seed=s) if args.sampler == "tpe" else optuna.samplers.RandomSampler(seed=s)
        study = optuna.create_study(direction="maximize" if problem.maximize else "minimize", sampler=sampler)
        best, incumbent, regrets = None, None, []
        t0 = time.perf_counter()
        for n in range(checkpoints[-1]):
            trial = study.ask()
            x = problem.suggest(trial)
            y = problem.evaluate(x, s, n)
            study.tell(trial, y)
            if best is None or (y > best if problem.maximize else y < best):
                best, incumbent = y, x
            if n + 1 in checkpoints:
                regrets.append(problem.regret(incumbent))
        print(json.dumps({"problem": name, "sampler": "optuna-" + args.sampler, "seed": s,
                          "seconds": round(time.perf_counter() - t0, 4), "regret": regrets}), flush=True)


def timing_suggest(trial):
    v = {"lr": trial.suggest_float("lr", 1e-5, 1e-1, log=True)}
    for i in range(4):
        v["x%d" % i] = trial.suggest_float("x%d" % i, 0, 1)
    v["width"] = trial.suggest_int("width", 8, 1024, log=True)
    v["depth"] = trial.suggest_int("depth", 1, 8)
    v["act"] = trial.suggest_categorical("act", ["relu", "tanh", "gelu"])
    v["opt"] = trial.suggest_categorical("opt", ["sgd", "adam"])
    return v


def timing_objective(v):
    y = (math.log10(v["lr"]) + 3) ** 2 + sum((v["x%d" % i] - 0.3) ** 2 for i in range(4))
    y += abs(math.log2(v["width"]) - 7) * 0.1 + (0 if v["act"] == "gelu" else 0.2)
    return y


def timing(args):
    dists = {
        "lr": optuna.distributions.FloatDistribution(1e-5, 1e-1, log=True),
        **{"x%d" % i: optuna.distributions.FloatDistribution(0, 1) for i in range(4)},
        "width": optuna.distributions.IntDistribution(8, 1024, log=True),
        "depth": optuna.distributions.IntDistribution(1, 8),
        "act": optuna.distributions.CategoricalDistribution(["relu", "tanh", "gelu"]),
        "opt": optuna.distributions.CategoricalDistribution(["sgd", "adam"]),
    }
    for h in [int(x) for x in args.history.split(",")]:
        asks = args.asks if h < 10000 else max(1, args.asks_10000)
        study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1))
        rnd = random.Random(1)
        trials = []
        for _ in range(h):
            v = {"lr": 10 ** rnd.uniform(-5, -1), **{"x%d" % i: rnd.random() for i in range(4)},
                 "width": int(round(math.exp(rnd.uniform(math.log(7.5), math.log(1024.5))))),
                 "depth": rnd.randint(1, 8), "act": rnd.choice(["relu", "tanh", "gelu"]),
                 "opt": rnd.choice(["sgd", "adam"])}
            v["width"] = min(1024, max(8, v["width"]))
            trials.append(optuna.trial.create_trial(params=v, distributions=dists, value=timing_objective(v)))
        study.add_trials(trials)
        # One warm-up suggestion, then `asks` timed (the same protocol as ladder-search-bench timing).
        for k in range(asks + 1):
            if k == 1:
                t0 = time.perf_counter()
            trial = study.ask()
            study.tell(trial, timing_objective(timing_suggest(trial)))
        per = (time.perf_counter() - t0) / asks
        print(json.dumps({"sampler": "optuna-tpe", "history": h, "asks": asks, "seconds_per_suggestion": per}),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("regret")
    r.add_argument("--problem", choices=sorted(SYNTHETIC))
    r.add_argument("--table")
    r.add_argument("--sampler", choices=["tpe", "random"], default="tpe")
    r.add_argument("--seeds", type=int, default=20)
    r.add_argument("--seed0", type=int, default=0)
    r.add_argument("--checkpoints", default="25,50,100,200")
    t = sub.add_parser("timing")
    t.add_argument("--history", default="100,1000,10000")
    t.add_argument("--asks", type=int, default=10)
    t.add_argument("--asks-10000", type=int, default=3)
    args = ap.parse_args()
    if args.cmd == "regret":
        if bool(args.problem) == bool(args.table):
            ap.error("regret needs exactly one of --problem and --table")
        regret(args)
    else:
        timing(args)


if __name__ == "__main__":
    main()
