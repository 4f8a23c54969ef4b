#!/usr/bin/env python3
"""Times PyTorch SDPA's flash (FA2) and cuDNN backends on the shapes that
attnprof_fused_bench timed (its --csv output), in the same call on the same GPU,
and prints one table with the fused kernel's ratio to each.

  python3 scripts/fused_peers.py fused.csv [--out peers.csv]
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
    out = None
    if "--out" in sys.argv:
        out = open(sys.argv[sys.argv.index("--out") + 1], "w")
        out.write("batch,heads,seq,head_dim,causal,fused,flash,cudnn\n")
    print(f"torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    print(f"{'B':>2} {'H':>3} {'S':>6} {'D':>4} {'causal':>6} | {'fused':>6} {'FA2':>6} {'cuDNN':>6} | "
          f"{'/FA2':>5} {'/cuDNN':>6}   (bf16 fwd TFLOP/s)")
    worst = float("inf")
    for r in rows:
        b, h, s, d, c = (int(r[x]) for x in ("batch", "heads", "seq", "head_dim", "causal"))
        fused = float(r["tflops"])
        fa2 = peer_tflops(b, h, s, d, bool(c), SDPBackend.FLASH_ATTENTION)
        cud = peer_tflops(b, h, s, d, bool(c), SDPBackend.CUDNN_ATTENTION)
        worst = min(worst, fused / fa2)
        print(f"{b:>2} {h:>3} {s:>6} {d:>4} {'yes' if c else 'no':>6} | {fused:6.1f} {fa2:6.1f} {cud:6.1f} | "
              f"{fused / fa2:5.2f} {fused / cud:6.2f}")
        if out:
            out.write(f"{b},{h},{s},{d},{c},{fused:.2f},{fa2:.2f},{cud:.2f}\n")
    print(f"worst fused/FA2 ratio: {worst:.2f}")


if __name__ == "__main__":
    main()
