// Masking, online softmax and the epilogue over mma accumulator fragments, shared
// by the portable (mma.sync) and Hopper (wgmma) kernels: in both, a warp owns 16
// query rows and a thread holds rows g and g+8 (g = lane/4) at columns
// 8*j + 2*(lane%4) + {0,1} of every 8-wide column block j, as acc[j][0..3].
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "fused_params.h"

namespace attnprof::fused {

template <typename T>
struct Pack2;
template <>
struct Pack2<__nv_bfloat16> {
  __device__ static uint32_t pack(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};
template <>
struct Pack2<__half> {
  __device__ static uint32_t pack(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
  }
};

// Per-thread softmax state for its two rows; m in raw (unscaled) score units.
struct RowState {
  float m[2];
  float l[2];  // partial sum over this thread's columns; quad-reduced at the end
  __device__ void init() {
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;
  }
};

// Sets s to -inf outside the key range and, if causal, right of the diagonal (key > query +
// causal_offset). row0: query index of this thread's first row; col0: key index of acc column 0.
template <int NB>
__device__ __forceinline__ void mask_scores(float (&s)[NB][4], int row0, int col0, const Params& p) {
  const int c = col0 + 2 * (threadIdx.x % 4);
  const int diag = p.causal ? row0 + p.causal_offset : INT_MAX - 16;  // last visible key of row0
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = c + 8 * j + (e & 1);
      if (col >= p.kv_len || col > diag + (e >> 1) * 8) s[j][e] = -INFINITY;
    }
}

// 2^x on the MUFU with results below 2^-126 flushed to zero, what exp2f compiles to under
// --use_fast_math (FlashAttention's build). Plain exp2f adds three FP32 instructions per call to
// keep denormal results, probabilities below 1e-38 that change nothing here: on the H200 the
// flushing exponential made the kernel 5-16% faster (docs/fused-kernel.md).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Online-softmax step on the scores alone: s becomes exp(scale*(s - m_new)), the
// row state moves to m_new, and alpha = exp(scale*(m_old - m_new)) is returned for
// the caller to rescale o with (separately, so the Hopper kernel can do it once
// the previous P*V GEMM has finished).
template <int NB>
__device__ __forceinline__ void softmax_scores(float (&s)[NB][4], RowState& st, float scale_log2, float (&alpha)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = st.m[r];
#pragma unroll
    for (int j = 0; j < NB; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
    // A row with no visible key so far keeps m = -inf; use 0 as base to avoid NaN.
    const float base = mx == -INFINITY ? 0.f : mx * scale_log2;
    alpha[r] = exp2_ftz(st.m[r] * scale_log2 - base);
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < NB; ++j) {
      s[j][2 * r] = exp2_ftz(fmaf(s[j][2 * r], scale_log2, -base));
      s[j][2 * r + 1] = exp2_ftz(fmaf(s[j][2 * r + 1], scale_log2, -base));
      sum += s[j][2 * r] + s[j][2 * r + 1];
    }
    st.l[r] = st.l[r] * alpha[r] + sum;
    st.m[r] = mx;
  }
}

template <int NO>
__device__ __forceinline__ void rescale(float (&o)[NO][4], const float (&alpha)[2]) {
#pragma unroll
  for (int j = 0; j < NO; ++j) {
    o[j][0] *= alpha[0];
    o[j][1] *= alpha[0];
    o[j][2] *= alpha[1];
    o[j][3] *= alpha[1];
  }
}

// One online-softmax step: scores to probabilities, o rescaled.
template <int NB, int NO>
__device__ __forceinline__ void online_softmax(float (&s)[NB][4], float (&o)[NO][4], RowState& st, float scale_log2) {
  float alpha[2];
  softmax_scores(s, st, scale_log2, alpha);
  rescale(o, alpha);
}

