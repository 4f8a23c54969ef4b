#!/usr/bin/env python3
"""What doctor says a fix is worth per step, against what the twin programs measured.

tests/data/steps/ holds programs built in pairs (scripts/corpus/make_steps.py): the same model and
step, only the attention implementation differs (eager, SDPA math, SDPA fused). For each unfused
member, doctor's `fused-attention` fix (step_ms, gpu_ms per step) is compared with the measured
change between it and its fused twin:

- the median step span of each trace, measured here from the trace itself with code of its own
  (each step from its CPU range's start to the later of its end and the end of the GPU work launched
  in it, never before the previous step's end), and the wall clock per step the program measured
  (perf_counter around the steps, facts.json);
- the median GPU busy time per step (the union of kernels, copies and memsets launched in it).

Programs traced in rounds (make_steps.py --rounds: the twins in turn or alternating step by step, in
one process) are paired round by round (the host's speed drifts between rounds, up to 1.8x a second
apart); each figure is the median over the rounds of the round's own (doctor's too, run on each round's
trace). Alternating rounds (make_steps.py --alternate: one step of each twin a cycle) pair the steps
too: a round's measured change is the median of the differences of the twins' steps of one cycle.
--json keeps each round's figures.

The check (issue 36): step_ms within max(20% of the measured change, 5% of the step span) of the
measured span change, gpu_ms within 20% of the measured GPU-busy change.

  scripts/dev/step_twins.py [--attnprof build/attnprof] [--data tests/data/steps] [--markdown] [--json OUT]
Exit 1 when a pair misses the check.
"""
import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver"}


def load(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        return json.load(f)["traceEvents"]


def measured(path, step_names):
    """(step spans ms, GPU busy ms per step) of the trace's steps, read off its events."""
    events = [e for e in load(path) if e.get("ph") == "X"]
    steps = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e.get("cat") == "user_annotation" and e.get("name") in step_names
    )
    launch_ts = {}
    for e in events:
        if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {}):
            launch_ts[e["args"]["correlation"]] = e["ts"]
    work = [[] for _ in steps]
    for e in events:
        if e.get("cat") not in GPU_CATS:
            continue
        t = launch_ts.get(e.get("args", {}).get("correlation"))
        if t is None:
            continue
        for i, (s0, s1) in enumerate(steps):
            if s0 <= t <= s1:
                work[i].append((e["ts"], e["ts"] + e["dur"]))
                break
    spans, busy = [], []
    prev_end = float("-inf")
    for (s0, s1), w in zip(steps, work):
        start = max(s0, prev_end)
        end = max([s1] + [b for _, b in w])
        spans.append(end - start)
        prev_end = end
        total, cur0, cur1 = 0.0, None, None
        for a, b in sorted(w):
            if cur1 is None or a > cur1:
                if cur1 is not None:
                    total += cur1 - cur0
                cur0, cur1 = a, b
            else:
                cur1 = max(cur1, b)
        if cur1 is not None:
            total += cur1 - cur0
        busy.append(total)
    return [x / 1e3 for x in spans], [x / 1e3 for x in busy]


def doctor(attnprof, path):
    out = subprocess.run([attnprof, "doctor", "--json", path], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def traces(m):
    """(trace, measured) of each round of program m: round 0, then its facts' "rounds"."""
    return [(m["trace"], m["measured"])] + [(r["trace"], r["measured"]) for r in m.get("rounds", [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attnprof", default="build/attnprof")
    ap.add_argument("--data", default="tests/data/steps")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", help="also write each pair's per-round figures to this file")
    args = ap.parse_args()
    facts = json.load(open(os.path.join(args.data, "facts.json")))
    groups = {}
    for f in facts:
        if f.get("twin_group") and f.get("twin_axis", "attention") == "attention":
            groups.setdefault(f["twin_group"], []).append(f)
    rows, misses, per_round = [], 0, {}
    med = statistics.median
    for name, members in sorted(groups.items()):
        fused = [m for m in members if m["expected"]["implementation"] == "fused"]
        if len(fused) != 1:
            continue
        fused = fused[0]

        def names(m):  # ProfilerStep#N ranges, or the NVTX ranges named "step" of an `attnprof record` trace
            return {r for r in m["step_ranges"] if r.startswith("ProfilerStep#")} or {"step"}

        fused_rounds = traces(fused)
        for m in members:
            if m is fused:
                continue
            # Round r of the unfused program against round r of its fused twin (traced in turn, one process).
            rs = []
            for (trace, meas), (f_trace, f_meas) in zip(traces(m), fused_rounds):
                spans, busies = measured(os.path.join(args.data, trace), names(m))
                f_spans, f_busies = measured(os.path.join(args.data, f_trace), names(fused))
                span, busy, f_span, f_busy = med(spans), med(busies), med(f_spans), med(f_busies)
                d = doctor(args.attnprof, os.path.join(args.data, trace))
                fix = next((x for x in d["fixes"] if x["id"] == "fused-attention"), None)
                span_change, busy_change = span - f_span, busy - f_busy
                if "alternating" in meas and len(spans) == len(f_spans):
                    # Steps j of the twins ran in one cycle, ms apart: the median of their differences.
                    span_change = med([a - b for a, b in zip(spans, f_spans)])
                    busy_change = med([a - b for a, b in zip(busies, f_busies)])
                rs.append(dict(trace=trace, span=span, fused_span=f_span, span_change=span_change,
                               wall_change=meas["mean_step_ms"] - f_meas["mean_step_ms"],
                               step_ms=fix["step_ms"] if fix else 0.0, busy=busy, fused_busy=f_busy,
                               busy_change=busy_change, gpu_ms=fix["gpu_ms"] if fix else 0.0,
                               bound=d["step"]["bound"] if d["step"] else "-"))
            per_round[m["name"]] = rs
            x = {k: med([r[k] for r in rs]) for k in rs[0] if k not in ("trace", "bound")}
            step_tol = max(0.2 * abs(x["span_change"]), 0.05 * x["span"])
            ok_step = abs(x["step_ms"] - x["span_change"]) <= step_tol
            ok_gpu = abs(x["gpu_ms"] - x["busy_change"]) <= 0.2 * abs(x["busy_change"])
            misses += not (ok_step and ok_gpu)
            rows.append(
                (f"{m['name']} -> {fused['impl']}", str(len(rs)), x["span"], x["fused_span"], x["span_change"],
                 x["wall_change"], x["step_ms"], ok_step, x["busy"], x["fused_busy"], x["busy_change"], x["gpu_ms"],
                 ok_gpu, rs[0]["bound"])
            )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(per_round, fh, indent=1)
    head = ("twin -> fused", "rounds", "span ms", "fused span", "measured change", "wall change", "doctor step_ms", "ok",
            "GPU busy ms", "fused busy", "measured change", "doctor gpu_ms", "ok", "bound before")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(
                x if isinstance(x, str) else ("yes" if x is True else "NO" if x is False else f"{x:.3f}")
                for x in r) + " |")
    else:
        for r in rows:
            print("  ".join(x if isinstance(x, str) else ("ok" if x is True else "MISS" if x is False else f"{x:8.3f}")
                            for x in r))
    print(f"{len(rows) - misses} of {len(rows)} pairs within the tolerances", file=sys.stderr)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
