#!/usr/bin/env python3
"""Do the fused implementations doctor names for the attention forms compute the same model? On a GPU,
each forms family of make_corpus.py (--set forms) built once per attention implementation with the same
weights and input, the logits of one forward compared with eager's, beside how much the form itself moves
them (the same eager model with the form switched off: soft-capping off, sinks at -inf):

  gemma2: eager vs flex_attention vs sdpa, soft-capping at CAP (small, so that the random-weight scores
          reach it);
  gpt_oss: eager vs flex_attention, the sinks set to SINK (so that they take a visible share of each row).

An implementation computes the form when its difference from eager is well below the form's own effect.
Then the sink applied to a fused kernel's output through its log-sum-exp (flex_attention return_lse),
against eager attention with the sink column, on random tensors.
  scripts/corpus/forms_check.py [--cap 0.05] [--sink 2.0]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus as corpus  # noqa: E402


def logits(v, cap, sink, ids, form_off=False):
    import torch

    model, _ = corpus.build_model(v)
    if v["family"] == "gemma2":
        model.config.attn_logit_softcapping = None if form_off else cap
        for layer in model.model.layers:
            layer.self_attn.attn_logit_softcapping = None if form_off else cap
    if v["family"] == "gpt_oss":
        for layer in model.model.layers:
            layer.self_attn.sinks.data.fill_(float("-inf") if form_off else sink)
    with torch.inference_mode():
        return model(input_ids=ids).logits.float()


def main():
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--cap", type=float, default=0.05)
    ap.add_argument("--sink", type=float, default=2.0)
    a = ap.parse_args()
    status = 0
    for fam, impls in [("gemma2", ["flex_attention", "sdpa"]), ("gpt_oss", ["flex_attention", "sdpa"])]:
        b, s = corpus.MODELS[fam][:2]
        torch.manual_seed(1)
        ids = torch.randint(3, 4096, (b, s), device="cuda")
        base = dict(family=fam, backend=None, dtype="bf16", mode="inference", tracer="torch.profiler")
        eager = logits(dict(base, impl="eager"), a.cap, a.sink, ids)
        off = logits(dict(base, impl="eager"), a.cap, a.sink, ids, form_off=True)
        effect = (eager - off).abs().max().item()
        print(f"{fam}: the form moves eager's logits by up to {effect:.4f}")
        for impl in impls:
            try:
                other = logits(dict(base, impl=impl), a.cap, a.sink, ids)
            except Exception as e:  # transformers refuses some implementations for some models
                print(f"  {impl}: refused: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
                continue
            diff = (eager - other).abs().max().item()
            same = (off - other).abs().max().item()
            verdict = "computes the form" if diff < effect / 10 else "does not compute the form"
            print(f"  {impl}: |eager - {impl}| {diff:.4f}, |eager without the form - {impl}| {same:.4f}: {verdict}")
    # The sink through a fused kernel's log-sum-exp: softmax over [s, sink] weighs V by
    # exp(s_j) / (Z + exp(sink)) = (exp(s_j) / Z) * sigmoid(lse - sink), so the fused output times
    # sigmoid(lse - sink) is eager's with the sink column.
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    torch.manual_seed(2)
    b, h, n, d = 2, 8, 512, 64
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    sinks = torch.randn(h, device="cuda", dtype=torch.float32) * 2
    scores = (q.float() @ k.float().transpose(-1, -2)) / d**0.5
    scores = scores.masked_fill(torch.ones(n, n, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    combined = torch.cat([scores, sinks.view(1, h, 1, 1).expand(b, h, n, 1)], dim=-1)
    ref = torch.softmax(combined, dim=-1)[..., :-1] @ v.float()
    mask = create_block_mask(lambda bb, hh, qi, ki: qi >= ki, None, None, n, n, device="cuda")
    out, lse = torch.compile(flex_attention)(q, k, v, block_mask=mask, return_lse=True)
    fixed = out.float() * torch.sigmoid(lse.float() - sinks.view(1, h, 1)).unsqueeze(-1)
    err, plain = (fixed - ref).abs().max().item(), (out.float() - ref).abs().max().item()
    print(f"sinks through flex_attention's lse: |fixed - eager| {err:.4f} (without the sink: {plain:.4f}): "
          f"{'the same' if err < plain / 10 else 'NOT the same'}")
    return status if err < plain / 10 else 1


if __name__ == "__main__":
    sys.exit(main())
