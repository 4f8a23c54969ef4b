"""Host time per call of attnprof.attention's pieces and of its training path beside SDPA's, on a GPU
machine with the package installed (as scripts/gpu/python_gpu_check.sh installs it). Each loop is
shorter than the launch queue and each call's kernels shorter than its host work, so no GPU wait is
timed: the forward rows on B8 H16 S1024 D64 causal bf16, the forward + backward rows (autograd.grad of
q, k and v) on B1 H8/2 S128 D128 causal bf16; best of 5 loops of 400 (200) calls.
  PYTHONPATH=<installed wheel> python3 scripts/lab/python_host_cost.py
"""
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

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

    def view(t):
        return (t.data_ptr(), t.shape, t.stride())

    rows = [
        ("_cuda.workspace_bytes (7 ints)", lambda: _cuda.workspace_bytes(8, 16, 16, 1024, 1024, 64, True)),
        ("_cuda.forward (views, no workspace)",
         lambda: _cuda.forward(0, view(q), view(k), view(v), view(out), lse.data_ptr(), True, 0.125, stream, False, 0,
                               0, (0, (0, 0)), (0, (0, 0)))),
        ("torch.empty x2", lambda: (torch.empty(q.shape, dtype=q.dtype, device=q.device),
                                    torch.empty(q.shape[:3], dtype=torch.float32, device=q.device))),
        ("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream),
        ("attnprof.attention", lambda: attnprof.attention(q, k, v, is_causal=True)),
        ("torch.ops.attnprof.attention (the custom op)",
         lambda: torch.ops.attnprof.attention(q, k, v, True, 0.125, False)),
        ("F.scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
    ]
    for name, fn in rows:
        try:
            print(f"{name:52s} {host_us(fn):8.1f} us host per call")
        except TypeError as err:  # a wheel from before _cuda took views
            print(f"{name:52s} not this wheel's signature: {str(err).splitlines()[0][:60]}")

    # Training: the forward, then autograd.grad of q, k and v, on a shape whose kernels take a few us.
    qg = torch.randn(1, 8, 128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    kg, vg = (torch.randn(1, 2, 128, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    d_out = torch.randn_like(qg)

    def train(fn):
        def step():
            torch.autograd.grad(fn(qg, kg, vg), (qg, kg, vg), d_out)
        return step

    def sdpa(backend):
        def call(q, k, v):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return call

    def op(q, k, v):
        return torch.ops.attnprof.attention(q, k, v, True, q.shape[-1] ** -0.5, False)[0]

    for name, fn in (("attnprof.attention forward + backward", lambda q, k, v: attnprof.attention(q, k, v, True)),
                     ("the custom op forward + backward", op),
                     ("SDPA flash forward + backward", sdpa(SDPBackend.FLASH_ATTENTION)),
                     ("SDPA cuDNN forward + backward", sdpa(SDPBackend.CUDNN_ATTENTION))):
        try:
            print(f"{name:52s} {host_us(train(fn), 200):8.1f} us host per call")
        except RuntimeError as err:  # a backend that refuses the shape says why
            print(f"{name:52s} refused: {str(err).splitlines()[0][:80]}")


if __name__ == "__main__":
    main()
