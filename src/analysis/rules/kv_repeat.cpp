// kv-repeat: grouped-query attention whose K and V are copied to every query head before the call
// (Hugging Face's repeat_kv; kv_repeat.h says how the copies are told), so each call reads n_rep
// copies of every KV head, and every decode step copies the whole cache n_rep times first.
//
// Its time is the copies' alone, and the fix makes them go (after_ns 0). No other finding holds them:
// hidden-copy counts DtoD memcpys, and these are copy kernels (ATen's direct_copy_kernel, Inductor's
// triton_poi_fused_..._expand_...); unfused-attention charges a call's own kernels (a copy among them,
// torch.compile's V copy, is left to it here) against a fused estimate that already reads K and V once
// per KV head (the eager call's KV heads come from this very repeat, AttentionView::kv_heads_from_repeat).
// Its fused-attention fix in the step model takes the copies away with the calls
// (widen_by_layout_copies), and this finding with them (fixes.cpp). What a fused call fed repeated K/V
// reads beyond one copy per KV head is in its kernel time, which this finding does not estimate: the
// detail says the bytes.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/fused_estimate.h"
#include "analysis/kv_repeat.h"
#include "analysis/rules/rule.h"
#include "common/number_text.h"

namespace attnprof {
namespace {

std::string heads_text(const std::set<std::pair<std::int64_t, std::int64_t>>& heads) {
  if (heads.size() == 1)
    return fmt::format("{} K/V heads copied to {} query heads", heads.begin()->first,
                       heads.begin()->first * heads.begin()->second);
  std::string out = "K/V heads copied ";
  for (const auto& [kv, rep] : heads) out += fmt::format("{}{}x", out.back() == ' ' ? "" : ", ", rep);
  return out;
}

// The fix for calls that are not fused (eager attention): SDPA where transformers passes no mask,
// a kernel reading GQA itself where it passes one.
constexpr std::string_view kEagerFix =
    "In Hugging Face transformers (5.17), attn_implementation=\"sdpa\": where transformers passes SDPA no mask "
    "(no padding, the default dynamic cache) it hands SDPA K and V with their own heads and enable_gqa=True "
    "(use_gqa_in_sdpa: no mask, a head dim up to 256), which also fuses the calls; where it passes a mask (padded "
    "batches, a static cache) it "
    "repeats them as eager attention does, and attn_implementation=\"flash_attention_2\" (K and V go to "
    "FlashAttention with their own heads) or \"flex_attention\" (enable_gqa=True where the query heads are a power "
    "of two) read them in place. attnprof.register_transformers() then attn_implementation=\"attnprof\" reads them "
    "in place too, without a mask. In your own code: "
    "torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True) with K and V at their KV heads.";

// The fix for fused calls fed repeated K/V: transformers' SDPA path with a mask, or its paged SDPA.
constexpr std::string_view kSdpaFix =
    "transformers (5.17) repeats K and V before SDPA whenever it passes SDPA a mask (use_gqa_in_sdpa gives "
    "enable_gqa=True only without one): a static cache's decode forwards pass one (the cache's unfilled positions "
    "are masked), as do padded batches; its paged SDPA for continuous batching (\"paged|sdpa\") "
    "repeats them always. Run an implementation that reads grouped-query attention itself: "
    "attn_implementation=\"flash_attention_2\" (transformers hands FlashAttention K and V with their own heads; "
    "\"paged|flash_attention_2\" in continuous batching) or \"flex_attention\" (enable_gqa=True where the query "
    "heads are a power of two); without padding, the default dynamic cache gives SDPA no mask and enable_gqa=True. "
    "In your own code: scaled_dot_product_attention(q, k, v, enable_gqa=True) with K and V at their KV heads, or "
    "attnprof.attention(q, k, v, ...), which reads them in place (seq_lens for a preallocated cache).";

}  // namespace

void rule_kv_repeat(const RuleContext& ctx, std::vector<Finding>& out) {
  const std::vector<KvRepeat> all = find_kv_repeats(ctx.index, ctx.attention);
  if (all.empty()) return;
  std::vector<const KvRepeat*> by_activity(ctx.index.activities().size(), nullptr);
  for (const KvRepeat& k : all) by_activity[k.activity] = &k;
  std::vector<std::size_t> copies;
  std::int64_t ns = 0;
  double bytes = 0;
  std::map<std::size_t, const KvRepeat*> calls;           // the calls fed, each with one of its copies
  std::set<std::pair<std::int64_t, std::int64_t>> heads;  // (KV heads, n_rep)
  std::set<std::pair<StringId, std::array<std::int32_t, 3>>> replayed_kernels;
  int replayed = 0, in_calls = 0;
  for (const auto& inst : ctx.group.group.instances)
    for (std::size_t i : inst.activities) {
      const KvRepeat* k = by_activity[i];
      if (k == nullptr) continue;
      // Among the call's own kernels: the call's time (unfused-attention's) holds it.
      if (k->in_call) {
        ++in_calls;
        calls.emplace(k->call, k);
        continue;
      }
      copies.push_back(i);
      ns += ctx.event(i).dur_ns;
      bytes += k->bytes;
      calls.emplace(k->call, k);
      heads.insert({k->kv_heads, k->n_rep});
      if (ctx.index.graph_replayed(i)) {
        ++replayed;
        const GpuArgs* g = ctx.trace().args(ctx.event(i));
        replayed_kernels.insert({ctx.event(i).name, g != nullptr ? g->grid : std::array<std::int32_t, 3>{}});
      }
    }
  if (copies.empty()) return;  // all among the calls' kernels: unfused-attention holds them
  // Kernels of the same names and grids in replays whose capture the trace does not hold: the same
  // graph's nodes, most likely, but nothing in the trace says what they copied.
  int untold = 0;
  if (!replayed_kernels.empty())
    for (const auto& inst : ctx.group.group.instances)
      for (std::size_t i : inst.activities) {
        if (!ctx.index.graph_replayed(i) || ctx.index.capture_range(i) != kNone) continue;
        const GpuArgs* g = ctx.trace().args(ctx.event(i));
        untold +=
            replayed_kernels.contains({ctx.event(i).name, g != nullptr ? g->grid : std::array<std::int32_t, 3>{}});
      }
  std::map<AttentionPhase, int> phases;
  bool fused = false, unfused = false, backward = false;
  // The decode call of the longest cache: what it reads (q, the repeated K and V, the output) and what it
  // would with K and V once per KV head.
  std::int64_t longest = 0;
  double reads = 0, reads_once = 0;
  for (const auto& [c, k] : calls) {
    const AttentionCall& call = ctx.attention.calls[c];
    ++phases[call.phase];
    (call.impl == AttentionImpl::Fused ? fused : unfused) = true;
    if (call.phase != AttentionPhase::Decode || call.shape.kv_len <= longest) continue;
    longest = call.shape.kv_len;
    AttentionShape s = call.shape;  // K/V as [B, heads, S, D], whether q's shape is [B, H, ...] or [B * H, ...]
    s.kv_batch = k->batch;
    s.kv_heads = k->kv_heads * k->n_rep;
    reads = attention_bytes(s, call.precision);
    s.kv_heads = k->kv_heads;
    reads_once = attention_bytes(s, call.precision);
  }
  for (const AttentionSummary& s : ctx.group.attention) backward |= s.pass == AttentionPass::Backward;
  std::sort(copies.begin(), copies.end());
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  const std::int64_t n_rep = heads.rbegin()->second;

  Finding f;
  f.id = "kv-repeat";
  f.scope = Scope::Attention;
  set_cost(f, ctx, ns, instances_with(ctx, copies));
  f.after_ns = 0;  // a kernel that reads grouped-query attention itself copies nothing
  f.activities = copies;
  f.title = fmt::format(
      "K and V repeated to every query head before attention ({}): {} cop{} {} ({} written) feeding {} call{}, {}",
      heads_text(heads), per_instance_count(ctx, static_cast<double>(copies.size())),
      static_cast<double>(copies.size()) == n ? "y" : "ies", per_instance(ctx), format_mb(bytes / n),
      per_instance_count(ctx, static_cast<double>(calls.size())), text::plural(static_cast<double>(calls.size()) / n),
      per_instance_ms(ctx, ns));
  f.detail = fmt::format(
      "Grouped-query attention whose K and V are copied to every query head before each call (expanded to [B, Hkv, "
      "n_rep, S, D] and made contiguous: Hugging Face's repeat_kv), a copy kernel for K and one for V, and the call "
      "then reads the copies: {}x the K/V bytes of a kernel that reads each KV head once.",
      n_rep);
  if (phases.size() > 1 || !phases.contains(AttentionPhase::None))
    f.detail += fmt::format(" The calls {}: {}.", per_instance(ctx), calls_by_phase(ctx, phases));
  if (in_calls > 0)
    f.detail += fmt::format(
        " {} more cop{} {} ran among the calls' own kernels (torch.compile moves V's copy between the softmax and P "
        "V): the calls' own time holds {}, not this finding's.",
        per_instance_count(ctx, in_calls), in_calls == n ? "y" : "ies", per_instance(ctx),
        in_calls == n ? "it" : "them");
  if (phases.contains(AttentionPhase::Decode))
    f.detail += fmt::format(
        " Each decode step copies the whole cache (up to {} tokens) {} times over, layer by layer, and then each call "
        "reads up to {} (q, the repeated K and V, the output) where K and V once per KV head make {}: those reads are "
        "in the calls' time, not in this finding's.",
        longest, n_rep, format_mb(reads), format_mb(reads_once));
  if (replayed > 0)
    f.detail += fmt::format(
        " {} of the copies ran in CUDA graph replays, told by their ops at the graph's capture in this trace{}.",
        replayed,
        untold > 0 ? fmt::format("; {} more kernels of the same names and grids ran in replays whose capture the trace "
                                 "does not hold: not counted, as nothing in the trace says what they copied",
                                 untold)
                   : std::string());
  if (backward)
    f.detail +=
        " In training, autograd also sums the repeated K and V gradients back over the repeated heads (the expand's "
        "backward): not counted here.";
  f.fix = unfused && fused ? fmt::format("Unfused calls: {} Fused calls: {}", kEagerFix, kSdpaFix)
          : unfused        ? std::string(kEagerFix)
                           : std::string(kSdpaFix);
  add_kernel_evidence(f, ctx, copies);
  out.push_back(std::move(f));
}

}  // namespace attnprof
