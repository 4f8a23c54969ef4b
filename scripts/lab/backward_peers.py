#!/usr/bin/env python3
"""The fused backward beside PyTorch's SDPA backends, in one process on one GPU: the attention backward
alone, and forward + backward (what a training step's attention costs), of `attnprof.attention` (its
autograd: bwd_sm90.cu on Hopper) against `scaled_dot_product_attention` on its flash backend
(FlashAttention-2) and its cuDNN backend, all three through torch.autograd, each timed cold (L2 flushed
before each call, CUDA events around the call alone: scripts/lab/cold_timing.py), one backend after the
other on each shape. Issue 43 asks the backward >= 1.0x cuDNN's and >= 1.5x FlashAttention-2's at
S >= 2k, and forward + backward >= 1.05x cuDNN's on the geometric mean; `attnprof bench --pass backward`
compares the kernels against cuDNN's frontend graph, this the way a PyTorch program calls them.

  python3 scripts/lab/backward_peers.py                          # the default grid, bf16
  python3 scripts/lab/backward_peers.py --shapes 2x32x8x4096x128c 16x12x12x512x64f --json-file peers.json

A shape is BxHxHKVxSxD then c (causal) or f (full mask); GQA where HKV < H (PyTorch's backends through
enable_gqa). Before timing, each backend's dQ, dK and dV are compared with cuDNN's (the largest relative
difference is printed; a row whose difference passes 2e-2 is marked).
"""
import argparse
import json
import math
import sys

# The grid: the three shapes, then S 512-32k, D64 and D128, causal and full, MHA and GQA.
DEFAULT = [
    "2x32x8x4096x128c", "1x16x16x16384x128c", "16x12x12x512x64f",
    "4x16x16x2048x64c", "1x32x8x8192x128c", "8x16x16x1024x128f", "8x8x2x1024x128c",
    "2x16x16x4096x128f", "4x32x8x2048x128f", "1x8x8x32768x128c", "2x16x4x8192x64c",
]


