#!/usr/bin/env python3
"""The house drawn from the includes: every `#include "dir/..."` in src/ points down.

The layers are ARCHITECTURE.md's: common at the bottom, then trace, analysis, report and
cli at the top; capture writes traces, attention needs only common, and bench runs
attention, counts kernels with the recorder (capture) and classifies them with the
analysis. A file may include its own folder's headers and those of the folders
LAYERS lists for it; a folder missing from LAYERS is an error too (say where it goes).
Also fails on an include cycle between headers, which #pragma once hides.

  tests/include_layers_test.py SRC          check the tree at SRC (CTest: src/)
  tests/include_layers_test.py --self-test  check that a back arrow and a cycle are caught
"""

import os
import re
import sys
import tempfile

# What each folder of src/ may include besides itself (keep in step with ARCHITECTURE.md).
LAYERS = {
    "common": set(),
    "trace": {"common"},
    "analysis": {"trace", "common"},
    "report": {"analysis", "trace", "common"},
    "capture": {"trace", "common"},
    "attention": {"common"},
    "bench": {"attention", "analysis", "capture", "trace", "common"},
    "cli": {"report", "bench", "capture", "attention", "analysis", "trace", "common"},
}

SOURCES = (".h", ".hpp", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def includes(root):
    """(file, line, included text, resolved file or None) for every quoted include under root."""
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                # "dir/x.h" from src/, else "x.h" beside the file.
                resolved = None
                for base in (root, dirpath):
                    candidate = os.path.normpath(os.path.join(base, inc))
                    if os.path.isfile(candidate):
                        resolved = candidate
                        break
                yield os.path.relpath(path, root), line, inc, resolved and os.path.relpath(resolved, root)


def folder(rel):
    return rel.split(os.sep)[0] if os.sep in rel else ""


def find_cycle(graph):
    """One cycle in graph (node -> set of nodes) as a list of nodes, or None."""
    state = {}  # 1: on the path, 2: done
    path = []

    def visit(n):
        state[n] = 1
        path.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m) :] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def check(root):
    """The problems of the tree at root, one line each."""
    problems = []
    folders = {}  # folder -> folders it includes (others only)
    headers = {}  # file -> files it includes
    for rel, line, inc, resolved in includes(root):
        here = folder(rel)
        if here == "":
            continue
        if here not in LAYERS:
            problems.append(f"src/{rel}: folder src/{here} is not in LAYERS ({__file__}): add it where it sits")
            continue
        if resolved is None:
            continue  # not one of ours (a library's header)
        there = folder(resolved)
        headers.setdefault(rel, set()).add(resolved)
        if there == here:
            continue
        folders.setdefault(here, set()).add(there)
        if there not in LAYERS[here]:
            allowed = ", ".join(sorted(LAYERS[here] | {here}))
            problems.append(
                f'src/{rel}:{line}: #include "{inc}": {here} may include only {allowed} '
                f"(ARCHITECTURE.md's layers; move what it needs down, e.g. to src/common)"
            )
    cycle = find_cycle(folders)
    if cycle:
        problems.append("folders include each other: " + " -> ".join(cycle))
    cycle = find_cycle(headers)
    if cycle:
        problems.append("headers include each other: " + " -> ".join("src/" + c for c in cycle))
    return problems


def self_test():
    """A tree with one back arrow and one header cycle must fail with both; a clean one must pass."""
    with tempfile.TemporaryDirectory() as root:

        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)

        write("common/a.h", "#pragma once\n")
        write("analysis/b.h", '#pragma once\n#include "common/a.h"\n#include <vector>\n')
        write("report/c.h", '#pragma once\n#include "analysis/b.h"\n#include "d.h"\n')
        write("report/d.h", "#pragma once\n")
        if check(root):
            return f"a clean tree fails: {check(root)}"
        write("analysis/rules/e.cpp", '#include "report/c.h"\n')  # the back arrow
        write("report/d.h", '#pragma once\n#include "report/c.h"\n')  # c.h <-> d.h
        problems = check(root)
        wanted = [
            'analysis/rules/e.cpp:1: #include "report/c.h"',
            "folders include each other: analysis -> report -> analysis",
            "headers include each other:",
        ]
        missing = [w for w in wanted if not any(w in p for p in problems)]
        if missing:
            return f"not caught: {missing}; found: {problems}"
        return None


def main():
    if sys.argv[1:] == ["--self-test"]:
        error = self_test()
        if error:
            print(f"include_layers_test --self-test: {error}")
            return 1
        print("include_layers_test --self-test: a back arrow and a cycle are caught")
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) with the layers of ARCHITECTURE.md")
        return 1
    print("every include in src/ points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
