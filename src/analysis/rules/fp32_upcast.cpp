// fp32-upcast: 16-bit data converted to FP32 and back (both directions in one
// instance), with the time of the cast kernels and the bytes they moved
// (estimated from the launch grids of ATen's copy kernels). Casts inside an
// attention call are attention's (SDPA math, an FP32 softmax); the others are
// the model's (norms, rotary embedding, the loss), usually deliberate.
#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void rule_fp32_upcast(const RuleContext& ctx, std::vector<Finding>& out) {
  for (const Scope scope : {Scope::Attention, Scope::Model}) {
    std::vector<std::size_t> casts;
    std::int64_t cast_ns = 0, bytes = 0;
    int up = 0, down = 0, instances = 0;
    bool bytes_known = true;
    for (const auto& inst : ctx.group.group.instances) {
      std::vector<std::size_t> here;
      bool has_up = false, has_down = false;
      for (std::size_t i : inst.activities) {
        const KernelOp op = ctx.activity(i).cls.op;
        if (op != KernelOp::CastToFp32 && op != KernelOp::CastTo16Bit) continue;
        if ((scope == Scope::Attention) != ctx.in_attention(i)) continue;
        (op == KernelOp::CastToFp32 ? has_up : has_down) = true;
        here.push_back(i);
      }
      if (!has_up || !has_down) continue;  // one direction alone is a dtype choice, not a round trip
      ++instances;
      for (std::size_t i : here) {
        const Event& e = ctx.event(i);
        const GpuArgs* g = ctx.trace().args(e);
        const std::int64_t n = g ? estimate_elements(ctx.trace().name(e), g->grid[0], g->block[0]) : 0;
        if (n == 0) bytes_known = false;
        bytes += n * 6;  // 2-byte side + 4-byte side
        (ctx.activity(i).cls.op == KernelOp::CastToFp32 ? up : down) += 1;
        cast_ns += e.dur_ns;
        casts.push_back(i);
      }
    }
    if (casts.empty()) continue;

    Finding f;
    f.id = "fp32-upcast";
    f.scope = scope;
    set_cost(f, ctx, cast_ns, instances);
    f.activities = casts;
    const double per = static_cast<double>(instances);
    f.title = fmt::format(
        "16-bit data upcast to FP32 and back {}: {:.0f} casts up and {:.0f} down {}, {} ({:.0f}% of "
        "GPU time)",
        scope_words(scope), up / per, down / per, per_instance(ctx), per_instance_ms(ctx, cast_ns), 100.0 * f.share);
    const std::string moved =
        bytes_known ? fmt::format("The casts move about {:.1f} MB {} (read + write, from the launch grids). ",
                                  static_cast<double>(bytes) / per / 1e6, per_instance(ctx))
                    : std::string();
    if (scope == Scope::Attention) {
      // Whether the upcast reached the matmuls of the same calls (SDPA math) or
      // only the softmax (eager attention's softmax(dtype=float32)).
      bool slow_matmuls = false;
      for (std::size_t i : casts)
        if (const AttentionCall* c = ctx.call_of(i))
          for (std::size_t j : c->activities)
            slow_matmuls |=
                ctx.activity(j).cls.category == KernelCategory::Gemm && ctx.activity(j).cls.unit == MathUnit::CudaCore;
      f.detail = moved + (slow_matmuls ? "The FP32 operands also push attention's matmuls off tensor cores."
                                       : "Only the softmax runs in FP32; the matmuls stay 16-bit.");
      f.fix =
          "Keep attention in bf16/fp16 end to end: fused attention kernels already compute the softmax and "
          "accumulate in FP32 inside the kernel. With PyTorch SDPA, the math backend does this upcast "
          "internally, so let SDPA dispatch to a fused backend (flash, cuDNN or efficient); in hand-written "
          "attention, drop the .float() around the scores.";
      f.after_ns = 0;
    } else {
      f.detail = moved +
                 "These casts are outside attention: normalization statistics, rotary-embedding frequencies "
                 "and the loss are kept in FP32 on purpose in most models.";
      f.fix =
          "Usually deliberate, for accuracy: leave them, or let torch.compile fuse them into the neighbouring "
          "kernels. They are not attention's.";
    }
    add_kernel_evidence(f, ctx, casts);
    out.push_back(std::move(f));
  }
}

}  // namespace attnprof
