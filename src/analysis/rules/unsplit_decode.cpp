// unsplit-decode: decode calls whose fused kernel runs a few CTAs on a GPU of many SMs and does not split the
// keys over the others (unsplit_decode.h says how they are told), so each CTA streams a whole head's cache
// while most SMs idle: the call reads its bytes at a small share of the GPU's bandwidth.
//
// Its time is the calls' own kernels, and after the fix a kernel that splits the keys over the SMs reading the
// same bytes (model_fused_ns's decode: the bytes at the GPU's bandwidth, a combine launch, the repeated K/V
// included where the call read them repeated; on the decode grid it read 0.83-0.94 of cuDNN's split decode
// kernel's measured time, BENCHMARKS.md). No other finding holds those kernels: unfused-attention charges
// unfused calls only, and these are fused; kv-repeat and kv-cache-gather charge the copies made before the
// calls, kv-cache-cat the cache's torch.cat copies and hidden-copy DtoD memcpys (other kernels), and what a
// call reads beyond K/V once per KV head stays in this estimate, not counted twice; attention-host is the
// calls' CPU time (wall), not their kernels. Without a
// shape (attnprof record) the saving is not told: after_ns stays unknown and the step model prices no fix
// (fixes.cpp).
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/fused_estimate.h"
#include "analysis/rules/rule.h"
#include "analysis/unsplit_decode.h"
#include "common/number_text.h"

