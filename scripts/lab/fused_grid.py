#!/usr/bin/env python3
"""Issue 13's measurement: the fused kernel against cuDNN on the whole case list, with `attnprof bench`
(fused and cudnn in one process, samples interleaved round by round, CUDA events, fresh inputs, fp64
checks), then the issue's verdicts. Run it on a GPU machine from a carried build; run it three times,
each on a freshly started machine, and give the three result folders to --summarize.

    scripts/lab/fused_grid.py run ATTNPROF OUT [--timing cold|hot] [--only WORD] [--repeats N] [--flash]
                              [--deadline SEC] [--resume EARLIER_OUT]   # one run over several calls
    scripts/lab/fused_grid.py summarize OUT1 [OUT2 OUT3]   # medians over the runs, the verdicts, and the
                                                       # lab commands for the slowest cases' tile timers;
                                                       # an OUT may be a .tgz of a run's folder (as kept in
                                                       # benchmarks/results/fused_grid/*.tgz)
    scripts/lab/fused_grid.py list                         # the cases and their bench commands

The cases (from the issue): the 30-shape grid of the fused lab (bf16, BHSD); real GQA in BSHD
(Llama-3-8B-like H32/Hkv8 D128 causal at S 2k/8k/32k, H64/Hkv8 S4k, MQA H16/Hkv1 S2k); edges
(S 1000/2049/4097, Sq512/Skv8192 and the reverse, each top-left and bottom-right, B1 H8 S2k D128,
B128 H32 S256 D128); fp16 on six
D128 shapes. --flash also times PyTorch SDPA's flash backend on each case (cold, as the bench),
for the ratio to PyTorch flash.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time


def case(b, h, s, d, causal, hkv=None, skv=None, dtype="bf16", layout="bhsd", group="grid", bottom_right=False):
    return {"b": b, "h": h, "hkv": hkv or h, "s": s, "skv": skv or s, "d": d, "causal": causal, "dtype": dtype,
            "layout": layout, "group": group, "bottom_right": bottom_right}


def cases():
    out = [case(4, 16, 2048, 64, True), case(4, 16, 2048, 64, False), case(2, 16, 4096, 128, True),
           case(2, 16, 4096, 128, False), case(8, 32, 1024, 128, True), case(1, 16, 8192, 128, True)]
    # The sweep: 16k tokens per batch, 2048 model width (FlashAttention's benchmark convention).
    for d in (64, 128):
        for causal in (False, True):
            for s in (512, 1024, 2048, 4096, 8192, 16384):
                out.append(case(16384 // s, 2048 // d, s, d, causal))
    gqa = dict(layout="bshd", group="gqa")
    out += [case(8, 32, 2048, 128, True, hkv=8, **gqa), case(2, 32, 8192, 128, True, hkv=8, **gqa),
            case(1, 32, 32768, 128, True, hkv=8, **gqa), case(2, 64, 4096, 128, True, hkv=8, **gqa),
            case(8, 16, 2048, 128, True, hkv=1, **gqa)]
    edge = dict(group="edge")
    out += [case(8, 16, 1000, 128, True, **edge), case(4, 16, 2049, 128, True, **edge),
            case(2, 16, 4097, 128, True, **edge), case(2, 16, 512, 128, True, skv=8192, **edge),
            case(2, 16, 8192, 128, True, skv=512, **edge), case(1, 8, 2048, 128, True, **edge),
            case(128, 32, 256, 128, True, **edge)]
    # The same two length pairs with the diagonal at the bottom-right (chunked prefill: 512 new
    # queries over 8192 keys; and 8192 queries over 512 keys, whose first 7680 rows see none).
    out += [case(2, 16, 512, 128, True, skv=8192, bottom_right=True, **edge),
            case(2, 16, 8192, 128, True, skv=512, bottom_right=True, **edge)]
    fp16 = dict(dtype="fp16", group="fp16")
    out += [case(2, 16, 4096, 128, False, **fp16), case(2, 16, 4096, 128, True, **fp16),
            case(8, 16, 2048, 128, False, **fp16), case(1, 16, 16384, 128, True, **fp16),
            case(32, 16, 512, 128, False, **fp16), case(16, 16, 1024, 128, True, **fp16)]
    return out


def name(c):
    kv = f"kv{c['hkv']}" if c["hkv"] != c["h"] else ""
    skv = f"x{c['skv']}" if c["skv"] != c["s"] else ""
    causal = ("_causalbr" if c.get("bottom_right") else "_causal") if c["causal"] else ""
    return f"b{c['b']}h{c['h']}{kv}s{c['s']}{skv}d{c['d']}{causal}_{c['dtype']}_{c['layout']}"


def bench_command(attnprof, c, json_file, timing, repeats):
    cmd = [attnprof, "bench", "--impl", "fused,cudnn", "--interleave", "--device", "cuda", "-b", str(c["b"]),
           "--heads", str(c["h"]), "--kv-heads", str(c["hkv"]), "-s", str(c["s"]), "--kv-seq", str(c["skv"]),
           "-d", str(c["d"]), "--dtype", c["dtype"], "--layout", c["layout"],
           "--causal" if c["causal"] else "--no-causal", "--timing", timing, "--json-file", json_file]
    if c.get("bottom_right"):
        cmd.append("--bottom-right")
    if repeats:
        cmd += ["--repeats", str(repeats)]
    return cmd


def flash_ms(c, repeats):
    """PyTorch SDPA flash on the case, cold (L2 flushed before each call), median ms; None if flash refuses."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dt = torch.bfloat16 if c["dtype"] == "bf16" else torch.float16

    def make(heads, seq):
        if c["layout"] == "bshd":
            return torch.randn(c["b"], seq, heads, c["d"], device="cuda", dtype=dt).transpose(1, 2)
        return torch.randn(c["b"], heads, seq, c["d"], device="cuda", dtype=dt)
    q, k, v = make(c["h"], c["s"]), make(c["hkv"], c["skv"]), make(c["hkv"], c["skv"])
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.int8, device="cuda")

    # Bottom-right: PyTorch's lower-right causal bias, which its flash backend runs as such.
    mask = None
    if c.get("bottom_right"):
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(c["s"], c["skv"])

    def call():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            if mask is not None:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=c["hkv"] != c["h"])
            return F.scaled_dot_product_attention(q, k, v, is_causal=c["causal"], enable_gqa=c["hkv"] != c["h"])
    try:
        call()
    except RuntimeError:
        return None
    times = []
    for _ in range(repeats or 30):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        call()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def bench_env():
    """PyTorch's cuDNN first on the library path (as scripts/gpu/gpu_check.sh does), so `cudnn` runs the
    version PyTorch's cudnn backend runs."""
    env = dict(os.environ)
    try:
        import nvidia.cudnn
        lib = os.path.join(list(nvidia.cudnn.__path__)[0], "lib")
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    except ImportError:
        pass
    return env


