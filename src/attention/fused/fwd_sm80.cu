// The fused attention forward's portable path, mma.sync m16n8k16
// (sm_80 and later). FlashAttention-2's schedule: a CTA of 4 warps owns BM=64 query
// rows (16 per warp) held in registers; K and V tiles of BN keys stream through
// shared memory with cp.async (V of step n loads while S = Q K^T of step n runs,
// K of step n+1 while O += P V runs); online softmax in fp32 registers; P goes from
// the S accumulators straight into mma A fragments without touching memory.
// Causal key tiles past the diagonal are never loaded.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fused_attention.h"
#include "mma_sm80.cuh"
#include "softmax_fragment.cuh"

namespace attnprof::fused {
namespace {

using namespace sm80;

template <typename T, int D>
__global__ void __launch_bounds__(tile_for(TileRows::Portable, D).threads) fused_fwd_portable(const Params p) {
  constexpr TileConfig kT = tile_for(TileRows::Portable, D);
  constexpr int BM = kT.block_m, BN = kT.block_n, THREADS = kT.threads;
  constexpr int kLd = D + 8;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + BM * kLd;
  T* sV = sK + BN * kLd;

  const int m_block = gridDim.x - 1 - blockIdx.x;  // heaviest causal tiles first
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  T* out = static_cast<T*>(p.out) + b * p.o_batch_stride + h * p.o_head_stride;
  float* lse = p.lse + (int64_t(b) * p.heads + h) * p.q_len;

  const int n_blocks = key_blocks(p, (m_block + 1) * BM, BN);

  const float scale = p.scale;  // as AttentionParams gave it
  const float scale_log2 = scale * 1.4426950408889634f;
  const int row0 = m_block * BM + warp * 16 + lane / 4;

  load_tile<T, BM, D, THREADS>(sQ, q, p.q_seq_stride, m_block * BM, p.q_len);
  if (n_blocks > 0) load_tile<T, BN, D, THREADS>(sK, k, p.k_seq_stride, 0, p.kv_len);
  cp_async_commit();

  float o[D / 8][4] = {};
  RowState st;
  st.init();
  uint32_t qf[D / 16][4];

  for (int n = 0; n < n_blocks; ++n) {
    cp_async_wait<0>();
    __syncthreads();
    if (n == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
        ldmatrix_x4(qf[kk], sQ + (warp * 16 + lane % 16) * kLd + kk * 16 + (lane / 16) * 8);
    }
    load_tile<T, BN, D, THREADS>(sV, v, p.v_seq_stride, n * BN, p.kv_len);
    cp_async_commit();

    float s[BN / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int j = 0; j < BN / 8; j += 2) {
        uint32_t kf[4];
        ldmatrix_x4(kf, sK + (j * 8 + (lane / 16) * 8 + lane % 8) * kLd + kk * 16 + ((lane / 8) % 2) * 8);
        Mma<T>::run(s[j], qf[kk], kf[0], kf[1]);
        Mma<T>::run(s[j + 1], qf[kk], kf[2], kf[3]);
      }
    if (block_needs_mask(p, n, BN, m_block * BM)) mask_scores(s, row0, n * BN, p);
    online_softmax(s, o, st, scale_log2);

    cp_async_wait<0>();
    __syncthreads();  // V landed; every warp is done reading K
    if (n + 1 < n_blocks) {
      load_tile<T, BN, D, THREADS>(sK, k, p.k_seq_stride, (n + 1) * BN, p.kv_len);
      cp_async_commit();
    }
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const uint32_t a[4] = {Pack2<T>::pack(s[2 * kk][0], s[2 * kk][1]), Pack2<T>::pack(s[2 * kk][2], s[2 * kk][3]),
                             Pack2<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             Pack2<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int j = 0; j < D / 8; j += 2) {
        uint32_t vf[4];
        ldmatrix_x4_trans(vf, sV + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kLd + j * 8 + (lane / 16) * 8);
        Mma<T>::run(o[j], a, vf[0], vf[1]);
        Mma<T>::run(o[j + 1], a, vf[2], vf[3]);
      }
    }
    __syncthreads();  // every warp is done reading V before it is overwritten
  }
  cp_async_wait<0>();
  write_output<T>(o, st, out, p.o_seq_stride, lse, row0, p.q_len, scale);
}

template <typename T, int D>
cudaError_t launch(const Params& p, cudaStream_t stream) {
  constexpr TileConfig kT = tile_for(TileRows::Portable, D);
  constexpr int kSmem = shared_bytes(kT);
  cudaError_t e = allow_dynamic_shared<fused_fwd_portable<T, D>>(kSmem);
  if (e != cudaSuccess) return e;
  const dim3 grid((p.q_len + kT.block_m - 1) / kT.block_m, p.heads, p.batch);
  fused_fwd_portable<T, D><<<grid, kT.threads, kSmem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_portable(const Params& p, cudaStream_t stream) {
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch<__nv_bfloat16, 64>(p, stream) : launch<__nv_bfloat16, 128>(p, stream);
  return p.head_dim == 64 ? launch<__half, 64>(p, stream) : launch<__half, 128>(p, stream);
}

}  // namespace attnprof::fused
