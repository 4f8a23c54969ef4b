// The fused attention backward, mma.sync m16n8k16 (sm_80 and later): FlashAttention-2's schedule.
//
// Three launches (their names say their roles as FlashAttention's do: bwd_preprocess, the main kernel,
// convert_sum); the preprocess is the Hopper backward's too (bwd_sm90.cu: its main kernel; its dQ sum
// padded to whole blocks in fragment order, with its own conversion, convert_dq_hopper; where it splits a
// GQA group over CTAs, its dK and dV sums zeroed before it and converted by convert_sum after).
// First each query row's delta = dO . O (fp32) and dQ's fp32 sum zeroed. Then the
// main kernel: a CTA of 4 warps owns BN = 64 keys of one (batch, KV head), 16 a warp, with their K and
// V in shared memory and their dK and dV in fp32 registers for the whole launch. It walks every query
// block (BM rows) of every query head that reads this KV head (GQA: the group's heads, so dK and dV
// come out summed), Q and dO of the next block loading with cp.async while the current one computes:
//   S^T = K Q^T, P^T = exp(scale S^T - lse) (the forward's log-sum-exp: no softmax statistics again),
//   dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q,
// dS^T through shared memory (16-bit, as P) for dQ = dS K, which each warp adds for a quarter of the
// head dim into the fp32 sum with atomics (other CTAs, the other key blocks, add to the same rows).
// Causal query blocks above the key block's first diagonal are skipped. Last, dq = scale x the sum, in
// the call's dtype. Rows that see no key (lse -inf) have P = 0, so no gradient flows through them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "bwd_common.cuh"
#include "fused_attention.h"
#include "mma_sm80.cuh"
#include "softmax_fragment.cuh"

namespace attnprof::fused {
namespace {

using namespace sm80;

constexpr int kBwdThreads = 128;
constexpr int kBwdBlockN = 64;  // keys a CTA: 16 a warp
// Query rows a step: 32 at head dim 128 keeps S^T and dP^T (16 floats each a thread) beside dK and dV
// (64 each) within the register file; 64 at head dim 64.
template <int D>
constexpr int bwd_block_m() {
  return D == 128 ? 32 : 64;
}

// Shared memory, in 16-bit elements: K and V [BN][D + 8]; two stages of Q and dO [BM][D + 8]; dS^T
// [BN][BM + 8]; then per stage BM floats of lse (log2 units, +inf for rows that see nothing) and BM of delta.
template <int D>
struct BwdSmem {
  static constexpr int kBm = bwd_block_m<D>();
  static constexpr int kLd = D + 8, kLdS = kBm + 8;
  static constexpr int kKv = kBwdBlockN * kLd;
  static constexpr int kStage = kBm * kLd;
  static constexpr int kHalfs = 2 * kKv + 4 * kStage + kBwdBlockN * kLdS;
  static constexpr int kBytes = kHalfs * 2 + 2 * 2 * kBm * 4;
};

// Two 16-bit elements (one 32-bit word) as floats.
__device__ __forceinline__ float2 pair_to_float2(uint32_t bits, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}
__device__ __forceinline__ float2 pair_to_float2(uint32_t bits, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// The preprocess's row: D / 8 lanes, 16 bytes (8 elements) of O and of dO each.
template <int D>
constexpr int preprocess_lanes() {
  return D / 8;
}
template <int D>
constexpr int preprocess_rows_per_block() {
  return kBwdThreads / preprocess_lanes<D>();
}

// delta[b, h, i] = sum_d dO[i, d] O[i, d] in fp32, and dQ's fp32 sum zeroed: D / 8 lanes a row, 16-byte
// loads (out's strides are multiples of 8 elements and its start 16-byte aligned: unsupported(); dO is
// strided as out and 16-byte aligned: attention_backward_on). The sum has dq_rows rows a (batch, head):
// q_len for the portable kernel's row-major one, whole blocks for the Hopper kernel's
// (hopper_bwd_dq_rows; row i's lanes also zero the padding rows i + q_len, i + 2 q_len, ...). For the
// Hopper kernel (`hopper`) also block_rows: each row's lse in log2 units and its delta where that kernel
// copies them, the padding rows' too (+inf and 0).
template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads)
    fused_bwd_preprocess(const Params p, const BackwardBuffers g, int dq_rows, bool hopper) {
  constexpr int kLanes = preprocess_lanes<D>();
  static_assert(kLanes <= 32 && 32 % kLanes == 0, "a row's lanes are a power of two within one warp");
  const int sub = threadIdx.x % kLanes;
  const int64_t row = int64_t(blockIdx.x) * preprocess_rows_per_block<D>() + threadIdx.x / kLanes;
  const int64_t rows = int64_t(p.batch) * p.heads * p.q_len;
  // No return before the shuffles: a warp's other rows may be live, and the shuffles take the whole warp.
  const bool live = row < rows;
  const int i = live ? static_cast<int>(row % p.q_len) : 0;
  const int h = live ? static_cast<int>(row / p.q_len % p.heads) : 0;
  const int b = live ? static_cast<int>(row / p.q_len / p.heads) : 0;
  float sum = 0.f;
  if (live) {
    const int64_t at = b * p.o_batch_stride + h * p.o_head_stride + i * p.o_seq_stride + sub * 8;
    const uint4 x = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.out) + at);
    const uint4 y = *reinterpret_cast<const uint4*>(static_cast<const T*>(g.d_out) + at);
    const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const float2 xf = pair_to_float2(xs[w], T{}), yf = pair_to_float2(ys[w], T{});
      sum = fmaf(xf.x, yf.x, fmaf(xf.y, yf.y, sum));
    }
  }