def run(a):
    os.makedirs(a.out, exist_ok=True)
    env = bench_env()
    failed = 0
    results = []
    start = time.monotonic()
    left = []
    for c in cases():
        n = name(c)
        if a.only and not any(w in n or w == c["group"] for w in a.only.split(",")):
            continue
        jf = os.path.join(a.out, n + ".json")
        # A case an earlier call of this run measured (--resume DIR: its results, carried here).
        if a.resume and os.path.exists(os.path.join(a.resume, n + ".json")):
            for ext in (".json", ".extra.json", ".log"):
                if os.path.exists(os.path.join(a.resume, n + ext)):
                    shutil.copy(os.path.join(a.resume, n + ext), os.path.join(a.out, n + ext))
            print(f"{n}: from {a.resume}", flush=True)
            continue
        # Past the deadline no case starts, so a call under a time limit ends with its summary.
        if a.deadline and time.monotonic() - start > a.deadline:
            left.append(n)
            continue
        p = subprocess.run(bench_command(a.attnprof, c, jf, a.timing, a.repeats), capture_output=True, text=True,
                           timeout=900, env=env)
        with open(os.path.join(a.out, n + ".log"), "w") as f:
            f.write(p.stdout + p.stderr)
        if p.returncode != 0 or not os.path.exists(jf):
            failed += 1
            print(f"{n}: bench failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}", flush=True)
            continue
        r = {"case": c, "name": n}
        if a.flash:
            r["flash_ms"] = flash_ms(c, a.repeats)
        results.append(r)
        with open(os.path.join(a.out, n + ".extra.json"), "w") as f:
            json.dump(r, f)
        print(f"{n}: done", flush=True)
    print(table(summarize_dirs([a.out])))
    if left:
        print(f"deadline ({a.deadline:.0f} s) passed: {len(left)} cases not run ({', '.join(left)}); run again with "
              f"--resume on this call's results", flush=True)
        return 3
    return 1 if failed else 0


