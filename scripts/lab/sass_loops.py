#!/usr/bin/env python3
"""The fused kernels' main loops in SASS, here, without a GPU (docs/working-here.md).

ptxas schedules the same CUDA source differently as the code around it changes: in session 9 a
field read outside the loop moved version 8 about 2% against cuDNN, and version 13's loop ran
0.7-1.3% (D=128) and 5-9% (D=64) slower than its parents' with the same main-loop source. This
prints a kernel's innermost loops that hold both HGMMA and MUFU.EX2 (the attention main loops)
with their instruction mix, and compares two kernels' loops op by op (registers ignored).

  scripts/lab/fused_sass.sh /tmp/now.sass              # nvdisasm of fwd_sm90.cu's sm_90a code
  scripts/lab/sass_loops.py /tmp/now.sass KERNEL       # the loops of the kernel whose name holds KERNEL
  scripts/lab/sass_loops.py /tmp/a.sass K1 /tmp/b.sass K2 [--show]   # K1's loops against K2's
  scripts/lab/sass_loops.py --same /tmp/before.sass /tmp/after.sass   # which kernels' SASS changed

Identical SASS (ops and registers, label numbers aside) needs no new measurement; anything else does,
in one process on the GPU: the op order alone does not predict speed (runs 43-47).

KERNEL is a substring of the mangled name, e.g. the template arguments of version 8 at bf16 D=128:
'bfloat16Li128ELi2ELi2ELb1ELb1ELb0ELb1ELNS0_4PathE2ELb0EE' (version 13: ...ELb1EE).
"""
import collections
import difflib
import re
import sys


def read_functions(path):
    """{mangled name: [lines]} of an `nvdisasm -c` listing; exits with a one-line error otherwise."""
    out, cur = {}, None
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"\s*\.section\s+\.text\.(\S+?),", line)
                if m:
                    cur = m.group(1)
                    out[cur] = []
                elif cur is not None:
                    out[cur].append(line.rstrip("\n"))
    except (OSError, UnicodeDecodeError) as e:
        sys.exit(f"sass_loops.py: {path}: cannot read it ({e.strerror if isinstance(e, OSError) else e.reason})")
    if not out:
        sys.exit(f"sass_loops.py: {path}: no kernel in it (not an `nvdisasm -c` listing?)")
    return out


def instructions(lines):
    """[('L', label) | ('I', instruction text)] in order."""
    res = []
    for line in lines:
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            res.append(("L", m.group(1)))
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if m:
            res.append(("I", m.group(1)))
    return res


def opcode(text):
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0]


def main_loops(functions, key):
    """The innermost backward-branch loops holding HGMMA and MUFU.EX2, in code order."""
    names = [n for n in functions if key in n]
    if len(names) != 1:
        sys.exit(f"sass_loops.py: '{key}' matches {len(names)} kernels; give more of the name")
    ins = instructions(functions[names[0]])
    labels = {text: i for i, (kind, text) in enumerate(ins) if kind == "L"}
    loops = []
    for i, (kind, text) in enumerate(ins):
        m = re.search(r"`\((\.L_x_\d+)\)", text) if kind == "I" and "BRA" in text else None
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            body = [t for k, t in ins[labels[m.group(1)]: i + 1] if k == "I"]
            if any("HGMMA" in t for t in body) and any("MUFU.EX2" in t for t in body):
                loops.append((labels[m.group(1)], i, body))
    inner = [a for a in loops if not any(b is not a and b[0] >= a[0] and b[1] <= a[1] for b in loops)]
    return names[0], sorted(inner)


def describe(name, loops):
    print(name)
    for k, (_, _, body) in enumerate(loops):
        mix = collections.Counter(opcode(t) for t in body).most_common(12)
        print(f"  loop {k}: {len(body)} instructions; " + ", ".join(f"{o} {n}" for o, n in mix))


def compare(a, b, show):
    oa, ob = [opcode(t) for t in a], [opcode(t) for t in b]
    sm = difflib.SequenceMatcher(None, oa, ob, autojunk=False)
    changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in sm.get_opcodes() if tag != "equal")
    print(f"    same ops in order: {sm.ratio():.3f}; ops moved or changed: {changed}")
    if show:
        for tag, i1, i2, j1, j2 in sm.get_opcodes():
            if tag != "equal":
                print(f"      {tag} A[{i1}:{i2}] {oa[i1:i2][:8]} B[{j1}:{j2}] {ob[j1:j2][:8]}")


def changed_kernels(before, after):
    """(kernels whose code differs, kernels only in one listing), label numbers and the numbering of
    nvcc's internal helpers (CALL `($__internal_37_$__cuda_sm20_rcp_rn_f32_slowpath)) ignored."""
    def text(lines):
        return [re.sub(r"__internal_\d+_", "__internal_", re.sub(r"\.L_x_\d+", "L", t)).split()  # whitespace-insensitive
                for kind, t in instructions(lines) if kind == "I"]
    differ = sorted(n for n in before if n in after and text(before[n]) != text(after[n]))
    alone = sorted(set(before) ^ set(after))
    return differ, alone


def main(argv):
    if argv[:1] == ["--same"]:
        if len(argv) != 3:
            sys.exit(__doc__)
        before, after = read_functions(argv[1]), read_functions(argv[2])
        differ, alone = changed_kernels(before, after)
        for n in differ:
            print(f"changed: {n}")
        for n in alone:
            print(f"in one listing only: {n}")
        print(f"{len(before)} and {len(after)} kernels; {len(differ)} changed, {len(alone)} in one only")
        return
    show = "--show" in argv
    args = [a for a in argv if a != "--show"]
    if len(args) not in (2, 4):
        sys.exit(__doc__)
    fa = read_functions(args[0])
    na, la = main_loops(fa, args[1])
    describe(na, la)
    if len(args) == 4:
        fb = fa if args[2] == args[0] else read_functions(args[2])
        nb, lb = main_loops(fb, args[3])
        describe(nb, lb)
        for i, (_, _, a) in enumerate(la):
            for j, (_, _, b) in enumerate(lb):
                print(f"  A loop {i} against B loop {j}:")
                compare(a, b, show)


if __name__ == "__main__":
    main(sys.argv[1:])