#pragma unroll
  for (int s = kLanes / 2; s > 0; s /= 2) sum += __shfl_xor_sync(0xffffffff, sum, s);
  if (!live) return;
  if (sub == 0) g.delta[row] = sum;
  const int64_t bh = int64_t(b) * p.heads + h;
  const int rows_end = hopper ? hopper_bwd_dq_rows(p.q_len, D) : dq_rows;  // >= dq_rows
  for (int r = i; r < rows_end; r += p.q_len) {
    if (r < dq_rows) {
      float4* acc = reinterpret_cast<float4*>(g.dq_accum + (bh * dq_rows + r) * D);
#pragma unroll
      for (int c = sub; c < D / 4; c += kLanes) acc[c] = make_float4(0.f, 0.f, 0.f, 0.f);
    }
    if (hopper && sub == 0) {
      const float l = r == i ? p.lse[row] : -INFINITY;
      float* at = g.block_rows + hopper_bwd_rows_at(bh, p.q_len, D, r);
      at[0] = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;  // +inf: P = 0 for the whole row
      at[hopper_bwd_block_m(D)] = r == i ? sum : 0.f;
    }
  }
}

// A row-major fp32 sum [batch, heads, len, D] and the gradient it becomes: dQ's (the portable kernel's) or
// the split Hopper kernel's dK and dV.
struct SumToGradient {
  const float* sum;
  void* out;
  int batch, heads, len;
  int64_t batch_stride, head_stride, seq_stride;
  float scale;
};

// out = scale x sum in the call's dtype, strided as `out` is: a thread two elements.
template <typename T, int D>
__global__ void __launch_bounds__(256) fused_bwd_convert_sum(const SumToGradient s) {
  const int64_t pairs = int64_t(s.batch) * s.heads * s.len * (D / 2);
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < pairs; t += int64_t(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(t % (D / 2)) * 2;
    const int64_t row = t / (D / 2);
    const int i = static_cast<int>(row % s.len);
    const int h = static_cast<int>(row / s.len % s.heads), b = static_cast<int>(row / s.len / s.heads);
    const float2 x = *reinterpret_cast<const float2*>(s.sum + row * D + c);
    T* dst = static_cast<T*>(s.out) + b * s.batch_stride + h * s.head_stride + i * s.seq_stride + c;
    *reinterpret_cast<uint32_t*>(dst) = Pack2<T>::pack(x.x * s.scale, x.y * s.scale);
  }
}

