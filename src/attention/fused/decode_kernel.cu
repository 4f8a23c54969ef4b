// The fused attention forward for short queries against long keys (decode), mma.sync m16n8k16 on sm_80
// and later (schedule.h's "The decode kernel" says when it runs and how a call is covered).
//
// A CTA of 4 warps owns one unit: the q_len x group query rows of one (batch, KV head), or a chunk of
// 64 of them, packed into 16-row mma tiles (row r is query head r / q_len of the group at position
// r % q_len), so each key block is read once for every query head that shares it. Key blocks stream
// through kDecodeStages shared-memory stages, from a dense tensor or through the block table of a paged
// cache: on sm_90 by TMA (a box of 64 columns of a block's keys, or of a page's, on the stage's mbarrier),
// elsewhere (and for pages TMA cannot box) with cp.async into the same 128-byte-swizzled layout; the warps split each
// block's keys among them when the rows fill fewer than four tiles, each keeping its own online softmax, and merge
// through shared memory at the end. With several splits per unit, each CTA writes its normalized partial output and
// log-sum-exp, and the last CTA of the unit to finish (a counter per unit) merges them by their log-sum-exp, writes
// the output and sets the counter back to 0, so counters the library keeps for a stream need no memset per call
// (stream_counters.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>

#include "fused_attention.h"
#include "hopper_ptx.cuh"
#include "mma_sm80.cuh"
#include "softmax_fragment.cuh"
#include "stream_counters.h"
#include "tensor_map.h"

