#!/usr/bin/python3
"""Writes a CSV for bench/extrapolation's csv task: 125,000 rows of 24 features (6 of them rounded to thirds) and
a label 0..7 from a random tanh teacher network (24-32-8) with Gumbel noise on its logits, seeded, so that the
same file comes out on every machine. Usage: make_teacher_csv.py OUT.csv.gz [ROWS]"""
import gzip
import os
import math
import random
import sys


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    out, rows = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 125000
    rng = random.Random(21)
    d, k, h = 24, 8, 32
    w1 = [[rng.gauss(0, 1 / math.sqrt(d)) for _ in range(h)] for _ in range(d)]
    w2 = [[rng.gauss(0, 1.5 / math.sqrt(h)) for _ in range(k)] for _ in range(h)]
    tmp = out + ".tmp"
    with gzip.open(tmp, "wt") as f:
        f.write(",".join([f"x{i}" for i in range(d)] + ["label"]) + "\n")
        for _ in range(rows):
            x = [rng.gauss(0, 1) for _ in range(d)]
            for i in range(6):
                x[i] = round(x[i] * 3) / 3
            hidden = [math.tanh(sum(x[i] * w1[i][j] for i in range(d))) for j in range(h)]
            logits = [sum(hidden[j] * w2[j][c] for j in range(h)) - 0.8 * math.log(-math.log(rng.random()))
                      for c in range(k)]
            f.write(",".join(f"{v:.4g}" for v in x) + f",{max(range(k), key=lambda c: logits[c])}\n")
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