// The conversions' grid-stride launches: 256 threads a block, at most 65535 blocks.
unsigned conversion_blocks(int64_t threads) {
  return static_cast<unsigned>(std::min<int64_t>((threads + 255) / 256, 65535));
}

template <typename T, int D>
cudaError_t convert_sum(const SumToGradient& s, cudaStream_t stream) {
  const int64_t pairs = int64_t(s.batch) * s.heads * s.len * (D / 2);
  if (pairs == 0) return cudaSuccess;
  fused_bwd_convert_sum<T, D><<<conversion_blocks(pairs), 256, 0, stream>>>(s);
  return cudaGetLastError();
}

// The same from the Hopper kernel's sum (bwd_sm90.cu): per (batch, head) blocks of BM = 64 rows, each
// D / 64 halves of 64 columns (half w: columns 64 w..), a half 1024 float4 in wgmma's fragment order:
// float4 128 j + t of warpgroup thread t = 32 warp + lane holds rows 16 warp + lane / 4 and + 8 at columns
// 8 j + 2 (lane % 4) + {0, 1}. A thread a float4 (coalesced reads, two 4-byte stores); padding rows, past
// q_len, are skipped.
template <typename T, int D>
__global__ void __launch_bounds__(256) fused_bwd_convert_dq_hopper(const Params p, const BackwardBuffers g) {
  constexpr int BM = hopper_bwd_block_m(D), kHalf = 64 * 64 / 4, kBlock = BM * D / 4;
  static_assert(BM == 64, "a half is a block's 64 rows");
  const int dq_rows = hopper_bwd_dq_rows(p.q_len, D);
  const int per_head = dq_rows * (D / 4);
  const int64_t quads = int64_t(p.batch) * p.heads * per_head;
  const float4* acc = reinterpret_cast<const float4*>(g.dq_accum);
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < quads; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bh = t / per_head;
    const int in_head = static_cast<int>(t % per_head);
    const int m = in_head / kBlock, in_block = in_head % kBlock;
    const int w = in_block / kHalf, x = in_block % kHalf;
    const int j = x / 128, thread = x % 128, lane = thread % 32;
    const int r = 16 * (thread / 32) + lane / 4, c = 8 * j + 2 * (lane % 4);
    const int i = m * BM + r, col = 64 * w + c;
    if (i >= p.q_len) continue;
    const float4 v = acc[t];
    const int h = static_cast<int>(bh % p.heads), b = static_cast<int>(bh / p.heads);
    T* dst = static_cast<T*>(g.dq) + b * p.q_batch_stride + h * p.q_head_stride + int64_t(i) * p.q_seq_stride + col;
    *reinterpret_cast<uint32_t*>(dst) = Pack2<T>::pack(v.x * p.scale, v.y * p.scale);
    if (i + 8 < p.q_len)
      *reinterpret_cast<uint32_t*>(dst + 8 * p.q_seq_stride) = Pack2<T>::pack(v.z * p.scale, v.w * p.scale);
  }
}

// acc += A B^T over D: A this warp's 16 rows of sA (from row a_row0), B the N rows of sB; rows LD apart.
template <typename T, int D, int N, int LD>
__device__ __forceinline__ void mma_abt(float (&acc)[N / 8][4], const T* sA, int a_row0, const T* sB, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    uint32_t a[4];
    ldmatrix_x4(a, sA + (a_row0 + lane % 16) * LD + kk * 16 + (lane / 16) * 8);
#pragma unroll
    for (int j = 0; j < N / 8; j += 2) {
      uint32_t b[4];
      ldmatrix_x4(b, sB + (j * 8 + (lane / 16) * 8 + lane % 8) * LD + kk * 16 + ((lane / 8) % 2) * 8);
      Mma<T>::run(acc[j], a, b[0], b[1]);
      Mma<T>::run(acc[j + 1], a, b[2], b[3]);
    }
  }
}

