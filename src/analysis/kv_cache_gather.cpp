// A paged KV cache gathered into dense K/V for an attention call (kv_cache_gather.h).
#include "analysis/kv_cache_gather.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

namespace attnprof {
namespace {

struct Gather {
  std::int64_t tokens, kv_heads, head_dim;
};

bool sane(std::int64_t v) { return v > 0 && v < (std::int64_t{1} << 31); }

// index_select(pool [slots, Hkv, D], 0, index [tokens]): the op's record_shapes inputs are the pool, the
// dim (a scalar) and the index.
std::optional<Gather> gather_of(const OpInputs& in) {
  if (in.dims.size() < 3 || in.dims[0].size() != 3 || in.dims[2].size() != 1) return std::nullopt;
  if (in.concrete.size() > 1 && !in.concrete[1].empty() && in.concrete[1] != "0") return std::nullopt;
  const auto& pool = in.dims[0];
  if (!std::all_of(pool.begin(), pool.end(), sane) || !sane(in.dims[2][0])) return std::nullopt;
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
  const auto stream = [&](std::size_t a) {
    const GpuArgs* g = t.args(index.event(index.activities()[a]));
    return g != nullptr ? g->stream : -1;
  };
  std::set<std::pair<std::int32_t, std::int32_t>> written;  // (op, graph launch): one tensor each
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    const GpuActivity& act = index.activities()[i];
    if (index.event(act).kind != EventKind::Kernel || view.in_attention(i)) continue;
    // The op around its launch (at the capture, for a graph's replay): the nearest index_select.
    const std::int32_t captured = index.capture_range(i);
    std::int32_t r = captured != kNone ? captured : index.graph_replayed(i) ? kNone : act.range;
    std::optional<Gather> gather;
    while (r != kNone) {
      const CpuRange& range = index.ranges()[static_cast<std::size_t>(r)];
      if (range.kind == EventKind::CpuOp && index.name(range) == "aten::index_select") {
        if (const OpInputs* in = t.op_inputs_of(range.event)) gather = gather_of(*in);
        break;
      }
      r = range.parent;
    }
    if (!gather) continue;
    // The call it feeds: the next forward call on its stream.
    const auto next = std::upper_bound(view.calls.begin(), view.calls.end(), i,
                                       [](std::size_t a, const AttentionCall& c) { return a < c.activities.front(); });
    std::optional<std::size_t> fed;
    for (auto c = next; !fed && c != view.calls.end(); ++c)
      if (c->pass == AttentionPass::Forward && stream(c->activities.front()) == stream(i))
        fed = static_cast<std::size_t>(c - view.calls.begin());
    if (!fed || !reads(view.calls[*fed], *gather)) continue;
    KvCacheGather k{i, r, *fed, gather->tokens, gather->kv_heads, gather->head_dim, 0};
    if (written.insert({r, captured != kNone ? act.launch : kNone}).second) {
      const Precision p = view.calls[*fed].precision;
      k.bytes = static_cast<double>(bytes_per_element(p == Precision::Unknown ? Precision::BF16 : p)) *
                static_cast<double>(k.tokens) * static_cast<double>(k.kv_heads) * static_cast<double>(k.head_dim);
    }
    out.push_back(k);
  }
  return out;
}

}  // namespace attnprof
