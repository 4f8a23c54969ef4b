// What the backward's two main kernels (bwd_sm80.cu's mma.sync one, bwd_sm90.cu's wgmma one) share: the
// dQ adds into the fp32 sum (BackwardBuffers::dq_accum) from accumulators in the mma.sync fragment order,
// which wgmma's accumulators share (wgmma_ops.cuh).
#pragma once

#include <cstdint>

namespace attnprof::fused {

// Adds a warp's dQ tile into the fp32 sum (row stride D): 16 rows, a thread's rows row0 and row0 + 8 at
// columns col0 + 8 nt + 2 (lane % 4) + {0, 1}. These adds are most of the backward's L2 traffic (ncu, H100,
// B2 H32/8 S4k D128 causal: 409 M one-sector reductions, L2 67% busy, the tensor pipe 8% active): on
// sm_90 the lanes of a pair swap halves so that each holds 4 consecutive columns of one row and adds them
// with one red.global.add.v4.f32 (a quarter of the requests); before sm_90, one atomicAdd an element.
template <int D, int NT>
__device__ __forceinline__ void add_dq_tile(const float (&dq)[NT][4], float* acc, int row0, int q_len, int col0,
                                            int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const bool even = lane % 2 == 0;
  const int row = even ? row0 : row0 + 8;                  // even lanes row0, odd lanes row0 + 8,
  const int col = col0 + 2 * (lane % 4) - (even ? 0 : 2);  // both the pair's 4 columns
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    // Even lanes send their row0 + 8 pair and take the odd neighbour's row0 pair; odd lanes the reverse.
    const float r0 = __shfl_xor_sync(0xffffffff, even ? dq[nt][2] : dq[nt][0], 1);
    const float r1 = __shfl_xor_sync(0xffffffff, even ? dq[nt][3] : dq[nt][1], 1);
    const float4 v = even ? make_float4(dq[nt][0], dq[nt][1], r0, r1) : make_float4(r0, r1, dq[nt][2], dq[nt][3]);
    if (row < q_len)
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(acc + int64_t(row) * D + col + nt * 8),
                   "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                   : "memory");
  }
#else
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= q_len) continue;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float* dst = acc + int64_t(row) * D + col0 + nt * 8 + 2 * (lane % 4);
      atomicAdd(dst, dq[nt][2 * r]);
      atomicAdd(dst + 1, dq[nt][2 * r + 1]);
    }
  }
#endif
}

}  // namespace attnprof::fused
