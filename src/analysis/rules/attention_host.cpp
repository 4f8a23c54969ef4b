// attention-host: attention calls whose op held the CPU for far longer than the trace's other calls
// of the same implementation (attention_host.h), while the step waited on the CPU: PyTorch's cuDNN
// attention building an execution plan for a shape it has not seen (a KV length, a mask, new every
// decode step), or another one-off setup paid every step. Wall time, not GPU time: the GPU idles
// meanwhile. None when these calls cost under 5% of the step, or are seen in under two thirds of the
// steps (a first call's setup).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "analysis/attention_host.h"
#include "analysis/rules/rule.h"

namespace attnprof {

void rule_attention_host(const RuleContext& ctx, std::vector<Finding>& out) {
  constexpr double kStepShare = 0.05;
  const std::vector<SlowHostCall> slow = slow_host_calls(ctx.index, ctx.attention);
  if (slow.empty()) return;
  const std::vector<char> member = group_members(ctx.group.group, ctx.index.activities().size());
  std::int64_t excess = 0, typical = 0;
  std::vector<std::size_t> activities;
  std::set<std::int64_t> kv_lens;
  std::string_view family, op;
  int calls = 0, all = 0;
  for (const AttentionCall& c : ctx.attention.calls)
    all += c.impl == AttentionImpl::Fused && !c.activities.empty() && member[c.activities.front()];
  for (const SlowHostCall& s : slow) {
    const AttentionCall& c = ctx.attention.calls[s.call];
    if (!member[c.activities.front()]) continue;
    ++calls;
    excess += s.host_ns - s.typical_ns;
    typical = std::max(typical, s.typical_ns);
    activities.insert(activities.end(), c.activities.begin(), c.activities.end());
    if (c.shape.known()) kv_lens.insert(c.shape.kv_len);
    if (family.empty()) family = c.family;
    if (op.empty()) op = ctx.index.name(ctx.index.ranges()[static_cast<std::size_t>(s.op)]);
  }
  std::int64_t span = 0;
  for (const StepTime& st : ctx.group.steps.steps) span += st.span_ns;
  if (calls == 0 || span <= 0 || static_cast<double>(excess) < kStepShare * static_cast<double>(span)) return;
  std::sort(activities.begin(), activities.end());
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, ctx.group.steps.steps.size()));
  // Paid step after step, not once: a first call's setup in a short profile is no finding.
  const int seen = instances_with(ctx, activities);
  if (calls < 2 || 3 * seen < 2 * static_cast<int>(ctx.group.group.instances.size())) return;
  Finding f;
  f.id = "attention-host";
  f.scope = Scope::Attention;
  f.group = ctx.group.group.name;
  f.wall = true;
  f.time_ns = excess;
  f.share = static_cast<double>(excess) / static_cast<double>(span);
  f.severity = severity_for_share(f.share);
  f.instances = seen;
  f.activities = activities;
  const double per = static_cast<double>(calls) / static_cast<double>(n);
  f.title = fmt::format(
      "{:g} of {:g} attention calls {} held the CPU {} each in {} (typical {}): {} {} on the host, {:.0f}% of the "
      "step's wall time",
      per, static_cast<double>(all) / static_cast<double>(n), per_instance(ctx), format_ms((excess / calls) + typical),
      op, format_ms(typical), format_ms(excess / n), per_instance(ctx), 100.0 * f.share);
  const std::string lens = kv_lens.size() > 1 ? fmt::format(" (their KV lengths: {} different, {} to {})",
                                                            kv_lens.size(), *kv_lens.begin(), *kv_lens.rbegin())
                                              : "";
  if (family == "cuDNN") {
    f.detail = fmt::format(
        "PyTorch's cuDNN attention builds an execution plan for each shape it has not seen and caches it; these "
        "calls met a new shape{}, so each built one while the GPU waited. Their kernels are as fast as the "
        "others'.",
        lens);
    f.fix =
        "Let the calls repeat their shapes so that the cached plan is reused: pad the KV length (and the mask) to "
        "a few bucket sizes, or keep a cache of fixed length (transformers' static cache); or run calls whose "
        "shape changes every step on a backend that plans nothing per shape (SDPA's flash or efficient backend, "
        "torch.nn.attention.sdpa_kernel, where it takes the call's mask).";
  } else {
    f.detail = fmt::format(
        "The attention op spent this long on the CPU before its kernels ran{}, far above its other calls: "
        "setup paid again (a plan, a compilation, an allocation), while the GPU waited.",
        lens);
    f.fix = "Find what the op sets up on these calls (a new shape, a new mask or dtype) and keep it from changing.";
  }
  f.evidence.push_back({fmt::format("{:g} calls at {} each on the host, the other {:g} at {} or less", per,
                                    format_ms(excess / calls + typical),
                                    static_cast<double>(all - calls) / static_cast<double>(n), format_ms(typical)),
                        0, 0});
  out.push_back(std::move(f));
}

}  // namespace attnprof
