// hidden-copy: device-to-device copies inside a region, usually an out-of-place
// op (masked_fill instead of masked_fill_, clone, contiguous) copying a tensor
// before writing it. Names the op when the trace has CPU ops.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {
namespace {

std::string fix_for(std::string_view op) {
  if (op.empty())
    return "The trace has no CPU ops to name the source: profile with torch.profiler (record_shapes=True) "
           "to find it. Usual causes: an out-of-place op such as masked_fill (use masked_fill_), .clone(), "
           ".contiguous() on a transposed tensor.";
  // DDP's reducer copies each all-reduced bucket back into the parameters' .grad unless the grads
  // are views into the buckets (torch.nn.parallel.DistributedDataParallel's gradient_as_bucket_view).
  if (op.find("copy_bucket_to_grad") != std::string_view::npos)
    return fmt::format(
        "{} is DistributedDataParallel copying each all-reduced gradient bucket back into the parameters' "
        ".grad: construct it with DistributedDataParallel(model, gradient_as_bucket_view=True), so the "
        "gradients are views into the buckets and this copy (and its memory) goes away.",
        op);
  std::string_view base = op;
  if (base.starts_with("aten::")) base.remove_prefix(6);
  if (base == "clone" || base == "contiguous" || base == "copy_" || base == "to" || base == "_to_copy")
    return fmt::format(
        "{} copies the tensor on the device: avoid it in the hot path (keep layouts contiguous "
        "where they are produced).",
        op);
  // Only ATen ops that have an in-place twin get the in-place advice.
  static constexpr std::string_view kWithInPlace[] = {
      "masked_fill", "masked_scatter", "index_fill", "index_put", "index_add", "index_copy",
      "scatter",     "scatter_add",    "add",        "sub",       "mul",       "div",
      "clamp",       "fill",           "zero",       "relu"};
  const bool aten = op.starts_with("aten::");
  if (aten && std::find(std::begin(kWithInPlace), std::end(kWithInPlace), base) != std::end(kWithInPlace))
    return fmt::format(
        "{} is out of place: it copies its input before writing. Use the in-place {}_ "
        "(tensor.{}_(...)) when the input is not needed afterwards.",
        op, op, base);
  return fmt::format("{} copies a tensor on the device: check whether the copy is needed.", op);
}

}  // namespace

void rule_hidden_copy(const RuleContext& ctx, std::vector<Finding>& out) {
  // One finding per scope: copies inside attention calls (an out-of-place
  // masked_fill between QK^T and the softmax) and the model's own.
  for (const Scope scope : {Scope::Attention, Scope::Model}) {
    struct Source {
      std::vector<std::size_t> copies;
      std::int64_t ns = 0, bytes = 0;
      std::set<int> instances;
    };
    std::map<std::string, Source> by_op;
    int slot = 0;
    for (const auto& inst : ctx.group.group.instances) {
      for (std::size_t i : inst.activities) {
        const Event& e = ctx.event(i);
        if (e.kind != EventKind::GpuMemcpy || ctx.trace().name(e).find("DtoD") == std::string_view::npos) continue;
        if (ctx.in_attention(i) != (scope == Scope::Attention)) continue;
        const std::int32_t op = ctx.index.outermost_op(ctx.activity(i));
        const std::string name =
            op == kNone ? std::string() : std::string(ctx.index.name(ctx.index.ranges()[static_cast<std::size_t>(op)]));
        Source& s = by_op[name];
        s.copies.push_back(i);
        s.ns += e.dur_ns;
        if (const GpuArgs* g = ctx.trace().args(e); g && g->bytes > 0) s.bytes += g->bytes;
        s.instances.insert(slot);
      }
      ++slot;
    }
    if (by_op.empty()) continue;
    // Its sources ranked by time.
    std::vector<std::pair<std::string, const Source*>> ranked;
    std::int64_t ns = 0, bytes = 0;
    std::size_t copies = 0;
    std::set<int> instances;
    for (const auto& [op, s] : by_op) {
      ranked.emplace_back(op, &s);
      copies += s.copies.size();
      ns += s.ns;
      bytes += s.bytes;
      instances.insert(s.instances.begin(), s.instances.end());
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.second->ns > b.second->ns; });
    const auto n = static_cast<double>(ctx.group.group.instances.size());
    Finding f;
    f.id = "hidden-copy";
    f.scope = scope;
    set_cost(f, ctx, ns, static_cast<int>(instances.size()));
    for (const auto& [op, s] : by_op) f.activities.insert(f.activities.end(), s.copies.begin(), s.copies.end());
    std::sort(f.activities.begin(), f.activities.end());
    f.after_ns = 0;  // the in-place op, the bucket view or a fused kernel copies nothing
    const std::string& top = ranked.front().first;
    const double per = static_cast<double>(copies) / n;
    f.title =
        fmt::format("{:.{}f} device-to-device cop{} {} {} ({:.1f} MB){}, {}", per, per == std::floor(per) ? 0 : 1,
                    per == 1 ? "y" : "ies", scope_words(scope), per_instance(ctx), static_cast<double>(bytes) / n / 1e6,
                    top.empty() ? "" : fmt::format(", mostly from {}", top), per_instance_ms(ctx, ns));
    f.detail = "Whole-tensor copies inside the region: memory traffic that computes nothing.";
    f.fix = fix_for(top);
    for (const auto& [op, s] : ranked)
      f.evidence.push_back({op.empty() ? std::string("copies with no CPU op recorded") : "launched by " + op,
                            static_cast<int>(s->copies.size()), s->ns});
    out.push_back(std::move(f));
  }
}

}  // namespace attnprof
