// The fused kernel behind the project-wide attention interface (src/attention/params.h):
// an AttentionFn and its WorkspaceFn, so `attnprof bench` can register it as `fused`,
// and the same with a chosen kernel path for the checks and the lab. CUDA-free header.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/params.h"
#include "fused_params.h"
#include "schedule.h"

namespace attnprof::fused {

// bf16/fp16, head_dim 64 or 128, a positive scale, causal (top-left or bottom-right, any q_len
// and kv_len) or none. Throws InputError for anything else and std::runtime_error for a failed CUDA call.
// Runs on ctx.stream.
void attention_forward(const attention::AttentionParams& p, const attention::ExecContext& ctx);

// The same on one kernel path, with the checks' and the lab's launch overrides.
void attention_forward_on(const attention::AttentionParams& p, const attention::ExecContext& ctx, Path path,
                          const LaunchOverrides& overrides = {});

// attention_forward_on as an AttentionFn: `attnprof bench --impl fused:<path>`.
template <Path P>
void attention_forward_path(const attention::AttentionParams& p, const attention::ExecContext& ctx) {
  attention_forward_on(p, ctx, P);
}

// Scratch for the log-sum-exp when p.lse is null (the kernel always writes it), then attention_scratch.
std::size_t attention_workspace(const attention::AttentionParams& p);
std::size_t attention_workspace(const attention::AttentionParams& p, const LaunchOverrides& overrides);

// The rest of the workspace: the kernels' scratch on the current device (kernel_scratch: the split
// tail's partials, 16 bytes for the dynamic scheduler's counter on causal calls whose tiles all see a
// key; 0 for the others). Reads only p's sizes, head dim, causal flag and alignment, so a caller can ask
// before it has tensors.
std::size_t attention_scratch(const attention::AttentionParams& p, const LaunchOverrides& overrides = {});

// The backward of attention_forward's call p (its out and lse as that forward left them: p.lse, or the
// workspace's first bytes when p.lse is null), as a BackwardFn: dq, dk, dv on ctx.stream. Throws
// InputError for a paged or ragged call and what the forward refuses.
void attention_backward(const attention::AttentionParams& p, const attention::AttentionGrads& grads,
                        const attention::ExecContext& ctx);
// The same with the backward's main kernel named (schedule.h's BackwardPath; the Hopper one refuses,
// InputError, a device other than sm_90), and as a BackwardFn: the bench's fused:portable and
// fused:hopper rows, and the tests of both kernels.
void attention_backward_on(const attention::AttentionParams& p, const attention::AttentionGrads& grads,
                           const attention::ExecContext& ctx, BackwardPath path);
template <BackwardPath B>
void attention_backward_path(const attention::AttentionParams& p, const attention::AttentionGrads& grads,
                             const attention::ExecContext& ctx) {
  attention_backward_on(p, grads, ctx, B);
}
// The forward's workspace (kept: it holds the lse when p.lse is null), then the backward's scratch.
std::size_t attention_backward_workspace(const attention::AttentionParams& p);

// The kernel-side Params of a checked call, its lse and scratch carved from ctx's workspace (throws
// InputError for what the kernels cannot take): for the lab's instrumented launches.
Params checked_params(const attention::AttentionParams& p, const attention::ExecContext& ctx);

}  // namespace attnprof::fused
