// What the backward's two main kernels (bwd_sm80.cu's mma.sync one, bwd_sm90.cu's wgmma one) share: the
// Hopper kernel's grid (bwd_grid.h) and the padding its query block sets for its dQ sum (the scratch and the
// preprocess size it), the adds of fragment tiles into fp32 sums (the portable kernel's dQ, the split Hopper
// kernel's dK and dV), and both kernels' dK and dV stores, from accumulators in the mma.sync fragment order
// (which wgmma's share, wgmma_ops.cuh).
#pragma once

#include <cstdint>

#include "bwd_grid.h"
#include "fused_params.h"
#include "softmax_fragment.cuh"

namespace attnprof::fused {

// The Hopper kernel's dQ sum holds whole query blocks (hopper_bwd_block_m, bwd_grid.h): per (batch, head)
// round_up(q_len, BM) rows, each block as D / 64 halves of 64 columns in wgmma's fragment order
// (bwd_sm90.cu), added by bulk reduce-add from shared memory; the scratch is sized for it (the portable
// kernel's row-major sum fits inside).
__host__ __device__ constexpr int hopper_bwd_dq_rows(int q_len, int head_dim) {
  return (q_len + hopper_bwd_block_m(head_dim) - 1) / hopper_bwd_block_m(head_dim) * hopper_bwd_block_m(head_dim);
}
// The Hopper kernel's rows (BackwardBuffers::block_rows), written by the preprocess: per (batch, head) and
// query block of BM rows, BM floats of lse in log2 units (+inf where the row sees no key or is padding: its
// P is 0) then BM of delta (0 for padding), so that one bulk copy a block brings both into shared memory.
__host__ __device__ constexpr int64_t hopper_bwd_rows_floats(int batch, int heads, int q_len, int head_dim) {
  return int64_t(batch) * heads * hopper_bwd_dq_rows(q_len, head_dim) * 2;
}
// Row r (< hopper_bwd_dq_rows) of head bh's lse in block_rows; its delta is BM floats after it.
__host__ __device__ constexpr int64_t hopper_bwd_rows_at(int64_t bh, int q_len, int head_dim, int r) {
  return 2 * (bh * hopper_bwd_dq_rows(q_len, head_dim) +
              int64_t(r / hopper_bwd_block_m(head_dim)) * hopper_bwd_block_m(head_dim)) +
         r % hopper_bwd_block_m(head_dim);
}

// Adds a warp's tile into an fp32 sum (row stride D; rows from `rows` on are left out): 16 rows, a thread's
// rows row0 and row0 + 8 at columns col0 + 8 nt + 2 (lane % 4) + {0, 1}. The portable kernel's dQ (these
// adds are most of its L2 traffic: ncu, H100, B2 H32/8 S4k D128 causal: 409 M one-sector reductions, L2 67%
// busy, the tensor pipe 8% active) and the Hopper kernel's split dK and dV. On sm_90 the lanes of a pair
// swap halves so that each holds 4 consecutive columns of one row and adds them with one
// red.global.add.v4.f32 (a quarter of the requests); before sm_90, one atomicAdd an element.
template <int D, int NT>
__device__ __forceinline__ void add_fragment_tile(const float (&dq)[NT][4], float* acc, int row0, int rows, int col0,
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
    if (row < rows)
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(acc + int64_t(row) * D + col + nt * 8),
                   "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                   : "memory");
  }
#else
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= rows) continue;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float* dst = acc + int64_t(row) * D + col0 + nt * 8 + 2 * (lane % 4);
      atomicAdd(dst, dq[nt][2 * r]);
      atomicAdd(dst + 1, dq[nt][2 * r + 1]);
    }
  }
#endif
}

// Writes a warp's keys of dK (times the softmax scale) and dV, in the call's dtype, into one (batch, KV head):
// a thread's keys key_row0 and key_row0 + 8 at columns 8 j + t_col + {0, 1}, from fp32 accumulators in the
// mma.sync fragment order (both main kernels'); keys past kv_len are not written.
template <typename T, int D>
__device__ __forceinline__ void store_dk_dv(const Params& p, const BackwardBuffers& g, int b, int hk, int key_row0,
                                            int t_col, const float (&dk)[D / 8][4], const float (&dv)[D / 8][4]) {
  T* dk_out = static_cast<T*>(g.dk) + b * p.k_batch_stride + hk * p.k_head_stride;
  T* dv_out = static_cast<T*>(g.dv) + b * p.v_batch_stride + hk * p.v_head_stride;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key_row0 + 8 * r;
    if (key >= p.kv_len) continue;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      const int c = 8 * j + t_col;
      *reinterpret_cast<uint32_t*>(dk_out + int64_t(key) * p.k_seq_stride + c) =
          Pack2<T>::pack(dk[j][2 * r] * p.scale, dk[j][2 * r + 1] * p.scale);
      *reinterpret_cast<uint32_t*>(dv_out + int64_t(key) * p.v_seq_stride + c) =
          Pack2<T>::pack(dv[j][2 * r], dv[j][2 * r + 1]);
    }
  }
}

}  // namespace attnprof::fused
