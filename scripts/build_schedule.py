#!/usr/bin/python3
"""A build's CPU time and its wall time on an idle machine, estimated from measured steps: sums the CPU seconds of
the steps that the targets need, finds the critical path, and replays ninja -jN on the build's graph (ninja 1.11
starts the ready step that comes first in build.ninja) with each step taking its CPU seconds. Step times: the log
of scripts/cpu_time_launcher.sh (compiles and links; the last entry per output); other steps (protoc, archives,
generated files): their .ninja_log duration.

usage: scripts/build_schedule.py BUILD_DIR CPU_LOG [TARGET...] [--jobs N]   (default: ladder ladder-train, -j2)
"""
import collections
import heapq
import os
import sys


def read_edges(build_dir, name, edges):
    """(rule, outputs, inputs) of every build statement, includes followed; implicit and order-only inputs count."""
    text = open(os.path.join(build_dir, name)).read().replace("$\n", " ")
    for line in text.split("\n"):
        if line.startswith(("include ", "subninja ")):
            read_edges(build_dir, line.split(None, 1)[1].strip(), edges)
        elif line.startswith("build "):
            body = line[6:].replace("$ ", "\0").replace("$:", "\1")
            outs, rest = body.split(":", 1)
            rule, *ins = rest.split()
            fix = lambda s: s.replace("\0", " ").replace("\1", ":")
            edges.append((rule, [fix(o) for o in outs.split() if o != "|"],
                          [fix(i) for i in ins if i not in ("|", "||", "|@")]))
    return edges


def main():
    args = sys.argv[1:]
    jobs = 2
    if "--jobs" in args:
        k = args.index("--jobs"); jobs = int(args[k + 1]); del args[k:k + 2]
    if len(args) < 2:
        print(__doc__)
        return 2
    build_dir, cpu_log, targets = args[0], args[1], args[2:] or ["ladder", "ladder-train"]
    edges = read_edges(build_dir, "build.ninja", [])
    producer = {o: i for i, (_, outs, _) in enumerate(edges) for o in outs}
    cpu, wall = {}, {}
    for line in open(cpu_log):
        f = line.split(None, 3)
        if len(f) == 4:
            cpu[f[3].strip()] = float(f[0]) + float(f[1])
    for line in open(os.path.join(build_dir, ".ninja_log")):
        if not line.startswith("#"):
            start, end, _, out, _ = line.rstrip("\n").split("\t")
            wall[out] = (int(end) - int(start)) / 1000.0

    def seconds(i):
        rule, outs, _ = edges[i]
        if rule == "phony":
            return 0.0
        return next((cpu[o] for o in outs if o in cpu), next((wall[o] for o in outs if o in wall), 0.0))

    need, stack = set(), [producer[t] for t in targets]
    while stack:
        i = stack.pop()
        if i not in need:
            need.add(i)
            stack += [producer[x] for x in edges[i][2] if x in producer]
    deps = {i: {producer[x] for x in edges[i][2] if x in producer} for i in need}
    users = collections.defaultdict(list)
    for i in need:
        for d in deps[i]:
            users[d].append(i)

    # Critical path: each step's earliest end with unlimited jobs.
    left = {i: len(deps[i]) for i in need}
    order, queue = [], [i for i in need if not left[i]]
    while queue:
        i = queue.pop(); order.append(i)
        for u in users[i]:
            left[u] -= 1
            if not left[u]:
                queue.append(u)
    end, via = {}, {}
    for i in order:
        via[i] = max(deps[i], key=end.get) if deps[i] else None
        end[i] = (end[via[i]] if via[i] is not None else 0.0) + seconds(i)
    last = max(need, key=end.get)

    # ninja -jN: the ready step first in build.ninja starts whenever a job is free.
    left = {i: len(deps[i]) for i in need}
    ready = [i for i in need if not left[i]]
    heapq.heapify(ready)
    running, now = [], 0.0

    def done(i):
        for u in users[i]:
            left[u] -= 1
            if not left[u]:
                heapq.heappush(ready, u)
    while ready or running:
        while ready and (seconds(ready[0]) == 0.0 or len(running) < jobs):
            i = heapq.heappop(ready)
            if seconds(i) == 0.0:
                done(i)
            else:
                heapq.heappush(running, (now + seconds(i), i))
        if running:
            now, i = heapq.heappop(running)
            done(i)

    steps = [i for i in need if edges[i][0] != "phony"]
    print(f"{len(steps)} steps, {sum(map(seconds, steps)):.0f} s of CPU summed; critical path {end[last]:.0f} s; "
          f"ninja -j{jobs} replayed: {now:.0f} s")
    print("critical path, last step first:")
    i = last
    while i is not None:
        if seconds(i) >= 0.5:
            print(f"  {seconds(i):7.1f} s  ends at {end[i]:6.1f} s  {edges[i][1][0]}")
        i = via[i]
    print("heaviest steps:")
    for i in sorted(steps, key=seconds, reverse=True)[:15]:
        print(f"  {seconds(i):7.1f} s  {edges[i][1][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
