#!/usr/bin/env python3
"""A Hugging Face Llama (random weights) trained with attnprof.attention plugged in through transformers'
attention interface (attnprof.register_transformers), against the same training on SDPA.

One initial model (fp32 weights, bf16 autocast, AdamW), one data stream (each sequence a random 64-token
segment of 64 of the vocabulary's tokens, repeated, so attention has something to learn: copying), the same 50 steps on each implementation,
a step of each in turn (the order turning every step, so host drift falls on all alike): SDPA on its flash
backend, SDPA on cuDNN (the pair gives the noise two correct bf16 kernels show), and attnprof. Checks that attnprof's loss curve stays within that noise of SDPA flash's (every step within
2x the largest flash/cuDNN gap plus 0.02), prints the three curves, the median step time of each, and
profiles two steps of the attnprof run with attnprof.trace_handler: doctor must find the fused kernel's
forward and backward, one call of each per layer per step.
    python3 scripts/gpu/hf_training_check.py [OUT_DIR] [--steps 50]
Needs torch, transformers and attnprof (with CUDA) importable. Exit 1 when a check failed.
"""

import argparse
import contextlib
import copy
import json
import os
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import attnprof

LAYERS, BATCH, SEQ, PERIOD, VOCAB, USED = 4, 8, 1024, 64, 4096, 64


def model_config(impl):
    from transformers import LlamaConfig

    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=LAYERS, num_attention_heads=8,
                      num_key_value_heads=2, vocab_size=VOCAB, max_position_embeddings=SEQ, attention_dropout=0.0)
    cfg._attn_implementation = impl
    return cfg


def batches(steps, seed=1234):
    """The data every run sees: sequences of a random PERIOD-token segment (of the first USED tokens of the
    vocabulary) repeated to SEQ tokens: the model learns which tokens occur, then to copy."""
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        seg = torch.randint(0, USED, (BATCH, PERIOD), generator=g)
        yield seg.repeat(1, SEQ // PERIOD).cuda()


class Run:
    """One implementation's training from the `initial` state dict: its model, optimizer, losses and step times
    (ms). Runs take their steps in turn (step() one at a time), so that the machine's drift over the minutes
    falls on all of them alike."""

    def __init__(self, initial, impl, backend):
        from transformers import LlamaForCausalLM

        torch.manual_seed(0)
        self.model = LlamaForCausalLM(model_config(impl)).cuda()
        self.model.load_state_dict(initial)
        self.model.train()
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=5e-4, weight_decay=0.0)
        self.impl, self.backend = impl, backend
        self.losses, self.times = [], []

    def _step(self, ids):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = self.model(input_ids=ids, labels=ids).loss
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return loss

    def step(self, ids):
        with sdpa_kernel(self.backend) if self.backend is not None else contextlib.nullcontext():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = self._step(ids)
            torch.cuda.synchronize()
            self.times.append((time.perf_counter() - t0) * 1e3)
            self.losses.append(loss.item())

    def profile(self, profile_dir):
        """Two steps (after one warm-up) under torch.profiler with attnprof.trace_handler."""
        handler = attnprof.trace_handler(profile_dir, worker_name=self.impl)
        with sdpa_kernel(self.backend) if self.backend is not None else contextlib.nullcontext():
            with torch.profiler.profile(
                    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                    schedule=torch.profiler.schedule(wait=0, warmup=1, active=2), on_trace_ready=handler) as prof:
                for ids in batches(3, seed=99):
                    self._step(ids)
                    prof.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="hf_training")
    ap.add_argument("--steps", type=int, default=50)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from transformers import LlamaForCausalLM

    name = attnprof.register_transformers()
    print(torch.__version__, torch.cuda.get_device_name(), flush=True)
    torch.manual_seed(0)
    initial = copy.deepcopy(LlamaForCausalLM(model_config("sdpa")).state_dict())
    runs = {label: Run(initial, impl, backend)
            for label, impl, backend in (("sdpa-flash", "sdpa", SDPBackend.FLASH_ATTENTION),
                                         ("sdpa-cudnn", "sdpa", SDPBackend.CUDNN_ATTENTION),
                                         ("attnprof", name, None))}
    labels = list(runs)
    for i, ids in enumerate(batches(args.steps)):  # a step of each in turn, the order turning every step
        for label in labels[i % len(labels):] + labels[:i % len(labels)]:
            runs[label].step(ids)
    for label, run in runs.items():
        print(f"{label}: loss {run.losses[0]:.4f} -> {run.losses[-1]:.4f}", flush=True)
    runs["attnprof"].profile(os.path.join(args.out, "trace"))
    runs = {k: (v.losses, v.times) for k, v in runs.items()}
    flash, cudnn, ours = (runs[k][0] for k in ("sdpa-flash", "sdpa-cudnn", "attnprof"))
    noise = max(abs(a - b) for a, b in zip(flash, cudnn))
    gap = max(abs(a - b) for a, b in zip(flash, ours))
    print(f"\n{'step':>4} {'sdpa-flash':>10} {'sdpa-cudnn':>10} {'attnprof':>10}")
    for i in range(0, args.steps, max(1, args.steps // 10)):
        print(f"{i:>4} {flash[i]:>10.4f} {cudnn[i]:>10.4f} {ours[i]:>10.4f}")
    print(f"{args.steps - 1:>4} {flash[-1]:>10.4f} {cudnn[-1]:>10.4f} {ours[-1]:>10.4f}")
    med = {k: sorted(v[1][5:])[len(v[1][5:]) // 2] for k, v in runs.items()}
    print("median step ms (steps 5..): " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    results = []
    results.append((gap <= 2 * noise + 0.02, f"attnprof's loss within 2x the flash/cuDNN gap + 0.02 of SDPA flash's at "
                                            f"every step: largest gap {gap:.4f}, flash/cuDNN {noise:.4f}"))
    results.append((ours[-1] < ours[0] - 1.0, f"the model learns on attnprof: loss {ours[0]:.3f} -> {ours[-1]:.3f}"))
    # doctor on the profiled steps: the fused kernel's forward and backward, a call each per layer per step.
    trace_dir = os.path.join(args.out, "trace")
    reports = [f for f in os.listdir(trace_dir) if f.endswith(".attnprof.json")]
    if len(reports) == 1:
        report = attnprof.doctor(os.path.join(trace_dir, reports[0][: -len(".attnprof.json")] + ".gz"))
        calls = {(a.implementation, a.pass_): a.calls for a in report.attention}
        want = {("fused", "forward"): LAYERS * 2, ("fused", "backward"): LAYERS * 2}
        results.append((calls == want, f"doctor on two profiled attnprof steps: {calls} (built: {want})"))
        print("\n" + str(report).split("\n\n")[0])
    else:
        results.append((False, f"trace_handler wrote {reports}"))
    json.dump({"losses": {k: v[0] for k, v in runs.items()}, "step_ms": {k: v[1] for k, v in runs.items()}},
              open(os.path.join(args.out, "losses.json"), "w"))
    for ok, what in results:
        print(("PASS " if ok else "FAIL ") + what)
    sys.exit(0 if all(ok for ok, _ in results) else 1)


if __name__ == "__main__":
    main()
