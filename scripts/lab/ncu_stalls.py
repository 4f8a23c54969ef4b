#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's per-instruction warp-state sampling.

On the GPU machine (from a carried build; --clock-control none leaves the clocks alone):
    ncu --clock-control none --kernel-name regex:fused_fwd_hopper --launch-skip 2 --launch-count 1 \\
        --section WarpStateStats --section SourceCounters -f -o rep gpu-carry/attnprof bench --impl fused ...
    ncu -i rep.ncu-rep --page source --csv --print-source sass > rep.source.csv
Here:
    scripts/lab/ncu_stalls.py rep.source.csv [TOP]
prints the samples per stall reason over the whole kernel and the TOP (default 25) instructions with
the most samples, each with its three largest reasons. Samples are per warp, so a producer warp that
mostly waits shows up too (its mbarrier wait loop: a branch stalled on long_sb)."""
import collections
import csv
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    try:
        rows = list(csv.reader(open(path, newline="")))
    except OSError as e:
        sys.exit(f"ncu_stalls: {path}: {e.strerror}")
    header = next((i for i, r in enumerate(rows) if "Address" in r and "Source" in r), None)
    if header is None:
        sys.exit(f"ncu_stalls: {path}: no 'Address,Source,...' header (not ncu's --page source --csv output)")
    names = rows[header]
    col = {n: i for i, n in enumerate(names)}
    if "Warp Stall Sampling (All Samples)" not in col:
        sys.exit(f"ncu_stalls: {path}: no warp stall sampling column (profile with --section SourceCounters)")
    reasons = [n for n in names if n.startswith("stall_") and "Not Issued" not in n]

    def num(r, name):
        v = r[col[name]] if col[name] < len(r) else ""
        return int(v) if v.strip().isdigit() else 0

    total = 0
    by_reason = collections.Counter()
    per_instruction = []
    for r in rows[header + 1:]:
        if len(r) < len(names):
            continue
        samples = num(r, "Warp Stall Sampling (All Samples)")
        total += samples
        split = {n: num(r, n) for n in reasons}
        by_reason.update(split)
        per_instruction.append((samples, r[col["Address"]], r[col["Source"]].strip(), split))
    if total == 0:
        sys.exit(f"ncu_stalls: {path}: no samples")
    print(f"{path}: {total} samples")
    for name, v in by_reason.most_common(12):
        print(f"  {name:26s} {v:8d} {100 * v / total:5.1f}%")
    print(f"top {top} instructions:")
    for samples, addr, src, split in sorted(per_instruction, key=lambda x: -x[0])[:top]:
        three = ", ".join(f"{n[6:]} {v}" for n, v in sorted(split.items(), key=lambda x: -x[1])[:3] if v)
        print(f"  {samples:7d} {100 * samples / total:5.1f}%  {addr[-6:]}  {src[:58]:58s} {three}")


if __name__ == "__main__":
    main()
