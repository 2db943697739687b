#!/usr/bin/python3
"""bench/trainer_vs_pytorch's tables and its last JSON line, from the runs' metric lines in its temp dir.

usage: trainer_vs_pytorch_report.py report TMP ROUNDS RANKS LOAD0 LOAD1 ELAPSED BLAS BACKEND WORKLOAD...

TMP holds, per workload W, implementation I (ladder, pytorch), rank count N and round K, rank 0's stdout as
W.I.nN.rK.jsonl (one JSON line per epoch with samples_per_s), the small model's as small.I.n1.rK.jsonl, and
describe.jsonl (pytorch_ddp_workloads.py describe: per workload its parameters and forward FLOPs per sample, and
one or more GEMM peaks of one thread, the best of which is taken).
"""
import json
import math
import os
import statistics
import sys


def rates(path):
    """The per-epoch samples/s of one run after its warm-up epoch."""
    epochs = [json.loads(line) for line in open(path) if line.startswith("{")]
    epochs = [e for e in epochs if "samples_per_s" in e]
    if len(epochs) < 2:
        sys.exit(f"bench/trainer_vs_pytorch: {path}: fewer than 2 epoch lines from rank 0")
    return [e["samples_per_s"] for e in epochs[1:]]


def summary(tmp, w, impl, n, rounds):
    all_rates, per_round = [], []
    for k in range(rounds):
        r = rates(os.path.join(tmp, f"{w}.{impl}.n{n}.r{k}.jsonl"))
        all_rates += r
        per_round.append(statistics.median(r))
    q = statistics.quantiles(all_rates, n=4, method="inclusive") if len(all_rates) > 1 else [all_rates[0]] * 3
    return dict(median=statistics.median(all_rates), q1=q[0], q3=q[2], per_round=per_round)


def report(tmp, rounds, many, load0, load1, elapsed, blas, backend, workloads):
    desc = [json.loads(line) for line in open(os.path.join(tmp, "describe.jsonl")) if line.strip()]
    flops = {d["workload"]: d["forward_flops"] for d in desc if "workload" in d}
    params = {d["workload"]: d["parameters"] for d in desc if "workload" in d}
    peak = max(d["gemm_flops_per_s"] for d in desc if "gemm_flops_per_s" in d)
    res = {(w, i, n): summary(tmp, w, i, n, rounds) for w in workloads for i in ("ladder", "pytorch") for n in (1, many)}
    small = {i: summary(tmp, "small", i, 1, rounds) for i in ("ladder", "pytorch")}

    print()
    print(f"GEMM peak of one thread (torch.mm 1024x1024, best of 12): {peak / 1e9:.1f} GFLOP/s")
    print("%-12s %-8s %5s %14s %17s %12s %10s" % ("workload", "impl", "ranks", "samples/s(med)", "quartiles",
                                                  "GFLOP/s/core", "of peak"))
    ratios, scaling, frac, pfrac, lines = {}, {}, {}, {}, []
    for w in workloads:
        train_flops = 3 * flops[w]  # per sample: forward + backward (2x forward)
        for impl in ("ladder", "pytorch"):
            for n in (1, many):
                r = res[w, impl, n]
                per_core = r["median"] * train_flops / n
                print("%-12s %-8s %5d %14.1f %17s %12.2f %9.1f%%" % (
                    w, impl, n, r["median"], "%.0f-%.0f" % (r["q1"], r["q3"]), per_core / 1e9, 100 * per_core / peak))
        paired = [a / b for a, b in zip(res[w, "ladder", many]["per_round"], res[w, "pytorch", many]["per_round"])]
        paired1 = [a / b for a, b in zip(res[w, "ladder", 1]["per_round"], res[w, "pytorch", 1]["per_round"])]
        ratios[w] = statistics.median(paired)
        scaling[w] = {i: res[w, i, many]["median"] / (many * res[w, i, 1]["median"]) for i in ("ladder", "pytorch")}
        frac[w] = res[w, "ladder", 1]["median"] * train_flops / peak
        pfrac[w] = res[w, "pytorch", 1]["median"] * train_flops / peak
        lines.append("%-12s ratio at %d ranks %.3f (per round %s), at 1 rank %.3f; scaling ladder %.3f, pytorch %.3f; "
                     "%d parameters, %.2f MFLOP per sample (training)" % (
                         w, many, ratios[w], " ".join("%.3f" % x for x in paired), statistics.median(paired1),
                         scaling[w]["ladder"], scaling[w]["pytorch"], params[w], train_flops / 1e6))
    print()
    print("\n".join(lines))
    geo = math.exp(sum(math.log(r) for r in ratios.values()) / len(ratios))
    ls, ps = small["ladder"], small["pytorch"]
    small_paired = [a / b for a, b in zip(ls["per_round"], ps["per_round"])]
    out = {"ratio": round(geo, 4),
           "workload_ratios": {w: round(r, 4) for w, r in ratios.items()},
           "workload_scaling": {w: {i: round(v, 4) for i, v in s.items()} for w, s in scaling.items()},
           "workload_gemm_fraction": {w: round(f, 4) for w, f in frac.items()},
           "pytorch_gemm_fraction": {w: round(f, 4) for w, f in pfrac.items()},
           "gemm_peak_gflops": round(peak / 1e9, 2)}
    if "mlp" in workloads:
        out.update({"ladder_samples_per_s": round(res["mlp", "ladder", many]["median"], 1),
                    "pytorch_samples_per_s": round(res["mlp", "pytorch", many]["median"], 1),
                    "ladder_scaling_eff": round(scaling["mlp"]["ladder"], 4),
                    "pytorch_scaling_eff": round(scaling["mlp"]["pytorch"], 4)})
    out.update({"small_model_ratio": round(statistics.median(small_paired), 4), "blas": blas, "ladder_backend": backend})
    print("geometric mean of the ratios at %d ranks: %.3f (goals: >= 1.2 on each workload, >= 1.5 overall)" % (many, geo))
    print("small model (40-128-128-7, batch 32, 1 rank): ladder %.3f ms/step, pytorch eager %.3f ms/step; ratio %.2f "
          "(goal >= 3); per round: %s" % (32e3 / ls["median"], 32e3 / ps["median"], out["small_model_ratio"],
                                          " ".join("%.2f" % x for x in small_paired)))
    print("load average: %s at start, %s at end (%d cores); took %s s" % (load0, load1, os.cpu_count(), elapsed))
    print(json.dumps(out))


def main():
    if len(sys.argv) < 11 or sys.argv[1] != "report":
        raise SystemExit(__doc__.split("\n\n")[1])
    a = sys.argv[2:]
    report(a[0], int(a[1]), int(a[2]), a[3], a[4], a[5], a[6], a[7], a[8:])


if __name__ == "__main__":
    main()