namespace attnprof::fused {
namespace {

using namespace sm80;

// What the decode launch adds to Params: the plan and the split scratch carved from the workspace.
struct DecodeArgs {
  int group;       // query heads per KV head
  int rows;        // q_len x group
  int chunk_rows;  // rows a unit holds
  int row_chunks;
  int splits;
  int blocks_per_split;
  float* partial_o;    // [unit][split][chunk_rows][head_dim], normalized
  float* partial_lse;  // [unit][split][chunk_rows], natural log
  int* counters;       // [unit]
};

// The K and V tensor maps of the TMA loads (decode_maps), and the keys a box holds.
struct DecodeMaps {
  CUtensorMap k, v;
  int box_rows;
};

__device__ __forceinline__ void prefetch_l1(const void* ptr) { asm volatile("prefetch.global.L1 [%0];\n" ::"l"(ptr)); }

// The keys of sequence b.
__device__ __forceinline__ int seq_keys(const Params& p, int b) {
  if (!p.seq_lens) return p.kv_len;
  const int n = __ldg(p.seq_lens + b);
  return n < 0 ? 0 : n > p.kv_len ? p.kv_len : n;
}

// A stage holds K then V, each [D / 64][BN][64] elements in 128-byte rows whose 16-byte chunks are
// swizzled (chunk c of row r at c ^ (r % 8)): TMA's 128-byte swizzle, which ldmatrix reads without bank
// conflicts. The element offset of (row, col), col a multiple of 8.
template <int BN>
__device__ __forceinline__ int swizzled(int row, int col) {
  return (col / 64) * (BN * 64) + row * 64 + ((((col % 64) / 8) ^ (row % 8)) * 8);
}

// Copies key block n (BN keys of K and of V) into one stage with cp.async, from a dense tensor or through
// the block table; keys at or past `keys` are zero-filled.
template <typename T, int D, int BN>
__device__ __forceinline__ void load_block(T* sK, T* sV, const Params& p, int b, int hk, int n, int keys) {
  constexpr int kChunks = D / 8;
  constexpr int kRowsPerPass = kDecodeThreads / kChunks;
  const int c = threadIdx.x % kChunks;
  const T* k = static_cast<const T*>(p.k) + hk * p.k_head_stride + c * 8;
  const T* v = static_cast<const T*>(p.v) + hk * p.v_head_stride + c * 8;
  if (!p.block_table) {
    k += int64_t(b) * p.k_batch_stride;
    v += int64_t(b) * p.v_batch_stride;
  }
  const int* table = p.block_table ? p.block_table + int64_t(b) * p.block_table_stride : nullptr;
#pragma unroll
  for (int i = 0; i < BN / kRowsPerPass; ++i) {
    const int r = threadIdx.x / kChunks + i * kRowsPerPass;
    const int key = n * BN + r;
    const bool valid = key < keys;
    int64_t kofs = 0, vofs = 0;  // a key past the end reads nothing (zero fill) from the tensor's start
    if (table) {
      if (valid) {  // the table's entries past a sequence's pages need not name a page
        const int64_t page = __ldg(table + key / p.page_size), in_page = key % p.page_size;
        kofs = page * p.k_batch_stride + in_page * p.k_seq_stride;
        vofs = page * p.v_batch_stride + in_page * p.v_seq_stride;
      }
    } else {
      kofs = valid ? int64_t(key) * p.k_seq_stride : 0;
      vofs = valid ? int64_t(key) * p.v_seq_stride : 0;
    }
    const int at = swizzled<BN>(r, c * 8);
    // Dense K/V through L1 (whole lines a request: 3-6% faster at large batch, H100); pages of a block
    // table bypass it (.ca made 16-token pages 14% slower: B64 H32/8 Skv4k 0.393 -> 0.447 ms).
    if (table) {
      cp_async16(sK + at, k + kofs, valid);
      cp_async16(sV + at, v + vofs, valid);
    } else {
      cp_async16_ca(sK + at, k + kofs, valid);
      cp_async16_ca(sV + at, v + vofs, valid);
    }
  }
}

// Whether this compilation's device code has TMA (sm_90a). Where it has not, a kernel built for TMA
// copies with cp.async as the other.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool kHasTma = true;
#else
constexpr bool kHasTma = false;
#endif

// load_block by TMA, on warp 0: the block's boxes of `maps.box_rows` keys (the whole block from a dense
// tensor or a page that holds it; a page each where pages are shorter) and 64 columns, K and V, completing
// on the stage's mbarrier, which lane 0 arms with their bytes. Lane i issues copy i (box i / kCopies), after
// reading its box's page from the table, so that a paged block's table reads and copies are in flight at
// once rather than one thread's in turn. Boxes that start at or past `keys` are not read (their pages need
// not exist); the rows they would fill, and a last page's rows past the sequence, are zeroed by the kernel
// once the block has landed (zero_tail_rows).
template <typename T, int D, int BN>
__device__ __forceinline__ void tma_load_block(T* sK, T* sV, const Params& p, const DecodeMaps& maps, int b, int hk,
                                               int n, int keys, uint64_t* bar) {
  constexpr int kCopies = 2 * (D / 64);  // a box's: K and V of each 64-column chunk
  static_assert(BN / kDecodeMinTmaPage * kCopies <= 32, "a lane a copy");
  const int lane = threadIdx.x % 32, j = lane / kCopies, c = lane % kCopies;
  const int rows = maps.box_rows, first = n * BN;
  const int boxes = (min(BN, keys - first) + rows - 1) / rows;
  int page = b, row = first;
  if (p.block_table && j < boxes) {
    const int key = first + j * rows;
    page = __ldg(p.block_table + int64_t(b) * p.block_table_stride + key / p.page_size);
    row = key % p.page_size;
  }
  if (lane == 0) sm90::mbar_arrive_expect_tx(bar, uint32_t(boxes * rows * 128 * (D / 64) * 2));
  __syncwarp();  // armed before any copy lands
  if (j < boxes) {
    const int h = c / 2, at = h * BN * 64 + j * rows * 64;
    if (c % 2 == 0)
      sm90::tma_load_4d(sK + at, &maps.k, h * 64, row, hk, page, bar);
    else
      sm90::tma_load_4d(sV + at, &maps.v, h * 64, row, hk, page, bar);
  }
}

// V's rows from `from` on zeroed (keys past a sequence that TMA read or skipped): P is 0 there, but P x V
// of stale bits that read as NaN would not be. K's need not be: their scores are masked.
template <typename T, int D, int BN>
__device__ __forceinline__ void zero_tail_rows(T* sV, int from) {
  for (int i = threadIdx.x; i < (BN - from) * (D / 8); i += kDecodeThreads)
    reinterpret_cast<uint4*>(sV)[swizzled<BN>(from + i / (D / 8), (i % (D / 8)) * 8) / 8] = make_uint4(0, 0, 0, 0);
}

// The query head and position of packed row r (< rows) of KV head hk.
struct RowAt {
  int head;
  int pos;
};
__device__ __forceinline__ RowAt row_at(const DecodeArgs& a, const Params& p, int hk, int r) {
  return {hk * a.group + r / p.q_len, r % p.q_len};
}

// The last CTA of a unit: every split's normalized partial weighted by exp(its lse - the row's lse), on
// all of the CTA's threads. First each row's weights (a warp a row, its lanes over the splits) into
// `w` (shared, splits x rows_here floats) and the row's log-sum-exp out; then each thread a row's 4
// columns at a time, four splits' loads in flight.
template <typename T, int D>
__device__ __forceinline__ void merge_splits(const Params& p, const DecodeArgs& a, int unit, int hk, int b,
                                             int chunk_row0, int rows_here, float* w) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* ul = a.partial_lse + int64_t(unit) * a.splits * a.chunk_rows;
  const float* uo = a.partial_o + int64_t(unit) * a.splits * a.chunk_rows * D;
  for (int r = warp; r < rows_here; r += kDecodeThreads / 32) {
    float mx = -INFINITY;
    for (int s = lane; s < a.splits; s += 32) mx = fmaxf(mx, __ldcg(ul + s * a.chunk_rows + r));
#pragma unroll
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
    float sum = 0.f;
    for (int s = lane; s < a.splits; s += 32) {
      const float e = mx == -INFINITY ? 0.f : __expf(__ldcg(ul + s * a.chunk_rows + r) - mx);
      w[s * rows_here + r] = e;
      sum += e;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int s = lane; s < a.splits; s += 32) w[s * rows_here + r] *= inv;
    if (lane == 0) {
      const RowAt ra = row_at(a, p, hk, chunk_row0 + r);
      p.lse[(int64_t(b) * p.heads + ra.head) * p.q_len + ra.pos] = sum > 0.f ? mx + logf(sum) : -INFINITY;
    }
  }
  __syncthreads();
  constexpr int kCols = D / 4;
  const int64_t split_stride = int64_t(a.chunk_rows) * D;
  for (int i = threadIdx.x; i < rows_here * kCols; i += kDecodeThreads) {
    const int lr = i / kCols, c = (i % kCols) * 4;
    const float* src = uo + int64_t(lr) * D + c;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    int s = 0;
    for (; s + 4 <= a.splits; s += 4) {
      float4 v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = __ldcg(reinterpret_cast<const float4*>(src + (s + k) * split_stride));
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float wk = w[(s + k) * rows_here + lr];
        acc.x = fmaf(wk, v[k].x, acc.x);
        acc.y = fmaf(wk, v[k].y, acc.y);
        acc.z = fmaf(wk, v[k].z, acc.z);
        acc.w = fmaf(wk, v[k].w, acc.w);
      }
    }
    for (; s < a.splits; ++s) {
      const float4 v = __ldcg(reinterpret_cast<const float4*>(src + s * split_stride));
      const float wk = w[s * rows_here + lr];
      acc.x = fmaf(wk, v.x, acc.x);
      acc.y = fmaf(wk, v.y, acc.y);
      acc.z = fmaf(wk, v.z, acc.z);
      acc.w = fmaf(wk, v.w, acc.w);
    }
    const RowAt ra = row_at(a, p, hk, chunk_row0 + lr);
    T* dst = static_cast<T*>(p.out) + int64_t(b) * p.o_batch_stride + int64_t(ra.head) * p.o_head_stride +
             int64_t(ra.pos) * p.o_seq_stride + c;
    reinterpret_cast<uint32_t*>(dst)[0] = Pack2<T>::pack(acc.x, acc.y);
    reinterpret_cast<uint32_t*>(dst)[1] = Pack2<T>::pack(acc.z, acc.w);
  }
}