def unpacked(archive, into):
    """A run's folder packed as a .tgz, unpacked into `into`: the folder in it that holds the case
    results (*.json), or None."""
    with tarfile.open(archive) as t:
        members = [m for m in t.getmembers() if (m.isfile() or m.isdir()) and not m.name.startswith(("/", ".."))
                   and ".." not in m.name.split("/")]
        t.extractall(into, members=members)
    for root, _, files in sorted(os.walk(into)):
        if any(f.endswith(".json") and not f.endswith(".extra.json") for f in files):
            return root
    return None


def rows_of(path):
    j = json.load(open(path))
    return {r["name"]: r for r in j["impls"]}, j


def summarize_dirs(dirs):
    """Per case: medians over the runs of fused and cudnn TFLOP/s and their ratio, accuracy, flash."""
    out = []
    for c in cases():
        n = name(c)
        per_run = []
        for i, d in enumerate(dirs):
            jf = os.path.join(d, n + ".json")
            if not os.path.exists(jf):
                continue
            rows, j = rows_of(jf)
            fu, cu = rows.get("fused"), rows.get("cudnn")
            if not fu or not cu or fu.get("skipped") or cu.get("skipped"):
                continue
            extra = os.path.join(d, n + ".extra.json")
            fl = json.load(open(extra)).get("flash_ms") if os.path.exists(extra) else None
            per_run.append({"run": i, "fused": fu["tflops"], "cudnn": cu["tflops"], "ratio": fu["tflops"] / cu["tflops"],
                            "pct_gemm": fu.get("pct_of_gemm"), "fused_err": fu.get("rel_error"),
                            "cudnn_err": cu.get("rel_error"), "checked": fu.get("check_passed"),
                            # FLOPs as attnprof counted them for this case (its report's "flops").
                            "flash": j["flops"] / (fl * 1e-3) / 1e12 if fl else None})
        if not per_run:
            out.append({"case": c, "name": n, "runs": 0})
            continue
        def med(k):
            values = [r[k] for r in per_run if r[k] is not None]
            return statistics.median(values) if values else None
        out.append({"case": c, "name": n, "runs": len(per_run), "fused": med("fused"), "cudnn": med("cudnn"),
                    "ratio": med("ratio"), "pct_gemm": med("pct_gemm"), "flash": med("flash"),
                    "fused_err": max(r["fused_err"] or 0 for r in per_run),
                    "cudnn_err": max(r["cudnn_err"] or 0 for r in per_run),
                    "checked": all(r["checked"] for r in per_run),
                    "by_run": {r["run"]: r["ratio"] for r in per_run}})
    return out


def verdicts(summary):
    """The issue's bars, each (text, passed)."""
    done = [s for s in summary if s["runs"] > 0]
    out = [(f"every case measured ({len(done)} of {len(summary)})", len(done) == len(summary))]
    if not done:
        return out
    long_ = [s for s in done if s["case"]["s"] >= 2048]
    worst_long = min(long_, key=lambda s: s["ratio"]) if long_ else None
    out.append((f"S >= 2k: fused >= 1.03x cuDNN ({sum(s['ratio'] >= 1.03 for s in long_)} of {len(long_)}; "
                f"worst {worst_long['ratio']:.2f} {worst_long['name']})" if worst_long else "S >= 2k: none",
                all(s["ratio"] >= 1.03 for s in long_)))
    worst = min(done, key=lambda s: s["ratio"])
    out.append((f"every case >= 0.95x ({sum(s['ratio'] >= 0.95 for s in done)} of {len(done)}; worst "
                f"{worst['ratio']:.2f} {worst['name']})", all(s["ratio"] >= 0.95 for s in done)))
    g = math.exp(sum(math.log(s["ratio"]) for s in done) / len(done))
    # Each run's own geometric mean beside the medians' (over the cases that run measured).
    runs = sorted({i for s in done for i in s.get("by_run", {})})
    each = [[math.log(s["by_run"][i]) for s in done if i in s.get("by_run", {})] for i in runs]
    per_run = f"; runs: {', '.join('%.3f' % math.exp(sum(v) / len(v)) for v in each)}" if len(runs) > 1 else ""
    out.append((f"geometric mean >= 1.05x ({g:.3f}{per_run})", g >= 1.05))
    big = [s for s in done if s["case"]["d"] == 128 and not s["case"]["causal"] and s["case"]["s"] >= 4096
           and s["case"]["skv"] >= 4096]
    rates = ", ".join("%.0f" % s["fused"] for s in big)
    out.append((f"D128 full S >= 4k >= 650 TFLOP/s ({rates})", bool(big) and all(s["fused"] >= 650 for s in big)))
    acc = [s for s in done if s["case"]["dtype"] == "bf16"]
    bad = [s["name"] for s in acc if not s["fused_err"] <= max(1.1 * s["cudnn_err"], 2.5e-3)]
    out.append((f"bf16 error <= max(1.1x cuDNN's, 2.5e-3) ({len(acc) - len(bad)} of {len(acc)}"
                f"{'; not: ' + ', '.join(bad[:4]) if bad else ''})", not bad))
    out.append(("every fused output passed the fp64 check", all(s["checked"] for s in done)))
    return out


