// unfused-attention: attention run as several kernels (PyTorch SDPA's math
// backend, or hand-written / eager matmul-softmax-matmul) where one fused
// kernel would do. Charged with what the fused kernel would save: the calls'
// kernel time minus the fused estimate (fused_estimate.h says where that
// comes from: a fused call of the same shape in the trace, the shape, or the
// calls' own matmuls).
#include <cmath>

#include <fmt/format.h>

#include "analysis/fused_estimate.h"
#include "analysis/rules/rule.h"
#include "common/number_text.h"

namespace attnprof {

void rule_unfused_attention(const RuleContext& ctx, std::vector<Finding>& out) {
  for (const AttentionSummary& s : ctx.group.attention) {
    if (s.impl == AttentionImpl::Fused || s.calls == 0) continue;
    std::vector<std::size_t> acts;
    for (const auto& inst : ctx.group.group.instances)
      for (std::size_t i : inst.activities)
        if (const AttentionCall* c = ctx.call_of(i); c != nullptr && c->impl == s.impl && c->pass == s.pass)
          acts.push_back(i);
    const std::int64_t saving = std::max<std::int64_t>(0, s.kernel_ns - s.fused_ns);
    // A fused kernel no faster than these calls (fp32 backward, tiny decode steps): nothing to gain.
    if (saving * 20 < s.kernel_ns) continue;
    Finding f;
    f.id = "unfused-attention";
    f.scope = Scope::Attention;
    set_cost(f, ctx, saving, instances_with(ctx, acts));
    f.after_ns = s.fused_ns;
    f.activities = acts;
    f.pass = s.pass;
    // Causality from the calls themselves: a triangular mask built inside one (SDPA math's is_causal, a
    // decoder's mask), or the op's is_causal argument; else not known.
    bool causal = false, not_causal = false;
    // The scores' form, when every call has it: what SDPA cannot compute, or the module that keeps a
    // call off it.
    SharedForms forms;
    for (const std::size_t i : acts)
      if (const AttentionCall* c = ctx.call_of(i)) {
        causal |= c->causal_mask || c->shape.causal.value_or(false);
        not_causal |= c->shape.causal.has_value() && !*c->shape.causal && !c->causal_mask;
        forms.add(*c);
      }
    const char* mask_fix = causal ? "pass is_causal=True instead of a materialized mask"
                           : not_causal
                               ? "pass no mask where nothing is masked (the calls are not causal: an encoder's), or a "
                                 "boolean padding mask"
                               : "pass is_causal=True instead of a materialized mask if the model is causal (the trace "
                                 "does not say; an encoder's calls need no mask, or a boolean padding mask)";
    const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
    const double per_call = static_cast<double>(s.kernels) / s.calls;
    const bool math = s.impl == AttentionImpl::SdpaMath;
    f.title = fmt::format(
        "{} attention {} ({}): {:g} call{} {}, {:.0f} kernel{} each, {}; as fused kernels ~{}, saving {} "
        "({:.0f}% of GPU time)",
        math ? "SDPA math-backend" : "unfused", to_string(s.pass), to_string(s.precision),
        static_cast<double>(s.calls) / n, text::plural(static_cast<double>(s.calls) / n), per_instance(ctx), per_call,
        text::plural(std::round(per_call)), per_instance_ms(ctx, s.kernel_ns), per_instance_ms(ctx, s.fused_ns),
        per_instance_ms(ctx, saving), 100.0 * f.share);
    f.detail = fmt::format(
        "Each call writes and reads the full score matrix several times (GEMM, scale, mask, softmax, casts, GEMM); "
        "a fused kernel keeps it on chip. Fused estimate {}.",
        s.estimate_source);
    const bool softcap = forms.softcap, sinks = forms.sinks;
    if (softcap || sinks) {
      // SDPA has neither: the fix is a fused kernel that computes the same scores, not SDPA.
      const std::string cap =
          "The scores are soft-capped (tanh(s / cap) * cap, as Gemma 2's attn_logit_softcapping): "
          "torch.nn.functional.scaled_dot_product_attention cannot compute that (in Hugging Face transformers, "
          "\"sdpa\" runs without it: other logits). Use flex_attention with the soft-capping as a score_mod "
          "(transformers: attn_implementation=\"flex_attention\", the same logits) or FlashAttention 2 / 3, whose "
          "softcap argument does it (attn_implementation=\"flash_attention_2\").";
      const std::string sink =
          "Each row's softmax takes a learned sink logit (a column concatenated to the scores, as GPT-OSS's sinks): "
          "scaled_dot_product_attention has no such term (transformers refuses \"sdpa\" for such a model, and its "
          "\"flex_attention\" gave other logits than eager's for GPT-OSS in our check). Run a fused kernel that "
          "returns its log-sum-exp (flex_attention(..., return_lse=True)) and scale its output by sigmoid(lse - "
          "sink) per head: the same as the sink column; or a FlashAttention-3 build with sinks (vLLM's).";
      f.fix = softcap && sinks ? cap + " " + sink : softcap ? cap : sink;
      f.fix +=
          " The estimate above is a cuDNN-class kernel's; flex_attention's Triton kernel can be slower (`attnprof "
          "bench` measures SDPA's kernels only).";
    } else if (forms.alibi && !math)
      f.fix =
          "The scores get ALiBi's linear position bias (through baddbmm's input, as Bloom's). FlashAttention 2 "
          "computes "
          "it inside the kernel from the slopes (flash_attn_func(..., alibi_slopes=slopes)), as does flex_attention "
          "with it as a score_mod (score + slope[h] * (kv_idx - q_idx)); scaled_dot_product_attention takes it only as "
          "a materialized float attn_mask (its memory-efficient backend reads the [B, H, Sq, Skv] bias once per call).";
    else if (forms.position_bias && !math)
      f.fix =
          "The scores get a learned per-head position bias (added before the softmax, as T5's relative attention "
          "bias). Pass it to torch.nn.functional.scaled_dot_product_attention as a float attn_mask made contiguous "
          "(bias.contiguous(): the fused backends need stride 1 in its last dim; transformers' T5 hands SDPA a "
          "permuted view, which falls back to the math backend): it then runs the memory-efficient kernel, gradient "
          "of the bias included; or flex_attention with the bias table read in a score_mod (no [B, H, Sq, Skv] "
          "tensor).";
    else if (forms.mha_module)
      f.fix = fmt::format(
          "These calls are torch.nn.MultiheadAttention's math path: called with need_weights=True (its default) it "
          "returns the head-averaged attention weights, so it cannot use a fused kernel. Pass need_weights=False "
          "where the weights are not used (module(q, k, v, need_weights=False)): the module then calls "
          "scaled_dot_product_attention{}.",
          causal ? " (with is_causal=True and a causal attn_mask for its causal mask)" : "");
    else if (s.precision == Precision::FP32)
      f.fix =
          "Run attention in bf16 or fp16 (torch.autocast('cuda', dtype=torch.bfloat16)) through "
          "torch.nn.functional.scaled_dot_product_attention, so it runs a fused kernel on tensor cores: the "
          "estimate above is that. In FP32 a fused kernel (memory-efficient) is barely faster than these calls.";
    else if (math && !s.math_causes.empty()) {
      // What the calls' own inputs say kept them off the fused backends.
      f.fix = "PyTorch fell back to SDPA's math backend.";
      for (const auto& [cause, calls] : s.math_causes)
        f.fix +=
            calls == s.calls ? fmt::format(" {}", cause) : fmt::format(" In {} of {} calls: {}", calls, s.calls, cause);
      f.fix +=
          " torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, "
          "SDPBackend.EFFICIENT_ATTENTION]) raises instead of falling back, with PyTorch's reason. `attnprof bench` "
          "compares the backends on your shape.";
    } else if (math)
      f.fix = fmt::format(
          "PyTorch fell back to SDPA's math backend: let it dispatch to a fused one. Remove a "
          "sdpa_kernel(SDPBackend.MATH) context, keep q, k, v in bf16/fp16 and contiguous in the last dim, and "
          "{}; torch.nn.attention.sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION]) then "
          "raises if it still cannot. `attnprof bench` compares the backends on your shape.",
          mask_fix);
    else
      f.fix = fmt::format(
          "Replace the hand-written matmul/softmax/matmul with torch.nn.functional.scaled_dot_product_attention "
          "({}) so it runs a fused kernel (flash, cuDNN, efficient); in Hugging Face transformers, "
          "attn_implementation=\"sdpa\" (or \"flash_attention_2\"). `attnprof bench` compares the fused kernels on "
          "your shape.",
          causal       ? "is_causal=True for its causal mask"
          : not_causal ? "no mask where nothing is masked: the calls are not causal"
                       : "is_causal=True for a causal mask");
    add_kernel_evidence(f, ctx, acts);
    out.push_back(std::move(f));
  }
}

}  // namespace attnprof
