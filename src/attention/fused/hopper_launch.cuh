// The Hopper kernel's launch: the tensor maps, the shared memory, the grid a Schedule gives, and the
// scratch the split tail and the dynamic scheduler use. A template so the product (hopper_launch.cu,
// kProductKernels) and the lab (its timers) launch the same kernel the same way.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "attention/params.h"
#include "fused_attention.h"
#include "hopper_kernel.cuh"
#include "schedule.h"
#include "stream_counters.h"
#include "tensor_map.h"

namespace attnprof::fused::sm90 {

// Enqueues kernel K at head dim D and element type T for p, as schedule s says.
template <typename T, int D, typename K>
cudaError_t launch(const Params& params, const Schedule& s, cudaStream_t stream) {
  Params p = params;
  constexpr TileConfig kT = K::template tile<D>();
  constexpr int kSmem = hopper_shared_bytes(kT, K::kPersistent);
  static_assert(kSmem <= kSmemLimit, "an sm_90 CTA has 227 KB of shared memory");
  TensorMaps maps;
  if (!encode(&maps.q, p.dtype, p.q, p.batch, p.heads, p.q_len, D, p.q_batch_stride, p.q_head_stride, p.q_seq_stride,
              kT.block_m) ||
      !encode(&maps.k, p.dtype, p.k, p.batch, p.kv_heads, p.kv_len, D, p.k_batch_stride, p.k_head_stride,
              p.k_seq_stride, kT.block_n) ||
      !encode(&maps.v, p.dtype, p.v, p.batch, p.kv_heads, p.kv_len, D, p.v_batch_stride, p.v_head_stride,
              p.v_seq_stride, kT.block_n) ||
      !encode(&maps.o, p.dtype, p.out, p.batch, p.heads, p.q_len, D, p.o_batch_stride, p.o_head_stride, p.o_seq_stride,
              64))
    return cudaErrorInvalidValue;
  constexpr auto* kernel = &fused_fwd_hopper<T, D, K>;
  cudaError_t e = allow_dynamic_shared<kernel>(kSmem);
  if (e != cudaSuccess) return e;
  const int m_tiles = (p.q_len + kT.block_m - 1) / kT.block_m;
  dim3 grid(m_tiles, p.heads, p.batch);
  if constexpr (K::kPersistent) {
    if (s.ctas <= 0) return cudaErrorInvalidDevice;
    grid = dim3(unsigned(s.ctas));
    if constexpr (K::kDynamic) {
      // The draw and finish counters, which the kernel's last CTA sets back to 0: the stream's, else those of
      // the scratch choose_schedule asked for, zeroed for this call.
      p.sched_heads = s.section_heads;
      int* kept = stream_counters(stream);
      p.sched_counter = kept ? kept + kSchedulerCounterAt : static_cast<int*>(p.tail_workspace);
      if (!kept && (e = cudaMemsetAsync(p.sched_counter, 0, 2 * sizeof(int), stream)) != cudaSuccess) return e;
    }
    p.tail_units = 0;
    if constexpr (K::kSplitTail)
      if (s.tail_units > 0 && p.tail_workspace && p.tail_workspace_bytes >= split_tail_bytes(s.ctas, D)) {
        p.tail_units = s.tail_units;
        p.tail_partial = static_cast<float*>(p.tail_workspace);
        // The flags, which the final pieces lower once read: the stream's, else the workspace's, zeroed.
        int* kept = s.ctas * K::kConsumers <= kTailStreamFlags ? stream_counters(stream) : nullptr;
        p.tail_flags =
            kept ? kept + kTailFlagsAt
                 : reinterpret_cast<int*>(static_cast<char*>(p.tail_workspace) + split_tail_partial_bytes(s.ctas, D));
        if (!kept && (e = cudaMemsetAsync(p.tail_flags, 0, std::size_t(s.ctas) * K::kConsumers * sizeof(int),
                                          stream)) != cudaSuccess)
          return e;
      }
  }
  kernel<<<grid, kT.threads, kSmem, stream>>>(p, maps);
  return cudaGetLastError();
}

}  // namespace attnprof::fused::sm90
