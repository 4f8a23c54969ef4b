// Public entry of the fused attention: the forward (one launch computes out and the per-row log-sum-exp)
// and its backward.
// Picks the Hopper kernels on sm_90 devices (the schedule per call, schedule.h), the portable one
// elsewhere (or whichever `path` names).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fused_params.h"
#include "schedule.h"

namespace attnprof::fused {

// What the kernels cannot take in p (head dims, alignment, strides), as one line; "" when they can.
// The call itself is checked by attention::validate.
const char* unsupported(const Params& p);

// The path `automatic` resolves to on the current device.
Path resolve_path(Path requested);

// Enqueues the forward on `stream`. Returns cudaErrorInvalidValue when the kernels do not support p
// (unsupported()), or the launch error. `overrides` are for the checks and the lab.
cudaError_t forward(const Params& p, cudaStream_t stream, Path path = Path::Automatic,
                    const LaunchOverrides& overrides = {});

// The scratch the Hopper kernels may use for p on the current device (schedule_scratch; 0: none, and
// p.tail_workspace may stay null). The fused AttentionFn carves it from its workspace.
std::size_t kernel_scratch(const Params& p, const LaunchOverrides& overrides = {});

// Enqueues the backward of the forward call p (its out and lse as the forward left them) on `stream`:
// dq, dk and dv, the main kernel bwd_sm80.cu's (mma.sync on sm_80 and later) or bwd_sm90.cu's (TMA +
// wgmma) as `path` says (schedule.h's BackwardPath). Dense K/V only: cudaErrorInvalidValue for a
// paged or ragged call, for what unsupported() refuses, and for missing buffers; cudaErrorNotSupported
// for the Hopper kernel on a device other than sm_90.
cudaError_t backward(const Params& p, const BackwardBuffers& g, cudaStream_t stream,
                     BackwardPath path = BackwardPath::Automatic);
// The kernel `automatic` stands for (kAutomaticBackward; portable where that is hopper and the device
// is not sm_90).
BackwardPath resolve_backward_path(BackwardPath requested);
// The scratch the backward needs (delta, dq_accum and at head dims 64 and 128 the Hopper kernel's
// block_rows, and on an sm_90 device, where the Hopper kernel would split a GQA group over CTAs
// (hopper_bwd_head_split, on the current device's SMs), its dk_accum and dv_accum; each from a 256-byte
// boundary; dq_accum sized for the Hopper kernel's sum, padded to its query blocks, which holds the portable
// one's) and where it puts them in `scratch`.
std::size_t backward_scratch(const Params& p);
void carve_backward_scratch(const Params& p, void* scratch, BackwardBuffers& g);

// The current device's SM count (cached per device; 0 without a device).
int sm_count();

// Kernel's dynamic shared memory limit raised to `bytes` (cudaFuncSetAttribute) once per device, not at
// every launch: the launch path of a decode step runs it for every layer.
template <auto Kernel>
cudaError_t allow_dynamic_shared(int bytes) {
  static std::atomic<std::uint64_t> devices{0};  // the devices (below 64) where it is set
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return e;
  const std::uint64_t bit = dev >= 0 && dev < 64 ? std::uint64_t(1) << dev : 0;
  if (bit && (devices.load(std::memory_order_acquire) & bit)) return cudaSuccess;
  e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (e == cudaSuccess && bit) devices.fetch_or(bit, std::memory_order_release);
  return e;
}

// The launchers (fwd_sm80.cu; hopper_launch.cu: choose_schedule's pick for `path`).
cudaError_t launch_portable(const Params& p, cudaStream_t stream);
cudaError_t launch_hopper(const Params& p, cudaStream_t stream, Path path, const LaunchOverrides& overrides);
// bwd_sm90.cu: the Hopper backward's main kernel (between bwd_sm80.cu's preprocess and its conversions of
// the fp32 sums), for p with q_len and kv_len above 0 on an sm_90 device, the GQA group split head_split
// ways (hopper_bwd_head_split; above 1, g's dk_accum and dv_accum zeroed).
cudaError_t launch_backward_hopper(const Params& p, const BackwardBuffers& g, int head_split, cudaStream_t stream);
// decode_kernel.cu: the decode kernel, split as decode_plan says when p's tail_workspace holds
// decode_scratch(p, sm_count()) bytes, one CTA a unit otherwise.
cudaError_t launch_decode(const Params& p, cudaStream_t stream, const LaunchOverrides& overrides = {});
// Whether launch_decode copies p's K/V by TMA on the current device (sm_90, keys in the boxes
// decode_tma_box_keys allows, the driver's maps encoded), rather than cp.async.
bool decode_uses_tma(const Params& p, const LaunchOverrides& overrides = {});
std::size_t decode_scratch(const Params& p, int sms, const LaunchOverrides& overrides = {});

}  // namespace attnprof::fused