template <typename T, int D, int RT, bool TMA>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeCtasPerSm)
    fused_fwd_decode(const Params p, const DecodeArgs a, const __grid_constant__ DecodeMaps maps) {
  constexpr bool kTma = TMA && kHasTma;
  constexpr int BN = decode_block_n(D);
  constexpr int kKeyWarps = 4 / RT;   // warps sharing a row tile, each on its part of a block's keys
  constexpr int KW = BN / kKeyWarps;  // keys a warp takes of each block
  constexpr int kStage = 2 * BN * D;  // K then V, elements
  static_assert(KW % 16 == 0, "a warp's keys make whole k-steps of P V");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // The stages 1024-byte aligned, as TMA's 128-byte swizzle wants its boxes (decode_shared_bytes has room).
  T* smem = reinterpret_cast<T*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  __shared__ uint64_t stage_full[kDecodeStages];  // TMA: a stage's bytes have landed

  const int unit = blockIdx.x / a.splits, split = blockIdx.x % a.splits;
  const int chunk = unit % a.row_chunks;
  const int hk = (unit / a.row_chunks) % p.kv_heads;
  const int b = unit / a.row_chunks / p.kv_heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rt = warp % RT, kw = warp / RT;
  // A paged TMA split's first reads on their way before seq_lens' answer, which would hold them back: the
  // tensor maps, and the table's line of the split's first block (into L1, where tma_load_block's __ldg
  // finds it; that block is within kv_len, which the table covers).
  if constexpr (kTma) {
    if (threadIdx.x == 0) {
      sm90::prefetch_tensormap(&maps.k);
      sm90::prefetch_tensormap(&maps.v);
      if (p.block_table)
        prefetch_l1(p.block_table + int64_t(b) * p.block_table_stride +
                    int64_t(split) * a.blocks_per_split * BN / p.page_size);
    }
  }
  const int keys = seq_keys(p, b);
  const int offset = !p.causal ? 0 : p.seq_lens && p.causal_bottom_right ? keys - p.q_len : p.causal_offset;

  // This thread's two packed rows (mma rows g and g + 8 of its warp's tile) and the last key each sees.
  const int chunk_row0 = chunk * kDecodeChunkRows;
  const int rows_here = min(a.rows - chunk_row0, a.chunk_rows);
  int last[2];
  RowAt at[2];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int lr = rt * 16 + lane / 4 + 8 * i;
    at[i] = row_at(a, p, hk, chunk_row0 + min(lr, rows_here - 1));
    last[i] = lr >= rows_here ? keys - 1 : p.causal ? min(keys - 1, at[i].pos + offset) : keys - 1;
  }
  // The positions the chunk's rows hold (all of them, or one run of a head's when a chunk holds fewer
  // rows than q_len), so that causal blocks past the last row's diagonal are not read and the mask is
  // applied only from the first row's diagonal on.
  int pos_lo = 0, pos_hi = p.q_len - 1;
  if (rows_here < p.q_len && chunk_row0 % p.q_len + rows_here <= p.q_len) {
    pos_lo = chunk_row0 % p.q_len;
    pos_hi = pos_lo + rows_here - 1;
  }
  const int cta_first_last = p.causal ? min(keys - 1, pos_lo + offset) : keys - 1;
  const int cta_keys = p.causal ? max(0, min(keys, pos_hi + offset + 1)) : keys;
  const int blocks = (cta_keys + BN - 1) / BN;
  const int n_begin = min(blocks, split * a.blocks_per_split);
  const int n_end = min(blocks, n_begin + a.blocks_per_split);

  // Q as A fragments straight from global memory (rows past the chunk are zeros).
  uint32_t qf[D / 16][4];
  {
    const T* q = static_cast<const T*>(p.q);
    const T* qrow[2];
    bool qvalid[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int lr = rt * 16 + lane / 4 + 8 * i;
      qvalid[i] = lr < rows_here;
      qrow[i] = q + int64_t(b) * p.q_batch_stride + int64_t(at[i].head) * p.q_head_stride +
                int64_t(at[i].pos) * p.q_seq_stride + 2 * (lane % 4);
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      qf[kk][0] = qvalid[0] ? *reinterpret_cast<const uint32_t*>(qrow[0] + kk * 16) : 0u;
      qf[kk][1] = qvalid[1] ? *reinterpret_cast<const uint32_t*>(qrow[1] + kk * 16) : 0u;
      qf[kk][2] = qvalid[0] ? *reinterpret_cast<const uint32_t*>(qrow[0] + kk * 16 + 8) : 0u;
      qf[kk][3] = qvalid[1] ? *reinterpret_cast<const uint32_t*>(qrow[1] + kk * 16 + 8) : 0u;
    }
  }

  // Stage s holds blocks n_begin + s, + s + kDecodeStages, ...: the k-th of them completes phase k of
  // stage_full[s] (TMA) or is the k-th cp.async group of the stage.
  const auto load = [&](int n) {
    const int s = (n - n_begin) % kDecodeStages;
    T* sK = smem + s * kStage;
    if constexpr (kTma) {
      if (warp == 0) tma_load_block<T, D, BN>(sK, sK + BN * D, p, maps, b, hk, n, keys, &stage_full[s]);
    } else {
      load_block<T, D, BN>(sK, sK + BN * D, p, b, hk, n, keys);
    }
  };
  if constexpr (kTma) {
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < kDecodeStages; ++s) sm90::mbar_init(&stage_full[s], 1);
      sm90::fence_barrier_init();
    }
    __syncthreads();
  }
