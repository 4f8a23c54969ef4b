#!/usr/bin/env python3
"""Run 88: nvidia-smi's SM clock and power (every 20 ms) per `attnprof bench` window of call.sh's output.

  python3 benchmarks/fused/run88/analyze.py benchmarks/fused/run88/bench.txt benchmarks/fused/run88/smi.csv
Prints, per bench, the fused and cuDNN TFLOP/s and the samples' median SM clock, median power and the
share of samples at or above 690 W.
"""
import statistics as st
import sys


def seconds(hms):
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def main(bench_path, smi_path):
    samples = []
    with open(smi_path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 4:
                continue
            try:
                t = seconds(parts[0].split()[1])
                clock = float(parts[1].split()[0])
                power = float(parts[2].split()[0])
            except (IndexError, ValueError):
                continue
            samples.append((t, clock, power))
    windows, cur = [], None
    with open(bench_path) as f:
        for line in f:
            if line.startswith("== end"):
                cur["end"] = seconds(line.split()[2])
                windows.append(cur)
            elif line.startswith("=="):
                w = line.split()
                cur = {"shape": w[1] + " " + w[2] + " " + w[3], "start": seconds(w[5]), "rates": []}
            elif cur is not None and line.split():
                cur["rates"].append(line.split()[0] + " " + line.split()[3])
    print("shape | rates (TFLOP/s) | SM clock MHz (median) | power W (median) | samples >= 690 W")
    for w in windows:
        inside = [s for s in samples if w["start"] <= s[0] <= w["end"]]
        if not inside:
            continue
        clocks = [s[1] for s in inside]
        powers = [s[2] for s in inside]
        capped = sum(p >= 690 for p in powers) / len(powers)
        print(f"{w['shape']} | {', '.join(w['rates'])} | {st.median(clocks):.0f} | {st.median(powers):.0f} | {capped:.0%}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
