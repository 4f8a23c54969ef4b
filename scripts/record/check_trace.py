#!/usr/bin/env python3
"""Checks a trace written by `attnprof record` (or torch.profiler): valid JSON
(plain or gzip) in the Kineto layout, and counts GPU kernels per NVTX /
record_function range, attributing each kernel to the range around the CPU
call that launched it (by correlation id).

  check_trace.py TRACE [--ranges fwd0,fwd1,fwd2] [--min-kernels N]
                 [--compare OTHER_TRACE] [--launch-coverage FRACTION]
Exit 0 when every check passes."""
import argparse
import gzip
import json
import sys


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def kernels_per_range(doc, names):
    events = doc["traceEvents"]
    launches = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = e
    ranges = {}
    for e in events:
        if e.get("cat") == "user_annotation" and e.get("name") in names and e["name"] not in ranges:
            ranges[e["name"]] = e
    out = {}
    for name in names:
        r = ranges.get(name)
        if r is None:
            out[name] = None
            continue
        lo, hi = float(r["ts"]), float(r["ts"]) + float(r["dur"])
        ks = []
        for e in events:
            if e.get("cat") != "kernel":
                continue
            launch = launches.get(e.get("args", {}).get("correlation"))
            if launch is not None and lo <= float(launch["ts"]) <= hi:
                ks.append((float(e["ts"]), e["name"]))
        out[name] = [n for _, n in sorted(ks)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--ranges", default="")
    ap.add_argument("--min-kernels", type=int, default=1)
    ap.add_argument("--compare")
    ap.add_argument("--launch-coverage", type=float, default=0,
                    help="at least this fraction of kernels tied to a launch call by correlation id")
    args = ap.parse_args()
    ok = True
    try:
        doc = load(args.trace)
    except Exception as exc:  # noqa: BLE001 - any failure means an invalid trace
        print(f"CHECK FAIL {args.trace}: not valid JSON: {exc}")
        return 1
    events = doc.get("traceEvents")
    if not isinstance(events, list):
        print(f"CHECK FAIL {args.trace}: no traceEvents list")
        return 1
    cats = {}
    for e in events:
        cats[e.get("cat", e.get("ph"))] = cats.get(e.get("cat", e.get("ph")), 0) + 1
        if e.get("ph") == "X" and ("ts" not in e or "dur" not in e):
            print(f"CHECK FAIL {args.trace}: X event without ts/dur: {e}")
            ok = False
    kernels = cats.get("kernel", 0)
    print(f"CHECK {args.trace}: {len(events)} events, categories {dict(sorted(cats.items(), key=str))}, "
          f"devices {len(doc.get('deviceProperties', []))}, dropped {doc.get('attnprof_dropped_records', 0)}")
    if kernels < args.min_kernels:
        print(f"CHECK FAIL {args.trace}: {kernels} kernels, expected at least {args.min_kernels}")
        ok = False
    if args.launch_coverage > 0:
        launches = {e["args"]["correlation"] for e in events
                    if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
        ks = [e for e in events if e.get("cat") == "kernel"]
        tied = sum(e.get("args", {}).get("correlation") in launches for e in ks)
        print(f"  {tied} of {len(ks)} kernels tied to their launch call")
        if not ks or tied < args.launch_coverage * len(ks):
            print(f"CHECK FAIL {args.trace}: launch coverage below {args.launch_coverage}")
            ok = False
    names = [n for n in args.ranges.split(",") if n]
    if names:
        mine = kernels_per_range(doc, names)
        for n in names:
            ks = mine[n]
            print(f"  range {n}: {'missing' if ks is None else len(ks)} kernels")
            if not ks:
                ok = False
        if args.compare:
            theirs = kernels_per_range(load(args.compare), names)
            for n in names:
                same = mine[n] == theirs[n]
                print(f"  range {n}: torch.profiler {len(theirs[n] or [])} kernels; "
                      f"same list as ours: {same}")
                if not same:
                    ok = False
                    a, b = mine[n] or [], theirs[n] or []
                    for i in range(max(len(a), len(b))):
                        x = a[i] if i < len(a) else "-"
                        y = b[i] if i < len(b) else "-"
                        if x != y:
                            print(f"    #{i}: ours {x[:90]!r} vs torch {y[:90]!r}")
            if mine.get(names[0]):
                print("  kernels of", names[0] + ":")
                for k in mine[names[0]]:
                    print("    ", k[:120])
    print(f"CHECK {'PASS' if ok else 'FAIL'} {args.trace}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
