// Counters the library keeps zeroed for each (device, stream), for kernels that count their CTAs through
// global memory and set their counters back to 0 when done: a call on the stream then launches its kernel
// alone, without a memset. Calls on one stream run in turn, so two never count on one counter at once;
// calls on other streams get their own.
#pragma once

#include <cuda_runtime.h>

namespace attnprof::fused {

// The block's ints, by user: the decode kernel's split counters (one a unit), the dynamic tile scheduler's
// draw and finish counters (hopper_kernel.cuh), the split tail's flags (one per CTA and consumer warpgroup,
// hopper_epilogue.cuh).
inline constexpr int kDecodeStreamCounters = 1024;
inline constexpr int kSchedulerCounterAt = kDecodeStreamCounters;
inline constexpr int kTailFlagsAt = kSchedulerCounterAt + 2;
inline constexpr int kTailStreamFlags = 1024;
inline constexpr int kStreamCounterInts = kTailFlagsAt + kTailStreamFlags;

// The stream's block of kStreamCounterInts zeroed ints, made and zeroed on `stream` at its first call. Null
// (the caller zeroes its own in the workspace, per call) while the stream is being captured into a CUDA graph
// (a graph may be replayed on any stream, beside eager calls on the one it was captured on), past
// kMaxCounterStreams streams, or where CUDA refuses; a refusal here is cleared, not the call's error.
inline constexpr int kMaxCounterStreams = 256;
int* stream_counters(cudaStream_t stream);

}  // namespace attnprof::fused
