#!/usr/bin/env python3
"""SDPA, math backend, bf16, causal (B=4, H=16, S=2048, D=64): one warm-up
forward, then three forwards, each under an NVTX range and a record_function
named fwd0..fwd2. Run it under `attnprof record`, or with --torch-profile OUT
to trace the same script with torch.profiler for comparison."""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile, record_function


def forwards(q, k, v):
    for i in range(3):
        with torch.cuda.nvtx.range(f"fwd{i}"), record_function(f"fwd{i}"):
            F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--torch-profile", help="write a torch.profiler trace here")
    args = ap.parse_args()
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 16, 2048, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        F.scaled_dot_product_attention(q, k, v, is_causal=True)  # warm-up
        torch.cuda.synchronize()
        if args.torch_profile:
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                forwards(q, k, v)
            prof.export_chrome_trace(args.torch_profile)
        else:
            forwards(q, k, v)
    print("sdpa_math: done")


if __name__ == "__main__":
    main()
