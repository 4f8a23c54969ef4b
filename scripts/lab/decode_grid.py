#!/usr/bin/env python3
"""The decode grid: the fused kernel (its per-call choice: the decode kernel on these shapes) against the
Hopper prefill kernel it replaced there and cuDNN (one `attnprof bench --interleave` process per shape)
and PyTorch's flash and cuDNN SDPA backends (this process, the same timing: cold, L2 flushed before each
call, CUDA events), on short queries against long keys. Prints one table: times, the fused kernel's
K/V bandwidth and its share of the GPU's HBM peak, and the ratios the decode issue asks for.

  python3 scripts/lab/decode_grid.py --build gpu-carry                   # the default grid, bf16
  python3 scripts/lab/decode_grid.py --build gpu-carry --shapes 64x32x8x1x4096x128 --page-size 16
  python3 scripts/lab/decode_grid.py --build gpu-carry --json-file grid.json
  python3 scripts/lab/decode_grid.py --markdown grid.json [more.json ...]   # BENCHMARKS.md's table (no GPU)

A shape is BxHxHKVxSQxSKVxD (q_len SQ against SKV keys, H query heads over HKV KV heads); decode calls are
bottom-right causal when SQ > 1 (speculative decode), unmasked when SQ is 1 (both the same there). With
--page-size, the bench's cuDNN row reads the same paged cache (cuDNN's paged attention, 9.15 and later;
the table says "cuDNN dense" where it could not); PyTorch's backends read the keys dense.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

# HBM peak bandwidth by device name, bytes/s (vendor figures).
PEAKS = [("H200", 4.8e12), ("H100 NVL", 3.9e12), ("H100 PCIe", 2.0e12), ("H100", 3.35e12), ("GH200", 4.0e12),
         ("A100-SXM4-80GB", 2.039e12), ("A100 80GB PCIe", 1.935e12), ("A100", 1.555e12), ("L40S", 0.864e12)]

# The default grid: the five shapes, then large batch (B x KV heads >= 2x SMs, KV >= 4k), small
# batch and long keys (split-KV), groups 1/4/8 and q_len 1/4/8/16, D64 and D128.
DEFAULT = [
    "64x32x8x1x4096x128", "8x32x8x1x32768x128", "1x32x8x1x8192x128", "32x32x8x8x4096x128", "16x16x16x1x2048x64",
    "128x32x8x1x4096x128", "256x32x8x1x1024x128", "32x32x8x1x16384x128", "64x32x4x1x8192x128",
    "64x32x32x1x4096x128", "64x64x8x1x4096x64", "128x32x32x1x2048x64",
    "1x32x8x1x131072x128", "1x32x4x1x32768x128", "4x32x8x1x16384x128", "2x32x32x1x8192x128", "1x16x16x1x1024x64",
    "64x32x8x4x4096x128", "16x32x8x16x8192x128", "64x32x32x16x2048x128", "8x32x4x8x16384x64",
]


def parse_shape(text):
    try:
        parts = [int(x) for x in text.lower().split("x")]
    except ValueError:
        parts = []
    if len(parts) != 6 or min(parts) < 1 or parts[1] % parts[2]:
        raise SystemExit(f"decode_grid.py: shape '{text}' is not BxHxHKVxSQxSKVxD with HKV dividing H")
    return dict(zip(("b", "h", "hkv", "sq", "skv", "d"), parts))


def attnprof_bench(build, s, dtype, page_size, repeats):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        # Paged, every fused row reads the cache through the decode kernel: the prefill kernel's row only dense.
        impls = "fused,cudnn" if page_size else "fused,fused:hopper,cudnn"
        cmd = [os.path.join(build, "attnprof"), "bench", "--impl", impls, "--interleave",
               "--device", "cuda",
               "-b", str(s["b"]), "--heads", str(s["h"]), "--kv-heads", str(s["hkv"]), "-s", str(s["sq"]),
               "--kv-seq", str(s["skv"]), "-d", str(s["d"]), "--dtype", dtype, "--timing", "cold", "--json-file", out]
        cmd += ["--causal", "--bottom-right"] if s["sq"] > 1 else ["--no-causal"]
        if page_size:
            cmd += ["--page-size", str(page_size)]
        if repeats:
            cmd += ["--repeats", str(repeats)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            return {"error": (r.stderr or r.stdout).strip().splitlines()[-1:] or ["rc %d" % r.returncode]}
        doc = json.load(open(out))
    rows = {}
    for row in doc.get("impls", []):
        if row.get("median_ms") is not None:
            rows[row["name"]] = {"ms": row["median_ms"], "ok": row.get("check_passed", True),
                                 "kernels": row.get("kernels"), "paged": row["name"] in doc.get("paged_rows", [])}
    return rows


def markdown(paths):
    """The grids' rows as one Markdown table (times in us, ratios of the fused kernel's speed)."""
    print("| shape (B H/Hkv Sq Skv D) | dtype, keys | fused us | prefill kernel us | cuDNN us | PyTorch flash us "
          "| PyTorch cuDNN us | fused TB/s | of HBM peak | /cuDNN | /best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for path in paths:
        doc = json.load(open(path))
        keys = f"paged {doc['page_size']}" if doc.get("page_size") else "dense"
        for r in doc["rows"]:
            if doc.get("page_size") and not r.get("cudnn_paged"):
                keys = f"paged {doc['page_size']} (cuDNN dense)"
            if "error" in r:
                print(f"| {r['label']} | {doc['dtype']}, {keys} | {r['error']} | | | | | | | | |")
                continue
            us = lambda x: f"{x * 1e3:.1f}" if x else "-"  # noqa: E731
            rat = lambda x, d=2: f"{x:.{d}f}" if x else "-"  # noqa: E731  (ratios to 3 places: bars sit at 1.0)
            share = f"{100 * r['peak_share']:.1f}%" if r.get("peak_share") else "-"
            print(f"| {r['label']} | {doc['dtype']}, {keys} | {us(r['fused_ms'])} | {us(r.get('prefill_kernel_ms'))} | "
                  f"{us(r['cudnn_ms'])} | {us(r.get('torch_flash_ms'))} | {us(r.get('torch_cudnn_ms'))} | "
                  f"{rat(r.get('fused_tbs'))} | {share} | {rat(r.get('vs_cudnn'), 3)} | {rat(r.get('vs_best'), 3)} |")
            if r.get("vs_best"):
                ratios.append(r["vs_best"])
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"\nAgainst the best of cuDNN and PyTorch flash: min {min(ratios):.3f}, geometric mean {gm:.3f} over "
              f"{len(ratios)} rows.")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--markdown":
        return markdown(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="the carried build (attnprof and its libraries)")
    ap.add_argument("--shapes", nargs="*", default=DEFAULT)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--page-size", type=int, default=0, help="the fused kernel reads a paged cache of N tokens a page")
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--json-file")
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import cold_timing  # scripts/lab, beside this script

    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(dev)
    peak = next((bw for key, bw in PEAKS if key in name), None)
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    flush = torch.empty(max(2 * l2, 64 << 20), dtype=torch.uint8, device=dev)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[a.dtype]

    def cold_ms(fn):
        return cold_timing.cold_ms(fn, flush)

    print(f"device: {name}; HBM peak {peak / 1e12:.2f} TB/s" if peak else f"device: {name}; HBM peak unknown")
    print(f"dtype {a.dtype}; fused {'paged, %d tokens a page' % a.page_size if a.page_size else 'dense'}; "
          "cold timing (L2 flushed before each call), medians")
    head = (f"{'shape (B H/Hkv Sq Skv D)':<30} {'fused us':>9} {'prefill':>9} {'cuDNN us':>9} {'pt-flash':>9} {'pt-cuDNN':>9} "
            f"{'fused TB/s':>10} {'of peak':>7} {'/cuDNN':>7} {'/best':>7}")
    print(head)
    results = []
    for text in a.shapes:
        s = parse_shape(text)
        label = f"B{s['b']} H{s['h']}/{s['hkv']} Sq{s['sq']} Skv{s['skv']} D{s['d']}"
        row = {"shape": text, "label": label}
        bench = attnprof_bench(a.build, s, a.dtype, a.page_size, a.repeats)
        if "error" in bench:
            print(f"{label:<30} attnprof bench: {bench['error'][0]}")
            row["error"] = bench["error"][0]
            results.append(row)
            continue
        row["fused_ms"] = bench.get("fused", {}).get("ms")
        row["cudnn_ms"] = bench.get("cudnn", {}).get("ms")
        row["cudnn_paged"] = bench.get("cudnn", {}).get("paged", False)  # cuDNN 9.15+: its paged attention
        row["prefill_kernel_ms"] = bench.get("fused:hopper", {}).get("ms")
        row["checks_ok"] = all(v["ok"] for v in bench.values())
        q = torch.randn(s["b"], s["h"], s["sq"], s["d"], device=dev, dtype=dtype)
        k = torch.randn(s["b"], s["hkv"], s["skv"], s["d"], device=dev, dtype=dtype)
        v = torch.randn_like(k)
        causal = s["sq"] > 1
        # Bottom-right causal for PyTorch: an explicit boolean mask would leave the fused backends, so
        # q_len > 1 is timed unmasked there (the same bytes; the visible pairs differ by q_len^2 / 2).
        for key, backend in (("torch_flash_ms", SDPBackend.FLASH_ATTENTION), ("torch_cudnn_ms", SDPBackend.CUDNN_ATTENTION)):
            def run():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=s["hkv"] != s["h"])
            try:
                run()
                torch.cuda.synchronize()
                row[key] = cold_ms(run)
            except RuntimeError as err:
                row[key] = None
                row[key.replace("_ms", "_error")] = str(err).splitlines()[0][:100]
        del q, k, v
        torch.cuda.empty_cache()
        e = 2
        row["bytes"] = e * (2 * s["b"] * s["hkv"] * s["skv"] * s["d"] + 2 * s["b"] * s["h"] * s["sq"] * s["d"])
        f = row["fused_ms"]
        others = [x for x in (row["cudnn_ms"], row.get("torch_flash_ms")) if x]
        row["fused_tbs"] = row["bytes"] / (f * 1e-3) / 1e12 if f else None
        row["peak_share"] = row["bytes"] / (f * 1e-3) / peak if f and peak else None
        row["vs_cudnn"] = row["cudnn_ms"] / f if f and row["cudnn_ms"] else None
        row["vs_best"] = min(others) / f if f and others else None
        results.append(row)

        def us(x):
            return f"{x * 1e3:9.1f}" if x else f"{'-':>9}"

        def rat(x, w=7):
            return f"{x:{w}.2f}" if x else f"{'-':>{w}}"
        share = f"{100 * row['peak_share']:6.1f}%" if row["peak_share"] else f"{'-':>7}"
        failed = "" if row["checks_ok"] else "  CHECK FAILED"
        print(f"{label:<30} {us(f)} {us(row['prefill_kernel_ms'])} {us(row['cudnn_ms'])} {us(row.get('torch_flash_ms'))} "
              f"{us(row.get('torch_cudnn_ms'))} {rat(row['fused_tbs'], 10)} {share} {rat(row['vs_cudnn'])} "
              f"{rat(row['vs_best'])}{failed}", flush=True)
    ratios = [r["vs_best"] for r in results if r.get("vs_best")]
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        print(f"fused against the best of cuDNN and PyTorch flash: min {min(ratios):.2f}, geometric mean {gm:.3f} "
              f"over {len(ratios)} shapes")
    if a.json_file:
        json.dump({"device": name, "peak_bytes_per_s": peak, "dtype": a.dtype, "page_size": a.page_size,
                   "rows": results}, open(a.json_file, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
