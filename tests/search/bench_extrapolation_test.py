#!/usr/bin/python3
"""bench/extrapolation's Python parts: the oracle curve (OracleCurve: where a target batch's best LR and the
regret of a prediction come from), the tasks (the csv task's batches scaled to its file, its errors) and how an
interval prints.
Usage: bench_extrapolation_test.py SOURCE_DIR"""
import contextlib
import importlib.machinery
import importlib.util
import io
import math
import os
import sys
import tempfile
import unittest

SRC = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
_loader = importlib.machinery.SourceFileLoader("extrapolation", os.path.join(SRC, "bench", "extrapolation"))
_spec = importlib.util.spec_from_loader("extrapolation", _loader)
bench = importlib.util.module_from_spec(_spec)
_loader.exec_module(bench)


def curve(losses_by_x, classes=10):
    """OracleCurve from {log2 lr: [loss of seed 0, loss of seed 1, ...] (None: diverged)}."""
    points, runs = {}, []
    for x, losses in losses_by_x.items():
        points[2.0 ** x] = None if None in losses else sum(losses) / len(losses)
        runs += [(x, y, seed) for seed, y in enumerate(losses) if y is not None]
    return bench.OracleCurve(points, runs, classes)


class OracleCurveTest(unittest.TestCase):
    def test_an_exact_parabola_gives_its_vertex_and_zero_regret_there(self):
        # loss = 0.5 + 0.1 (x + 2.3)^2, seed 1 shifted up by 0.04 everywhere
        c = curve({x / 2: [0.5 + 0.1 * (x / 2 + 2.3) ** 2, 0.54 + 0.1 * (x / 2 + 2.3) ** 2]
                   for x in range(-8, 0)})
        self.assertTrue(c.parabola)
        self.assertAlmostEqual(c.x, -2.3, places=6)
        self.assertAlmostEqual(c.loss, 0.52, places=6)  # the mean of the seeds' offsets
        self.assertAlmostEqual(c.regret(2.0 ** -2.3), 0.0, places=9)
        self.assertAlmostEqual(c.regret(2.0 ** -1.8), 0.1 * 0.25 / 0.52, places=6)
        # No noise: every bootstrap refit is the same curve.
        (r, lo, hi), = c.interval([2.0 ** -1.8])
        self.assertAlmostEqual(lo, r, places=6)
        self.assertAlmostEqual(hi, r, places=6)

    def test_a_cliff_inside_the_window_does_not_put_the_minimum_below_every_run(self):
        # bench/extrapolation --quick, synthetic at batch 2,048 (bench/data/extrapolation/quick.json.gz): the loss
        # doubles one octave above the best LR; a quadratic over +-1 octave put its minimum at 1.5904, below every
        # run (the lowest: 1.6216).
        c = curve({-3.0: [2.1979, 2.2035], -2.0: [2.0549, 2.0646], -1.5: [1.9093, 1.9278], -1.0: [1.7345, 1.7630],
                   -0.5: [1.6417, 1.6584], 0.0: [1.6216, 1.6326], 0.5: [1.6318, 1.6588], 1.0: [1.8604, 2.1296]})
        self.assertTrue(c.parabola)
        self.assertGreaterEqual(c.loss, 1.6216)
        self.assertLessEqual(c.loss, (1.6216 + 1.6326) / 2)
        self.assertLess(abs(c.x), 0.5)  # between the neighbours of the best point
        self.assertAlmostEqual(c.lo, -0.5)  # the window was halved
        self.assertAlmostEqual(c.hi, 0.5)

    def test_a_cliff_beside_a_flat_floor_does_not_pull_the_vertex_off_the_floor(self):
        # The full synthetic task at batch 8,192 (bench/data/extrapolation/synthetic-full-curves.json.gz), its three
        # seeds: a floor flat from 0.5 to 0.84 (each seed's best at 0.71-0.84), the loss rising 2% from 1.0 on. A
        # quadratic over +-1 octave of the argmin (0.71) put its vertex at 0.53, below the floor's seed means by
        # more than their noise, yet above the lowest run.
        lrs = [0.25, 0.3535, 0.4204, 0.5, 0.5946, 0.7071, 0.8409, 1.0, 1.1892, 1.4142, 1.6818, 2.0]
        seeds = [[1.5920, 1.5854, 1.5838, 1.5818, 1.5821, 1.5797, 1.5781, 1.5970, 1.6261, 1.6193, 1.6695, 1.6302],
                 [1.5933, 1.5837, 1.5815, 1.5800, 1.5799, 1.5776, 1.5908, 1.6148, 1.6667, 1.6177, 1.6472, 1.6266],
                 [1.5899, 1.5831, 1.5833, 1.5798, 1.5800, 1.5801, 1.5746, 1.6157, 1.6281, 1.7235, 1.6333, 1.6549]]
        c = curve({math.log2(lr): [s[i] for s in seeds] for i, lr in enumerate(lrs)})
        self.assertTrue(c.parabola)
        self.assertGreater(c.lr, 0.59)
        self.assertLess(c.lr, 0.85)
        self.assertGreater(c.loss, 1.578)  # not under the floor's seed means (1.5791 at 0.71)

    def test_a_cliff_that_bends_the_quadratic_below_zero_is_refitted(self):
        # digits at 10 epochs, batch 1,024: a quadratic over +-1 octave gave a loss of -0.08 at its minimum.
        c = curve({-3.0: [1.716, 1.778], -2.0: [0.867, 0.929], -1.5: [0.487, 0.504], -1.0: [0.305, 0.312],
                   -0.5: [0.197, 0.251], 0.0: [0.150, 0.229], 0.5: [0.446, 0.390], 1.0: [2.277, 2.647]})
        self.assertTrue(c.parabola)
        self.assertGreater(c.loss, 0.15)
        self.assertGreaterEqual(c.regret(2.0 ** 1.0), 0.0)
        self.assertGreaterEqual(min(c.regret(2.0 ** (k / 8)) for k in range(-24, 9)), -1e-12)

    def test_without_a_valid_quadratic_the_argmin_of_the_points_is_the_oracle(self):
        # three LRs and a cliff: the only quadratic through them has its minimum at a negative loss
        cliff = curve({-1.0: [0.2, 0.2], 0.0: [0.1, 0.1], 1.0: [5.0, 5.0]})
        self.assertFalse(cliff.parabola)
        self.assertEqual(cliff.x, 0.0)
        self.assertAlmostEqual(cliff.loss, 0.1)
        self.assertAlmostEqual(cliff.regret(2.0 ** 0.5), (2.55 - 0.1) / 0.1)  # interpolated between the points
        concave = curve({-1.0: [0.3, 0.3], 0.0: [0.1, 0.1], 1.0: [0.2, 0.2], 2.0: [0.25, 0.25]})
        self.assertTrue(concave.parabola)  # the points around the argmin are convex
        bent = curve({-2.0: [0.5, 0.5], -1.0: [0.3, 0.3], 0.0: [0.29, 0.29], 1.0: [0.3, 0.3], 2.0: [0.6, 0.6]})
        self.assertTrue(bent.parabola)
        self.assertAlmostEqual(bent.x, 0.0, places=6)

    def test_the_interval_holds_the_regret_and_widens_with_noise(self):
        true = {x / 2: 0.5 + 0.1 * (x / 2 + 2.0) ** 2 for x in range(-8, 1)}
        noise = [0.03, -0.02, 0.01, -0.03, 0.02, -0.01, 0.025, -0.015, 0.005]
        quiet = curve({x: [y, y + 0.04] for x, y in true.items()})
        loud = curve({x: [y + n, y + 0.04 - n] for (x, y), n in zip(sorted(true.items()), noise)})
        (rq, lq, hq), = quiet.interval([2.0 ** -1.5])
        (rl, ll, hl), = loud.interval([2.0 ** -1.5])
        self.assertLess(hq - lq, 1e-9)  # no noise: every refit is the same curve
        self.assertGreater(hl - ll, 0.01)  # noise of ~0.02 in losses of ~0.55: regrets move by percents
        self.assertGreater(rl, 0.01)
        # an LR outside the quadratic's window gets no interval
        (r, lo, hi), = loud.interval([2.0 ** -4.0])
        self.assertEqual((lo, hi), (r, r))


class TasksTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="bench-extrapolation-test-")

    def tearDown(self):
        self.dir.cleanup()

    def args(self, **kw):
        a = {"quick": True, "tasks": "csv", "data": None, "epochs": None, "seeds": None}
        a.update(kw)
        return a

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def error(self, **kw):
        """make_tasks' error message and exit code."""
        bench.DYING.clear()  # die() prints only the first error of a process
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as ex:
            bench.make_tasks(self.args(**kw))
        return err.getvalue(), ex.exception.code

    def test_the_csv_task_scales_its_batches_to_the_file(self):
        rows = "".join(f"{i % 7},{(i * 3) % 5},{i % 4}\n" for i in range(100000))
        path = self.write("big.csv", "a,b,label\n" + rows)  # a header line is skipped
        task, = bench.make_tasks(self.args(data=path))
        self.assertEqual(task["train"], 80000)
        self.assertEqual(task["classes"], 4)
        # the largest target takes >= 100 steps in 3 epochs: 32 x top <= 3 x 80,000 / 100, top a power of two
        self.assertEqual(task["swept"], [16, 32, 64])
        self.assertEqual(task["targets"], [1024, 2048])  # 16x and 32x the largest swept batch (117 steps)
        self.assertEqual(task["seeds"], bench.QUICK_SEEDS)
        small = self.write("small.csv", "".join(f"{i},{i % 3}\n" for i in range(20000)))
        task, = bench.make_tasks(self.args(data=small, quick=False, epochs=5))
        self.assertEqual(task["swept"], [4, 8, 16])  # 5 epochs of 16,000 rows: 512 x 100 steps <= 80,000
        self.assertEqual(task["targets"], [256, 512])
        self.assertEqual(task["epochs"], 5)
        self.assertEqual(task["seeds"], bench.SEEDS)

    def test_the_csv_task_names_what_is_wrong_with_its_file(self):
        few = self.write("few.csv", "".join(f"{i},{i % 2}\n" for i in range(200)))
        msg, code = self.error(data=few)
        self.assertEqual(code, 2)
        self.assertIn("160 training rows are too few: a 32x batch extrapolation", msg)
        bad = self.write("bad.csv", "1,0\n2,1\n3,cat\n")
        msg, code = self.error(data=bad)
        self.assertEqual(code, 2)
        self.assertIn("bad.csv:3: the label 'cat' is not a number", msg)
        msg, code = self.error(data=os.path.join(self.dir.name, "missing.csv"))
        self.assertIn("missing.csv: no such file", msg)
        msg, code = self.error(data=None)
        self.assertIn("the csv task needs --data PATH", msg)
        msg, code = self.error(tasks="cifar")
        self.assertIn("unknown task 'cifar'", msg)

    def test_the_regime_tasks_set_one_dial_each_and_leave_the_defaults_alone(self):
        tasks = bench.make_tasks(self.args(tasks="teacher_noisy,teacher_lowrank,teacher_adamw"))
        self.assertEqual([t["data"] for t in tasks], ["teacher:25000:32:10:0.5:32", "teacher:25000:32:10:0.0:4",
                                                      "teacher:25000:32:10:0.0:32"])
        self.assertEqual([t.get("optimizer", "sgd") for t in tasks], ["sgd", "sgd", "adamw"])
        for t in tasks:
            self.assertEqual((t["swept"], t["targets"], t["train"]), ([16, 32, 64], [1024, 2048], 20000))
            self.assertIn(t["name"], bench.GATED)
        full, = bench.make_tasks(self.args(tasks="teacher_lowrank", quick=False))
        self.assertEqual((full["data"], full["swept"], full["targets"]),
                         ("teacher:250000:32:10:0.0:4", [32, 64, 128, 256], [4096, 8192]))
        # Named only by --tasks: the default lists are what they were.
        self.assertEqual([t["name"] for t in bench.make_tasks(self.args(tasks=None))], ["synthetic", "digits"])
        self.assertEqual([t["name"] for t in bench.make_tasks(self.args(tasks=None, quick=False))],
                         ["synthetic", "adamw", "digits"])
        msg, _ = self.error(tasks="teacher")
        self.assertIn("teacher_noisy, teacher_lowrank, teacher_adamw", msg)


class IntervalTextTest(unittest.TestCase):
    def test_null_bounds_from_the_fit_tool_print_as_no_interval(self):
        # ladder-extrapolation-fit writes [value, null, null] when the resampling could not vary a fit (the full
        # synthetic task's tradeoff through 2 batches); that printed a traceback before.
        self.assertEqual(bench.iv([221100.0, None, None]), "2.211e+05 (no interval)")
        self.assertEqual(bench.iv([0.5, 0.25, 1.0]), "0.5 [0.25, 1]")
        self.assertEqual(bench.iv([0.991, 0.619, 1.0], ".3f", False), "[0.619, 1.000]")


if __name__ == "__main__":
    unittest.main(verbosity=2)