#pragma unroll
  for (int s = 0; s < kDecodeStages - 1; ++s) {
    if (n_begin + s < n_end) load(n_begin + s);
    if constexpr (!kTma) cp_async_commit();
  }

  float o[D / 8][4] = {};
  RowState st;
  st.init();
  const float scale_log2 = p.scale * 1.4426950408889634f;

  for (int n = n_begin; n < n_end; ++n) {
    T* const stage = smem + ((n - n_begin) % kDecodeStages) * kStage;
    if constexpr (kTma) {
      sm90::mbar_wait(&stage_full[(n - n_begin) % kDecodeStages], ((n - n_begin) / kDecodeStages) & 1);
      if ((n + 1) * BN > keys) zero_tail_rows<T, D, BN>(stage + BN * D, keys - n * BN);
    } else {
      cp_async_wait<kDecodeStages - 2>();
    }
    __syncthreads();  // block n landed for every thread; every warp is done with block n - 1's stage
    if (n + kDecodeStages - 1 < n_end) load(n + kDecodeStages - 1);
    if constexpr (!kTma) cp_async_commit();
    const T* sK = stage;
    const T* sV = stage + BN * D;

    float s[KW / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int j = 0; j < KW / 8; j += 2) {
        uint32_t kf[4];
        ldmatrix_x4(kf,
                    sK + swizzled<BN>(kw * KW + j * 8 + (lane / 16) * 8 + lane % 8, kk * 16 + ((lane / 8) % 2) * 8));
        Mma<T>::run(s[j], qf[kk], kf[0], kf[1]);
        Mma<T>::run(s[j + 1], qf[kk], kf[2], kf[3]);
      }
    const int col0 = n * BN + kw * KW;
    if ((n + 1) * BN - 1 > cta_first_last) {
      const int c = col0 + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < KW / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (c + 8 * j + (e & 1) > last[e >> 1]) s[j][e] = -INFINITY;
    }
    online_softmax(s, o, st, scale_log2);
#pragma unroll
    for (int kk = 0; kk < KW / 16; ++kk) {
      const uint32_t pa[4] = {Pack2<T>::pack(s[2 * kk][0], s[2 * kk][1]), Pack2<T>::pack(s[2 * kk][2], s[2 * kk][3]),
                              Pack2<T>::pack(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              Pack2<T>::pack(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int j = 0; j < D / 8; j += 2) {
        uint32_t vf[4];
        ldmatrix_x4_trans(
            vf, sV + swizzled<BN>(kw * KW + kk * 16 + ((lane / 8) % 2) * 8 + lane % 8, j * 8 + (lane / 16) * 8));
        Mma<T>::run(o[j], pa, vf[0], vf[1]);
        Mma<T>::run(o[j + 1], pa, vf[2], vf[3]);
      }
    }
  }
  if constexpr (!kTma) cp_async_wait<0>();  // (every TMA load was awaited in the loop)

  // The key warps of a row tile merge into the first (kw 0): the others leave their state in shared
  // memory, thread-interleaved, in the stages' space.
  if constexpr (kKeyWarps > 1) {
    __syncthreads();  // every warp is done with the stages
    float4* slots = reinterpret_cast<float4*>(smem_raw);
    constexpr int kSlot = 32 * (D / 8 + 1);  // float4 per warp
    if (kw > 0) {
      float4* dst = slots + warp * kSlot + lane;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) dst[32 * j] = make_float4(o[j][0], o[j][1], o[j][2], o[j][3]);
      dst[32 * (D / 8)] = make_float4(st.m[0], st.m[1], st.l[0], st.l[1]);
    }
    __syncthreads();
    if (kw == 0) {
#pragma unroll
      for (int w = 1; w < kKeyWarps; ++w) {
        const float4* src = slots + (rt + w * RT) * kSlot + lane;
        const float4 ml = src[32 * (D / 8)];
        const float m_in[2] = {ml.x, ml.y}, l_in[2] = {ml.z, ml.w};
        float fa[2], fb[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float mx = fmaxf(st.m[r], m_in[r]);
          const float base = mx == -INFINITY ? 0.f : mx * scale_log2;
          fa[r] = exp2_ftz(st.m[r] * scale_log2 - base);
          fb[r] = exp2_ftz(m_in[r] * scale_log2 - base);
          st.l[r] = st.l[r] * fa[r] + l_in[r] * fb[r];
          st.m[r] = mx;
        }
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          const float4 v = src[32 * j];
          o[j][0] = fmaf(o[j][0], fa[0], v.x * fb[0]);
          o[j][1] = fmaf(o[j][1], fa[0], v.y * fb[0]);
          o[j][2] = fmaf(o[j][2], fa[1], v.z * fb[1]);
          o[j][3] = fmaf(o[j][3], fa[1], v.w * fb[1]);
        }
      }
    }
  }
  const bool writes = kw == 0;  // the warps that hold their row tile's merged state

  // This warp's rows, normalized, and their log-sum-exp (natural log; -inf for a row that saw no key).
  float inv[2], lse[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = st.l[r];
    l += __shfl_xor_sync(0xffffffff, l, 1);
    l += __shfl_xor_sync(0xffffffff, l, 2);
    inv[r] = l > 0.f ? 1.f / l : 0.f;
    lse[r] = l > 0.f ? st.m[r] * p.scale + logf(l) : -INFINITY;
  }

  if (a.splits == 1) {
    if (!writes) return;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int lr = rt * 16 + lane / 4 + 8 * r;
      if (lr >= rows_here) continue;
      T* dst = static_cast<T*>(p.out) + int64_t(b) * p.o_batch_stride + int64_t(at[r].head) * p.o_head_stride +
               int64_t(at[r].pos) * p.o_seq_stride + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) = Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
      if (lane % 4 == 0) p.lse[(int64_t(b) * p.heads + at[r].head) * p.q_len + at[r].pos] = lse[r];
    }
    return;
  }

  // A split: its partial, then the unit's counter; the last CTA of the unit merges every split.
  const int64_t slot = int64_t(unit) * a.splits + split;
  if (writes) {
    float* po = a.partial_o + slot * a.chunk_rows * D;
    float* pl = a.partial_lse + slot * a.chunk_rows;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int lr = rt * 16 + lane / 4 + 8 * r;
      if (lr >= rows_here) continue;
      float* dst = po + int64_t(lr) * D + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
        __stcg(reinterpret_cast<float2*>(dst + 8 * j), make_float2(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]));
      if (lane % 4 == 0) __stcg(pl + lr, lse[r]);
    }
  }
  __threadfence();
  __shared__ int last_cta;
  __syncthreads();  // every partial of this CTA written and fenced; the key warps' slots read
  if (threadIdx.x == 0) last_cta = atomicAdd(a.counters + unit, 1) == a.splits - 1;
  __syncthreads();
  if (!last_cta) return;
  if (threadIdx.x == 0) a.counters[unit] = 0;  // every split has counted: ready for the next call on the stream
  __threadfence();
  merge_splits<T, D>(p, a, unit, hk, b, chunk_row0, rows_here, reinterpret_cast<float*>(smem_raw));
}

