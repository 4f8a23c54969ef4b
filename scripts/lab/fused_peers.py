#!/usr/bin/env python3
"""Times PyTorch SDPA's flash (FA2) and cuDNN backends on the shapes that
attnprof_fused_lab timed (its --csv output), in the same call on the same GPU,
and prints one table with the fused kernel's ratio to each.

  python3 scripts/lab/fused_peers.py fused.csv [--out peers.csv]
"""
import csv
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(fn, warmup=10, iters=21, burst=10):
    """Median over `iters` samples of `burst` back-to-back calls (as the fused bench does)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(burst):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / burst)
    times.sort()
    return times[len(times) // 2]


def peer_tflops(b, h, s, d, causal, backend):
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    flops = 4 * b * h * s * s * d / (2 if causal else 1)
    try:
        with sdpa_kernel(backend):
            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))
        return flops / (ms * 1e-3) / 1e12
    except RuntimeError as err:  # backend refused the shape
        print(f"  {backend} failed on B{b} H{h} S{s} D{d}: {str(err).splitlines()[0]}", file=sys.stderr)
        return float("nan")


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    shapes, by_path, paths = [], {}, []
    for r in rows:
        key = tuple(int(r[x]) for x in ("batch", "heads", "seq", "head_dim", "causal"))
        if key not in by_path:
            shapes.append(key)
            by_path[key] = {}
        by_path[key][r["path"]] = float(r["tflops"])
        if r["path"] not in paths:
            paths.append(r["path"])
    main_path = "hopper" if "hopper" in paths else paths[-1]
    out = None
    if "--out" in sys.argv:
        out = open(sys.argv[sys.argv.index("--out") + 1], "w")
        out.write("batch,heads,seq,head_dim,causal," + ",".join(paths) + ",flash,cudnn\n")
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print(f"{'B':>2} {'H':>3} {'S':>6} {'D':>4} {'causal':>6} | " + " ".join(f"{p[:9]:>9}" for p in paths) +
          f" {'FA2':>6} {'cuDNN':>6} | {'/FA2':>5} {'/cuDNN':>6}   (bf16 fwd TFLOP/s; ratios of {main_path})")
    worst = float("inf")
    for key in shapes:
        b, h, s_, d, c = key
        fa2 = peer_tflops(b, h, s_, d, bool(c), SDPBackend.FLASH_ATTENTION)
        cud = peer_tflops(b, h, s_, d, bool(c), SDPBackend.CUDNN_ATTENTION)
        vals = [by_path[key].get(p, float("nan")) for p in paths]
        fused = by_path[key].get(main_path, float("nan"))
        worst = min(worst, fused / fa2)
        print(f"{b:>2} {h:>3} {s_:>6} {d:>4} {'yes' if c else 'no':>6} | " + " ".join(f"{v:9.1f}" for v in vals) +
              f" {fa2:6.1f} {cud:6.1f} | {fused / fa2:5.2f} {fused / cud:6.2f}")
        if out:
            out.write(f"{b},{h},{s_},{d},{c}," + ",".join(f"{v:.2f}" for v in vals) + f",{fa2:.2f},{cud:.2f}\n")
    print(f"worst {main_path}/FA2 ratio: {worst:.2f}")


if __name__ == "__main__":
    main()
