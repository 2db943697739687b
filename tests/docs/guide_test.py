#!/usr/bin/python3
"""The user guide (docs/guide/) against the program, so that it cannot drift from it.

commands  Runs every command the guide (and the README's tour) shows as runnable, in the order of each page,
          against the built binaries:
          a ```console block's `$ ` lines (a line ending in `\\` goes on with the next one). Each page runs in a
          temp dir of its own (with `data` and `examples` linked to the source tree's), with BUILD/bin first on
          PATH and a coordinator of its own that this test starts there (`ladder up` on 127.0.0.1, any free port,
          no dashboard) and stops at the end; LADDER_SERVER names it, and ./ladder.db.token is its token, so the
          guide's commands need no --server. A fenced block right after `<!-- file: NAME -->` is written to NAME
          in that dir first (a spec the commands then use). A command must exit 0, or the code its line ends
          with as `# exit N`; anything else fails the test with the page's file and line, the command and the
          end of its output.
fields    Every field the spec reader accepts is in the guide's spec reference (docs/guide/spec.md), and the
          reference lists no field it refuses. The accepted fields are asked of the program itself: for each
          mapping the reader reads, `ladder search validate` is given a spec with an unknown field there, and its
          error lists the allowed ones ("unknown field 'x'; allowed: 'a', 'b'"). So that a mapping added to the
          reader is not missed, the reader's ReadMapping calls are counted per file (search/**/*.cc) against the
          probes below. The reference's rows are its table rows whose first cell is a `field` in backticks.
          A field that takes one of a few words (objective.mode, sampler.type, ...) is given a wrong one, and each
          word its error lists must be in the field's row as `word`. Also: every subcommand `ladder --help` (and
          each command's --help) lists has a heading in docs/guide/cli.md, and every relative link of the guide and
          the README names a file (and a heading) that exists.

usage: guide_test.py commands|fields BUILD_DIR SOURCE_DIR [PAGE.md ...]
       (GUIDE_TEST_VERBOSE=1: print each command's output, to write it into the guide)
"""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FILE_MARK = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")
EXIT_MARK = re.compile(r"#\s*exit\s+(\d+)\s*$")
COMMAND_TIMEOUT_S = 240


def guide_pages(src, names):
    """The README's tour, then the guide's pages (names: only these, as docs/guide/NAME or README.md)."""
    d = os.path.join(src, "docs", "guide")
    pages = [os.path.join(src, "README.md")] + sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".md"))
    return [p for p in pages if not names or os.path.basename(p) in names or os.path.relpath(p, src) in names]