template <typename T, int D, int RT, bool TMA>
cudaError_t launch(const Params& p, const DecodePlan& d, const DecodeArgs& a, const DecodeMaps& maps,
                   cudaStream_t stream) {
  constexpr int kSmem = decode_shared_bytes(D);
  constexpr auto* kernel = &fused_fwd_decode<T, D, RT, TMA>;
  cudaError_t e = allow_dynamic_shared<kernel>(kSmem);
  if (e != cudaSuccess) return e;
  const long long ctas = d.units * a.splits;
  if (ctas > INT_MAX) return cudaErrorInvalidConfiguration;
  kernel<<<unsigned(ctas), kDecodeThreads, kSmem, stream>>>(p, a, maps);
  return cudaGetLastError();
}

template <typename T, int D, bool TMA>
cudaError_t launch_rows(const Params& p, const DecodePlan& d, const DecodeArgs& a, const DecodeMaps& maps,
                        cudaStream_t stream) {
  if (d.row_tiles == 1) return launch<T, D, 1, TMA>(p, d, a, maps, stream);
  if (d.row_tiles == 2) return launch<T, D, 2, TMA>(p, d, a, maps, stream);
  return launch<T, D, 4, TMA>(p, d, a, maps, stream);
}

// The tensor maps of p's K and V for the decode kernel's TMA loads, on an sm_90 device where the call's
// keys make boxes (decode_tma_box_keys) and the overrides do not ask for cp.async: a dense tensor
// [batch, kv_heads, kv_len, head_dim] by its strides; a paged cache [pages, page_size, kv_heads, head_dim].
// False: cp.async copies.
bool decode_maps(const Params& p, const LaunchOverrides& overrides, DecodeMaps* maps) {
  if (overrides.decode_cp_async || (p.head_dim != 64 && p.head_dim != 128)) return false;
  maps->box_rows = decode_tma_box_keys(p.head_dim, p.block_table ? p.page_size : 0);
  if (maps->box_rows == 0 || p.kv_len == 0 || resolve_path(Path::Automatic) != Path::Hopper) return false;
  int batch = p.batch, seq = p.kv_len;
  if (p.block_table) {
    batch = INT_MAX;  // the pool's pages, as many as the table names (the maps do not bound them)
    seq = p.page_size;
  }
  // A key's 128-byte row (D = 64) between other heads' (a paged cache, BSHD) is filled into L2 alone: a
  // 256-byte fill would also bring the next head's row, which another CTA reads at another time.
  return sm90::encode(&maps->k, p.dtype, p.k, batch, p.kv_heads, seq, p.head_dim, p.k_batch_stride, p.k_head_stride,
                      p.k_seq_stride, maps->box_rows, p.head_dim == 64 && p.k_seq_stride != 64) &&
         sm90::encode(&maps->v, p.dtype, p.v, batch, p.kv_heads, seq, p.head_dim, p.v_batch_stride, p.v_head_stride,
                      p.v_seq_stride, maps->box_rows, p.head_dim == 64 && p.v_seq_stride != 64);
}

