#!/usr/bin/env python3
"""A Hugging Face training loop for the recorder's memory and window checks (issue 18): a Llama with
random weights (4 layers, hidden 512, 8 heads / 2 KV heads, SDPA attention, bf16 autocast, AdamW)
trains on random tokens for --seconds, each step inside an NVTX range "step".

    python3 train_loop.py --seconds 120            # prints RESULT steps=N seconds=T peak_rss_mb=M
    python3 train_loop.py check TRACE FROM TO      # the trace holds exactly steps FROM..TO, with
                                                   # each step's forward and backward kernels
    python3 train_loop.py --steps 60 [--warmup 15] [--torch-profiler TRACE]
        # the step time: RESULT ms_per_step=X over --steps steps after --warmup ones (torch.profiler
        # recording those steps when asked; its export is timed apart, as export_s)
"""
import argparse
import gzip
import json
import resource
import sys
import time

LAYERS = 4


def rss_now_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def setup(batch, seq):
    import torch
    import transformers as tf

    torch.manual_seed(0)
    cfg = tf.LlamaConfig(vocab_size=8192, hidden_size=512, intermediate_size=1024, num_hidden_layers=LAYERS,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=2048)
    cfg._attn_implementation = "sdpa"
    model = tf.LlamaForCausalLM(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")

    def step(n):
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.range_push(f"tick{n}")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        loss_value = loss.item()  # synchronizes, as a logging step does
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        return loss_value
    return step


def timed(steps, warmup, batch, seq, profile_to):
    import torch
    step = setup(batch, seq)
    for n in range(warmup):
        step(n)
    prof = None
    if profile_to:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
    t0 = time.perf_counter()
    for n in range(warmup, warmup + steps):
        step(n)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / steps
    export_s = 0.0
    if prof is not None:
        t1 = time.perf_counter()
        prof.__exit__(None, None, None)
        prof.export_chrome_trace(profile_to)
        export_s = time.perf_counter() - t1
    print(f"RESULT ms_per_step={ms:.3f} steps={steps} export_s={export_s:.2f} "
          f"peak_rss_mb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


def run(seconds, batch, seq):
    step = setup(batch, seq)
    t0 = time.monotonic()
    steps = 0
    next_report = 0
    while time.monotonic() - t0 < seconds:
        if time.monotonic() - t0 >= next_report:  # resident memory now, to see whether it grows
            print(f"t={time.monotonic() - t0:.0f}s steps={steps} rss_mb={rss_now_mb():.0f}", flush=True)
            next_report += 20
        loss_value = step(steps)
        steps += 1
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"RESULT steps={steps} seconds={time.monotonic() - t0:.1f} peak_rss_mb={rss_mb:.0f} loss={loss_value:.3f}")


def check(path, lo, hi):
    opener = gzip.open if path.endswith(".gz") else open
    events = json.load(opener(path, "rt"))["traceEvents"]
    ticks = sorted(int(e["name"][4:]) for e in events
                   if e.get("cat") == "user_annotation" and e.get("name", "").startswith("tick"))
    steps = sum(e.get("cat") == "user_annotation" and e.get("name") == "step" for e in events)
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") == "kernel"]
    tied = sum(e.get("args", {}).get("correlation") in launches for e in kernels)
    # SDPA's fused forward and backward kernels (FlashAttention, memory-efficient or cuDNN, whichever
    # PyTorch picked): at least one each per layer and step.
    fwd = sum(any(k in e["name"] for k in ("flash_fwd", "cutlassF", "fprop")) for e in kernels)
    bwd = sum(any(k in e["name"] for k in ("flash_bwd", "cutlassB", "bprop")) for e in kernels)
    n = hi - lo + 1
    print(f"{path}: ticks {ticks[:3]}..{ticks[-3:] if ticks else []} ({len(ticks)}), step ranges {steps}, "
          f"{len(kernels)} kernels, {tied} tied to their launch, attention fwd {fwd} bwd {bwd} kernels")
    return (ticks == list(range(lo, hi + 1)) and steps == n and tied == len(kernels) > 0
            and fwd >= n * LAYERS and bwd >= n * LAYERS)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "check":
        sys.exit(0 if check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])) else 1)
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--steps", type=int, default=0, help="time this many steps instead of running --seconds")
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--torch-profiler", default="", metavar="TRACE", help="record the timed steps with torch.profiler")
    a = ap.parse_args()
    if a.steps > 0:
        timed(a.steps, a.warmup, a.batch, a.seq, a.torch_profiler)
    else:
        run(a.seconds, a.batch, a.seq)
