// A paged KV cache gathered into a dense K/V before each attention call that reads cached keys: every
// request's cached tokens copied out of the page pool, [tokens, K/V heads, head dim], for a kernel that
// reads dense K/V only. transformers' continuous batching does it for "paged|sdpa" and "paged|eager"
// (PagedAttentionCache.update, 5.17: torch.index_select of the layer's K and V pools at the forward's
// read index, one gather each, per layer and forward; a forward of fresh prompts alone reads nothing back)
// and for the forwards of "paged|flash_attention_2" that hold a prompt's tokens. Told by the op and its
// record_shapes inputs, so only in a trace with CPU ops:
//   - aten::index_select of a 3-d pool [slots, Hkv, D] by a 1-d index of `tokens` slots;
//   - feeding the next forward call on its stream that reads cached keys (decode or mixed) and whose K/V
//     are those tokens (kv_len x K/V batch) at that head dim, with Hkv heads or repeated to the query heads
//     (repeat_kv after the gather, kv-repeat's);
// for a CUDA graph's replay, the op at the graph's capture (none where the trace does not hold it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct KvCacheGather {
  std::size_t activity = 0;  // the gather's kernel: an index into TraceIndex::activities()
  std::int32_t op = kNone;   // its aten::index_select (an index into TraceIndex::ranges()), at the capture for a replay
  std::size_t call = 0;      // the attention call it feeds: an index into AttentionView::calls
  std::int64_t tokens = 0, kv_heads = 0, head_dim = 0;
  // The dense copy the op wrote, tokens x Hkv x D elements of the call's precision (bf16 where it is not
  // known); 0 on an op's later kernels.
  double bytes = 0;
};

// Every gather of a KV cache in the trace, in GPU order.
std::vector<KvCacheGather> find_kv_cache_gathers(const TraceIndex& index, const AttentionView& view);

}  // namespace attnprof