namespace attnprof {
namespace {

std::string ctas_text(const std::set<std::int64_t>& ctas) {
  if (ctas.size() == 1) return fmt::format("{} CTA{}", *ctas.begin(), *ctas.begin() == 1 ? "" : "s");
  return fmt::format("{}-{} CTAs", *ctas.begin(), *ctas.rbegin());
}

constexpr std::string_view kFix =
    "Run decode on a kernel that splits the keys over the SMs and merges the splits (split-KV, FlashDecoding). "
    "In transformers' continuous batching (generate_batch, 5.17): attn_implementation=\"paged|flash_attention_2\" "
    "(the flash-attn package, or kernels-community/flash-attn2 through the kernels package) runs each forward "
    "whose requests all decode through its decode fast path, flash_attn_with_kvcache on the block table, which "
    "splits the keys over the SMs that batch x KV heads leave idle (FlashAttention's num_splits heuristic) and "
    "reads the pages in place (ContinuousBatchingConfig.max_blocks_per_request above 0, as generate_batch sizes "
    "it; not with sliding-window layers; FlashAttention 2 pages the cache in multiples of 256 tokens, "
    "ContinuousBatchingConfig.block_size's default); \"paged|sdpa\" hands SDPA every request's tokens as one sequence "
    "under "
    "a mask, which its kernels run a CTA a query tile and head. In your own code: attnprof.attention(q, k, v, "
    "is_causal=True, bottom_right=True, block_table=..., seq_lens=...) reads a paged or ragged cache with a "
    "decode kernel that splits the keys where batch x KV heads fill under 80% of the GPU, or "
    "scaled_dot_product_attention with a sequence's queries a batch row of their own and no mask (cuDNN's decode "
    "kernel and its lean reduction, as transformers' generate() with its dynamic cache runs it).";

}  // namespace

void rule_unsplit_decode(const RuleContext& ctx, std::vector<Finding>& out) {
  const std::vector<UnsplitDecode> all = find_unsplit_decodes(ctx.index, ctx.attention, ctx.device);
  if (all.empty()) return;
  std::map<std::size_t, const UnsplitDecode*> by_first;  // by the call's first activity
  for (const UnsplitDecode& u : all) by_first.emplace(ctx.attention.calls[u.call].activities.front(), &u);
  std::vector<const UnsplitDecode*> calls;
  for (const auto& inst : ctx.group.group.instances)
    for (std::size_t i : inst.activities)
      if (const auto it = by_first.find(i); it != by_first.end()) calls.push_back(it->second);
  if (calls.empty()) return;

  std::vector<std::size_t> activities;
  std::int64_t ns = 0, priced_ns = 0, split_ns = 0, unpriced_ns = 0;
  double bytes = 0;
  int priced = 0;
  std::set<std::int64_t> ctas;
  std::int64_t longest = 0, sms = 0;
  for (const UnsplitDecode* u : calls) {
    const AttentionCall& call = ctx.attention.calls[u->call];
    for (std::size_t a : call.activities)  // its kernels, whose time it is (a workspace memset is not)
      if (ctx.event(a).kind == EventKind::Kernel) activities.push_back(a);
    ns += u->kernel_ns;
    ctas.insert(u->ctas);
    sms = u->sms;
    if (u->split_ns < 0) {
      unpriced_ns += u->kernel_ns;
      continue;
    }
    ++priced;
    priced_ns += u->kernel_ns;
    split_ns += std::min(u->split_ns, u->kernel_ns);
    bytes += u->bytes;
    longest = std::max(longest, call.shape.kv_len);
  }
  std::sort(activities.begin(), activities.end());
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  const double peak = device_memory_tb_per_s(ctx.device);
  // The calls with a shape: their bytes over their time, TB/s, and its share of the peak.
  const double tb_per_s = priced > 0 ? bytes / static_cast<double>(priced_ns) / 1e3 : 0;
  const auto count = static_cast<double>(calls.size());

  Finding f;
  f.id = "unsplit-decode";
  f.scope = Scope::Attention;
  set_cost(f, ctx, ns, instances_with(ctx, activities));
  // A split kernel for the calls with a shape; the others as they ran (their saving is not told), and no
  // estimate at all where none has a shape.
  if (priced > 0) f.after_ns = split_ns + unpriced_ns;
  f.activities = activities;
  f.title =
      fmt::format("Decode calls that do not split the keys over the GPU: {} call{} {} of {} on {} SMs{}, {}",
                  per_instance_count(ctx, count), text::plural(count / n), per_instance(ctx), ctas_text(ctas), sms,
                  priced > 0 ? fmt::format(" reading {} a call at {:.0f}% of the GPU's bandwidth",
                                           format_mb(bytes / priced), 100.0 * tb_per_s / peak)
                             : std::string(),
                  per_instance_ms(ctx, ns));
  f.detail = fmt::format(
      "Each of these decode calls launches its kernel on {} of the GPU's {} SMs and no kernel merges partial "
      "results over the keys (no split-KV combine), so each CTA reads a whole head's keys and values while the "
      "other SMs idle.",
      ctas_text(ctas), sms);
  if (priced == 0) {
    f.detail +=
        " The trace has no shapes (attnprof record, or no record_shapes): the launches, the missing combine and the "
        "calls' phase (told from their kernels) are all it says; the bytes they read and what a split kernel would "
        "take are not told, so no saving is counted. Traced by torch.profiler with record_shapes=True, doctor "
        "prices it.";
  } else {
    f.detail += fmt::format(
        " The calls with their shapes (record_shapes) must move {} a call (q, K and V as they read them, the "
        "output; caches up to {} tokens) and do it at {:.2f} TB/s, {:.0f}% of the GPU's {:g} TB/s; a kernel that "
        "splits the keys over the SMs would read the same bytes at the GPU's bandwidth, about {:.1f} us a call "
        "against their {:.1f} us (modelled: doctor's fused-kernel estimate for decode, a combine launch included).",
        format_mb(bytes / priced), longest, tb_per_s, 100.0 * tb_per_s / peak, peak,
        static_cast<double>(split_ns) / priced / 1e3, static_cast<double>(priced_ns) / priced / 1e3);
  }
  if (priced > 0 && priced < static_cast<int>(calls.size()))
    f.detail += fmt::format(
        " {} more call{} {} ran without a shape in the trace (a CUDA graph's replay whose capture it does not "
        "hold): counted as they ran, no saving.",
        per_instance_count(ctx, static_cast<double>(calls.size()) - priced),
        text::plural((static_cast<double>(calls.size()) - priced) / n), per_instance(ctx));
  f.fix = std::string(kFix);
  add_kernel_evidence(f, ctx, activities);
  out.push_back(std::move(f));
}

}  // namespace attnprof
