#!/usr/bin/python3
"""The tree's size rules (docs/ARCHITECTURE.md, "Rooms"): no source file over 600 lines outside tests/ and
generated or data files, no test file over 700 lines, and no function over 80 lines in the processes' folders
(server/, worker/, cli/, trainer/). Prints each breach as FILE:LINE: what; exits 1 when there is one.

Functions are found by a brace scanner over the text with comments, strings and character literals blanked: a
'{' whose scope is a namespace, a class or the file, and whose text before it ends like a function head (a ')',
possibly followed by const, override, noexcept, a trailing return type or a constructor's initializer list),
opens a function; it ends at the matching '}'. Lambdas count toward the function that holds them. A function's
length is its lines of code (blank lines, comments and the inside of literals left out), so a function that returns
a usage text or SQL is measured by its code.

usage: scripts/check_structure.py [ROOT] [--list N]   (--list N: every function over N lines, no verdict)
"""
import os
import re
import subprocess
import sys

FILE_LIMIT, TEST_FILE_LIMIT, FUNCTION_LIMIT = 600, 700, 80
FUNCTION_DIRS = ("server/", "worker/", "cli/", "trainer/")
# Data, not code: tables of numbers.
DATA_FILES = {"search/samplers/sobol_directions.cc"}
SOURCE_EXT = (".cc", ".h", ".py", ".js")


def blank(text):
    """Comments, string and char literals replaced by spaces (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c); i += 1; continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
                out.append(" "); i += 1; continue  # a digit separator: 1'000
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i)); i = j
        else:
            out.append(c); i += 1
    return "".join(out)


HEAD_END = re.compile(r"\)\s*(const|override|final|noexcept|mutable|&|&&|\s)*(->\s*[\w:<>,\s\*&]+)?\s*$")


def functions(text):
    """(name, first line, last line) of every function body opened at namespace, class or file scope."""
    src = blank(text)
    stack = []  # scope kinds: 'ns', 'class', 'fn', 'block'
    found, last_stmt = [], 0  # last_stmt: index after the previous ';', '{' or '}'
    line_of = lambda k: src.count("\n", 0, k) + 1
    for k, c in enumerate(src):
        if c == "{":
            head = src[last_stmt:k]
            outer = [s for s in stack if s in ("fn", "block")]
            kind = "block"
            if not outer:
                h = head.strip()
                if re.search(r"\bnamespace\b[\w:\s]*$", h) or re.search(r'extern\s*$', h):
                    kind = "ns"
                elif re.search(r"\b(class|struct|union|enum)\b[^()]*$", h) and not HEAD_END.search(h):
                    kind = "class"
                elif HEAD_END.search(h) or re.search(r"\)\s*:\s*[\w:]+\s*[({]", h) or re.search(r"\)\s*:", h):
                    kind = "fn"
                    m = re.search(r"([~\w:]+(?:<[^()]*>)?)\s*\(", h)
                    found.append([m.group(1) if m else "?", line_of(last_stmt + len(head) - len(head.lstrip())), None])
            stack.append(kind)
            last_stmt = k + 1
        elif c == "}":
            if stack:
                kind = stack.pop()
                if kind == "fn" and not any(s == "fn" for s in stack):
                    found[-1][2] = line_of(k)
            last_stmt = k + 1
        elif c == ";" and not any(s in ("fn", "block") for s in stack):
            last_stmt = k + 1
        elif c == ";":
            last_stmt = k + 1
    src_lines = src.split("\n")
    # Lines of code: a function that returns a long text (a usage string, SQL) is counted by its code, not its text.
    return [(n, a, b, sum(1 for l in src_lines[a - 1:b] if l.strip())) for n, a, b in found if b]


def tracked(root):
    """The tree's source files: git's list, or (a tree that is not a checkout) every file outside build folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        files = out.split("\n")
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build", "node_modules"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return sorted(f for f in files if f.endswith(SOURCE_EXT))


def main():
    args = sys.argv[1:]
    list_over = None
    if "--list" in args:
        i = args.index("--list"); list_over = int(args[i + 1]); del args[i:i + 2]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    breaches = []
    for f in tracked(root):
        if "/vendor/" in f or f in DATA_FILES:
            continue
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        lines = text.count("\n")
        is_test = f.startswith("tests/")
        limit = TEST_FILE_LIMIT if is_test else FILE_LIMIT
        if list_over is None and lines > limit:
            breaches.append(f"{f}:1: {lines} lines (the limit is {limit})")
        if f.endswith((".cc", ".h")) and (list_over is not None or f.startswith(FUNCTION_DIRS)):
            for name, a, b, n in functions(text):
                if list_over is not None and n > list_over:
                    print(f"{f}:{a}: {name}: {n} lines")
                elif list_over is None and n > FUNCTION_LIMIT:
                    breaches.append(f"{f}:{a}: function {name} is {n} lines (the limit is {FUNCTION_LIMIT})")
    if list_over is not None:
        return 0
    for b in breaches:
        print(b)
    print(f"check_structure: {len(breaches)} breach(es)")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
