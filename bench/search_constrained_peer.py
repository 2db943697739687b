#!/usr/bin/python3
"""The Optuna side of bench/search_vs_optuna's constrained part (Debian python3-optuna 3.1 through /usr/bin/python3):
Optuna's constrained TPE, TPESampler(seed=s, constraints_func=...) with its defaults, on the synthetic problems of
bench/search_vs_optuna_peer.py under the half-space constraint of bench/search_constrained_bench.h:
  c(u) = w.(u - 1/2) - t <= 0,  w = (u* - 1/2)/|u* - 1/2|,  t = 0.5244005127080407/sqrt(12)
(u: the unit coordinates, u* the unconstrained optimum's). One JSON line per seed, like ladder-search-bench
constrained: the best feasible trial's regret f(x) - f* after the budget (null without one) and the infeasible share.
  search_constrained_peer.py --problem NAME [--seeds N] [--seed0 K] [--budget N]
"""
import argparse
import json
import math
import os
import sys
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import optuna  # noqa: E402
from search_vs_optuna_peer import SYNTHETIC  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)

OPTIMA = {"branin": [-math.pi, 12.275], "hartmann6": [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573],
          "rosenbrock20": [1.0] * 20, "levy10": [1.0] * 10}


def half_space(name):
    box = SYNTHETIC[name][0]
    w = [(x - lo) / (hi - lo) - 0.5 for x, (lo, hi) in zip(OPTIMA[name], box)]
    norm = math.sqrt(sum(v * v for v in w))
    return [v / norm for v in w], 0.5244005127080407 / math.sqrt(12.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", choices=sorted(OPTIMA), required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--budget", type=int, default=100)
    a = ap.parse_args()
    box, f, fopt = SYNTHETIC[a.problem]
    w, t = half_space(a.problem)
    for s in range(a.seed0, a.seed0 + a.seeds):
        sampler = optuna.samplers.TPESampler(seed=s, constraints_func=lambda ft: ft.user_attrs["c"])
        study = optuna.create_study(sampler=sampler, direction="minimize")
        best, infeasible = None, 0
        for _ in range(a.budget):
            trial = study.ask()
            x = [trial.suggest_float("x%d" % i, lo, hi) for i, (lo, hi) in enumerate(box)]
            u = [(v - lo) / (hi - lo) for v, (lo, hi) in zip(x, box)]
            c = sum(wi * (ui - 0.5) for wi, ui in zip(w, u)) - t
            trial.set_user_attr("c", [c])
            y = f(x)
            study.tell(trial, y)
            if c <= 0:
                best = y - fopt if best is None else min(best, y - fopt)
            else:
                infeasible += 1
        print(json.dumps({"problem": a.problem, "sampler": "optuna-tpe-constrained", "seed": s, "regret": best,
                          "infeasible": round(infeasible / a.budget, 4)}), flush=True)


if __name__ == "__main__":
    main()
