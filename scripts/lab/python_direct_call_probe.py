"""Whether attnprof.attention takes its direct call (not the custom op's dispatch) at the start,
after a profiled call and after a torch.compile, with the host work per call each time; on a GPU
machine with the package installed (as scripts/gpu/python_gpu_check.sh installs it).
  PYTHONPATH=<installed wheel> python3 scripts/lab/python_direct_call_probe.py
"""
import time

import torch

import attnprof
from attnprof import _torch


def main():
    q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))

    def probes(tag):
        print(tag, "is_compiling", torch.compiler.is_compiling(), "jit", torch.jit.is_tracing(),
              "prof", torch.autograd._profiler_enabled(), "dispatch", torch._C._len_torch_dispatch_stack(),
              "tfmode", torch._C._is_torch_function_mode_enabled(),
              "fwd_ad", torch.autograd.forward_ad._current_level,
              "plain_eager", _torch._plain_eager(torch, q, k, v), flush=True)

    def host(tag):
        for _ in range(10):
            attnprof.attention(q, k, v, is_causal=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(300):
            attnprof.attention(q, k, v, is_causal=True)
        print(tag, f"{(time.perf_counter() - t0) / 300 * 1e6:.1f} us host per call", flush=True)
        torch.cuda.synchronize()

    probes("start")
    host("start")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        attnprof.attention(q, k, v, is_causal=True)
    probes("after profiler")
    host("after profiler")
    compiled = torch.compile(lambda q, k, v: attnprof.attention(q, k, v, is_causal=True) * 2.0, fullgraph=True)
    compiled(q, k, v)
    probes("after compile")
    host("after compile")


if __name__ == "__main__":
    main()
