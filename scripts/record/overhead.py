#!/usr/bin/env python3
"""What `attnprof record` costs a PyTorch program, side by side with torch.profiler, in one run
(issue 18): the tiny-op loop of torch_overhead.py (OPS x.add_(1) launches, one process per sample),
in ROUNDS interleaved rounds of every mode; median per mode, its ratio to the unrecorded loop, and
each process's peak RSS (wait4, the program and its recorder together).

    overhead.py ATTNPROF [--ops 500000] [--rounds 5] [--work DIR] [--modes callbacks,activity,...]

Modes: plain; attnprof record with launch calls by callbacks (the default), kernels only
(--kinds kernel), launch calls by CUPTI activity records (--calls activity), launch calls only
(--kinds runtime,driver), the default with CUPTI's per-thread buffers off or pinned host buffers
(ATTNPROF_RECORD_CUPTI_ATTRS, modes "cupti"); torch.profiler.
Each recorded trace is checked: every kernel tied to its launch (when launches are recorded)."""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, work):
    """(us per op or None, peak RSS MB of the process tree, stderr); a run that fails gives None."""
    out_path, err_path = os.path.join(work, "run.out"), os.path.join(work, "run.err")
    with open(out_path, "w") as out_f, open(err_path, "w") as err_f:
        p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
        _, status, ru = os.wait4(p.pid, 0)
    out, err = open(out_path).read(), open(err_path).read()
    code = os.waitstatus_to_exitcode(status)
    us = None
    for line in out.splitlines():
        if line.startswith("RESULT"):
            us = float(line.split("us_per_op=")[1])
    if us is None or code != 0:
        sys.stderr.write(f"failed (exit {code}): {' '.join(cmd)}:\n{out}\n{err}\n")
        us = None
    return us, ru.ru_maxrss / 1024, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("attnprof")
    ap.add_argument("--ops", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", default="/tmp/attnprof-overhead")
    ap.add_argument("--modes", default="", help="comma-separated words; run only the modes whose name has one")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    loop = [sys.executable, os.path.join(HERE, "torch_overhead.py")]
    n = ["--ops", str(a.ops), "--repeats", "1"]
    trace = os.path.join(a.work, "loop.json.gz")
    modes = {
        "plain": loop + ["plain"] + n,
        "attnprof record (launches by callbacks)": [a.attnprof, "record", "-o", trace, "--"] + loop + ["plain"] + n,
        "attnprof record --kinds kernel": [a.attnprof, "record", "--kinds", "kernel", "-o", trace, "--"] + loop
        + ["plain"] + n,
        "attnprof record --calls activity": [a.attnprof, "record", "--calls", "activity", "-o", trace, "--"] + loop
        + ["plain"] + n,
        # The two costs apart: launch calls by callbacks without kernel records.
        "attnprof record --kinds runtime,driver": [a.attnprof, "record", "--kinds", "runtime,driver", "-o", trace,
                                                   "--"] + loop + ["plain"] + n,
        # CUPTI's buffer attributes (ATTNPROF_RECORD_CUPTI_ATTRS), A/B against the default above.
        "attnprof record cupti per_thread_buffers=0": ["env", "ATTNPROF_RECORD_CUPTI_ATTRS=per_thread_buffers=0",
                                                       a.attnprof, "record", "-o", trace, "--"] + loop + ["plain"] + n,
        "attnprof record cupti host_pinned=1": ["env", "ATTNPROF_RECORD_CUPTI_ATTRS=host_pinned=1", a.attnprof,
                                                "record", "-o", trace, "--"] + loop + ["plain"] + n,
        "torch.profiler": loop + ["torch-profiler"] + n,
    }
    if a.modes:
        words = a.modes.split(",")
        modes = {m: c for m, c in modes.items() if m == "plain" or any(w in m for w in words)}
    times = {m: [] for m in modes}
    rss = {m: [] for m in modes}
    checks = []
    for r in range(a.rounds):
        for m, cmd in modes.items():
            us, mb, err = run(cmd, a.work)
            if us is not None:
                times[m].append(us)
                rss[m].append(mb)
            if r == 0 and "record" in m and "runtime,driver" not in m:  # first round's trace: tied launches, size
                size = os.path.getsize(trace) / 1e6 if os.path.exists(trace) else 0
                want = [] if "kernel" in m else ["--launch-coverage", "1.0"]
                c = subprocess.run([sys.executable, os.path.join(HERE, "check_trace.py"), trace,
                                    "--min-kernels", str(a.ops)] + want, capture_output=True, text=True)
                checks.append((m, c.returncode == 0, size, c.stdout.strip().splitlines()[:3], err.strip()[-300:]))
    base = statistics.median(times["plain"]) if times["plain"] else float("nan")
    print(f"\n{a.ops} launches of x.add_(1) per process, {a.rounds} interleaved rounds; us per op (median), ratio")
    print("| mode | us/op median | min-max | ratio to plain | peak RSS MB (median) |")
    print("|---|---|---|---|---|")
    for m in modes:
        t = times[m]
        if not t:
            print(f"| {m} | failed | | | |")
            continue
        print(f"| {m} | {statistics.median(t):.3f} | {min(t):.3f}-{max(t):.3f} | {statistics.median(t) / base:.3f} | "
              f"{statistics.median(rss[m]):.0f} |")
    ok = all(len(t) == a.rounds for t in times.values())  # every run of every mode gave a result
    for m, good, size, lines, err in checks:
        print(f"trace of '{m}': {'PASS' if good else 'FAIL'}, {size:.1f} MB; {' | '.join(lines)}")
        print(f"   recorder said: {err}")
        ok = ok and good
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
