"""Host time per call of attnprof.attention's pieces, on a GPU machine with the package installed
(as scripts/gpu/python_gpu_check.sh installs it). Each loop is shorter than the launch queue, so no GPU
wait is timed: B8 H16 S1024 D64 causal bf16, best of 5 loops of 400 calls.
  PYTHONPATH=<installed wheel> python3 scripts/lab/python_host_cost.py
"""
import time

import torch
import torch.nn.functional as F

import attnprof
from attnprof import _cuda


def host_us(fn, n=400):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return best


def main():
    torch.manual_seed(0)
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(q.shape[:3], device="cuda", dtype=torch.float32)
    stream = torch.cuda.current_stream().cuda_stream
    rows = [
        ("_cuda.workspace_bytes (7 ints)", lambda: _cuda.workspace_bytes(8, 16, 16, 1024, 1024, 64, True)),
        ("_cuda.forward (tensors, no workspace)",
         lambda: _cuda.forward(q, k, v, out, lse, True, 0.125, stream, False, None)),
        ("torch.empty x2", lambda: (torch.empty(q.shape, dtype=q.dtype, device=q.device),
                                    torch.empty(q.shape[:3], dtype=torch.float32, device=q.device))),
        ("with torch.cuda.device(q.device)", lambda: torch.cuda.device(q.device).__enter__()),
        ("attnprof.attention", lambda: attnprof.attention(q, k, v, is_causal=True)),
        ("torch.ops.attnprof.attention (the custom op)",
         lambda: torch.ops.attnprof.attention(q, k, v, True, 0.125, False)),
        ("F.scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ]
    for name, fn in rows:
        print(f"{name:42s} {host_us(fn):8.1f} us host per call")


if __name__ == "__main__":
    main()
