// K and V repeated to every query head before attention: grouped-query attention whose program makes
// [B, Hkv * n_rep, S, D] copies of K and V for a call that then reads them, where a GQA kernel reads
// each KV head once. Hugging Face's repeat_kv does it (x[:, :, None].expand(B, Hkv, n_rep, S, D)
// .reshape(B, Hkv * n_rep, S, D): one copy kernel for K and one for V, per layer and forward), in its
// eager attention always and in its SDPA path whenever it passes SDPA a mask (transformers 5.17,
// use_gqa_in_sdpa). Told by the copy's op and its record_shapes inputs, so only in a trace with CPU ops:
//   - aten::reshape of a [B, Hkv, n_rep, S, D] tensor whose n_rep dim has stride 0 (an expand: eager);
//   - an Inductor pointwise kernel with "expand" in its name (torch.compile fuses repeat_kv into one,
//     triton_poi_fused_clone_expand_...) whose inputs hold that 5-d tensor, or [B, Hkv, S, D] beside
//     [B, Hkv * n_rep, S, D];
// for a CUDA graph's replay, the op at the graph's capture (none where the trace does not hold it).
// A copy counts when it feeds a forward call: the next call on its stream (or the one it runs inside
// the kernels of, where Inductor moved V's copy into the chain) whose K/V it matches, [B, Hkv * n_rep,
// S, D]: an SDPA op that saw Hkv * n_rep K/V heads, or an unfused call's QK^T over that many heads.
// A copy among a call's own kernels (Inductor moves V's copy between the softmax and P V) is marked
// in_call: the call's time holds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct KvRepeat {
  std::size_t activity = 0;  // the copy kernel: an index into TraceIndex::activities()
  std::int32_t op = kNone;   // the op that made it (an index into TraceIndex::ranges()), at the capture for a replay
  std::size_t call = 0;      // the attention call it feeds: an index into AttentionView::calls
  std::int64_t batch = 0, kv_heads = 0, n_rep = 0, kv_len = 0, head_dim = 0;
  // The repeated tensor the op wrote, B x Hkv x n_rep x S x D elements of the call's precision (bf16
  // where it is not known); 0 on an op's later kernels (an op over 2^31 elements runs in pieces).
  double bytes = 0;
  bool in_call = false;  // it runs among the call's kernels (AttentionView::in_attention)
};

// Every repeat copy of the trace, in GPU order.
std::vector<KvRepeat> find_kv_repeats(const TraceIndex& index, const AttentionView& view);

}  // namespace attnprof
