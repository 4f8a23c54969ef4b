#!/usr/bin/env python3
"""Real-program traces for doctor's tests: Hugging Face transformers models with
random weights (no downloads), traced by torch.profiler or by `attnprof record`.

Each variant is a model family, an attention implementation, a dtype and a mode
(inference or a training step with AdamW). What the program does is fixed here,
so the facts a test checks come from how it was built, not from doctor's output:
attention calls per pass = layers x forwards in the traced window, and the
implementation follows from `attn_implementation` and the SDPA backend forced.

  make_corpus.py --out DIR [--only NAME,...]        every torch.profiler variant
  make_corpus.py --run NAME                          one variant, no profiler (for attnprof record)
  make_corpus.py --list                              the variants and their facts (JSON)
  make_corpus.py --set unseen ...                    families kept out of the repository (validation)
  make_corpus.py --set replay ...                    Llama and GPT-2 x eager/math/fused x bf16/fp16 (doctor --replay)

On the GPU machine: scripts/corpus/gpu_corpus.sh does both kinds in one call.
"""
import argparse
import contextlib
import gzip
import json
import os
import shutil
import sys
import time

LAYERS = 2
# torch.profiler schedule: 1 step skipped, 1 warm-up step, 2 recorded steps.
WAIT, WARMUP, ACTIVE = 1, 1, 2
RECORD_STEPS = 3  # steps of a program run under `attnprof record` (all recorded)

# Shapes: realistic head sizes, few layers so the traces stay small.
MODELS = {
    # family: (batch, seq, heads, kv_heads, head_dim, causal)
    "llama": (2, 512, 8, 2, 64, True),
    "mistral": (2, 512, 8, 2, 64, True),
    "gpt2": (2, 512, 8, 8, 64, True),
    "bert": (4, 256, 8, 8, 64, False),
}

# Families kept out of the repository's corpus: doctor's rules are checked on
# them (--set unseen), at larger, D=128 shapes, never tuned to them.
UNSEEN_MODELS = {
    "qwen2": (1, 2048, 16, 4, 128, True),
    "opt": (2, 1024, 16, 16, 64, True),
    "gpt_neox": (1, 2048, 16, 16, 128, True),
    "roberta": (4, 512, 12, 12, 64, False),
}
MODELS.update(UNSEEN_MODELS)

# name -> (family, attn_implementation, forced SDPA backend or None, dtype, mode, tracer)
VARIANTS = {}
UNSEEN = {}


def variant(family, impl, backend, dtype, mode, tracer="torch.profiler", into=None):
    tag = impl if backend is None else f"{impl}-{backend}"
    name = f"{family}_{tag}_{dtype}_{'train' if mode == 'training' else 'infer'}"
    if tracer != "torch.profiler":
        name += "_record"
    (VARIANTS if into is None else into)[name] = dict(family=family, impl=impl, backend=backend, dtype=dtype,
                                                      mode=mode, tracer=tracer)


for v in [
    ("llama", "eager", None, "bf16", "inference"),
    ("llama", "sdpa", None, "bf16", "inference"),
    ("llama", "sdpa", "math", "bf16", "inference"),
    ("llama", "sdpa", "cudnn", "bf16", "inference"),
    ("llama", "sdpa", "flash", "bf16", "training"),
    ("llama", "eager", None, "bf16", "training"),
    ("llama", "sdpa", "math", "bf16", "training"),
    ("llama", "sdpa", None, "fp16", "inference"),
    ("llama", "eager", None, "fp32", "inference"),
    ("gpt2", "eager", None, "fp32", "inference"),
    ("gpt2", "sdpa", None, "fp32", "training"),
    ("gpt2", "eager", None, "bf16", "training"),
    ("gpt2", "sdpa", "math", "bf16", "inference"),
    ("bert", "eager", None, "bf16", "inference"),
    ("bert", "sdpa", None, "fp16", "inference"),
    ("bert", "eager", None, "fp32", "training"),
    ("mistral", "sdpa", None, "bf16", "training"),
    ("mistral", "eager", None, "bf16", "inference"),
    # Added with doctor --replay: cuDNN with attention dropout (GPT-2 trains with p=0.1), eager in fp16.
    ("gpt2", "sdpa", None, "bf16", "training"),
    ("llama", "eager", None, "fp16", "inference"),
]:
    variant(*v)
