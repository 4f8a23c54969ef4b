// Public entry of the fused attention forward: one launch computes out and the
// per-row log-sum-exp. Picks the Hopper path on sm_90 devices, the portable one
// elsewhere (or whichever `path` names).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "fused_params.h"
#include "tile_table.h"

namespace attnprof::fused {

// What the kernels cannot take in p (head dims, alignment, strides), as one
// line; "" when they can. The call itself is checked by attention::validate.
const char* unsupported(const Params& p);

// The path `automatic` resolves to on the current device.
Path resolve_path(Path requested);

// Enqueues the forward on `stream`. Returns cudaErrorInvalidValue when the
// kernels do not support p (unsupported()), or the launch error.
cudaError_t forward(const Params& p, cudaStream_t stream, Path path = Path::Automatic);

// Caps the persistent Hopper grid at `ctas` CTAs (0: one per SM, the default), so that the
// checks on small shapes make each CTA walk several tiles. Process-wide; for the lab and tests.
void set_persistent_grid_limit(int ctas);

// Version 13's ranges of at least `units` key blocks (0: the rule, split_tail_units). Below
// kMinTailUnits every tail whose ranges are shorter than an item splits, at D=64 too, so that the
// checks' small cases split. Process-wide; for the lab and tests.
void set_split_tail_min_units(int units);

// Version 29's (batch, head)s per section of its longest-first order (0: dynamic_section_heads).
// Process-wide; for the lab.
void set_dynamic_section_heads(int heads);

// The scratch the Hopper kernels may use for p on the current device: version 13's split tail or
// version 29's tile counter (0: none; then p.tail_workspace may stay null). The fused AttentionFn
// carves it from its workspace.
std::size_t kernel_scratch(const Params& p);

// Launchers, one per path (fwd_sm80.cu, fwd_sm90.cu).
cudaError_t launch_portable(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_overlap(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_m192(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v2(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v5(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v6(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v7(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v8(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v9(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v10(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v11(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v13(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v18(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v26(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v27(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper_v29(const Params& p, cudaStream_t stream);
// The Hopper schedule of `path` (HopperV2/V5/V6/V7/V8/V11), bf16, writing per-tile timers
// to p.timers (tile_timers.h: timer_layout words); cudaErrorInvalidValue without them.
cudaError_t launch_hopper_timed(const Params& p, cudaStream_t stream, Path path);

}  // namespace attnprof::fused
