// mask-rebuilt: a mask materialized on the GPU inside a region that repeats.
// The mask is the run of fill/mask kernels (ones, tril/triu, scalar fills,
// where) around a triangular-mask kernel, in launch order.
#include <set>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void rule_mask_rebuilt(const RuleContext& ctx, std::vector<Finding>& out) {
  std::vector<std::size_t> mask;
  std::int64_t mask_ns = 0;
  int instances = 0;
  for (const auto& inst : ctx.group.group.instances) {
    const auto& acts = inst.activities;
    std::set<std::size_t> run;  // positions in `acts`
    for (std::size_t p = 0; p < acts.size(); ++p) {
      if (ctx.activity(acts[p]).cls.op != KernelOp::TriangularMask) continue;
      auto is_mask = [&](std::size_t q) { return ctx.activity(acts[q]).cls.category == KernelCategory::FillMask; };
      std::size_t lo = p, hi = p;
      while (lo > 0 && is_mask(lo - 1)) --lo;
      while (hi + 1 < acts.size() && is_mask(hi + 1)) ++hi;
      for (std::size_t q = lo; q <= hi; ++q) run.insert(q);
    }
    if (run.empty()) continue;
    ++instances;
    for (std::size_t q : run) {
      mask.push_back(acts[q]);
      mask_ns += ctx.event(acts[q]).dur_ns;
    }
  }
  if (mask.empty()) return;

  const int total = static_cast<int>(ctx.group.group.instances.size());
  Finding f;
  f.id = "mask-rebuilt";
  f.scope = split_by_scope(ctx, mask).attention.empty() ? Scope::Model : Scope::Attention;
  set_cost(f, ctx, mask_ns, instances);
  f.activities = mask;
  f.after_ns = 0;
  const double per = static_cast<double>(mask.size()) / instances;
  if (total > 1) {
    f.title = fmt::format("causal mask rebuilt on the GPU in {} of {} {} regions ({:.0f} kernels each), {}", instances,
                          total, ctx.group.group.name, per, per_instance_ms(ctx, mask_ns));
  } else {
    f.title = fmt::format("causal mask built on the GPU inside {} ({:.0f} kernels), {}; rebuilt each time it runs",
                          ctx.group.group.name, per, format_ms(mask_ns));
  }
  f.detail = "A triangular (tril/triu) mask is materialized with fill/where kernels every time instead of once.";
  f.fix =
      "Build the mask once and reuse it (cache it per sequence length, e.g. a registered buffer), or pass "
      "is_causal=True to a fused attention backend, which applies causality inside the kernel without any "
      "mask. PyTorch SDPA's math backend rebuilds the mask from is_causal on every call.";
  add_kernel_evidence(f, ctx, mask);
  out.push_back(std::move(f));
}

}  // namespace attnprof