for v in [
    ("llama", "eager", None, "bf16", "training"),
    ("llama", "sdpa", None, "bf16", "training"),
    ("llama", "sdpa", "math", "bf16", "inference"),
    ("gpt2", "eager", None, "bf16", "inference"),
]:
    variant(*v, tracer="attnprof record")


# Each unseen program twice or more: unfused, then with a fused backend, so the
# fused time doctor estimates for the first can be checked against the second.
for fam, dtype in [("qwen2", "bf16"), ("opt", "fp16"), ("gpt_neox", "bf16"), ("roberta", "fp32")]:
    for impl, backend in [("eager", None), ("sdpa", None), ("sdpa", "math")]:
        for mode in ["inference", "training"]:
            variant(fam, impl, backend, dtype, mode, into=UNSEEN)
for fam, dtype in [("qwen2", "bf16"), ("gpt_neox", "bf16")]:
    variant(fam, "eager", None, dtype, "training", tracer="attnprof record", into=UNSEEN)
    variant(fam, "sdpa", "math", dtype, "inference", tracer="attnprof record", into=UNSEEN)
# The replay check (scripts/corpus/gpu_replay.sh): each program with eager, SDPA-math and fused
# attention, in bf16 and fp16, inference and training, so doctor --replay's saving for the first two
# can be checked against the third's trace; two `attnprof record` runs for shapes without record_shapes.
REPLAY = {}
for fam in ["llama", "gpt2"]:
    for dtype in ["bf16", "fp16"]:
        for impl, backend in [("eager", None), ("sdpa", "math"), ("sdpa", None)]:
            for mode in ["inference", "training"]:
                variant(fam, impl, backend, dtype, mode, into=REPLAY)
variant("llama", "eager", None, "bf16", "inference", tracer="attnprof record", into=REPLAY)
variant("gpt2", "sdpa", "math", "fp16", "inference", tracer="attnprof record", into=REPLAY)
ALL = {**VARIANTS, **UNSEEN, **REPLAY}


def facts(name):
    v = ALL[name]
    b, s, h, hkv, d, causal = MODELS[v["family"]]
    if v["impl"] == "eager":
        implementation = "unfused"
    elif v["backend"] == "math":
        implementation = "sdpa-math"
    else:
        implementation = "fused"  # flash / cuDNN / efficient: math is SDPA's last resort
    recorded = v["tracer"] == "torch.profiler"
    forwards = ACTIVE if recorded else RECORD_STEPS
    per_pass = LAYERS * forwards
    return dict(
        name=name, **v, layers=LAYERS,
        steps=forwards, forwards=forwards,
        shape=dict(batch=b, q_heads=h, kv_heads=hkv, q_len=s, kv_len=s, head_dim=d, causal=causal),
        expected=dict(
            implementation=implementation,
            forward_calls=per_pass,
            backward_calls=per_pass if v["mode"] == "training" else 0,
        ),
    )