// acc += A B over the K rows of sB: A as K / 16 fragments, B [K][D] read transposed; rows LD apart.
template <typename T, int D, int K, int LD>
__device__ __forceinline__ void mma_ab(float (&acc)[D / 8][4], const uint32_t (&a)[K / 16][4], const T* sB, int lane) {
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
#pragma unroll
    for (int j = 0; j < D / 8; j += 2) {
      uint32_t b[4];
      ldmatrix_x4_trans(b, sB + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * LD + j * 8 + (lane / 16) * 8);
      Mma<T>::run(acc[j], a[kk], b[0], b[1]);
      Mma<T>::run(acc[j + 1], a[kk], b[2], b[3]);
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads) fused_bwd_sm80(const Params p, const BackwardBuffers g) {
  using S = BwdSmem<D>;
  constexpr int BN = kBwdBlockN, BM = S::kBm, kLd = S::kLd, kLdS = S::kLdS;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + S::kKv;
  T* sStages = sV + S::kKv;  // stage s: Q at sStages + 2 s kStage, dO after it
  T* sdS = sStages + 4 * S::kStage;
  float* sRows = reinterpret_cast<float*>(sdS + BN * kLdS);  // stage s: lse at sRows + 2 s BM, delta after it

  const int kb0 = blockIdx.x * BN, hk = blockIdx.y, b = blockIdx.z;
  const int group = p.heads / p.kv_heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // The query blocks that see a key of this block: causal skips those whose last row is left of its first key.
  const int m_tiles = (p.q_len + BM - 1) / BM;
  int m_first = 0;
  if (p.causal) {
    const int first_row = kb0 - p.causal_offset;  // the first query row that sees key kb0
    m_first = first_row <= 0 ? 0 : first_row / BM;
  }
  const int per_head = m_tiles > m_first ? m_tiles - m_first : 0;
  const int items = per_head * group;

  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;

  // Q, dO, lse and delta of item `it` (query head hk * group + it / per_head, block m_first + it % per_head).
  const auto load_item = [&](int it, int stage) {
    const int h = hk * group + it / per_head, m = m_first + it % per_head;
    T* sQ = sStages + 2 * stage * S::kStage;
    load_tile<T, BM, D, kBwdThreads>(sQ, static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride,
                                     p.q_seq_stride, m * BM, p.q_len);
    load_tile<T, BM, D, kBwdThreads>(sQ + S::kStage,
                                     static_cast<const T*>(g.d_out) + b * p.o_batch_stride + h * p.o_head_stride,
                                     p.o_seq_stride, m * BM, p.q_len);
    const int64_t rows = (int64_t(b) * p.heads + h) * p.q_len;
    float* lse2 = sRows + 2 * stage * BM;
    for (int i = threadIdx.x; i < BM; i += kBwdThreads) {
      const int row = m * BM + i;
      const float l = row < p.q_len ? p.lse[rows + row] : -INFINITY;
      lse2[i] = l == -INFINITY ? INFINITY : l * 1.4426950408889634f;  // +inf: P = 0 for the whole row
      lse2[BM + i] = row < p.q_len ? g.delta[rows + row] : 0.f;
    }
  };

  load_tile<T, BN, D, kBwdThreads>(sK, k, p.k_seq_stride, kb0, p.kv_len);
  load_tile<T, BN, D, kBwdThreads>(sV, v, p.v_seq_stride, kb0, p.kv_len);
  if (items > 0) load_item(0, 0);
  cp_async_commit();

  const float scale_log2 = p.scale * 1.4426950408889634f;
  const int g_row = lane / 4, t_col = 2 * (lane % 4);
  const int key_row0 = kb0 + warp * 16 + g_row;  // this thread's keys: key_row0 and key_row0 + 8
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};

  for (int it = 0; it < items; ++it) {
    const int stage = it & 1;
    if (it + 1 < items) {
      load_item(it + 1, stage ^ 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // this item's Q, dO, lse and delta are in; every warp is done with the last dS^T
    const T* sQ = sStages + 2 * stage * S::kStage;
    const T* sdO = sQ + S::kStage;
    const float* lse2 = sRows + 2 * stage * BM;
    const float* delta = lse2 + BM;
    const int h = hk * group + it / per_head, q0 = (m_first + it % per_head) * BM;

    // S^T = K Q^T: this warp's 16 keys against the block's BM rows.
    float s[BM / 8][4] = {};
    mma_abt<T, D, BM, kLd>(s, sK, warp * 16, sQ, lane);
    // P^T from the forward's log-sum-exp; zero past the keys, past the rows and right of the diagonal.
    const bool masked = kb0 + BN > p.kv_len || q0 + BM > p.q_len || (p.causal && kb0 + BN - 1 > q0 + p.causal_offset);
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * j + t_col + (e & 1);
        float x = exp2_ftz(fmaf(s[j][e], scale_log2, -lse2[c]));
        if (masked) {
          const int key = key_row0 + 8 * (e >> 1), row = q0 + c;
          if (key >= p.kv_len || row >= p.q_len || (p.causal && key > row + p.causal_offset)) x = 0.f;
        }
        s[j][e] = x;
      }

    // dV += P^T dO.
    {
      uint32_t pa[BM / 16][4];
      scores_to_a<T>(s, pa);
      mma_ab<T, D, BM, kLd>(dv, pa, sdO, lane);
    }

    // dP^T = V dO^T, then dS^T = P^T (dP^T - delta) in place.
    float dp[BM / 8][4] = {};
    mma_abt<T, D, BM, kLd>(dp, sV, warp * 16, sdO, lane);
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[j][e] = s[j][e] * (dp[j][e] - delta[8 * j + t_col + (e & 1)]);

    // dK += dS^T Q (scaled at the end); dS^T into shared memory for dQ.
    {
      uint32_t da[BM / 16][4];
      scores_to_a<T>(dp, da);
      mma_ab<T, D, BM, kLd>(dk, da, sQ, lane);
      // A fragment kk holds rows g, g + 8 at columns 16 kk + t_col (regs 0, 1) and + 8 (regs 2, 3).
#pragma unroll
      for (int kk = 0; kk < BM / 16; ++kk)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          uint32_t* row = reinterpret_cast<uint32_t*>(sdS + (warp * 16 + g_row + 8 * r) * kLdS + 16 * kk + t_col);
          row[0] = da[kk][r];
          row[4] = da[kk][2 + r];
        }
    }
    __syncthreads();  // dS^T complete

    // dQ (rows q0 ..) += dS K for this warp's quarter of the head dim, added to the fp32 sum.
    constexpr int kCols = D / 4, NT = kCols / 8;
    float dq[BM / 16][NT][4] = {};
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      uint32_t bk[NT / 2][4];
#pragma unroll
      for (int jp = 0; jp < NT / 2; ++jp)
        ldmatrix_x4_trans(
            bk[jp], sK + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kLd + warp * kCols + jp * 16 + (lane / 16) * 8);
#pragma unroll
      for (int mt = 0; mt < BM / 16; ++mt) {
        uint32_t a[4];  // dS rows mt * 16 .., keys kk * 16 ..: dS^T read transposed
        ldmatrix_x4_trans(a, sdS + (kk * 16 + lane % 8 + (lane / 16) * 8) * kLdS + mt * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
        for (int jp = 0; jp < NT / 2; ++jp) {
          Mma<T>::run(dq[mt][2 * jp], a, bk[jp][0], bk[jp][1]);
          Mma<T>::run(dq[mt][2 * jp + 1], a, bk[jp][2], bk[jp][3]);
        }
      }
    }
    float* acc = g.dq_accum + (int64_t(b) * p.heads + h) * p.q_len * D;
#pragma unroll
    for (int mt = 0; mt < BM / 16; ++mt)
      add_fragment_tile<D, NT>(dq[mt], acc, q0 + mt * 16 + g_row, p.q_len, warp * kCols, lane);
  }
  cp_async_wait<0>();

  // dK (scaled) and dV of this CTA's keys, summed over the group's query heads.
  store_dk_dv<T, D>(p, g, b, hk, key_row0, t_col, dk, dv);
}