// A partial output over some of the keys (the split tail) in global memory, one warpgroup's
// at `slot` (128 threads x (NO + 1) float4, thread-interleaved so a warp's accesses are contiguous):
// this thread's unnormalized o fragment, then its rows' maximum and sum. Stored past L1 and read
// the same way (.cg): another SM reads it.
template <int NO>
__device__ __forceinline__ void store_partial(const float (&o)[NO][4], const RowState& st, float4* slot) {
  float4* dst = slot + threadIdx.x % 128;
#pragma unroll
  for (int j = 0; j < NO; ++j) __stcg(dst + 128 * j, make_float4(o[j][0], o[j][1], o[j][2], o[j][3]));
  __stcg(dst + 128 * NO, make_float4(st.m[0], st.m[1], st.l[0], st.l[1]));
}
// Folds the partial at `slot` (the same rows over other keys, the same thread layout) into o and
// st: both are rescaled to the larger row maximum and added.
template <int NO>
__device__ __forceinline__ void merge_partial(float (&o)[NO][4], RowState& st, const float4* slot, float scale_log2) {
  const float4* src = slot + threadIdx.x % 128;
  const float4 ml = __ldcg(src + 128 * NO);
  const float m_in[2] = {ml.x, ml.y}, l_in[2] = {ml.z, ml.w};
  float a[2], b[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float mx = fmaxf(st.m[r], m_in[r]);
    const float base = mx == -INFINITY ? 0.f : mx * scale_log2;  // as softmax_scores: no NaN from -inf
    a[r] = exp2_ftz(st.m[r] * scale_log2 - base);
    b[r] = exp2_ftz(m_in[r] * scale_log2 - base);
    st.l[r] = st.l[r] * a[r] + l_in[r] * b[r];
    st.m[r] = mx;
  }
#pragma unroll
  for (int j = 0; j < NO; ++j) {
    const float4 v = __ldcg(src + 128 * j);
    o[j][0] = fmaf(o[j][0], a[0], v.x * b[0]);
    o[j][1] = fmaf(o[j][1], a[0], v.y * b[0]);
    o[j][2] = fmaf(o[j][2], a[1], v.z * b[1]);
    o[j][3] = fmaf(o[j][3], a[1], v.w * b[1]);
  }
}

// P as 16-bit mma A fragments: the accumulator layout of S is the A layout of P.
template <typename T, int NB>
__device__ __forceinline__ void scores_to_a(const float (&s)[NB][4], uint32_t (&a)[NB / 2][4]) {
#pragma unroll
  for (int kk = 0; kk < NB / 2; ++kk) {
    a[kk][0] = Pack2<T>::pack(s[2 * kk][0], s[2 * kk][1]);
    a[kk][1] = Pack2<T>::pack(s[2 * kk][2], s[2 * kk][3]);
    a[kk][2] = Pack2<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    a[kk][3] = Pack2<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

// 1/l for this thread's two rows (row0, row0 + 8; l quad-reduced, 0 for a row that saw no key),
// and their log-sum-exp written once per row (rows < q_len).
__device__ __forceinline__ void finish_rows(const RowState& st, float* lse_head, int row0, int q_len, float scale,
                                            float (&inv)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = st.l[r];
    l += __shfl_xor_sync(0xffffffff, l, 1);
    l += __shfl_xor_sync(0xffffffff, l, 2);
    inv[r] = l > 0.f ? 1.f / l : 0.f;
    const int row = row0 + 8 * r;
    if (row < q_len && threadIdx.x % 4 == 0) lse_head[row] = l > 0.f ? st.m[r] * scale + logf(l) : -INFINITY;
  }
}

// Normalizes o, writes this thread's part of out (rows < q_len) and the lse.
// out_row0 points at row row0, column 0 of this (batch, head) in out.
template <typename T, int NO>
__device__ __forceinline__ void write_output(float (&o)[NO][4], RowState& st, T* out_head, int64_t seq_stride,
                                             float* lse_head, int row0, int q_len, float scale) {
  float inv[2];
  finish_rows(st, lse_head, row0, q_len, scale, inv);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row < q_len) {
      T* dst = out_head + int64_t(row) * seq_stride + 2 * (threadIdx.x % 4);
#pragma unroll
      for (int j = 0; j < NO; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) = Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
    }
  }
}

}  // namespace attnprof::fused
