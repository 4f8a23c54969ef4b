// Decode calls that stream their keys through a few SMs: a fused forward that decodes (AttentionPhase::Decode)
// whose main kernel launches at most a quarter as many CTAs as the GPU has SMs and does not split the keys
// over more (no split-KV combine in the call, AttentionCall::combines_splits), so each CTA reads a whole
// head's cache while the other SMs idle. transformers' continuous batching with "paged|sdpa" does it: its
// packed decode forwards (one query a request, batch 1, a mask keeping the requests apart) run cuDNN's flash
// prefill kernel, one CTA a head (8 on a 132-SM H100), where generate()'s SDPA runs cuDNN's split decode
// kernel and its lean reduction. The grid comes from the kernel's launch, the SMs from the trace's
// deviceProperties; without them nothing is told.
//
// Where the call's shape is known (record_shapes) it counts only if it also reads slowly: the bytes it must
// move (attention_bytes: q, K, V as it read them, the output) over its time are under a quarter of the GPU's
// peak bandwidth, and a kernel that splits the keys over the SMs (model_fused_ns's decode, the same bytes at
// the GPU's bandwidth, a combine launch included) would take at most half its time. Without a shape
// (attnprof record) the launch, the missing combine and the phase are all the trace says: no bytes, no
// estimate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct UnsplitDecode {
  std::size_t call = 0;        // an index into AttentionView::calls
  std::int64_t ctas = 0;       // its main kernel's grid, x * y * z
  std::int64_t sms = 0;        // the GPU's (deviceProperties)
  std::int64_t kernel_ns = 0;  // the call's kernels
  double bytes = 0;            // what it must move (attention_bytes); 0 where its shape is not known
  double share = -1;           // bytes over kernel_ns against the GPU's peak bandwidth; -1 not known
  std::int64_t split_ns = -1;  // a kernel splitting its keys over the SMs (model_fused_ns); -1 not known
};

// A decode call counts with at most a kFewCtas-th as many CTAs as SMs, and, where its shape is known, under
// kLowShare of the GPU's bandwidth with a split kernel modelled at most 1/kSplitGain of its time.
inline constexpr std::int64_t kFewCtas = 4;
inline constexpr double kLowShare = 0.25;
inline constexpr std::int64_t kSplitGain = 2;

// Every such call of the trace, in GPU order.
std::vector<UnsplitDecode> find_unsplit_decodes(const TraceIndex& index, const AttentionView& view,
                                                const DeviceSummary& device);

}  // namespace attnprof
