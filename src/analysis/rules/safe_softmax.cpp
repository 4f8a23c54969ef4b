// safe-softmax: a softmax followed by isneginf / an all-reduce / where, the
// extra passes PyTorch's _safe_softmax makes to zero fully-masked rows.
#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void rule_safe_softmax(const RuleContext& ctx, std::vector<Finding>& out) {
  std::vector<std::size_t> extra;
  std::int64_t extra_ns = 0, softmax_ns = 0;
  int instances = 0;
  for (const auto& inst : ctx.group.group.instances) {
    const auto& acts = inst.activities;
    bool here = false;
    for (std::size_t p = 0; p < acts.size(); ++p) {
      if (ctx.activity(acts[p]).cls.op != KernelOp::Softmax) continue;
      // The kernels right after the softmax that belong to the safe-softmax epilogue.
      std::vector<std::size_t> tail;
      bool check = false, select = false;
      for (std::size_t q = p + 1; q < acts.size() && q <= p + 8; ++q) {
        const KernelOp op = ctx.activity(acts[q]).cls.op;
        if (op == KernelOp::IsNegInf || op == KernelOp::AllReduce)
          check = true;
        else if (op == KernelOp::Where)
          select = true;
        else if (op != KernelOp::Fill)
          break;
        tail.push_back(acts[q]);
        if (op == KernelOp::Where) break;
      }
      if (!check || !select) continue;
      here = true;
      softmax_ns += ctx.event(acts[p]).dur_ns;
      for (std::size_t i : tail) {
        extra.push_back(i);
        extra_ns += ctx.event(i).dur_ns;
      }
    }
    instances += here;
  }
  if (extra.empty()) return;

  Finding f;
  f.id = "safe-softmax";
  f.scope = split_by_scope(ctx, extra).attention.empty() ? Scope::Model : Scope::Attention;
  set_cost(f, ctx, extra_ns, instances);
  f.activities = extra;
  f.after_ns = 0;
  f.title = fmt::format(
      "safe softmax: {:.0f} extra kernels {} after each softmax (isneginf, all-reduce, where), {} "
      "({:.0f}% of GPU time)",
      static_cast<double>(extra.size()) / instances, per_instance(ctx), per_instance_ms(ctx, extra_ns),
      100.0 * f.share);
  f.detail = fmt::format(
      "The epilogue costs {:.2f}x the softmax itself ({}): each kernel is another pass over the "
      "full score matrix to zero rows that are entirely masked.",
      softmax_ns > 0 ? static_cast<double>(extra_ns) / static_cast<double>(softmax_ns) : 0.0,
      per_instance_ms(ctx, softmax_ns));
  f.fix =
      "Fused attention kernels handle fully-masked rows inside the kernel: select a fused SDPA backend. In "
      "hand-written attention, a plain torch.softmax is enough when no row can be fully masked (a causal mask "
      "never masks a whole row).";
  add_kernel_evidence(f, ctx, extra);
  out.push_back(std::move(f));
}

}  // namespace attnprof
