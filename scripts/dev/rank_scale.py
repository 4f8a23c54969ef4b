#!/usr/bin/env python3
"""`attnprof doctor DIR`'s scale against the arithmetic: one trace alone, then the whole folder with -j
workers, in turn for several rounds, wall time and peak memory of each run; and, for comparison, the
same folder as J separate `doctor -j 1` processes over their share of the traces (what the machine
gives when nothing is shared between the workers but the memory system); and --busy: one trace while
J - 1 other cores spin (the clock the machine gives one core when all of them run).

    scripts/dev/rank_scale.py ATTNPROF DIR [-j J] [--rounds 3] [--processes]

DIR holds rank traces of one size (scripts/dev/make_rank_traces.py). Prints, per round, one trace's
wall time and peak RSS, the folder's, and the folder's against the arithmetic (traces x one trace's
time / J); peak RSS of the separate processes is the sum of their peaks.
"""
import argparse
import os
import subprocess
import sys
import threading
import time


def tree(pid):
    """pid and its descendants, from /proc."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def pss_mib(pids):
    """The summed proportional set size (shared pages split among their users) of pids, MiB."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total / 1024


def run(cmd):
    """Wall seconds, peak RSS of its largest process and peak summed PSS of its process tree (MiB, sampled
    every 10 ms) of one command; its stdout discarded."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, running = [0.0], [True]

    def sample():
        while running[0]:
            peak[0] = max(peak[0], pss_mib(tree(p.pid)))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    running[0] = False
    sampler.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    if p.returncode not in (0, 1, 2):  # doctor's 1/2: findings or a bad rank, not a failure to run
        sys.exit(f"rank_scale: {' '.join(cmd)}: exit {p.returncode}: {err.strip()[:300]}")
    return wall, usage.ru_maxrss / 1024, peak[0]


def run_split(attnprof, traces, jobs):
    """The traces as `jobs` separate processes (each `doctor -j 1` over every jobs-th trace), at once."""
    t0 = time.perf_counter()
    procs = [subprocess.Popen([attnprof, "doctor", "-j", "1", *traces[j::jobs]], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for j in range(jobs)]
    peak = 0.0
    for p in procs:
        _, _, usage = os.wait4(p.pid, 0)
        peak += usage.ru_maxrss / 1024
    return time.perf_counter() - t0, peak


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("attnprof")
    ap.add_argument("dir")
    ap.add_argument("-j", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--processes", action="store_true", help="also time J separate processes")
    ap.add_argument("--busy", action="store_true", help="also time one trace beside J - 1 spinning cores")
    a = ap.parse_args()
    traces = sorted(os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith((".json", ".json.gz")))
    if not traces:
        sys.exit(f"rank_scale: {a.dir}: no .json or .json.gz traces")
    mb = sum(os.path.getsize(t) for t in traces) / 1e6
    print(f"{len(traces)} traces, {mb:.0f} MB, -j {a.j}, {os.cpu_count()} CPUs")
    run([a.attnprof, "doctor", "-j", str(a.j), a.dir])  # the page cache warm
    for r in range(a.rounds):
        one, one_rss, one_pss = run([a.attnprof, "doctor", traces[0]])
        many, many_rss, many_pss = run([a.attnprof, "doctor", "-j", str(a.j), a.dir])
        arith = len(traces) * one / a.j
        line = (f"round {r + 1}: one {one:.3f} s {one_rss:.1f} MiB RSS {one_pss:.1f} MiB PSS; all -j {a.j} {many:.3f} s, "
                f"largest process {many_rss:.1f} MiB RSS, all {many_pss:.1f} MiB PSS = {many / arith:.2f}x the "
                f"arithmetic {arith:.3f} s, {many_pss / one_pss:.2f}x one's peak PSS")
        if a.processes:
            split, split_rss = run_split(a.attnprof, traces, a.j)
            line += f"; {a.j} processes {split:.3f} s ({split / arith:.2f}x) {split_rss:.0f} MiB summed"
        if a.busy:
            spin = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(a.j - 1)]
            time.sleep(0.5)
            busy, _, _ = run([a.attnprof, "doctor", traces[0]])
            for s in spin:
                s.kill()
                s.wait()
            line += f"; one beside {a.j - 1} spinning cores {busy:.3f} s ({busy / one:.2f}x alone)"
        print(line, flush=True)


if __name__ == "__main__":
    main()
