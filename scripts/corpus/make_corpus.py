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
  make_corpus.py --set wild ...                      what real programs do beyond one plain forward (validation)
  make_corpus.py --set serving|decode ...            inference as served; decode over batch, cache length, GQA/MQA

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

# A second validation set, also kept out of the repository (--set wild): families whose
# attention is built differently (ALiBi through baddbmm, D=96, D=256 with MQA, MQA broadcast
# into SDPA, encoder-decoders with cross-attention, a ViT at 197 tokens) and programs that
# are more than one plain forward per step (generate() with a KV cache, autocast, padding
# masks, torch.compile, flex_attention).
WILD_MODELS = {
    "bloom": (2, 512, 8, 8, 64, True),
    "gemma": (2, 512, 8, 1, 256, True),
    "phi3": (2, 512, 16, 16, 96, True),
    "falcon": (2, 512, 16, 1, 64, True),  # multi_query: one K/V head
    "gpt_bigcode": (2, 512, 16, 1, 64, True),
    "t5": (2, 512, 8, 8, 64, False),  # the encoder's; the decoder runs DEC_LEN tokens
    "bart": (2, 512, 8, 8, 64, False),
    "vit": (4, 197, 12, 12, 64, False),  # 224x224 pixels in 16x16 patches, plus [CLS]
}
MODELS.update(WILD_MODELS)
# Attention forms beyond softmax(QK^T / sqrt(d)) V (--set forms): Gemma 2's soft-capped logits (tanh),
# GPT-OSS's sink logits (a learned column beside the scores), and torch.nn.MultiheadAttention
# returning its weights (need_weights=True, the default) against need_weights=False.
FORM_MODELS = {
    "gemma2": (2, 512, 8, 4, 128, True),  # attn_logit_softcapping 50
    "gpt_oss": (2, 512, 8, 2, 64, True),  # sinks; every layer full attention (no sliding window)
    "mha": (4, 256, 8, 8, 64, False),  # nn.MultiheadAttention(batch_first=True), self-attention, no mask
}
MODELS.update(FORM_MODELS)
SOFTCAP = 50.0
ENCODER_DECODER = {"t5", "bart"}  # per forward: encoder self, decoder self and cross attention
DEC_LEN = 128
GEN_TOKENS = 16  # generate(): one prefill and 15 decode forwards per step
DECODE_MAX_QUERY_ROWS = 16  # doctor's kDecodeMaxQueryRows (src/analysis/attention.h): a decode's query rows
# Continuous batching (kind continuous): the requests' prompt lengths (one generate_batch call a step),
# the paged cache's page size and room, and the token budget of a forward (all prompts fit in one).
CB_PROMPTS = [512, 384, 300, 200, 128, 100, 64, 33]
CB_PAGE = 64
CB_PAGES = 64  # 4096 tokens: every request's prompt and 16 tokens, with room to spare
CB_BATCH_TOKENS = 2048
# Other request mixes (kinds continuous_<name>; torch.profiler and attnprof record each): 16 requests (16
# packed decode queries), its prefill a wave of cuDNN's CTAs; 8 long prompts, the prefill several waves; 32
# short ones, more packed decode queries than a sequence's 16.
CB_PROMPT_SETS = {
    "continuous_wide": [400, 90, 150, 60, 230, 45, 120, 75, 30, 180, 55, 20, 100, 40, 65, 25],
    "continuous_long": [2048, 1500, 1200, 900, 700, 500, 300, 200],
    "continuous_many": [70, 45, 60, 33, 52, 41, 66, 38, 25, 57, 49, 62, 30, 44, 71, 36,
                        28, 53, 47, 64, 39, 58, 35, 50, 42, 69, 31, 55, 46, 61, 34, 48],
}


def cb_prompts(kind):
    """The prompt lengths of a continuous-batching kind's requests."""
    return CB_PROMPT_SETS.get(kind, CB_PROMPTS)


