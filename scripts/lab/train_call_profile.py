"""Where a training step's attention call (forward + backward, `.backward()` into leaf q, k, v) spends
its time, ours against SDPA cuDNN and flash: torch.profiler over 20 back-to-back calls, each kernel's
GPU time per call, the GPU's busy share of the wall, and the host's time per call.
  PYTHONPATH=<installed wheel> python3 scripts/lab/train_call_profile.py
"""
import collections

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import attnprof


def main():
    shapes = [(8, 16, 1024, 64, True), (16, 12, 512, 64, False), (4, 16, 2048, 128, False)]
    for (b, h, s, d, causal) in shapes:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        d_out = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        for name, backend in (("attnprof", None), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("flash", SDPBackend.FLASH_ATTENTION)):
            def call():
                if backend is None:
                    attnprof.attention(q, k, v, is_causal=causal).backward(d_out)
                else:
                    with sdpa_kernel(backend):
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(d_out)
            for _ in range(5):
                call()
            torch.cuda.synchronize()
            n = 20
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(n):
                    call()
                torch.cuda.synchronize()
            events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            per = collections.defaultdict(float)
            for e in events:
                per[e.name[:70]] += e.device_time / n
            busy = sum(per.values())
            first = min(e.time_range.start for e in events)
            last = max(e.time_range.end for e in events)
            print(f"B{b} H{h} S{s} D{d}{' causal' if causal else ''} {name}: GPU busy {busy:.1f} us a call, "
                  f"kernels' span {(last - first) / n:.1f} us a call")
            for kname, us in sorted(per.items(), key=lambda kv: -kv[1])[:6]:
                print(f"    {us:8.1f} us  {kname}")
            q.grad = k.grad = v.grad = None


if __name__ == "__main__":
    main()