template <typename T, int D>
cudaError_t launch_copies(const Params& p, const DecodePlan& d, const DecodeArgs& a, cudaStream_t stream,
                          const LaunchOverrides& overrides) {
  DecodeMaps maps{};
  if (decode_maps(p, overrides, &maps)) return launch_rows<T, D, true>(p, d, a, maps, stream);
  return launch_rows<T, D, false>(p, d, a, maps, stream);
}

}  // namespace

bool decode_uses_tma(const Params& p, const LaunchOverrides& overrides) {
  DecodeMaps maps{};
  return decode_maps(p, overrides, &maps);
}

std::size_t decode_scratch(const Params& p, int sms, const LaunchOverrides& overrides) {
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  return decode_scratch_bytes(decode_plan(p, sms, kDecodeMaxSplits, overrides.decode_splits), p.head_dim);
}

cudaError_t launch_decode(const Params& p, cudaStream_t stream, const LaunchOverrides& overrides) {
  DecodePlan d = decode_plan(p, sm_count(), kDecodeMaxSplits, overrides.decode_splits);
  const std::size_t scratch = decode_scratch_bytes(d, p.head_dim);
  if (scratch == 0 || !p.tail_workspace || p.tail_workspace_bytes < scratch) {
    d.splits = 1;  // no room for the partials: one CTA a unit
    d.blocks_per_split = d.blocks;
  }
  DecodeArgs a{};
  a.group = p.heads / p.kv_heads;
  a.rows = d.rows;
  a.chunk_rows = d.chunk_rows;
  a.row_chunks = d.row_chunks;
  a.splits = d.splits;
  a.blocks_per_split = d.blocks_per_split;
  if (d.splits > 1) {
    char* w = static_cast<char*>(p.tail_workspace);
    const std::size_t partial = decode_partial_bytes(d, p.head_dim);
    a.partial_o = reinterpret_cast<float*>(w);
    a.partial_lse = a.partial_o + std::size_t(d.units) * d.splits * d.chunk_rows * p.head_dim;
    // The stream's (the rule splits under one wave of CTAs; forced splits may have more units than it keeps).
    a.counters = d.units <= kDecodeStreamCounters ? stream_counters(stream) : nullptr;
    if (!a.counters) {  // the workspace's, zeroed for this call
      a.counters = reinterpret_cast<int*>(w + (partial + 255) / 256 * 256);
      const cudaError_t e = cudaMemsetAsync(a.counters, 0, std::size_t(d.units) * sizeof(int), stream);
      if (e != cudaSuccess) return e;
    }
  }
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch_copies<__nv_bfloat16, 64>(p, d, a, stream, overrides)
                            : launch_copies<__nv_bfloat16, 128>(p, d, a, stream, overrides);
  return p.head_dim == 64 ? launch_copies<__half, 64>(p, d, a, stream, overrides)
                          : launch_copies<__half, 128>(p, d, a, stream, overrides);
}

}  // namespace attnprof::fused