def cb_pages(prompts):
    """Pages for every request's prompt and GEN_TOKENS tokens twice over (at least CB_PAGES): with room for
    just once, the manager held a long mix's 500-token request back for a second prefill (H100, 2026-12-06)."""
    return max(CB_PAGES, 2 * sum(-(-(n + GEN_TOKENS) // CB_PAGE) for n in prompts))
# flex_attention's paged decode (kind flex_paged): FLEX_SEQS sequences of these cached lengths, pages of
# FLEX_PAGE tokens, GEN_TOKENS decode tokens a step.
FLEX_LENS = [1000, 700, 2048, 1500]
FLEX_PAGE = 128
FLEX_MAX = 4096
# Kinds whose programs run another shape than their family's: (batch, seq, heads, kv_heads, head_dim, causal).
KIND_SHAPES = {"generate_b32": (32, 2048, 16, 4, 128, True)}


def program_shape(v):
    """(batch, seq, heads, kv_heads, head_dim, causal) of variant v: its own, its kind's, else its family's."""
    return tuple(v["dims"]) if "dims" in v else KIND_SHAPES.get(v.get("kind"), MODELS[v["family"]])

# name -> (family, attn_implementation, forced SDPA backend or None, dtype, mode, tracer)
VARIANTS = {}
UNSEEN = {}


def variant(family, impl, backend, dtype, mode, tracer="torch.profiler", into=None, kind="plain", shape=None):
    """shape: (batch, seq, heads, kv_heads, head_dim, causal) instead of the family's (and the kind's), named
    in the variant's name."""
    tag = impl if backend is None else f"{impl}-{backend}"
    name = f"{family}_{tag}_{dtype}_{'train' if mode == 'training' else 'infer'}"
    if kind != "plain":
        name += "_" + kind
    if shape is not None:
        b, s, h, hkv, d, _ = shape
        name += f"_b{b}_s{s}_h{h}kv{hkv}_d{d}"
    if tracer != "torch.profiler":
        name += "_record"
    v = dict(family=family, impl=impl, backend=backend, dtype=dtype, mode=mode, tracer=tracer)
    if kind != "plain":
        v["kind"] = kind
    if shape is not None:
        v["dims"] = list(shape)
    (VARIANTS if into is None else into)[name] = v


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
    # An encoder on SDPA math (not causal): the fix must not say is_causal.
    ("bert", "sdpa", "math", "bf16", "inference"),
]:
    variant(*v)
for v in [
    ("llama", "eager", None, "bf16", "training"),
    ("llama", "sdpa", None, "bf16", "training"),
    ("llama", "sdpa", "math", "bf16", "inference"),
    ("gpt2", "eager", None, "bf16", "inference"),
    ("bert", "sdpa", "math", "bf16", "inference"),
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
# kind: generate (model.generate, KV cache), amp (fp32 weights under torch.autocast to dtype),
# padded (a batch with padding in its attention_mask), compile (torch.compile(model)), cudagraph
# (torch.compile mode="reduce-overhead"), checkpoint (gradient checkpointing), stack (the profiler
# with with_stack and profile_memory).
WILD = {}
for v in [
    ("bloom", "eager", None, "bf16", "inference"),
    ("bloom", "eager", None, "bf16", "training"),
    ("gemma", "sdpa", None, "bf16", "inference"),
    ("gemma", "eager", None, "bf16", "training"),
    ("phi3", "sdpa", "math", "fp16", "inference"),
    ("phi3", "sdpa", None, "fp16", "training"),
    ("falcon", "sdpa", None, "bf16", "inference"),
    ("gpt_bigcode", "sdpa", None, "bf16", "training"),
    ("t5", "eager", None, "fp32", "inference"),
    ("t5", "sdpa", None, "bf16", "inference"),
    ("bart", "sdpa", None, "fp16", "training"),
    ("bart", "eager", None, "bf16", "inference"),
    ("vit", "sdpa", None, "bf16", "inference"),
    ("vit", "eager", None, "fp16", "training"),
    ("llama", "sdpa", None, "bf16", "inference", "generate"),
    ("llama", "eager", None, "bf16", "inference", "generate"),
    ("llama", "sdpa", None, "bf16", "training", "amp"),
    ("gpt2", "eager", None, "fp16", "training", "amp"),
    ("bert", "sdpa", None, "bf16", "inference", "padded"),
    ("bert", "eager", None, "fp32", "inference", "padded"),
    ("llama", "sdpa", None, "bf16", "inference", "padded"),
    ("llama", "eager", None, "bf16", "inference", "compile"),
    ("gpt2", "eager", None, "bf16", "training", "compile"),
    ("llama", "sdpa", None, "bf16", "training", "compile"),
    ("llama", "flex_attention", None, "bf16", "inference"),
    # Added after run 91's fixes, as their holdout: the same regimes on other programs.
    ("mistral", "eager", None, "bf16", "inference", "compile"),
    ("gpt_neox", "eager", None, "fp16", "training", "compile"),
    ("qwen2", "sdpa", None, "fp16", "training", "amp"),
    ("llama", "flex_attention", None, "bf16", "training"),
    ("falcon", "sdpa", None, "bf16", "training"),
    # Added in session 16 after run 92, unseen by every fix so far.
    ("llama", "sdpa", None, "bf16", "inference", "cudagraph"),
    ("llama", "eager", None, "bf16", "inference", "cudagraph"),
    ("llama", "sdpa", None, "bf16", "training", "checkpoint"),
    ("gpt2", "eager", None, "bf16", "training", "checkpoint"),
    ("llama", "sdpa", None, "bf16", "training", "stack"),
    ("mistral", "eager", None, "bf16", "training", "stack"),
    # Added in session 16 after run 93's fixes, as their holdout.
    ("gpt2", "sdpa", None, "bf16", "inference", "cudagraph"),
    ("qwen2", "eager", None, "fp16", "inference", "cudagraph"),
    ("mistral", "sdpa", None, "bf16", "inference", "compile"),
    ("bert", "eager", None, "bf16", "training", "compile"),
    ("gemma", "sdpa", None, "bf16", "training", "checkpoint"),
    ("opt", "eager", None, "fp16", "training", "stack"),
    ("t5", "eager", None, "bf16", "training"),
    ("llama", "sdpa", None, "bf16", "training", "padded"),
    ("bart", "sdpa", None, "bf16", "inference", "generate"),
    # Added at session 16's end: decoding beyond the dynamic cache.
    ("llama", "flex_attention", None, "bf16", "inference", "generate"),
    ("llama", "sdpa", None, "bf16", "inference", "generate_static"),
]:
    variant(*v[:5], into=WILD, kind=v[5] if len(v) > 5 else "plain")
variant("bloom", "eager", None, "bf16", "training", tracer="attnprof record", into=WILD)
variant("t5", "sdpa", None, "bf16", "inference", tracer="attnprof record", into=WILD)
variant("llama", "sdpa", None, "bf16", "inference", tracer="attnprof record", into=WILD, kind="generate")
# The compiled programs recorded whole: the first step compiles (Inductor autotunes its Triton
# kernels there, running them several times), the next ones run the compiled code or its graph.
variant("llama", "eager", None, "bf16", "inference", tracer="attnprof record", into=WILD, kind="compile")
variant("gpt2", "eager", None, "bf16", "training", tracer="attnprof record", into=WILD, kind="compile")
variant("llama", "sdpa", None, "bf16", "inference", tracer="attnprof record", into=WILD, kind="cudagraph")
# The forms: each unfused form in both passes, beside what runs it fused where transformers offers one
# (flex_attention soft-caps through a score_mod and applies sinks through its log-sum-exp; for MHA,
# need_weights=False lets it call SDPA). Gemma 2 on "sdpa" runs SDPA without the soft-capping (kept to
# show it: fused, but not the same scores); transformers refuses "sdpa" for GPT-OSS.
FORMS = {}
for fam, impls in [("gemma2", ["eager", "flex_attention", "sdpa"]), ("gpt_oss", ["eager", "flex_attention"]),
                   ("mha", ["need_weights", "no_weights"])]:
    for impl in impls:
        for mode in ["inference", "training"]:
            variant(fam, impl, None, "bf16", mode, into=FORMS)
variant("mha", "need_weights", None, "bf16", "training", into=FORMS, kind="stack")
# Position biases added to the scores: Bloom's ALiBi (through baddbmm's input), T5's learned relative
# bias per head (added before the softmax; its SDPA twin hands the bias to SDPA as attn_mask).
for fam, impls in [("bloom", ["eager"]), ("t5", ["eager", "sdpa"])]:
    for impl in impls:
        variant(fam, impl, None, "bf16", "training", into=FORMS)
variant("gemma2", "eager", None, "bf16", "training", tracer="attnprof record", into=FORMS)
# Inference as served (--set serving): generate() with a dynamic cache, eager against SDPA (the fused
# twin measures what the decode calls' fused estimate should be), GQA at two sizes.
SERVING = {}
for fam in ["llama", "qwen2"]:
    for impl in ["eager", "sdpa"]:
        variant(fam, impl, None, "bf16", "inference", into=SERVING, kind="generate")
# Decode where the bytes count: 32 sequences of a 2048-token prompt (K and V: 134 MB a decode call in bf16).
for impl in ["eager", "sdpa"]:
    variant("qwen2", impl, None, "bf16", "inference", into=SERVING, kind="generate_b32")
variant("qwen2", "sdpa", None, "bf16", "inference", tracer="attnprof record", into=SERVING, kind="generate")
# A static cache (preallocated, written in place: no torch.cat), which generate() runs compiled.
variant("qwen2", "sdpa", None, "bf16", "inference", into=SERVING, kind="generate_static")
variant("llama", "sdpa", None, "bf16", "inference", into=SERVING, kind="generate_static")
# Continuous batching (transformers' generate_batch) on its paged cache: CB_PROMPTS requests a step,
# all prefilled in one packed forward (max_batch_tokens holds them), then GEN_TOKENS - 1 forwards each
# decoding one token of every request, packed into one sequence of len(CB_PROMPTS) query tokens (batch 1)
# against the request's gathered cache. attn_implementation "paged|sdpa" (SDPA with a block-diagonal
# float mask) and "paged|eager"; both gather each layer's pages into contiguous K/V (index_select) every
# forward that reads the cache. Traced by torch.profiler (all threads: the manager's generation thread
# launches the work) and by attnprof record.
for impl in ["paged-sdpa", "paged-eager"]:
    variant("llama", impl, None, "bf16", "inference", into=SERVING, kind="continuous")
variant("llama", "paged-sdpa", None, "bf16", "inference", tracer="attnprof record", into=SERVING, kind="continuous")
for kind in CB_PROMPT_SETS:
    for tracer in ["torch.profiler", "attnprof record"]:
        variant("llama", "paged-sdpa", None, "bf16", "inference", tracer=tracer, into=SERVING, kind=kind)
# The same with the manager's CUDA graphs (use_cuda_graph=True): forwards replay graphs captured per
# padded batch size, some of them inside the traced steps.
variant("llama", "paged-sdpa", None, "bf16", "inference", into=SERVING, kind="continuous_graph")
# flex_attention's paged attention (torch.nn.attention.experimental._paged_attention.PagedAttention): a
# decode loop as a serving engine writes it, LAYERS attention calls a token over a shared page pool of
# FLEX_PAGE-token pages, each sequence's K/V written through its page table, flex_attention compiled
# (its decode template) with the block mask converted to physical pages.
variant("llama", "flex_paged", None, "bf16", "inference", into=SERVING, kind="flex_paged")
variant("llama", "flex_paged", None, "bf16", "inference", tracer="attnprof record", into=SERVING, kind="flex_paged")
# Decode across its regimes (--set decode, kept out of the repository but for one pair): generate() on
# Llama-shaped models over a grid of batch 1-64, prompts of 1k-32k tokens, GQA and MQA, D64/D128,
# bf16/fp16; a dynamic cache eager against SDPA (the twin measures what the eager decode calls' fused
# estimate should be), each under both tracers; a static cache (generate() compiles its decode
# step with mode="reduce-overhead": CUDA graph replays) under both tracers.
DECODE = {}
DECODE_DYNAMIC = [(1, 1024, 16, 4, 128, "bf16"), (4, 8192, 8, 1, 128, "fp16"), (16, 4096, 16, 4, 128, "bf16"),
                  (64, 1024, 32, 8, 64, "fp16"), (1, 32768, 4, 1, 128, "bf16")]
DECODE_STATIC = [(8, 4096, 16, 4, 128, "bf16"), (64, 1024, 8, 1, 64, "fp16")]
for b, s, h, hkv, d, dtype in DECODE_DYNAMIC:
    for impl in ["eager", "sdpa"]:
        for tracer in ["torch.profiler", "attnprof record"]:
            variant("llama", impl, None, dtype, "inference", tracer=tracer, into=DECODE, kind="generate",
                    shape=(b, s, h, hkv, d, True))
for b, s, h, hkv, d, dtype in DECODE_STATIC:
    for tracer in ["torch.profiler", "attnprof record"]:
        variant("llama", "sdpa", None, dtype, "inference", tracer=tracer, into=DECODE, kind="generate_static",
                shape=(b, s, h, hkv, d, True))
ALL = {**VARIANTS, **UNSEEN, **REPLAY, **WILD, **FORMS, **SERVING, **DECODE}


def facts(name):
    v = ALL[name]
    b, s, h, hkv, d, causal = program_shape(v)
    if v["impl"] in ("eager", "need_weights", "paged-eager"):
        implementation = "unfused"
    elif v["backend"] == "math":
        implementation = "sdpa-math"
    elif v["family"] == "falcon":
        # Falcon hands SDPA its single K/V head against 16 query heads without enable_gqa; PyTorch's
        # fused backends all require equal head counts then (sdp_utils), so the call runs on math.
        implementation = "sdpa-math"
    else:
        implementation = "fused"  # flash / cuDNN / efficient / flex: math is SDPA's last resort
    recorded = v["tracer"] == "torch.profiler"
    steps = ACTIVE if recorded else RECORD_STEPS
    forwards = steps * (GEN_TOKENS if v.get("kind", "").startswith("generate") else 1)
    attention_layers = LAYERS * (3 if v["family"] in ENCODER_DECODER else 1)
    per_pass = attention_layers * forwards
    if v["family"] in ENCODER_DECODER and v.get("kind") == "generate":
        # generate() runs the encoder once, then the decoder (self and cross attention) per token
        per_pass = steps * LAYERS * (1 + 2 * GEN_TOKENS)
    expected = dict(
        implementation=implementation,
        # gradient checkpointing: every layer's forward again during the backward pass
        forward_calls=per_pass * (2 if v.get("kind") == "checkpoint" else 1),
        backward_calls=per_pass if v["mode"] == "training" else 0,
    )
    if v.get("kind", "").startswith("generate") and v["family"] not in ENCODER_DECODER:
        # One prefill forward over the prompt, then a decode forward per further token, each reading the
        # cache of the prompt and the tokens so far: q_len 1, kv_len s+1 .. s+GEN_TOKENS-1.
        expected["phases"] = {"prefill": steps * LAYERS, "decode": steps * LAYERS * (GEN_TOKENS - 1)}
        if v.get("kind") != "generate_static":
            expected["decode_kv_len"] = [s + 1, s + GEN_TOKENS - 1]
        else:  # generate() sizes a static cache max_length - 1 (the last token is never fed); each decode
            expected["decode_kv_len"] = [s + GEN_TOKENS - 1] * 2  # call reads all of it, masked
        # transformers' default DynamicCache appends each token's K and V with torch.cat, per layer; a
        # static cache is written in place
        expected["kv_cache"] = "static" if v.get("kind") == "generate_static" else "dynamic"
    if v.get("kind", "").startswith("continuous"):
        # One packed prefill forward of every prompt (batch 1, their tokens side by side, a block-diagonal
        # causal mask), then GEN_TOKENS - 1 forwards of one query token a request, packed the same way,
        # against every request's cache gathered from the pages (index_select of K and V a layer).
        prompts = cb_prompts(v["kind"])
        n, total = len(prompts), sum(prompts)
        # More packed decode queries than a sequence's 16 are a forward doctor calls mixed from its shape
        # (its rows one token of each of many requests or a prompt's chunk: the shape does not say); without
        # shapes (attnprof record) a decode by its kernels' launches and times, where they tell it.
        forwards = steps * GEN_TOKENS
        cached = "decode" if n <= DECODE_MAX_QUERY_ROWS or v["tracer"] != "torch.profiler" else "mixed"
        expected.update(forward_calls=LAYERS * forwards, backward_calls=0,
                        phases={"prefill": steps * LAYERS, cached: steps * LAYERS * (GEN_TOKENS - 1)},
                        decode_q_len=n, decode_kv_len=[total + n, total + n * (GEN_TOKENS - 1)],
                        prefill_q_len=total, kv_cache="paged", page_size=CB_PAGE, packed_batch=1,
                        kv_gathers=2 * LAYERS * (GEN_TOKENS - 1) * steps)
    if v.get("kind") == "continuous_graph":
        # The manager pads each forward to a size it captured a graph of (queries and the gathered keys)
        # and runs forwards of its own around the captures: neither the forwards nor the phases are the
        # requests'. What stays as built: the model's heads and head dim, one packed sequence.
        expected.update(forward_calls=None, graphs=True)
        for k in ("phases", "decode_q_len", "decode_kv_len", "prefill_q_len", "kv_gathers"):
            expected.pop(k, None)
    if v.get("kind") == "flex_paged":
        # No prefill call (the prompts' K/V are written through the page table), GEN_TOKENS decode tokens a
        # step, LAYERS calls each: q [seqs, heads, 1, d] against the page pool [1, kv_heads, pages x page, d].
        forwards = steps * GEN_TOKENS
        expected.update(forward_calls=LAYERS * forwards, backward_calls=0,
                        phases={"prefill": 0, "decode": LAYERS * forwards}, kv_cache="paged", page_size=FLEX_PAGE,
                        decode_q_len=1, decode_batch=len(FLEX_LENS), kv_pool_tokens=len(FLEX_LENS) * FLEX_MAX)
        if not recorded:  # Triton's kernel names carry no dtype and a recorded trace has no ops: unknown
            expected["precision"] = [v["dtype"], None]
    if v.get("kind") == "cudagraph" and v["dtype"] in ("bf16", "fp16"):
        # A graph replay's kernels have no ATen op (no record_shapes types) and Inductor's Triton,
        # cuBLAS's and cuDNN's kernel names say only "half": which one, only other kernels of the
        # trace can tell (a whole program recorded has the weights' casts; a profiled step may not).
        expected["precision"] = [v["dtype"], "bf16/fp16"]
    if v["family"] == "t5" and implementation == "fused":
        # T5 hands SDPA its relative-position bias as attn_mask, a permuted view whose last dim has stride
        # `heads` (T5Attention.compute_bias); PyTorch's fused backends need stride 1 there, so the encoder's
        # and the decoder's self-attention run on math. Cross-attention's bias is a fresh zeros tensor,
        # contiguous: fused.
        expected["implementation"] = "mixed"
        back = 1 if v["mode"] == "training" else 0
        expected["calls_by_implementation"] = {
            "sdpa-math": {"forward": 2 * LAYERS * forwards, "backward": back * 2 * LAYERS * forwards},
            "fused": {"forward": LAYERS * forwards, "backward": back * LAYERS * forwards},
        }
    # flex_attention computes Gemma 2's soft-capping; for GPT-OSS, transformers 5.17's flex path gives other
    # logits than eager's (scripts/corpus/forms_check.py): not the sinks.
    form = {("gemma2", "eager"): "softcap", ("gemma2", "flex_attention"): "softcap",
            ("gpt_oss", "eager"): "sinks", ("bloom", "eager"): "alibi", ("t5", "eager"): "bias"}.get(
        (v["family"], v["impl"]))
    if form:
        expected["form"] = form  # what the scores get before the softmax (the unfused calls show it)
    if v["family"] == "mha" and v["impl"] == "need_weights":
        expected["form"] = "weights"  # the averaged attention weights returned: the module's math path
    shape = dict(batch=b, q_heads=h, kv_heads=hkv, q_len=s, kv_len=s, head_dim=d, causal=causal)
    if v.get("kind", "").startswith("continuous"):  # the packed prefill: every prompt's tokens side by side, batch 1
        shape.update(batch=1, q_len=sum(cb_prompts(v["kind"])), kv_len=sum(cb_prompts(v["kind"])))
    if v.get("kind") == "flex_paged":  # a decode token a sequence against its pages (at most FLEX_MAX keys)
        shape.update(batch=len(FLEX_LENS), q_len=1, kv_len=FLEX_MAX, causal=False)
    if v["family"] in ENCODER_DECODER:
        shape["decoder_len"] = DEC_LEN  # the decoder's self-attention is DEC_LEN x DEC_LEN, its cross DEC_LEN x s
    return dict(
        name=name, **v, layers=attention_layers,
        steps=steps, forwards=forwards,
        shape=shape,
        expected=expected,
    )


def build_model(v, shape=None, layers=None):
    """The model of variant v, on the GPU; shape (MODELS' tuple) and layers override the family's
    (make_steps.py's larger regime)."""
    import torch
    import transformers as tf

    layers = LAYERS if layers is None else layers

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[v["dtype"]]
    b, s, h, hkv, d, causal = shape or program_shape(v)
    hidden = h * d
    fam = v["family"]
    if v["impl"] == "flex_paged":  # no model: make_step's decode loop holds the pages and the layers' caches
        return None, (len(FLEX_LENS), 1)
    if fam == "llama":
        cfg = tf.LlamaConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                             num_hidden_layers=layers, num_attention_heads=h, num_key_value_heads=hkv,
                             max_position_embeddings=max(4096, s + GEN_TOKENS))
        cls = tf.LlamaForCausalLM
    elif fam == "mistral":
        cfg = tf.MistralConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=layers, num_attention_heads=h, num_key_value_heads=hkv,
                               max_position_embeddings=4096, sliding_window=4096)
        cls = tf.MistralForCausalLM
    elif fam == "gpt2":
        cfg = tf.GPT2Config(vocab_size=4096, n_embd=hidden, n_layer=layers, n_head=h, n_positions=1024)
        cls = tf.GPT2LMHeadModel
    elif fam == "bert":
        cfg = tf.BertConfig(vocab_size=4096, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=h,
                            intermediate_size=2 * hidden, max_position_embeddings=1024)
        cls = tf.BertForMaskedLM
    elif fam == "qwen2":
        cfg = tf.Qwen2Config(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                             num_hidden_layers=layers, num_attention_heads=h, num_key_value_heads=hkv,
                             max_position_embeddings=4096)
        cls = tf.Qwen2ForCausalLM
    elif fam == "opt":
        cfg = tf.OPTConfig(vocab_size=4096, hidden_size=hidden, ffn_dim=2 * hidden, num_hidden_layers=layers,
                           num_attention_heads=h, max_position_embeddings=2048, word_embed_proj_dim=hidden)
        cls = tf.OPTForCausalLM
    elif fam == "gpt_neox":
        cfg = tf.GPTNeoXConfig(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden,
                               num_hidden_layers=layers, num_attention_heads=h, max_position_embeddings=4096)
        cls = tf.GPTNeoXForCausalLM
    elif fam == "roberta":
        cfg = tf.RobertaConfig(vocab_size=4096, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=h,
                               intermediate_size=2 * hidden, max_position_embeddings=1024)
        cls = tf.RobertaForMaskedLM
    elif fam == "bloom":  # ALiBi: the scores come from baddbmm; eager only
        cfg = tf.BloomConfig(vocab_size=4096, hidden_size=hidden, n_layer=layers, n_head=h)
        cls = tf.BloomForCausalLM
    elif fam == "gemma":
        cfg = tf.GemmaConfig(vocab_size=4096, hidden_size=2048, intermediate_size=4096, num_hidden_layers=layers,
                             num_attention_heads=h, num_key_value_heads=hkv, head_dim=d, max_position_embeddings=4096)
        cls = tf.GemmaForCausalLM
    elif fam == "phi3":
        cfg = tf.Phi3Config(vocab_size=4096, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                            num_attention_heads=h, num_key_value_heads=hkv, max_position_embeddings=4096,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cls = tf.Phi3ForCausalLM
    elif fam == "falcon":
        cfg = tf.FalconConfig(vocab_size=4096, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=h,
                              multi_query=True, new_decoder_architecture=False, alibi=False, parallel_attn=True)
        cls = tf.FalconForCausalLM
    elif fam == "gpt_bigcode":
        cfg = tf.GPTBigCodeConfig(vocab_size=4096, n_embd=hidden, n_layer=layers, n_head=h, multi_query=True,
                                  n_positions=1024)
        cls = tf.GPTBigCodeForCausalLM
    elif fam == "t5":
        cfg = tf.T5Config(vocab_size=4096, d_model=hidden, d_kv=d, d_ff=2 * hidden, num_layers=layers,
                          num_decoder_layers=layers, num_heads=h, decoder_start_token_id=0)
        cls = tf.T5ForConditionalGeneration
    elif fam == "bart":
        cfg = tf.BartConfig(vocab_size=4096, d_model=hidden, encoder_layers=layers, decoder_layers=layers,
                            encoder_attention_heads=h, decoder_attention_heads=h, encoder_ffn_dim=2 * hidden,
                            decoder_ffn_dim=2 * hidden, max_position_embeddings=1024)
        cls = tf.BartForConditionalGeneration
    elif fam == "gemma2":
        cfg = tf.Gemma2Config(vocab_size=4096, hidden_size=h * d, intermediate_size=2 * h * d, num_hidden_layers=layers,
                              num_attention_heads=h, num_key_value_heads=hkv, head_dim=d, max_position_embeddings=4096,
                              attn_logit_softcapping=SOFTCAP, final_logit_softcapping=None, sliding_window=4096,
                              query_pre_attn_scalar=d)
        cls = tf.Gemma2ForCausalLM
    elif fam == "gpt_oss":
        cfg = tf.GptOssConfig(vocab_size=4096, hidden_size=h * d, intermediate_size=h * d, num_hidden_layers=layers,
                              num_attention_heads=h, num_key_value_heads=hkv, head_dim=d, num_local_experts=4,
                              num_experts_per_tok=2, max_position_embeddings=4096, sliding_window=4096,
                              layer_types=["full_attention"] * layers)
        cls = tf.GptOssForCausalLM
    elif fam == "mha":
        return build_mha(v, dtype, b, s, h, d, layers), (b, s)
    elif fam == "vit":
        cfg = tf.ViTConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=h,
                           intermediate_size=2 * hidden, image_size=224, patch_size=16, num_labels=10)
        cls = tf.ViTForImageClassification
    # transformers' paged implementations are named "paged|sdpa", "paged|eager" (5.x)
    cfg._attn_implementation = v["impl"].replace("paged-", "paged|")
    if v.get("kind", "").startswith("continuous"):
        cfg.eos_token_id = None  # every request generates GEN_TOKENS tokens: the forwards are fixed
    torch.manual_seed(0)
    model = cls(cfg)
    # Weights made on the CPU and moved, as a checkpoint would be: the host-to-device
    # copies are part of the program (doctor must report them apart from the steps).
    # Under autocast (kind amp) the weights stay FP32 and autocast casts to dtype.
    model = model.to(device="cuda", dtype=torch.float32 if v.get("kind") == "amp" else dtype)
    if v["mode"] == "training":
        model.train()
    else:
        model.eval()
    return model, (b, s)


def build_mha(v, dtype, b, s, h, d, layers):
    """A pre-norm encoder of torch.nn.MultiheadAttention blocks (batch_first), called as a user writes it:
    need_weights=True, the default (the module returns the head-averaged weights, so it runs its math
    path), or need_weights=False (it calls scaled_dot_product_attention)."""
    import torch
    from torch import nn

    need_weights = v["impl"] == "need_weights"

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(h * d), nn.LayerNorm(h * d)
            self.attn = nn.MultiheadAttention(h * d, h, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(h * d, 2 * h * d), nn.GELU(), nn.Linear(2 * h * d, h * d))

        def forward(self, x):
            y = self.norm1(x)
            x = x + self.attn(y, y, y, need_weights=need_weights)[0]
            return x + self.mlp(self.norm2(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(4096, h * d)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.head = nn.Linear(h * d, 4096)

        def forward(self, input_ids, labels=None):
            x = self.embed(input_ids)
            for blk in self.blocks:
                x = blk(x)
            logits = self.head(x)
            loss = None if labels is None else nn.functional.cross_entropy(logits.float().flatten(0, 1),
                                                                           labels.flatten())
            return type("Out", (), dict(logits=logits, loss=loss))()

    torch.manual_seed(0)
    model = Encoder().to(device="cuda", dtype=dtype)
    model.train(v["mode"] == "training")
    return model


def backend_context(backend):
    if backend is None:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    every = {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
             "cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    # "all": every backend enabled, as without the context (PyTorch picks), its host time paid alike.
    return sdpa_kernel(list(every.values()) if backend == "all" else every[backend])


def make_inputs(v, batch, seq):
    """The model's keyword arguments for one step (labels when training)."""
    import torch

    fam, training = v["family"], v["mode"] == "training"
    if fam == "vit":
        kw = dict(pixel_values=torch.randn(batch, 3, 224, 224, device="cuda"))
        if training:
            kw["labels"] = torch.randint(0, 10, (batch,), device="cuda")
        return kw
    ids = torch.randint(3, 4096, (batch, seq), device="cuda")
    kw = dict(input_ids=ids)
    if v.get("kind") == "padded":  # the last sequence's final 40% is padding
        mask = torch.ones(batch, seq, dtype=torch.long, device="cuda")
        if fam == "llama":  # decoders pad on the left, as for batched generation
            mask[-1, : seq * 2 // 5] = 0
        else:
            mask[-1, seq - seq * 2 // 5:] = 0
        kw["attention_mask"] = mask
    if fam in ENCODER_DECODER and not v.get("kind", "").startswith("generate"):
        dec = torch.randint(3, 4096, (batch, DEC_LEN), device="cuda")
        if training:
            kw["labels"] = dec
        else:
            kw["decoder_input_ids"] = dec
    elif training:
        kw["labels"] = ids.clone()
    return kw


def make_step(v, model, batch, seq):
    import torch

    kw = make_inputs(v, batch, seq)
    kind = v.get("kind", "plain")
    if kind == "compile":
        model = torch.compile(model)
    elif kind == "cudagraph":  # Inductor with CUDA graphs: the traced steps replay a graph
        model = torch.compile(model, mode="reduce-overhead")
    elif kind == "checkpoint":  # each layer's forward runs again in the backward pass
        model.gradient_checkpointing_enable()
    autocast = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(v["dtype"]) if kind == "amp" else None

    def forward():
        if autocast is None:
            return model(**kw)
        with torch.autocast("cuda", dtype=autocast):
            return model(**kw)

    if v["mode"] == "training":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda") if autocast == torch.float16 else None

        def step():
            with backend_context(v["backend"]):
                out = forward()
            if scaler is None:
                out.loss.backward()
                opt.step()
            else:
                scaler.scale(out.loss).backward()
                scaler.step(opt)
                scaler.update()
            opt.zero_grad(set_to_none=True)
    elif kind.startswith("continuous"):
        return continuous_step(model, cb_prompts(kind), graphs=kind == "continuous_graph")
    elif kind == "flex_paged":
        return flex_paged_step(v)
    elif kind.startswith("generate"):
        # generate_static: a static KV cache (the full length, masked), as for compiled decoding
        extra = {"cache_implementation": "static"} if kind == "generate_static" else {}

        def step():
            with torch.inference_mode(), backend_context(v["backend"]):
                model.generate(**kw, max_new_tokens=GEN_TOKENS, min_new_tokens=GEN_TOKENS, do_sample=False,
                               pad_token_id=0, **extra)
    else:
        def step():
            with torch.inference_mode(), backend_context(v["backend"]):
                forward()
    return step


def continuous_step(model, lengths, graphs=False):
    """One generate_batch call of requests with prompts of these lengths (transformers' continuous batching),
    all prefilled in one forward: checks that each request generated GEN_TOKENS tokens, so the forwards are
    those the facts count."""
    import torch
    from transformers import ContinuousBatchingConfig, GenerationConfig

    model.generation_config.eos_token_id = None
    gen = GenerationConfig(max_new_tokens=GEN_TOKENS, do_sample=False, eos_token_id=None, pad_token_id=0)
    cb = ContinuousBatchingConfig(block_size=CB_PAGE, num_blocks=cb_pages(lengths),
                                  max_batch_tokens=max(CB_BATCH_TOKENS, sum(lengths)),
                                  max_requests_per_batch=len(lengths), scheduler_type="fifo",
                                  use_cuda_graph=graphs, use_async_batching=False, allow_block_sharing=False)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 4096, (n,), generator=g).tolist() for n in lengths]

    def step():  # no inference_mode here: the manager's thread writes the cache it made (no_grad inside)
        out = model.generate_batch(inputs=prompts, generation_config=gen, continuous_batching_config=cb,
                                   progress_bar=False)
        got = sorted(len(o.generated_tokens) for o in out.values() if not getattr(o, "error", None))
        if got != [GEN_TOKENS] * len(lengths):
            errors = [str(o.error)[:200] for o in out.values() if getattr(o, "error", None)]
            raise RuntimeError(f"generate_batch: {len(out)} results, tokens {got}, errors {errors[:2]}")
    return step


def flex_paged_step(v):
    """A decode loop over flex_attention's paged attention: LAYERS caches in one page pool layout, each
    token's K/V written through the page table (PagedAttention.assign), then flex_attention (compiled)
    of q [seqs, heads, 1, d] against the pages with the block mask converted to physical pages."""
    import torch
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    b, _, h, hkv, d, _ = MODELS[v["family"]]
    dev, dt = "cuda", torch.bfloat16
    seqs = len(FLEX_LENS)
    n_pages = seqs * FLEX_MAX // FLEX_PAGE
    torch.manual_seed(0)
    pa = PagedAttention(n_pages, FLEX_PAGE, seqs, device=dev)
    for i in range(seqs):
        pa.reserve(torch.tensor(i, device=dev), torch.tensor(FLEX_MAX, device=dev))
    caches = [(torch.zeros(1, hkv, n_pages * FLEX_PAGE, d, device=dev, dtype=dt),
               torch.zeros(1, hkv, n_pages * FLEX_PAGE, d, device=dev, dtype=dt)) for _ in range(LAYERS)]
    lens0 = torch.tensor(FLEX_LENS, device=dev)
    for i, n in enumerate(FLEX_LENS):
        for k_cache, v_cache in caches:
            kv = torch.randn(1, hkv, n, d, device=dev, dtype=dt)
            pa.assign(torch.tensor([i], device=dev), torch.arange(n, device=dev).view(1, n), kv, torch.randn_like(kv),
                      k_cache, v_cache)
    kv_len = lens0.clone()

    def causal_to_len(bi, hi, qi, ki):  # every cached key of the sequence (kv_len masks the rest)
        return ki >= 0

    logical = create_block_mask(causal_to_len, seqs, 1, 1, FLEX_MAX, device=dev, BLOCK_SIZE=FLEX_PAGE)
    block_mask = pa.convert_logical_block_mask(logical, kv_len=kv_len)
    flex = torch.compile(flex_attention)
    batch_idx = torch.arange(seqs, device=dev)

    def step():
        kv_len.copy_(lens0)
        with torch.inference_mode():
            for _ in range(GEN_TOKENS):
                for k_cache, v_cache in caches:
                    q = torch.randn(seqs, h, 1, d, device=dev, dtype=dt)
                    kn = torch.randn(seqs, hkv, 1, d, device=dev, dtype=dt)
                    pa.assign(batch_idx, kv_len.view(seqs, 1), kn, torch.randn_like(kn), k_cache, v_cache)
                    flex(q, k_cache, v_cache, block_mask=block_mask, enable_gqa=h != hkv)
                kv_len.add_(1)
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
    stack = v.get("kind") == "stack"  # Python stacks and memory events in the trace, as many users record
    extra = {}
    if v.get("kind", "").startswith("continuous"):  # the manager's generation thread launches the work
        extra["experimental_config"] = torch.profiler._ExperimentalConfig(profile_all_threads=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                 with_stack=stack, profile_memory=stack, **extra,
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
    ap.add_argument("--set", choices=["corpus", "unseen", "replay", "wild", "forms", "serving", "decode"],
                    default="corpus")
    a = ap.parse_args()
    chosen = {"corpus": VARIANTS, "unseen": UNSEEN, "replay": REPLAY, "wild": WILD, "forms": FORMS,
              "serving": SERVING, "decode": DECODE}[a.set]
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