def steps_of(path):
    """A page's steps in order: ("file", line, name, text) and ("run", line, command, expected_exit)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    steps, i, pending_file = [], 0, None
    while i < len(lines):
        line = lines[i]
        m = FILE_MARK.match(line)
        if m:
            pending_file = m.group(1)
            i += 1
            continue
        if line.startswith("```"):
            tag = line[3:].strip()
            start = i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append((i + 1, lines[i]))
                i += 1
            if pending_file is not None:
                steps.append(("file", start + 1, pending_file, "".join(t + "\n" for _, t in body)))
            elif tag == "console":
                cmd, first = None, 0
                for n, t in body:
                    if cmd is None and t.startswith("$ "):
                        cmd, first = t[2:], n
                    elif cmd is not None:
                        cmd = cmd[:-1] + "\n" + t  # the line before ended with a backslash
                    else:
                        continue  # output shown in the guide, not checked
                    if not cmd.endswith("\\"):
                        m = EXIT_MARK.search(cmd)
                        steps.append(("run", first, cmd, int(m.group(1)) if m else 0))
                        cmd = None
                if cmd is not None:
                    steps.append(("run", first, cmd, 0))
            pending_file = None
        elif line.strip():
            pending_file = None if not line.startswith("<!--") else pending_file
        i += 1
    return steps


def die_with_parent():
    """In the coordinator's child, before exec: SIGTERM when this test dies (a ctest timeout kills it)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Coordinator:
    """`ladder up` in dir on 127.0.0.1 (a free port), until stop()."""

    def __init__(self, bin_dir, cwd, env):
        self.log = open(os.path.join(cwd, "ladder-up.log"), "w")
        self.proc = subprocess.Popen([os.path.join(bin_dir, "ladder"), "up", "--listen", "127.0.0.1:0", "--http", "",
                                      "--slots", "4", "--db", "ladder.db"],
                                     cwd=cwd, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=die_with_parent)
        # ladder up writes DB.server once its worker registered: the coordinator serves from then on.
        server_file = os.path.join(cwd, "ladder.db.server")
        deadline = time.monotonic() + 120
        while not os.path.exists(server_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("ladder up did not start:\n" + open(self.log.name).read())
            time.sleep(0.05)
        self.address = open(server_file).read().strip()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def run_page(page, build, src):
    """Runs one page's steps; returns its failures as text (empty when it passed)."""
    steps = steps_of(page)
    rel = os.path.relpath(page, src)
    if not any(s[0] == "run" for s in steps):
        return []
    work = tempfile.mkdtemp(prefix="ladder-guide-")
    for name in ("data", "examples"):
        os.symlink(os.path.join(src, name), os.path.join(work, name))
    bin_dir = os.path.join(build, "bin")
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
    for k in ("LADDER_SERVER", "LADDER_TOKEN", "LADDER_TLS_CA", "LADDER_TLS_CERT", "LADDER_TLS_KEY"):
        env.pop(k, None)
    failures = []
    coord = None
    try:
        coord = Coordinator(bin_dir, work, env)
        env["LADDER_SERVER"] = coord.address
        for kind, line, what, arg in steps:
            if kind == "file":
                with open(os.path.join(work, what), "w") as f:
                    f.write(arg)
                continue
            t0 = time.monotonic()
            try:
                p = subprocess.run(["/bin/bash", "-c", what], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=COMMAND_TIMEOUT_S)
                rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired as e:
                rc, out = "a timeout", (e.stdout or b"").decode("utf-8", "replace")
            print("%s:%d: $ %s  -> %s (%.1f s)" % (rel, line, what.split("\n")[0], rc, time.monotonic() - t0))
            if os.environ.get("GUIDE_TEST_VERBOSE"):
                print(out)
            if rc != arg:
                tail = "\n".join(out.rstrip().split("\n")[-15:])
                failures.append("%s:%d: `%s` exited %s, expected %d; its output ended:\n%s" %
                                (rel, line, what, rc, arg, tail))
                break  # the page's later commands build on this one
    except RuntimeError as e:
        failures.append("%s: %s" % (rel, e))
    finally:
        if coord is not None:
            coord.stop()
        if failures and coord is not None:
            failures[-1] += "\nthe coordinator's log ended:\n" + \
                "\n".join(open(coord.log.name).read().rstrip().split("\n")[-10:])
        shutil.rmtree(work, ignore_errors=True)
    return failures


# The mappings the spec reader reads, each probed with an unknown field: (where the rows' paths start, the spec
# with `ZZ: 1` placed in that mapping). The counts are of ReadMapping calls per source file; see the docstring.
BASE = """name: probe
objective: {metric: loss, mode: min%s}
budget: {max_trials: 1%s}
command: [probe]
%s"""
SPACE = "space:\n  x: {type: float, low: 0, high: 1}\n"
PROBES = [
    ("", BASE % ("", "", SPACE) + "ZZ: 1\n"),
    ("objective.", BASE % (", ZZ: 1", "", SPACE)),
    ("budget.", BASE % ("", ", ZZ: 1", SPACE)),
    ("trial.", BASE % ("", "", SPACE) + "trial: {ZZ: 1}\n"),
    ("resources.", BASE % ("", "", SPACE) + "resources: {ZZ: 1}\n"),
    ("stage[].", BASE % ("", "", SPACE) + "stage: [{from: /a, to: /b, ZZ: 1}]\n"),
    ("warm_start.", BASE % ("", "", SPACE) + "warm_start: {search: 1, ZZ: 1}\n"),
    ("container.", BASE % ("", "", SPACE) + "container: {runtime: podman, image: x, ZZ: 1}\n"),
    ("objectives[].", "name: probe\nobjectives: [{metric: a, mode: min, ZZ: 1}, {metric: b, mode: min}]\n"
                      "budget: {max_trials: 1}\ncommand: [probe]\n" + SPACE),
    ("constraints[].", BASE % ("", "", SPACE) + "constraints: [{metric: m, max: 1, ZZ: 1}]\n"),
    ("ensemble.", BASE % ("", "", SPACE) + "ensemble: {predictions_file: p, ZZ: 1}\n"),
    ("scales.", BASE % ("", "", "") + "scales: {global_batch: [1, 2], lr: {low: 0.1, high: 1}, ZZ: 1}\n"),
    ("scales.lr.", BASE % ("", "", "") + "scales: {global_batch: [1, 2], lr: {low: 0.1, high: 1, ZZ: 1}}\n"),
    ("scheduler.", BASE % ("", "", SPACE) + "scheduler: {type: median, ZZ: 1}\n"),
    ("sampler.", BASE % ("", "", SPACE) + "sampler: {type: random, ZZ: 1}\n"),
    ("space.<name>.", BASE % ("", "", "space:\n  x: {low: 0, high: 1, ZZ: 1}\n")),
    ("space.<name>.condition.", BASE % ("", "", "space:\n  c: {type: categorical, values: [a, b]}\n"
                                        "  x: {type: float, low: 0, high: 1, condition: {param: c, in: [a], ZZ: 1}}\n")),
]
READ_MAPPING_CALLS = {
    "search/spec/spec_reader.cc": 5,  # top, objective, budget, trial, resources
    "search/spec/stage_section.cc": 1,
    "search/spec/warm_start_section.cc": 1,
    "search/spec/container_section.cc": 1,
    "search/spec/objectives_section.cc": 1,
    "search/spec/constraints_section.cc": 1,
    "search/ensemble/ensemble_section.cc": 1,
    "search/scaling/scales_section.cc": 2,  # scales, scales.lr
    "search/stopping/stopping_section.cc": 1,
    "search/samplers/sampler_section.cc": 1,
    "search/core/space_section.cc": 2,  # a parameter (the type's fields; no type: all), its condition
}
UNKNOWN = "zz_no_such_field"
# The fields that take one of a few words, each given a wrong one: the error lists the words ("expected 'a', 'b' or
# 'c', got ..."), and each must be in the field's row of the reference as `word`.
BAD = "zz_no_such_value"
ENUMS = [
    ("objective.mode", BASE.replace("mode: min", "mode: ZZ") % ("", "", SPACE)),
    ("objective.scope", BASE % (", scope: ZZ", "", SPACE)),
    ("sampler.type", BASE % ("", "", SPACE) + "sampler: {type: ZZ}\n"),
    ("resources.launcher", BASE % ("", "", SPACE) + "resources: {launcher: ZZ}\n"),
    ("container.runtime", BASE % ("", "", SPACE) + "container: {runtime: ZZ, image: /i}\n"),
    ("stage[].shard", BASE % ("", "", SPACE) + "stage: [{from: /a, to: /b, shard: ZZ}]\n"),
    ("scheduler.type", BASE % ("", "", SPACE) + "scheduler: {type: ZZ}\n"),
    ("ensemble.metric", BASE % ("", "", SPACE) + "ensemble: {predictions_file: p, metric: ZZ}\n"),
    ("scales.follow", BASE % ("", "", "") + "scales: {global_batch: [1, 2], lr: {low: 0.1, high: 1}, follow: ZZ}\n"),
    ("scales.probes", BASE % ("", "", "") + "scales: {global_batch: [1, 2], lr: {low: 0.1, high: 1}, probes: ZZ}\n"),
    ("space.<name>.type", BASE % ("", "", "space:\n  x: {type: ZZ, low: 0, high: 1}\n")),
]


def validate(build, text):
    """`ladder search validate` of a spec text: (exit code, output)."""
    with tempfile.TemporaryDirectory(prefix="ladder-guide-fields-") as d:
        spec = os.path.join(d, "probe.yaml")
        with open(spec, "w") as f:
            f.write(text)
        p = subprocess.run([os.path.join(build, "bin", "ladder"), "search", "validate", "--no-command-check", spec],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        return p.returncode, p.stdout.decode("utf-8", "replace")


def accepted_fields(build, problems):
    fields = set()
    for prefix, text in PROBES:
        rc, out = validate(build, text.replace("ZZ", UNKNOWN))
        m = re.search(r"unknown field '" + UNKNOWN + r"'; allowed: (.*)", out)
        if rc != 2 or not m:
            problems.append("the probe of %s... did not list the allowed fields (exit %d):\n%s\n%s" %
                            (prefix or "the top level", rc, text, out))
            continue
        fields.update(prefix + name for name in re.findall(r"'([^']+)'", m.group(1)))
    return fields


def check_enums(build, src, rows, problems):
    """Every word an enum field accepts is in its row of the reference."""
    text = open(os.path.join(src, "docs", "guide", "spec.md"), encoding="utf-8").read().split("\n")
    for field, spec in ENUMS:
        rc, out = validate(build, spec.replace("ZZ", BAD))
        m = re.search(r"expected (.*), got '" + BAD + "'", out)
        if rc != 2 or not m:
            problems.append("the probe of %s's words did not list them (exit %d):\n%s" % (field, rc, out))
            continue
        row = text[rows[field] - 1] if field in rows else ""
        for word in re.findall(r"'([^']+)'", m.group(1)):
            if "`%s`" % word not in row:
                problems.append("docs/guide/spec.md:%d: the row of `%s` does not name its value `%s`" %
                                (rows.get(field, 0), field, word))


def count_read_mapping(src, problems):
    found = {}
    for root, _, files in os.walk(os.path.join(src, "search")):
        for name in files:
            if not name.endswith(".cc") or name == "yaml_reader.cc":
                continue
            path = os.path.join(root, name)
            n = len(re.findall(r"\bReadMapping\(", open(path, encoding="utf-8").read()))
            if n:
                found[os.path.relpath(path, src)] = n
    if found != READ_MAPPING_CALLS:
        problems.append("the spec reader's mappings changed: ReadMapping calls per file are %s, the probes of "
                        "tests/docs/guide_test.py cover %s; probe the new mapping there and document its fields in "
                        "docs/guide/spec.md" % (sorted(found.items()), sorted(READ_MAPPING_CALLS.items())))


def documented_fields(src):
    rows = {}
    path = os.path.join(src, "docs", "guide", "spec.md")
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if m:
            rows.setdefault(m.group(1), n)
    return rows


def subcommands(build, words):
    """The subcommands `ladder WORDS --help` lists."""
    out = subprocess.run([os.path.join(build, "bin", "ladder")] + words + ["--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=60).stdout.decode()
    m = re.search(r"^subcommands:$", out, re.M | re.I)
    part = out[m.end():] if m else ""
    return [m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\s", part, re.M)]


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def check_links(src, problems):
    """Every relative link of the guide and the README names a file that exists, and a #heading that it has."""
    for page in guide_pages(src, []):
        text = open(page, encoding="utf-8").read()
        for m in re.finditer(r"\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            line = text.count("\n", 0, m.start()) + 1
            if not os.path.exists(full):
                problems.append("%s:%d: the link %s names no file" % (os.path.relpath(page, src), line, target))
            elif anchor and full.endswith(".md"):
                heads = [slug(h) for h in re.findall(r"^#+ (.*)$", open(full, encoding="utf-8").read(), re.M)]
                if anchor not in heads:
                    problems.append("%s:%d: the link %s names no heading of %s" %
                                    (os.path.relpath(page, src), line, target, os.path.relpath(full, src)))


def check_fields(build, src):
    problems = []
    count_read_mapping(src, problems)
    accepted = accepted_fields(build, problems)
    rows = documented_fields(src)
    for f in sorted(accepted - set(rows)):
        problems.append("docs/guide/spec.md: the spec field `%s` is accepted by the reader but not in the guide" % f)
    if accepted:
        for f in sorted(set(rows) - accepted):
            problems.append("docs/guide/spec.md:%d: `%s` is in the guide but the reader refuses it" % (rows[f], f))
    check_enums(build, src, rows, problems)
    check_links(src, problems)
    cli = open(os.path.join(src, "docs", "guide", "cli.md"), encoding="utf-8").read()
    commands = 0
    for top in subcommands(build, []):
        for words in [[top]] + [[top, sub] for sub in subcommands(build, [top])]:
            commands += 1
            if not re.search(r"^#+ .*`ladder %s\b" % re.escape(" ".join(words)), cli, re.M):
                problems.append("docs/guide/cli.md: no heading names `ladder %s` (a command ladder --help lists)" %
                                " ".join(words))
    print("%d spec fields accepted, %d in the guide's reference; %d commands" % (len(accepted), len(rows), commands))
    return problems


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("commands", "fields"):
        print(__doc__)
        return 2
    mode, build, src = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if mode == "fields":
        problems = check_fields(build, src)
    else:
        problems = []
        for page in guide_pages(src, sys.argv[4:]):
            problems += run_page(page, build, src)
    for p in problems:
        print("FAIL: " + p)
    print("PASS" if not problems else "%d problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