std::size_t aligned(std::size_t n) { return (n + 255) / 256 * 256; }
bool hopper_head_dim(const Params& p) { return p.head_dim == 64 || p.head_dim == 128; }
// How many ways the Hopper kernel splits p's GQA group on this device's SMs (hopper_bwd_head_split); 1 at a
// head dim it lacks.
int hopper_split_here(const Params& p) { return hopper_head_dim(p) ? hopper_bwd_head_split(p, sm_count()) : 1; }
// One of the split Hopper kernel's dK and dV sums: 0 where it does not split or does not run (another GPU
// than an sm_90).
std::size_t dkv_accum_bytes(const Params& p) {
  if (resolve_path(Path::Automatic) != Path::Hopper || hopper_split_here(p) == 1) return 0;
  return aligned(std::size_t(p.batch) * p.kv_heads * p.kv_len * p.head_dim * sizeof(float));
}

// The launches; the main kernel bwd_sm90.cu's where `hopper` (except without queries: there is no Q
// to map, and this one writes the zeros), its group split `head_split` ways (hopper_bwd_head_split). Its dQ
// sum has its own layout: padded rows zeroed by the preprocess, its own conversion.
template <typename T, int D>
cudaError_t launch_backward(const Params& p, const BackwardBuffers& g, cudaStream_t stream, bool hopper,
                            int head_split) {
  // Without queries the main kernel still runs: its dK and dV are zeros. Without keys dq is zeros.
  const int64_t rows = int64_t(p.batch) * p.heads * p.q_len;
  const int dq_rows = hopper ? hopper_bwd_dq_rows(p.q_len, D) : p.q_len;
  cudaError_t e = cudaSuccess;
  if (rows > 0) {
    constexpr int kRowsPerBlock = preprocess_rows_per_block<D>();
    fused_bwd_preprocess<T, D>
        <<<static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock), kBwdThreads, 0, stream>>>(
            p, g, dq_rows, hopper && p.kv_len > 0);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
  }
  if (p.kv_len > 0 && hopper && p.q_len > 0) {
    // A split group's dK and dV are sums over its CTAs.
    const bool split = head_split > 1;
    const std::size_t sum_bytes = std::size_t(p.batch) * p.kv_heads * p.kv_len * D * sizeof(float);
    if (split && ((e = cudaMemsetAsync(g.dk_accum, 0, sum_bytes, stream)) != cudaSuccess ||
                  (e = cudaMemsetAsync(g.dv_accum, 0, sum_bytes, stream)) != cudaSuccess))
      return e;
    if ((e = launch_backward_hopper(p, g, head_split, stream)) != cudaSuccess) return e;
    if (split) {
      if ((e = convert_sum<T, D>({g.dk_accum, g.dk, p.batch, p.kv_heads, p.kv_len, p.k_batch_stride, p.k_head_stride,
                                  p.k_seq_stride, p.scale},
                                 stream)) != cudaSuccess ||
          (e = convert_sum<T, D>({g.dv_accum, g.dv, p.batch, p.kv_heads, p.kv_len, p.v_batch_stride, p.v_head_stride,
                                  p.v_seq_stride, 1.f},
                                 stream)) != cudaSuccess)
        return e;
    }
  } else if (p.kv_len > 0) {
    constexpr int kSmem = BwdSmem<D>::kBytes;
    e = allow_dynamic_shared<fused_bwd_sm80<T, D>>(kSmem);
    if (e != cudaSuccess) return e;
    const dim3 grid((p.kv_len + kBwdBlockN - 1) / kBwdBlockN, p.kv_heads, p.batch);
    fused_bwd_sm80<T, D><<<grid, kBwdThreads, kSmem, stream>>>(p, g);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
  }
  if (rows == 0) return cudaSuccess;
  if (!hopper)
    return convert_sum<T, D>(
        {g.dq_accum, g.dq, p.batch, p.heads, p.q_len, p.q_batch_stride, p.q_head_stride, p.q_seq_stride, p.scale},
        stream);
  // A thread four elements of the Hopper layout, padding rows included.
  fused_bwd_convert_dq_hopper<T, D>
      <<<conversion_blocks(int64_t(p.batch) * p.heads * dq_rows * (D / 4)), 256, 0, stream>>>(p, g);
  return cudaGetLastError();
}

