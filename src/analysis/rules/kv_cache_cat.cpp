// kv-cache-cat: a KV cache grown by torch.cat every generated token (Hugging Face's DynamicCache):
// each decode step copies the whole cache of every layer, K and V, to append a few tokens, where a
// preallocated (static) cache writes only the new ones. Found from the aten::cat ops' record_shapes:
// two tensors [B, H, L, D] and [B, H, t, D] (t a few tokens) whose result, L + t long, is the KV
// length of the trace's decode calls of that batch and head dim.
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/attention_ops.h"
#include "analysis/kernel_classifier.h"
#include "analysis/rules/rule.h"

namespace attnprof {

void rule_kv_cache_cat(const RuleContext& ctx, std::vector<Finding>& out) {
  // The (batch, kv length, head dim) and heads of the decode calls.
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> decodes;
  std::set<std::int64_t> heads;
  int element = 0;  // bytes of the cache's elements: the decode calls' K and V
  for (const AttentionCall& c : ctx.attention.calls) {
    if (c.phase != AttentionPhase::Decode || !c.shape.known()) continue;
    decodes.insert({c.shape.batch, c.shape.kv_len, c.shape.head_dim});
    element = std::max(element, bytes_per_element(c.precision));
    heads.insert(c.shape.q_heads);
    if (c.shape.kv_heads > 0) heads.insert(c.shape.kv_heads);
  }
  if (decodes.empty()) return;
  const AttentionOps ops(ctx.index);
  std::vector<std::size_t> copies;
  std::int64_t ns = 0;
  double bytes = 0;
  std::set<std::int32_t> cats;
  for (const auto& inst : ctx.group.group.instances)
    for (std::size_t i : inst.activities) {
      const std::int32_t op = ctx.index.outermost_op(ctx.activity(i));
      if (op == kNone || ctx.index.name(ctx.index.ranges()[static_cast<std::size_t>(op)]) != "aten::cat") continue;
      const OpInputs* in = ops.inputs_of(op);
      if (in == nullptr || in->list_dims.size() != 2) continue;
      const auto& a = in->list_dims[0];
      const auto& b = in->list_dims[1];
      if (a.size() != 4 || b.size() != 4 || a[0] != b[0] || a[1] != b[1] || a[3] != b[3]) continue;
      if (b[2] > kDecodeMaxQueryRows || a[2] <= b[2] || !heads.contains(a[1])) continue;
      if (!decodes.contains({a[0], a[2] + b[2], a[3]})) continue;
      copies.push_back(i);
      ns += ctx.event(i).dur_ns;
      if (cats.insert(op).second)
        bytes += 2.0 * static_cast<double>(a[0] * a[1] * a[2] * a[3]) * element;  // the old cache read and written
    }
  if (copies.empty()) return;
  std::sort(copies.begin(), copies.end());
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  Finding f;
  f.id = "kv-cache-cat";
  f.scope = Scope::Model;
  set_cost(f, ctx, ns, instances_with(ctx, copies));
  // A static cache writes the new tokens in place: one small copy each, launch-bound (~2 us on the H200).
  constexpr std::int64_t kSmallCopyNs = 2000;
  f.after_ns = std::min<std::int64_t>(ns, static_cast<std::int64_t>(cats.size()) * kSmallCopyNs);
  f.activities = copies;
  const double per = static_cast<double>(cats.size()) / n;
  f.title = fmt::format(
      "KV cache grown by torch.cat every token: {:g} cop{} of the whole cache {} ({:.0f} MB read and written), {}", per,
      per == 1 ? "y" : "ies", per_instance(ctx), bytes / n / 1e6, per_instance_ms(ctx, ns));
  f.detail =
      "Each decode step concatenates the cache with the new token's K and V (Hugging Face's DynamicCache), so it "
      "reads and writes every cached token of every layer again: the copies grow with the sequence, as the "
      "attention reads do.";
  f.fix =
      "Preallocate the cache and write only the new tokens: model.generate(..., cache_implementation=\"static\") "
      "in transformers (a StaticCache of max_cache_len), or a preallocated tensor written with index_copy_ / slice "
      "assignment in your own loop. A static cache also keeps the decode step's shapes fixed, so "
      "torch.compile(mode=\"reduce-overhead\") can replay it as a CUDA graph.";
  add_kernel_evidence(f, ctx, copies);
  out.push_back(std::move(f));
}

}  // namespace attnprof
