// A paged KV cache gathered into dense K/V for an attention call (kv_cache_gather.h).
#include "analysis/kv_cache_gather.h"

#include <algorithm>
#include <optional>

#include "analysis/kv_copies.h"

namespace attnprof {
namespace {

struct Gather {
  std::int64_t tokens, kv_heads, head_dim;
};

// index_select(pool [slots, Hkv, D], 0, index [tokens]): the op's record_shapes inputs are the pool, the
// dim (a scalar) and the index.
std::optional<Gather> gather_of(const OpInputs& in) {
  if (in.dims.size() < 3 || in.dims[0].size() != 3 || in.dims[2].size() != 1) return std::nullopt;
  if (in.concrete.size() > 1 && !in.concrete[1].empty() && in.concrete[1] != "0") return std::nullopt;
  const auto& pool = in.dims[0];
  if (!std::all_of(pool.begin(), pool.end(), tensor_dim) || !tensor_dim(in.dims[2][0])) return std::nullopt;
  return Gather{in.dims[2][0], pool[1], pool[2]};
}

// Whether a call reads the gathered tokens as its K/V: cached keys (decode, mixed), those tokens at that
// head dim, with the pool's heads or repeated to the query heads.
bool reads(const AttentionCall& c, const Gather& g) {
  const AttentionShape& s = c.shape;
  if (c.pass != AttentionPass::Forward || !reads_growing_cache(c.phase) || !s.known() || s.head_dim != g.head_dim)
    return false;
  if (s.kv_len * (s.kv_batch > 0 ? s.kv_batch : s.batch) != g.tokens) return false;
  const std::int64_t heads = s.kv_heads > 0 ? s.kv_heads : s.q_heads;
  return heads == g.kv_heads || (heads == s.q_heads && s.q_heads % g.kv_heads == 0);
}

}  // namespace

std::vector<KvCacheGather> find_kv_cache_gathers(const TraceIndex& index, const AttentionView& view) {
  std::vector<KvCacheGather> out;
  if (!index.has_cpu_ops() || view.calls.empty()) return out;
  const Trace& t = index.trace();
  FirstWrites written;
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    if (index.event(index.activities()[i]).kind != EventKind::Kernel || view.in_attention(i)) continue;
    // The nearest index_select around its launch.
    const std::int32_t r = launching_op(index, i, [&](const CpuRange& range) {
      return range.kind == EventKind::CpuOp && index.name(range) == "aten::index_select";
    });
    if (r == kNone) continue;
    const OpInputs* in = t.op_inputs_of(index.ranges()[static_cast<std::size_t>(r)].event);
    const std::optional<Gather> gather = in != nullptr ? gather_of(*in) : std::nullopt;
    if (!gather) continue;
    // The call it feeds: the next forward call on its stream.
    const std::optional<std::size_t> fed = next_forward_call(index, view, i);
    if (!fed || !reads(view.calls[*fed], *gather)) continue;
    KvCacheGather k{i, r, *fed, gather->tokens, gather->kv_heads, gather->head_dim, 0};
    if (written.first(index, i, r))
      k.bytes = bytes_of(view.calls[*fed], static_cast<double>(k.tokens) * static_cast<double>(k.kv_heads) *
                                               static_cast<double>(k.head_dim));
    out.push_back(k);
  }
  return out;
}

}  // namespace attnprof
