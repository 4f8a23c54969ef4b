#!/usr/bin/env python3
"""Run 84: version 35's two kernels in `attnprof record`'s traces (CUPTI kernel records).

Each version 35 call is a version 8 kernel on 128 CTAs (Path 2) launched just before the tail kernel
(Path 35) on a second stream; the bench's version 8 calls are the other Path 2 kernels. Prints medians
of: version 8 alone; version 8 on 128 CTAs; the tail kernel's start after it; the tail's duration; the
pair's span; how long the tail ran on after version 8 ended.

  python3 benchmarks/fused/run84/analyze.py benchmarks/fused/run84/*.json.gz
"""
import gzip
import json
import statistics as st
import sys


def main(paths):
    for path in paths:
        with gzip.open(path) as f:
            events = json.load(f)["traceEvents"]
        k = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                    and "fused_fwd_hopper" in e["name"]), key=lambda e: e["ts"])
        tail = [i for i, e in enumerate(k) if "Path)35" in e["name"]]
        pairs = [(k[i - 1], k[i]) for i in tail if i > 0]
        paired = {id(e) for p in pairs for e in p}
        alone = [e["dur"] for e in k if id(e) not in paired]
        med = lambda xs: st.median(xs) if xs else float("nan")
        print(f"{path}: {len(pairs)} version 35 calls, {len(alone)} version 8 calls (us, medians)")
        print(f"  version 8 alone            {med(alone):7.1f}")
        print(f"  version 8 on 128 CTAs      {med([m['dur'] for m, _ in pairs]):7.1f}")
        print(f"  tail starts after it by    {med([t['ts'] - m['ts'] for m, t in pairs]):7.1f}")
        print(f"  tail kernel                {med([t['dur'] for _, t in pairs]):7.1f}")
        print(f"  span of the two            {med([max(m['ts'] + m['dur'], t['ts'] + t['dur']) - m['ts'] for m, t in pairs]):7.1f}")
        print(f"  tail ends after version 8  {med([t['ts'] + t['dur'] - m['ts'] - m['dur'] for m, t in pairs]):7.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
