// An attention call's shape from its kernels alone, for traces without
// record_shapes (attnprof record, torch.profiler without it): what kernel names
// and launch grids determine, and nothing more. Sizes it cannot tell stay 0,
// and `inferred` says which kernel gave what and what was assumed.
//   FlashAttention 2 forward (flash_fwd_kernel / flash_fwd_splitkv_kernel):
//     head dim and block rows from Flash_fwd_kernel_traits<D, kBlockM, ...>,
//     is_causal from the template flags, batch and heads (or batch x heads when
//     split along the keys) and ceil(S / kBlockM) from the grid.
//   Memory-efficient forward (fmha_cutlassF_*): grid (ceil(S / kQueries), heads,
//     batch), head dim at most the kernel's kMaxK (taken as it).
//   cuDNN's decode kernel (a generated SDPA forward of 16 query rows a tile): grid (key splits, K/V
//     heads, batch), the head dim in its name, the query heads from its combine's grid where the keys
//     were split; the key length is in neither (q_len taken as 1, kv_len left 0).
//   Unfused and SDPA-math calls: rows = batch x heads x S from the softmax's
//     launch (softmax_warp_forward<..., log2(S_kv) rounded up, ...> and its grid,
//     or one block per row for cunn_SoftMaxForward), S_kv from the largest
//     score-sized elementwise_kernel<threads, items, ...> launch; the head dim is
//     not in these kernels. Rows that are no whole number of S_kv-key rows are a
//     decode's few queries against a cache, sized by batch x heads of the trace's
//     self-attention calls (cached_shape_from_kernels).
// Where only the query length's block range is known, the top of it is taken;
// the key length is taken equal to it (self-attention without a cache) unless a
// kernel says otherwise. All of it is said in `inferred`.
#pragma once

#include <string_view>
#include <vector>

#include "analysis/attention.h"

namespace attnprof {

// from == ShapeFrom::Kernels when any size was found, else ShapeFrom::None.
AttentionShape shape_from_kernels(const AttentionCall& call, const TraceIndex& index);

// An unfused or SDPA-math forward whose softmax rows are no whole number of key-length rows (so not
// self-attention without a cache, which shape_from_kernels reads), read as a few queries against cached
// keys: rows = batch_x_heads (the trace's self-attention calls', its prefill) x S, S at most max_q and
// fewer than the keys. ShapeFrom::None where it does not read so.
AttentionShape cached_shape_from_kernels(const AttentionCall& call, const TraceIndex& index, std::int64_t batch_x_heads,
                                         std::int64_t max_q);

// The top-level template arguments of `templ` ("softmax_warp_forward<") in a demangled kernel name,
// as written ("c10::Half", "9"); empty when the name has no such template.
std::vector<std::string_view> kernel_template_args(std::string_view name, std::string_view templ);

}  // namespace attnprof