def table(summary):
    lines = ["| case | runs | fused TFLOP/s | % GEMM | cuDNN | fused/cuDNN | PyTorch flash | fused/flash | rel err "
             "(fused, cuDNN) |", "|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        if s["runs"] == 0:
            lines.append(f"| {s['name']} | 0 | | | | | | | |")
            continue
        fl = f"{s['flash']:.1f}" if s["flash"] else "-"
        flr = f"{s['fused'] / s['flash']:.2f}" if s["flash"] else "-"
        pg = f"{s['pct_gemm']:.0f}" if s["pct_gemm"] else "-"
        lines.append(f"| {s['name']} | {s['runs']} | {s['fused']:.1f} | {pg} | {s['cudnn']:.1f} | {s['ratio']:.3f} | "
                     f"{fl} | {flr} | {s['fused_err']:.2e}, {s['cudnn_err']:.2e} |")
    lines.append("")
    lines += [f"{'PASS' if ok else 'FAIL'} {text}" for text, ok in verdicts(summary)]
    slowest = sorted((s for s in summary if s["runs"] > 0), key=lambda s: s["ratio"])[:3]
    if slowest:
        lines.append("\nper-tile timers of the three slowest (bf16; on the GPU machine, from the carried build):")
        lines += [f"  attnprof_fused_lab --timers --path one_tile,persistent --shape {timer_shape(s['case'])}"
                  for s in slowest]
    return "\n".join(lines)


def timer_shape(c):
    """The lab's --shape for a case: B,H,HKV,S,SKV,D,CAUSAL[,bshd]."""
    causal = (2 if c.get("bottom_right") else 1) if c["causal"] else 0
    text = f"{c['b']},{c['h']},{c['hkv']},{c['s']},{c['skv']},{c['d']},{causal}"
    return text + (",bshd" if c["layout"] == "bshd" else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("attnprof")
    r.add_argument("out")
    r.add_argument("--timing", default="cold", choices=["cold", "hot"])
    r.add_argument("--only", default="", help="comma-separated: a group (grid, gqa, edge, fp16) or part of a name")
    r.add_argument("--repeats", type=int, default=0)
    r.add_argument("--flash", action="store_true", help="also time PyTorch SDPA flash on each case")
    r.add_argument("--deadline", type=float, default=0,
                   help="seconds after which no new case starts (a call under a time limit ends with its summary)")
    r.add_argument("--resume", default="", help="a folder of this run's earlier results: those cases are copied, not rerun")
    s = sub.add_parser("summarize")
    s.add_argument("dirs", nargs="+")
    sub.add_parser("list")
    a = ap.parse_args()
    if a.what == "list":
        for c in cases():
            print(f"{c['group']:5s} {name(c)}: {' '.join(bench_command('attnprof', c, name(c) + '.json', 'cold', 0))}")
        return 0
    if a.what == "summarize":
        with tempfile.TemporaryDirectory() as tmp:
            dirs = []
            for i, d in enumerate(a.dirs):
                if os.path.isfile(d) and tarfile.is_tarfile(d):
                    d = unpacked(d, os.path.join(tmp, str(i)))
                if not d or not os.path.isdir(d):
                    sys.stderr.write(f"fused_grid.py: {a.dirs[i]}: not a folder of results nor a .tgz of one\n")
                    return 2
                dirs.append(d)
            print(table(summarize_dirs(dirs)))
        return 0
    return run(a)


if __name__ == "__main__":
    sys.exit(main())
