#!/usr/bin/env python3
"""Per-launch cost of a loop of tiny PyTorch ops (x.add_(1) on one element):
plain, or under torch.profiler (CPU+CUDA activities). Run plain under
`attnprof record` to measure attnprof's cost on the same loop.
Prints 'RESULT torch_mode=<mode> us_per_op=<median>'."""
import argparse
import statistics
import time

import torch


def time_loop(x, n, repeats):
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["plain", "torch-profiler"])
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    x = torch.zeros(1, device="cuda")
    time_loop(x, 2000, 1)  # warm-up
    if args.mode == "plain":
        us = time_loop(x, args.ops, args.repeats)
    else:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            time_loop(x, 2000, 1)
            us = time_loop(x, args.ops, args.repeats)
    print(f"RESULT torch_mode={args.mode} us_per_op={us:.4f}")


if __name__ == "__main__":
    main()
