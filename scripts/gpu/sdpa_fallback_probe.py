"""Which SDPA inputs keep PyTorch off every fused backend on this GPU: the facts behind doctor's
math_causes (src/analysis; PyTorch 2.11 on an H200: docs/working-here.md). Run it again when PyTorch
changes. Each case runs under sdpa_kernel([FLASH, CUDNN, EFFICIENT]) and prints 'fused (<kernel>)'
when one took it, else PyTorch's error (its first line). On a GPU machine with torch, ~16 s:
    python3 scripts/gpu/sdpa_fallback_probe.py"""
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.profiler import ProfilerActivity, profile

warnings.simplefilter("ignore")
B, H, S, D = 2, 8, 512, 64
dev, bf = "cuda", torch.bfloat16


def t(*shape, dtype=bf):
    return torch.randn(*shape, device=dev, dtype=dtype)


def case(name, q, k, v, **kw):
    try:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                F.scaled_dot_product_attention(q, k, v, **kw)
                torch.cuda.synchronize()
        names = [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        main = next((n for n in names if any(s in n for s in ("flash", "fmha", "cudnn", "Attention", "sdpa"))), names)
        print(f"{name:55} fused ({str(main)[:70]})")
    except Exception as e:
        print(f"{name:55} none: {str(e).splitlines()[0][:150]}")


case("control bf16 contiguous", t(B, H, S, D), t(B, H, S, D), t(B, H, S, D))
case("q last dim stride 2", t(B, H, S, 2 * D)[..., ::2], t(B, H, S, D), t(B, H, S, D))
case("v last dim stride 2", t(B, H, S, D), t(B, H, S, D), t(B, H, S, 2 * D)[..., ::2])
m = t(S, S, H).permute(2, 0, 1).unsqueeze(0)
case("attn_mask [1,H,S,S] last stride H (T5)", t(B, H, S, D), t(B, H, S, D), t(B, H, S, D), attn_mask=m)
case("attn_mask contiguous", t(B, H, S, D), t(B, H, S, D), t(B, H, S, D), attn_mask=m.contiguous())
case("attn_mask fp32 with bf16 q", t(B, H, S, D), t(B, H, S, D), t(B, H, S, D), attn_mask=m.contiguous().float())
case("k, v 1 head vs 16, enable_gqa False", t(B, 16, S, D), t(B, 1, S, D), t(B, 1, S, D))
case("k, v 1 head vs 16, enable_gqa True", t(B, 16, S, D), t(B, 1, S, D), t(B, 1, S, D), enable_gqa=True)
case("k, v 4 heads vs 16, enable_gqa True, causal", t(B, 16, S, D), t(B, 4, S, D), t(B, 4, S, D), enable_gqa=True,
     is_causal=True)
for d in (100, 72, 96, 160, 256, 288, 512):
    case(f"head dim {d}", t(B, H, S, d), t(B, H, S, d), t(B, H, S, d))
case("fp64", t(B, H, S, D, dtype=torch.float64), t(B, H, S, D, dtype=torch.float64),
     t(B, H, S, D, dtype=torch.float64))
case("fp32", t(B, H, S, D, dtype=torch.float32), t(B, H, S, D, dtype=torch.float32),
     t(B, H, S, D, dtype=torch.float32))
