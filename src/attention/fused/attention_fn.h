// The fused kernel behind the project-wide attention interface (src/attention/params.h):
// an AttentionFn and its WorkspaceFn, so `attnprof bench` can register it as `fused`,
// and the same with a chosen kernel path for the fused-kernel lab. CUDA-free header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/params.h"
#include "tile_table.h"

namespace attnprof::fused {

// bf16/fp16, head_dim 64 or 128, a positive scale, causal (top-left or bottom-right, any q_len
// and kv_len) or none. Throws InputError for anything else and std::runtime_error for a failed CUDA call.
// Runs on ctx.stream.
void attention_forward(const attention::AttentionParams& p, const attention::ExecContext& ctx);

// The same on one kernel path (the lab times and checks each).
void attention_forward_on(const attention::AttentionParams& p, const attention::ExecContext& ctx, Path path);

// The Hopper schedule of `path` (HopperV2/V5/V6/V7/V8/V11; not Hopper, which picks one per call) with per-tile timers
// written to `timers` (device memory of timer_layout(...).words() words, tile_timers.h), for the lab. bf16 with keys,
// sm_90 only.
void attention_forward_timed(const attention::AttentionParams& p, const attention::ExecContext& ctx,
                             std::uint64_t* timers, Path path = Path::HopperV7);

// attention_forward_on as an AttentionFn: `attnprof bench --impl fused:<path>`.
template <Path P>
void attention_forward_path(const attention::AttentionParams& p, const attention::ExecContext& ctx) {
  attention_forward_on(p, ctx, P);
}

// Scratch for the log-sum-exp when p.lse is null (the kernel always writes it), then attention_scratch.
std::size_t attention_workspace(const attention::AttentionParams& p);

// The rest of the workspace: the kernels' scratch on the current device (kernel_scratch: version 13's
// split tail, 16 bytes for version 29's tile counter on causal calls whose tiles all see a key; 0 for
// the others). Reads only p's sizes, head dim, causal flag and alignment, so a caller can ask before
// it has tensors.
std::size_t attention_scratch(const attention::AttentionParams& p);

}  // namespace attnprof::fused
