// kv-cache-gather: a paged KV cache gathered into a dense K/V before every attention call that reads cached
// keys (transformers' paged SDPA and eager attention; kv_cache_gather.h says how the gathers are told), so
// each decode step copies every request's whole cache, K and V of every layer, out of its pages first.
//
// Its time is the gathers' kernels alone (ATen's index_select: vectorized_gather_kernel in the
// traces here). No other finding holds them: hidden-copy counts DtoD memcpys; kv-repeat the copies
// repeat_kv makes of the gathered K/V afterwards (other kernels, which go with the same fix: the
// decode fast path reads the pages with K/V once per KV head); kv-cache-cat a cache grown by torch.cat, which
// a paged cache never is; the attention calls' own kernels are the calls' (unfused-attention,
// unsplit-decode). After the fix the gathers before decode calls go (after_ns 0); those before mixed calls
// (packed forwards that may hold a prompt's tokens, which still gather) stay as they ran.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "analysis/kv_cache_gather.h"
#include "analysis/rules/rule.h"
#include "common/number_text.h"

namespace attnprof {
namespace {

constexpr std::string_view kFix =
    "Read the pages in place. In transformers' continuous batching (generate_batch, 5.17): "
    "attn_implementation=\"paged|flash_attention_2\" (the flash-attn package, or kernels-community/flash-attn2 "
    "through the kernels package): a forward whose requests all decode takes its decode fast path, "
    "flash_attn_with_kvcache on the block table, with no gather and no repeat_kv "
    "(ContinuousBatchingConfig.max_blocks_per_request above 0, as generate_batch sizes it; not with "
    "sliding-window layers; FlashAttention 2 pages the cache in multiples of 256 tokens, "
    "ContinuousBatchingConfig.block_size's default); forwards that hold a prompt's tokens still gather "
    "(PagedAttentionCache.update "
    "before flash_attn_varlen_func). \"paged|sdpa\" and \"paged|eager\" gather before every forward that reads "
    "cached keys. In your own code: attnprof.attention(q, k_pool, v_pool, is_causal=True, bottom_right=True, "
    "block_table=..., seq_lens=...) reads pools of [pages, page_size, Hkv, D] through the block table, as "
    "FlashInfer's and vLLM's paged kernels do.";

}  // namespace

void rule_kv_cache_gather(const RuleContext& ctx, std::vector<Finding>& out) {
  const std::vector<KvCacheGather> all = find_kv_cache_gathers(ctx.index, ctx.attention);
  if (all.empty()) return;
  std::vector<const KvCacheGather*> by_activity(ctx.index.activities().size(), nullptr);
  for (const KvCacheGather& g : all) by_activity[g.activity] = &g;
  std::vector<std::size_t> gathers;
  std::int64_t ns = 0, kept_ns = 0;
  double bytes = 0;
  std::set<std::size_t> calls;
  std::set<std::tuple<std::int64_t, std::int64_t>> layouts;  // (K/V heads, head dim)
  std::int64_t longest = 0;
  int replayed = 0;
  for (const auto& inst : ctx.group.group.instances)
    for (std::size_t i : inst.activities) {
      const KvCacheGather* g = by_activity[i];
      if (g == nullptr) continue;
      gathers.push_back(i);
      const std::int64_t d = ctx.event(i).dur_ns;
      ns += d;
      bytes += g->bytes;
      calls.insert(g->call);
      layouts.insert({g->kv_heads, g->head_dim});
      longest = std::max(longest, g->tokens);
      replayed += ctx.index.graph_replayed(i);
      if (ctx.attention.calls[g->call].phase != AttentionPhase::Decode) kept_ns += d;
    }
  if (gathers.empty()) return;
  std::sort(gathers.begin(), gathers.end());
  std::map<AttentionPhase, int> phases;
  for (std::size_t c : calls) ++phases[ctx.attention.calls[c].phase];
  const auto n = static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size()));
  const auto count = static_cast<double>(gathers.size());

  Finding f;
  f.id = "kv-cache-gather";
  f.scope = Scope::Attention;
  set_cost(f, ctx, ns, instances_with(ctx, gathers));
  f.after_ns = kept_ns;  // the decode fast path reads the pages in place; forwards with a prompt still gather
  f.activities = gathers;
  const auto& [heads, dim] = *layouts.begin();
  f.title = fmt::format(
      "KV cache gathered out of its pages before every call that reads it: {} gather{} {} ({} written, up to {} "
      "tokens x {} K/V heads x {}) feeding {} call{}, {}",
      per_instance_count(ctx, count), text::plural(count / n), per_instance(ctx), format_mb(bytes / n), longest, heads,
      dim, per_instance_count(ctx, static_cast<double>(calls.size())),
      text::plural(static_cast<double>(calls.size()) / n), per_instance_ms(ctx, ns));
  f.detail = fmt::format(
      "Each forward that reads cached keys first copies every cached token of every request out of the paged pool "
      "into a dense [tokens, K/V heads, head dim] tensor (aten::index_select at the block table's slots: "
      "transformers' PagedAttentionCache.update), one gather for K and one for V a layer, and the attention call "
      "then reads the copy: the whole cache written once more each step, growing with it. The calls {}: {}.",
      per_instance(ctx), calls_by_phase(ctx, phases));
  if (phases.contains(AttentionPhase::Mixed))
    f.detail += fmt::format(
        " The gathers before mixed calls ({}) feed packed forwards with more query rows than a decode's, one "
        "token of each of many requests or a prompt's chunk (the trace does not say which): a forward with a "
        "prompt's tokens still gathers under the fix, so they count as staying.",
        per_instance_ms(ctx, kept_ns));
  if (replayed > 0)
    f.detail += fmt::format(
        " {} of the gathers {} ran in CUDA graph replays, told by their ops at the graph's capture in this trace.",
        per_instance_count(ctx, replayed), per_instance(ctx));
  f.fix = std::string(kFix);
  add_kernel_evidence(f, ctx, gathers);
  out.push_back(std::move(f));
}

}  // namespace attnprof