std::size_t delta_bytes(const Params& p) { return aligned(std::size_t(p.batch) * p.heads * p.q_len * sizeof(float)); }
// dq_accum sized for the Hopper kernel's padded sum (hopper_bwd_dq_rows >= q_len): the path is chosen at the
// call, after the workspace; the portable kernel's row-major sum (batch x heads x q_len rows) is its start.
std::size_t dq_accum_bytes(const Params& p) {
  const std::size_t dq_rows = hopper_head_dim(p) ? hopper_bwd_dq_rows(p.q_len, p.head_dim) : p.q_len;
  return aligned(std::size_t(p.batch) * p.heads * dq_rows * p.head_dim * sizeof(float));
}

std::size_t rows_bytes(const Params& p) {
  return hopper_head_dim(p) ? aligned(hopper_bwd_rows_floats(p.batch, p.heads, p.q_len, p.head_dim) * sizeof(float))
                            : 0;
}

}  // namespace

// delta, then dq_accum, then (at the Hopper kernel's head dims) its block_rows and, where it splits the
// group, dk_accum and dv_accum.
std::size_t backward_scratch(const Params& p) {
  return delta_bytes(p) + dq_accum_bytes(p) + rows_bytes(p) + 2 * dkv_accum_bytes(p);
}

void carve_backward_scratch(const Params& p, void* scratch, BackwardBuffers& g) {
  char* at = static_cast<char*>(scratch);
  g.delta = reinterpret_cast<float*>(at);
  at += delta_bytes(p);
  g.dq_accum = reinterpret_cast<float*>(at);
  at += dq_accum_bytes(p);
  g.block_rows = hopper_head_dim(p) ? reinterpret_cast<float*>(at) : nullptr;
  at += rows_bytes(p);
  const std::size_t dkv = dkv_accum_bytes(p);
  g.dk_accum = dkv > 0 ? reinterpret_cast<float*>(at) : nullptr;
  g.dv_accum = dkv > 0 ? reinterpret_cast<float*>(at + dkv) : nullptr;
}

