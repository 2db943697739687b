#!/usr/bin/python3
"""The unity build's one rule (LADDER_UNITY_BUILD, docs/DEVELOPERS.md): the files that CMake compiles together in
batches (BUILD/**/Unity/unity_*.cxx, one folder per target) must not each define a file-local name of their own
— a name at the top of an anonymous namespace, or `static` at namespace scope — under the same name, nor open a
namespace with `using namespace` at namespace scope. Two such definitions with the same signature fail to
compile; with different signatures they compile, and a call in one file may silently pick the other file's
helper. Checked over a whole target, not per batch, since batches move as files are added. Prints each clash as
FILE:LINE: what; exits 1 when there is one.

usage: scripts/check_unity_names.py BUILD_DIR
"""
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_structure import blank  # noqa: E402

DECL = re.compile(r"^\s*(?:(?:static|inline|constexpr|const|extern|template\s*<[^>]*>)\s+)*"
                  r"(?:(?:struct|class|enum(?:\s+class)?)\s+(\w+)|using\s+(\w+)\s*="
                  r"|[\w:<>,\*&\s]+?[\s\*&](\w+)\s*[\(=\{;\[])")
NOT_A_DEFINITION = re.compile(r"\s*(namespace|return|using\s+namespace)\b")


def file_local_names(path):
    """(name, line) of each name that the file defines at the top of an anonymous namespace or as `static` at
    namespace scope; and the lines of its `using namespace` at namespace scope."""
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    names, usings = [], []
    scopes = []  # per open brace: "anon", "ns" or "other"
    for n, line in enumerate(text.split("\n"), 1):
        at_ns = all(s in ("anon", "ns") for s in scopes)
        in_anon = bool(scopes) and scopes[-1] == "anon" and at_ns
        if at_ns and re.match(r"\s*using\s+namespace\b", line):
            usings.append(n)
        if at_ns and (in_anon or re.match(r"\s*static\s", line)) and not NOT_A_DEFINITION.match(line):
            m = DECL.match(line)
            if m:
                names.append((m.group(1) or m.group(2) or m.group(3), n))
        for m in re.finditer(r"[{}]", line):
            if m.group() == "}":
                if scopes:
                    scopes.pop()
                continue
            head = line[:m.start()]
            if re.search(r"\bnamespace\s*$", head):
                scopes.append("anon")
            elif re.search(r"\bnamespace\s+[\w:]+\s*$", head):
                scopes.append("ns")
            else:
                scopes.append("other")
    return names, usings


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    targets = collections.defaultdict(set)
    for unity in glob.glob(os.path.join(sys.argv[1], "**", "Unity", "unity_*.cxx"), recursive=True):
        for inc in re.findall(r'^#include "([^"]+)"', open(unity).read(), re.M):
            targets[os.path.dirname(unity)].add(inc)
    clashes = []
    for target, files in sorted(targets.items()):
        where = collections.defaultdict(list)
        for f in sorted(files):
            if not os.path.exists(f):  # a generated source not generated yet (the build makes it)
                continue
            names, usings = file_local_names(f)
            clashes += [f"{f}:{n}: `using namespace` at namespace scope in a unity batch" for n in usings]
            for name, n in names:
                where[name].append(f"{f}:{n}")
        for name, places in sorted(where.items()):
            if len({p.rsplit(":", 1)[0] for p in places}) > 1:
                clashes.append(f"{places[0]}: `{name}` is file-local in several files of one unity target: " +
                               ", ".join(places[1:]))
    for c in clashes:
        print(c)
    print(f"check_unity_names: {len(targets)} target(s), {len(clashes)} clash(es)")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