def parse_shape(text):
    causal = text.endswith("c")
    if not (causal or text.endswith("f")):
        raise SystemExit(f"backward_peers.py: shape '{text}' ends in neither c (causal) nor f (full mask)")
    try:
        b, h, hkv, s, d = (int(x) for x in text[:-1].lower().split("x"))
    except ValueError:
        raise SystemExit(f"backward_peers.py: shape '{text}' is not BxHxHKVxSxD then c or f")
    if min(b, h, hkv, s, d) < 1 or h % hkv:
        raise SystemExit(f"backward_peers.py: shape '{text}' needs sizes above 0 and HKV dividing H")
    return {"b": b, "h": h, "hkv": hkv, "s": s, "d": d, "causal": causal}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", nargs="+", default=DEFAULT, help="BxHxHKVxSxD[c|f] ...")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--samples", type=int, default=15, help="cold samples a backend and pass (median)")
    ap.add_argument("--json-file", help="write the rows here too")
    a = ap.parse_args()
    shapes = [(t, parse_shape(t)) for t in a.shapes]  # bad input fails before the GPU is touched

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import attnprof
    import cold_timing  # scripts/lab, beside this script

    if not torch.cuda.is_available():
        raise SystemExit("backward_peers.py: no CUDA device")
    dev = torch.device("cuda")
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float16
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)  # past any L2: 256 MB

    def cold_ms(fn):
        fn()  # warm: the first call of a shape builds plans (cuDNN) and allocates
        torch.cuda.synchronize()
        return cold_timing.cold_ms(fn, flush, a.samples)

    def forward(name, q, k, v, causal, gqa):
        if name == "attnprof":
            return attnprof.attention(q, k, v, is_causal=causal)
        backend = SDPBackend.FLASH_ATTENTION if name == "flash" else SDPBackend.CUDNN_ATTENTION
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)

    names = ("attnprof", "flash", "cudnn")
    name = torch.cuda.get_device_name()
    print(f"device: {name}; torch {torch.__version__}; dtype {a.dtype}; cold timing (L2 flushed before each "
          "call), medians; the backward alone, then forward + backward")
    print(f"{'shape':<28} {'ours bwd':>9} {'FA2 bwd':>9} {'cuDNN bwd':>9} {'/cuDNN':>7} {'/FA2':>6} "
          f"{'ours f+b':>9} {'cuDNN f+b':>9} {'/cuDNN':>7} {'max diff':>9}")
    rows = []
    for text, s in shapes:
        torch.manual_seed(0)
        gqa = s["hkv"] != s["h"]
        q = torch.randn(s["b"], s["h"], s["s"], s["d"], device=dev, dtype=dtype, requires_grad=True)
        k = torch.randn(s["b"], s["hkv"], s["s"], s["d"], device=dev, dtype=dtype, requires_grad=True)
        v = torch.randn(s["b"], s["hkv"], s["s"], s["d"], device=dev, dtype=dtype, requires_grad=True)
        d_out = torch.randn(s["b"], s["h"], s["s"], s["d"], device=dev, dtype=dtype)
        row = {"shape": text, **s}
        grads = {}
        for n in names:
            try:
                out = forward(n, q, k, v, s["causal"], gqa)
                grads[n] = torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True)
                row[f"{n}_bwd_ms"] = cold_ms(lambda: torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True))

                def step():
                    o = forward(n, q, k, v, s["causal"], gqa)
                    torch.autograd.grad(o, (q, k, v), d_out)
                row[f"{n}_fwdbwd_ms"] = cold_ms(step)
                del out
            except (RuntimeError, ValueError) as err:  # a backend that refuses the shape says why
                row[f"{n}_error"] = str(err).splitlines()[0][:120]
            torch.cuda.empty_cache()
        if "cudnn" in grads:
            diff = 0.0
            for n in ("attnprof", "flash"):
                for mine, ref in zip(grads.get(n, ()), grads["cudnn"]):
                    scale = ref.float().abs().max().item() or 1.0
                    diff = max(diff, (mine.float() - ref.float()).abs().max().item() / scale)
            row["max_rel_diff_to_cudnn"] = diff
        ours, fa2, cud = (row.get(f"{n}_bwd_ms") for n in names)
        ours_fb, cud_fb = row.get("attnprof_fwdbwd_ms"), row.get("cudnn_fwdbwd_ms")
        row["bwd_vs_cudnn"] = cud / ours if ours and cud else None
        row["bwd_vs_flash"] = fa2 / ours if ours and fa2 else None
        row["fwdbwd_vs_cudnn"] = cud_fb / ours_fb if ours_fb and cud_fb else None
        rows.append(row)

        def ms(x):
            return f"{x:9.3f}" if x else f"{'-':>9}"

        def rat(x, w=7):
            return f"{x:{w}.2f}" if x else f"{'-':>{w}}"
        diff = row.get("max_rel_diff_to_cudnn")
        mark = "  DIFFERS" if diff is not None and diff > 2e-2 else ""
        print(f"{text:<28} {ms(ours)} {ms(fa2)} {ms(cud)} {rat(row['bwd_vs_cudnn'])} {rat(row['bwd_vs_flash'], 6)} "
              f"{ms(ours_fb)} {ms(cud_fb)} {rat(row['fwdbwd_vs_cudnn'])} "
              f"{(f'{diff:9.1e}' if diff is not None else '-'):>9}{mark}", flush=True)
        for n in names:
            if f"{n}_error" in row:
                print(f"  {n}: {row[f'{n}_error']}")
        del q, k, v, d_out, grads
        torch.cuda.empty_cache()
    fb = [r["fwdbwd_vs_cudnn"] for r in rows if r.get("fwdbwd_vs_cudnn")]
    if fb:
        print(f"forward + backward against cuDNN's: geometric mean {math.exp(sum(map(math.log, fb)) / len(fb)):.3f} "
              f"over {len(fb)} shapes")
    if a.json_file:
        with open(a.json_file, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "dtype": a.dtype, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