cudaError_t backward(const Params& p, const BackwardBuffers& g, cudaStream_t stream, BackwardPath path) {
  if (unsupported(p)[0] != '\0' || p.block_table || p.seq_lens) return cudaErrorInvalidValue;
  if (!g.d_out || !g.dq || !g.dk || !g.dv || !g.delta || !g.dq_accum) return cudaErrorInvalidValue;
  for (const void* ptr : {g.d_out, static_cast<const void*>(g.dq), static_cast<const void*>(g.dk),
                          static_cast<const void*>(g.dv), static_cast<const void*>(g.dq_accum)})
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return cudaErrorInvalidValue;
  // The Hopper kernel is sm_90a code only: elsewhere its launch would run an empty sm_80 body.
  const bool hopper = resolve_backward_path(path) == BackwardPath::Hopper;
  if (hopper && resolve_path(Path::Automatic) != Path::Hopper) return cudaErrorNotSupported;
  if (hopper && (!g.block_rows || reinterpret_cast<uintptr_t>(g.block_rows) % 16 != 0)) return cudaErrorInvalidValue;
  const int split = hopper ? hopper_split_here(p) : 1;
  if (split > 1)
    for (const float* sum : {g.dk_accum, g.dv_accum})
      if (!sum || reinterpret_cast<uintptr_t>(sum) % 16 != 0) return cudaErrorInvalidValue;
  if (p.batch == 0) return cudaSuccess;
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch_backward<__nv_bfloat16, 64>(p, g, stream, hopper, split)
                            : launch_backward<__nv_bfloat16, 128>(p, g, stream, hopper, split);
  return p.head_dim == 64 ? launch_backward<__half, 64>(p, g, stream, hopper, split)
                          : launch_backward<__half, 128>(p, g, stream, hopper, split);
}

}  // namespace attnprof::fused
