#!/usr/bin/env python3
"""Kernel-by-kernel comparison of attnprof bench and PyTorch peers, one forward each.

Both JSON files carry the recorded kernels of one forward in launch order
(`kernel_names`, `kernel_us`). For each pair (ours, PyTorch's) this prints the two
sequences side by side with the duration ratio, so a gap in the end-to-end ratio can
be attributed to the kernels that make it.

  scripts/gpu/kernel_compare.py BENCH_JSON PEERS_JSON [--pair math=sdpa-math ...]
"""
import argparse
import json
import re
import sys


def short(name, width=46):
    """A readable kernel name: template arguments and parameter lists dropped."""
    n = re.sub(r"\(anonymous namespace\)::", "", name)
    n = re.sub(r"\(.*", "", n)
    depth, out = 0, []
    for ch in n:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    n = "".join(out).replace("void ", "").strip()
    n = re.sub(r"^(at::native::|attnprof::attention::cuda::)(\(anonymous namespace\)::)?", "", n)
    # Keep what the template said about the functor, which names the operation.
    func = re.search(r"(ToDenseScaled|ToStrided|Convert|Fill|Tril|WhereScalars|AddBroadcast|EqNegInf|WhereRowElse|"
                     r"Scale|MaskedFillNegInf)", name)
    if func and func.group(1) not in n:
        n += f"<{func.group(1)}>"
    return n if len(n) <= width else n[: width - 1] + "~"


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as err:
        sys.exit(f"kernel_compare: {path}: {err}")
    return {r["name"]: r for r in data.get("impls", []) if "kernel_names" in r}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench_json")
    ap.add_argument("peers_json")
    ap.add_argument("--pair", action="append", default=[], help="OURS=THEIRS (default math=sdpa-math, manual=torch-manual)")
    a = ap.parse_args()
    ours, theirs = load(a.bench_json), load(a.peers_json)
    pairs = [p.split("=", 1) for p in a.pair] or [["math", "sdpa-math"], ["manual", "torch-manual"]]
    for mine, peer in pairs:
        if mine not in ours or peer not in theirs:
            print(f"{mine} vs {peer}: not in both files")
            continue
        o, t = ours[mine], theirs[peer]
        on, ou, tn, tu = o["kernel_names"], o["kernel_us"], t["kernel_names"], t["kernel_us"]
        print(f"\n{mine} ({len(on)} kernels, {sum(ou):.1f} us) vs {peer} ({len(tn)} kernels, {sum(tu):.1f} us), one forward:")
        print(f"{'#':>2} {'attnprof':<46} {'us':>8}   {'PyTorch':<46} {'us':>8} {'ours/theirs':>11}")
        for i in range(max(len(on), len(tn))):
            l = (short(on[i]), f"{ou[i]:8.1f}") if i < len(on) else ("", "")
            r = (short(tn[i]), f"{tu[i]:8.1f}") if i < len(tn) else ("", "")
            ratio = f"{ou[i] / tu[i]:11.2f}" if i < len(on) and i < len(tn) and tu[i] > 0 else ""
            print(f"{i:>2} {l[0]:<46} {l[1]:>8}   {r[0]:<46} {r[1]:>8} {ratio}")
        print(f"   {'total':<46} {sum(ou):8.1f}   {'':<46} {sum(tu):8.1f} {sum(ou) / max(sum(tu), 1e-9):11.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