def build_model(v):
    import torch
    import transformers as tf

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[v["dtype"]]
    b, s, h, hkv, d, causal = MODELS[v["family"]]
    hidden = h * d
    fam = v["family"]
    if fam == "llama":
        cfg = tf.LlamaConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                             num_hidden_layers=LAYERS, num_attention_heads=h, num_key_value_heads=hkv,
                             max_position_embeddings=4096)
        cls = tf.LlamaForCausalLM
    elif fam == "mistral":
        cfg = tf.MistralConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=LAYERS, num_attention_heads=h, num_key_value_heads=hkv,
                               max_position_embeddings=4096, sliding_window=4096)
        cls = tf.MistralForCausalLM
    elif fam == "gpt2":
        cfg = tf.GPT2Config(vocab_size=4096, n_embd=hidden, n_layer=LAYERS, n_head=h, n_positions=1024)
        cls = tf.GPT2LMHeadModel
    elif fam == "bert":
        cfg = tf.BertConfig(vocab_size=4096, hidden_size=hidden, num_hidden_layers=LAYERS, num_attention_heads=h,
                            intermediate_size=2 * hidden, max_position_embeddings=1024)
        cls = tf.BertForMaskedLM
    elif fam == "qwen2":
        cfg = tf.Qwen2Config(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                             num_hidden_layers=LAYERS, num_attention_heads=h, num_key_value_heads=hkv,
                             max_position_embeddings=4096)
        cls = tf.Qwen2ForCausalLM
    elif fam == "opt":
        cfg = tf.OPTConfig(vocab_size=4096, hidden_size=hidden, ffn_dim=2 * hidden, num_hidden_layers=LAYERS,
                           num_attention_heads=h, max_position_embeddings=2048, word_embed_proj_dim=hidden)
        cls = tf.OPTForCausalLM
    elif fam == "gpt_neox":
        cfg = tf.GPTNeoXConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=LAYERS, num_attention_heads=h, max_position_embeddings=4096)
        cls = tf.GPTNeoXForCausalLM
    elif fam == "roberta":
        cfg = tf.RobertaConfig(vocab_size=4096, hidden_size=hidden, num_hidden_layers=LAYERS, num_attention_heads=h,
                               intermediate_size=2 * hidden, max_position_embeddings=1024)
        cls = tf.RobertaForMaskedLM
    cfg._attn_implementation = v["impl"]
    torch.manual_seed(0)
    model = cls(cfg)
    # Weights made on the CPU and moved, as a checkpoint would be: the host-to-device
    # copies are part of the program (doctor must report them apart from the steps).
    model = model.to(device="cuda", dtype=dtype)
    if v["mode"] == "training":
        model.train()
    else:
        model.eval()
    return model, (b, s)


def backend_context(backend):
    if backend is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel({"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend])


def make_step(v, model, batch, seq):
    import torch

    ids = torch.randint(0, 4096, (batch, seq), device="cuda")
    labels = ids.clone()
    if v["mode"] == "training":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

        def step():
            with backend_context(v["backend"]):
                out = model(input_ids=ids, labels=labels)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        def step():
            with torch.inference_mode(), backend_context(v["backend"]):
                model(input_ids=ids)
    return step


def run_unprofiled(name):
    """The program `attnprof record` traces: every step is recorded, no annotations."""
    import torch

    v = ALL[name]
    model, (b, s) = build_model(v)
    step = make_step(v, model, b, s)
    for _ in range(RECORD_STEPS):
        step()
    torch.cuda.synchronize()


def run_profiled(name, out_dir):
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    v = ALL[name]
    model, (b, s) = build_model(v)
    step = make_step(v, model, b, s)
    path = os.path.join(out_dir, name + ".json")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(path)) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    torch.cuda.synchronize()
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return path + ".gz"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--only", default="")
    ap.add_argument("--run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--set", choices=["corpus", "unseen", "replay"], default="corpus")
    a = ap.parse_args()
    chosen = {"corpus": VARIANTS, "unseen": UNSEEN, "replay": REPLAY}[a.set]
    if a.list:
        json.dump([facts(n) for n in chosen], sys.stdout, indent=1)
        return 0
    if a.run:
        run_unprofiled(a.run)
        return 0
    os.makedirs(a.out, exist_ok=True)
    names = [n for n in chosen if chosen[n]["tracer"] == "torch.profiler"]
    if a.only:
        names = [n for n in names if n in a.only.split(",")]
    failed = 0
    for n in names:
        t0 = time.time()
        try:
            p = run_profiled(n, a.out)
            print(f"ok   {n}: {os.path.getsize(p) // 1024} KiB in {time.time() - t0:.1f} s", flush=True)
        except Exception as e:  # one variant failing must not lose the others
            failed += 1
            print(f"FAIL {n}: {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
