// The fused attention forward for short queries against long keys (decode), mma.sync m16n8k16 on sm_80
// and later (schedule.h's "The decode kernel" says when it runs and how a call is covered).
//
// A unit is the q_len x group query rows of one (batch, KV head), or a chunk of 64 of them, packed into
// 16-row mma tiles (row r is query head r / q_len of the group at position r % q_len), so each key block
// is read once for every query head that shares it. The units' key blocks make one row of items,
// sequence by sequence; each CTA of 4 warps takes an equal range of it (or, without scratch, one unit).
// Key blocks stream through kDecodeStages shared-memory stages with cp.async (from a dense tensor or
// through the block table of a paged cache), across unit boundaries; the warps split each block's keys
// among them when the rows fill fewer than four tiles, each keeping its own online softmax, and merge
// through the finished block's stage when a unit's piece ends. A piece that is a whole unit writes the
// output; otherwise it writes its normalized partial and log-sum-exp, and the last CTA of the unit to
// finish (a counter per unit) merges the pieces by their log-sum-exp and writes the output.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>

#include "fused_attention.h"
#include "mma_sm80.cuh"
#include "softmax_fragment.cuh"

namespace attnprof::fused {
namespace {

using namespace sm80;

// What the decode launch adds to Params: the plan and the scratch carved from the workspace.
struct DecodeArgs {
  int group;           // query heads per KV head
  int rows;            // q_len x group
  int chunk_rows;      // rows a unit holds
  int row_chunks;      // units a KV head
  int units_per_seq;   // kv_heads x row_chunks
  bool balanced;       // CTAs take equal ranges of key blocks (else one unit each)
  float* partial_o;    // balanced: [ctas + units][chunk_rows][head_dim], piece of CTA c of unit u at c + u
  float* partial_lse;  // [ctas + units][chunk_rows], natural log
  int* counters;       // [units], zero at the launch
};

// The keys of sequence b.
__device__ __forceinline__ int seq_keys(const Params& p, int b) {
  if (!p.seq_lens) return p.kv_len;
  const int n = __ldg(p.seq_lens + b);
  return n < 0 ? 0 : n > p.kv_len ? p.kv_len : n;
}

// The causal diagonal of a sequence of `keys` keys: row position pos sees keys <= pos + offset.
__device__ __forceinline__ int diagonal_offset(const Params& p, int keys) {
  return p.seq_lens && p.causal_bottom_right ? keys - p.q_len : p.causal_offset;
}

// Keys that rows at positions up to pos_hi can see: the blocks past them are not read.
__device__ __forceinline__ int visible_keys(const Params& p, int keys, int pos_hi) {
  return p.causal ? max(0, min(keys, pos_hi + diagonal_offset(p, keys) + 1)) : keys;
}

// Key blocks of each unit of a sequence (its last positions': every row chunk's items are as many).
template <int BN>
__device__ __forceinline__ int seq_blocks(const Params& p, int keys) {
  return (visible_keys(p, keys, p.q_len - 1) + BN - 1) / BN;
}

// The rows of row chunk `chunk`: the first, how many, and the positions they hold (all of q_len, or
// one run of a head's when the chunk holds fewer rows than q_len).
struct ChunkRows {
  int row0, rows, pos_lo, pos_hi;
};
__device__ __forceinline__ ChunkRows chunk_rows_of(const Params& p, const DecodeArgs& a, int chunk) {
  ChunkRows c{chunk * kDecodeChunkRows, 0, 0, p.q_len - 1};
  c.rows = min(a.rows - c.row0, a.chunk_rows);
  if (c.rows < p.q_len && c.row0 % p.q_len + c.rows <= p.q_len) {
    c.pos_lo = c.row0 % p.q_len;
    c.pos_hi = c.pos_lo + c.rows - 1;
  }
  return c;
}

// A place in the row of items: sequence b (keys, nb key blocks a unit, its first item at `first`),
// its unit j (KV head j / row_chunks, row chunk j % row_chunks), key block blk of that unit.
struct Cursor {
  int b, j, blk, nb, keys;
  long long first;
};

template <int BN>
__device__ __forceinline__ void enter_sequence(Cursor& c, const Params& p) {
  c.keys = c.b < p.batch ? seq_keys(p, c.b) : 0;
  c.nb = c.b < p.batch ? seq_blocks<BN>(p, c.keys) : 0;
}

// The next item: the next key block, else the next unit, else the next sequence with keys.
template <int BN>
__device__ __forceinline__ void advance(Cursor& c, const Params& p, const DecodeArgs& a) {
  if (++c.blk < c.nb) return;
  c.blk = 0;
  if (++c.j < a.units_per_seq) return;
  c.j = 0;
  do {
    c.first += static_cast<long long>(a.units_per_seq) * c.nb;
    ++c.b;
    enter_sequence<BN>(c, p);
  } while (c.b < p.batch && c.nb == 0);
}

// Copies key block n (BN keys of K and of V) of KV head hk of sequence b into one stage, from a dense
// tensor or through the block table; keys at or past `keys` are zero-filled.
template <typename T, int D, int BN>
__device__ __forceinline__ void load_block(T* sK, T* sV, const Params& p, int b, int hk, int n, int keys) {
  constexpr int kChunks = D / 8, kLd = D + 8;
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
    cp_async16(sK + r * kLd + c * 8, k + kofs, valid);
    cp_async16(sV + r * kLd + c * 8, v + vofs, valid);
  }
}

// The item at c into a stage, if its unit's rows can see any of that block's keys.
template <typename T, int D, int BN>
__device__ __forceinline__ void load_item(T* stage, const Params& p, const DecodeArgs& a, const Cursor& c) {
  const int hk = c.j / a.row_chunks;
  const ChunkRows cr = chunk_rows_of(p, a, c.j % a.row_chunks);
  if (c.blk * BN < visible_keys(p, c.keys, cr.pos_hi))
    load_block<T, D, BN>(stage, stage + BN * (D + 8), p, c.b, hk, c.blk, c.keys);
}

// The query head and position of packed row r (< rows) of KV head hk.
struct RowAt {
  int head;
  int pos;
};
__device__ __forceinline__ RowAt row_at(const DecodeArgs& a, const Params& p, int hk, int r) {
  return {hk * a.group + r / p.q_len, r % p.q_len};
}

// The output rows of sequence b that no item covers (a sequence with no visible key): zeros, lse -inf.
template <typename T>
__device__ void write_empty_sequence(const Params& p, int b) {
  const int half_d = p.head_dim / 2;
  for (int i = threadIdx.x; i < p.heads * p.q_len * half_d; i += kDecodeThreads) {
    const int h = i / (p.q_len * half_d), pos = i / half_d % p.q_len, c = i % half_d * 2;
    T* dst = static_cast<T*>(p.out) + int64_t(b) * p.o_batch_stride + int64_t(h) * p.o_head_stride +
             int64_t(pos) * p.o_seq_stride + c;
    *reinterpret_cast<uint32_t*>(dst) = Pack2<T>::pack(0.f, 0.f);
    if (c == 0) p.lse[(int64_t(b) * p.heads + h) * p.q_len + pos] = -INFINITY;
  }
}

// The last CTA of unit u (global index) merges its pieces: those of CTAs c_first .. c_first + pieces - 1
// (slots c + u), each a normalized partial weighted by exp(its lse - the row's lse), on all of the CTA's
// threads. First each row's maximum and sum (a warp a row, its lanes over the pieces) into `rowstat`
// (shared, 2 x rows floats) and the row's log-sum-exp out; then each thread a row's 4 columns at a
// time, four pieces' loads in flight.
template <typename T, int D>
__device__ void merge_pieces(const Params& p, const DecodeArgs& a, long long u, long long c_first, int pieces, int hk,
                             int b, const ChunkRows& cr, float* rowstat) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float* ul = a.partial_lse + (c_first + u) * a.chunk_rows;
  const float* uo = a.partial_o + (c_first + u) * a.chunk_rows * D;
  const int64_t lse_stride = a.chunk_rows, o_stride = int64_t(a.chunk_rows) * D;
  for (int r = warp; r < cr.rows; r += kDecodeThreads / 32) {
    float mx = -INFINITY;
    for (int s = lane; s < pieces; s += 32) mx = fmaxf(mx, __ldcg(ul + s * lse_stride + r));
#pragma unroll
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, o));
    float sum = 0.f;
    if (mx != -INFINITY)
      for (int s = lane; s < pieces; s += 32) sum += __expf(__ldcg(ul + s * lse_stride + r) - mx);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
    if (lane == 0) {
      rowstat[r] = mx;
      rowstat[kDecodeChunkRows + r] = sum > 0.f ? 1.f / sum : 0.f;
      const RowAt ra = row_at(a, p, hk, cr.row0 + r);
      p.lse[(int64_t(b) * p.heads + ra.head) * p.q_len + ra.pos] = sum > 0.f ? mx + logf(sum) : -INFINITY;
    }
  }
  __syncthreads();
  constexpr int kCols = D / 4;
  for (int i = threadIdx.x; i < cr.rows * kCols; i += kDecodeThreads) {
    const int lr = i / kCols, c = (i % kCols) * 4;
    const float mx = rowstat[lr], inv = rowstat[kDecodeChunkRows + lr];
    const float* src = uo + int64_t(lr) * D + c;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (mx != -INFINITY) {
      int s = 0;
      for (; s + 4 <= pieces; s += 4) {
        float4 v[4];
        float w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          v[k] = __ldcg(reinterpret_cast<const float4*>(src + (s + k) * o_stride));
          w[k] = __ldcg(ul + (s + k) * lse_stride + lr);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const float wk = __expf(w[k] - mx) * inv;
          acc.x = fmaf(wk, v[k].x, acc.x);
          acc.y = fmaf(wk, v[k].y, acc.y);
          acc.z = fmaf(wk, v[k].z, acc.z);
          acc.w = fmaf(wk, v[k].w, acc.w);
        }
      }
      for (; s < pieces; ++s) {
        const float4 v = __ldcg(reinterpret_cast<const float4*>(src + s * o_stride));
        const float wk = __expf(__ldcg(ul + s * lse_stride + lr) - mx) * inv;
        acc.x = fmaf(wk, v.x, acc.x);
        acc.y = fmaf(wk, v.y, acc.y);
        acc.z = fmaf(wk, v.z, acc.z);
        acc.w = fmaf(wk, v.w, acc.w);
      }
    }
    const RowAt ra = row_at(a, p, hk, cr.row0 + lr);
    T* dst = static_cast<T*>(p.out) + int64_t(b) * p.o_batch_stride + int64_t(ra.head) * p.o_head_stride +
             int64_t(ra.pos) * p.o_seq_stride + c;
    reinterpret_cast<uint32_t*>(dst)[0] = Pack2<T>::pack(acc.x, acc.y);
    reinterpret_cast<uint32_t*>(dst)[1] = Pack2<T>::pack(acc.z, acc.w);
  }
}

// Balanced: this CTA's range [i0, i1) of the row of items and the cursor at i0; total: the row's items;
// ctas: the CTAs that take ranges (the grid, or fewer when the sequences hold fewer items than it: each
// range then holds at least one, so every CTA a unit's items span takes part in it).
// Without sequence lengths every sequence has kv_len keys; with them, warp 0 sums each sequence's items
// (a warp scan over seq_lens, 32 sequences at a time), then finds the sequence holding i0.
template <int BN>
__device__ void find_range(const Params& p, const DecodeArgs& a, Cursor& c, long long& i0, long long& i1,
                           long long& total, long long& ctas) {
  const long long per_unit_seq = a.units_per_seq;
  if (!p.seq_lens) {
    c.b = 0;
    enter_sequence<BN>(c, p);
    const long long per_seq = per_unit_seq * c.nb;
    total = per_seq * p.batch;
    ctas = std::min<long long>(gridDim.x, std::max(total, 1LL));
    i0 = total * blockIdx.x / ctas;
    i1 = blockIdx.x < ctas ? total * (blockIdx.x + 1) / ctas : i0;
    if (i0 >= i1) return;
    c.b = static_cast<int>(i0 / per_seq);
    c.first = c.b * per_seq;
    c.j = static_cast<int>((i0 - c.first) / c.nb);
    c.blk = static_cast<int>((i0 - c.first) % c.nb);
    return;
  }
  __shared__ long long s_total, s_first;
  __shared__ int s_b;
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    // A sequence's items, and their inclusive scan over this warp's 32 sequences.
    const auto scan = [&](int base, long long& n, long long& incl) {
      const int b = base + lane;
      n = b < p.batch ? per_unit_seq * seq_blocks<BN>(p, seq_keys(p, b)) : 0;
      incl = n;
#pragma unroll
      for (int o = 1; o < 32; o *= 2) {
        const long long t = __shfl_up_sync(0xffffffff, incl, o);
        if (lane >= o) incl += t;
      }
    };
    long long run = 0, n = 0, incl = 0;
    for (int base = 0; base < p.batch; base += 32) {
      scan(base, n, incl);
      run += __shfl_sync(0xffffffff, incl, 31);
    }
    const long long used = std::min<long long>(gridDim.x, std::max(run, 1LL));
    const long long start = blockIdx.x < used ? run * blockIdx.x / used : run;
    long long before = 0, first = 0;
    int found = p.batch;
    for (int base = 0; base < p.batch && found == p.batch; base += 32) {
      scan(base, n, incl);
      const long long excl = before + incl - n;
      const unsigned hit = __ballot_sync(0xffffffff, n > 0 && excl <= start && start < excl + n);
      if (hit) {
        const int l = __ffs(hit) - 1;
        found = base + l;
        first = __shfl_sync(0xffffffff, excl, l);
      }
      before += __shfl_sync(0xffffffff, incl, 31);
    }
    if (lane == 0) {
      s_total = run;
      s_b = found;
      s_first = first;
    }
  }
  __syncthreads();
  total = s_total;
  ctas = std::min<long long>(gridDim.x, std::max(total, 1LL));
  if (blockIdx.x >= ctas) return;
  i0 = total * blockIdx.x / ctas;
  i1 = total * (blockIdx.x + 1) / ctas;
  if (i0 >= i1) return;
  c.b = s_b;
  c.first = s_first;
  enter_sequence<BN>(c, p);
  c.j = static_cast<int>((i0 - c.first) / c.nb);
  c.blk = static_cast<int>((i0 - c.first) % c.nb);
}

template <typename T, int D, int RT>
__global__ void __launch_bounds__(kDecodeThreads, kDecodeCtasPerSm)
    fused_fwd_decode(const Params p, const DecodeArgs a) {
  constexpr int BN = decode_block_n(D);
  constexpr int kLd = D + 8;
  constexpr int kKeyWarps = 4 / RT;     // warps sharing a row tile, each on its part of a block's keys
  constexpr int KW = BN / kKeyWarps;    // keys a warp takes of each block
  constexpr int kStage = 2 * BN * kLd;  // K then V, elements
  static_assert(KW % 16 == 0, "a warp's keys make whole k-steps of P V");
  static_assert(4 * 32 * (D / 8 + 1) * 16 <= kStage * 2, "the key warps' merge fits in a stage");
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* smem = reinterpret_cast<T*>(smem_raw);
  __shared__ int last_cta;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int rt = warp % RT, kw = warp / RT;
  const bool writes = kw == 0;  // the warps that hold their row tile's merged state

  // This CTA's items: a range of the row (balanced) or one unit's blocks.
  Cursor cur{};
  long long i0 = 0, i1 = 0, total = 0, ctas = gridDim.x;
  if (a.balanced) {
    // Sequences that no item covers get their zeros from CTA b % ctas.
    for (int b = blockIdx.x; b < p.batch; b += gridDim.x)
      if (seq_blocks<BN>(p, seq_keys(p, b)) == 0) write_empty_sequence<T>(p, b);
    find_range<BN>(p, a, cur, i0, i1, total, ctas);
    if (i0 >= i1) return;
  } else {
    cur.b = blockIdx.x / a.units_per_seq;
    cur.j = blockIdx.x % a.units_per_seq;
    enter_sequence<BN>(cur, p);
    i1 = cur.nb;
  }

  // The unit being computed: its rows, the last key each of this thread's two rows sees, its Q.
  int hk = 0, blocks_vis = 0, first_last = 0, piece_first = 0;
  ChunkRows cr{};
  RowAt at[2];
  int last[2];
  uint32_t qf[D / 16][4];
  float o[D / 8][4];
  RowState st;
  const auto enter_unit = [&] {
    hk = cur.j / a.row_chunks;
    cr = chunk_rows_of(p, a, cur.j % a.row_chunks);
    const int offset = diagonal_offset(p, cur.keys);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int lr = rt * 16 + lane / 4 + 8 * i;
      at[i] = row_at(a, p, hk, cr.row0 + min(lr, cr.rows - 1));
      last[i] = lr >= cr.rows || !p.causal ? cur.keys - 1 : min(cur.keys - 1, at[i].pos + offset);
    }
    first_last = p.causal ? min(cur.keys - 1, cr.pos_lo + offset) : cur.keys - 1;
    blocks_vis = (visible_keys(p, cur.keys, cr.pos_hi) + BN - 1) / BN;
    piece_first = cur.blk;
    // Q as A fragments straight from global memory (rows past the chunk are zeros).
    const T* q = static_cast<const T*>(p.q);
    const T* qrow[2];
    bool qvalid[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int lr = rt * 16 + lane / 4 + 8 * i;
      qvalid[i] = lr < cr.rows;
      qrow[i] = q + int64_t(cur.b) * p.q_batch_stride + int64_t(at[i].head) * p.q_head_stride +
                int64_t(at[i].pos) * p.q_seq_stride + 2 * (lane % 4);
    }
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      qf[kk][0] = qvalid[0] ? *reinterpret_cast<const uint32_t*>(qrow[0] + kk * 16) : 0u;
      qf[kk][1] = qvalid[1] ? *reinterpret_cast<const uint32_t*>(qrow[1] + kk * 16) : 0u;
      qf[kk][2] = qvalid[0] ? *reinterpret_cast<const uint32_t*>(qrow[0] + kk * 16 + 8) : 0u;
      qf[kk][3] = qvalid[1] ? *reinterpret_cast<const uint32_t*>(qrow[1] + kk * 16 + 8) : 0u;
    }
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    st.init();
  };
  enter_unit();

  // The unit's piece is done: merge the key warps through `stage` (every warp is done with its keys),
  // then the output, or the piece's partial and, in the unit's last CTA, the merge of its pieces.
  const auto finish_piece = [&](unsigned char* stage) {
    if constexpr (kKeyWarps > 1) {
      __syncthreads();  // every warp is done reading the stage's keys
      float4* slots = reinterpret_cast<float4*>(stage);
      constexpr int kSlot = 32 * (D / 8 + 1);  // float4 per warp
      if (kw > 0) {
        float4* dst = slots + warp * kSlot + lane;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) dst[32 * j] = make_float4(o[j][0], o[j][1], o[j][2], o[j][3]);
        dst[32 * (D / 8)] = make_float4(st.m[0], st.m[1], st.l[0], st.l[1]);
      }
      __syncthreads();
      if (writes) {
        const float scale_log2 = p.scale * 1.4426950408889634f;
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
    const bool whole = piece_first == 0 && cur.blk >= cur.nb - 1;
    if (!a.balanced || whole) {
      if (!writes) return;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int lr = rt * 16 + lane / 4 + 8 * r;
        if (lr >= cr.rows) continue;
        T* dst = static_cast<T*>(p.out) + int64_t(cur.b) * p.o_batch_stride + int64_t(at[r].head) * p.o_head_stride +
                 int64_t(at[r].pos) * p.o_seq_stride + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
          *reinterpret_cast<uint32_t*>(dst + 8 * j) = Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
        if (lane % 4 == 0) p.lse[(int64_t(cur.b) * p.heads + at[r].head) * p.q_len + at[r].pos] = lse[r];
      }
      return;
    }
    // A piece: its partial at slot (this CTA + the unit), then the unit's counter.
    const long long u = static_cast<long long>(cur.b) * a.units_per_seq + cur.j;
    if (writes) {
      const long long slot = blockIdx.x + u;
      float* po = a.partial_o + slot * a.chunk_rows * D;
      float* pl = a.partial_lse + slot * a.chunk_rows;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int lr = rt * 16 + lane / 4 + 8 * r;
        if (lr >= cr.rows) continue;
        float* dst = po + int64_t(lr) * D + 2 * (lane % 4);
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
          __stcg(reinterpret_cast<float2*>(dst + 8 * j), make_float2(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]));
        if (lane % 4 == 0) __stcg(pl + lr, lse[r]);
      }
    }
    // The CTAs whose ranges hold the unit's first and last items: CTA c's range starts at total * c / ctas.
    const long long first_item = cur.first + static_cast<long long>(cur.j) * cur.nb;
    const auto cta_of = [&](long long i) { return ((i + 1) * ctas - 1) / total; };
    const long long c_first = cta_of(first_item);
    const int pieces = static_cast<int>(cta_of(first_item + cur.nb - 1) - c_first + 1);
    __threadfence();
    __syncthreads();  // every partial of this piece written and fenced; the key warps' slots read
    if (threadIdx.x == 0) last_cta = atomicAdd(a.counters + u, 1) == pieces - 1;
    __syncthreads();
    if (!last_cta) return;
    __threadfence();
    merge_pieces<T, D>(p, a, u, c_first, pieces, hk, cur.b, cr, reinterpret_cast<float*>(stage));
  };

  if (!a.balanced && cur.nb == 0) {  // one CTA a unit, a sequence with no visible key: zeros
    finish_piece(smem_raw);
    return;
  }

  // The loader runs kDecodeStages - 1 items ahead, across unit and sequence boundaries.
  Cursor ld = cur;
  const auto stage_of = [&](long long i) { return smem + ((i - i0) % kDecodeStages) * kStage; };
#pragma unroll
  for (int s = 0; s < kDecodeStages - 1; ++s) {
    if (i0 + s < i1) {
      load_item<T, D, BN>(stage_of(i0 + s), p, a, ld);
      advance<BN>(ld, p, a);
    }
    cp_async_commit();
  }

  const float scale_log2 = p.scale * 1.4426950408889634f;
  for (long long i = i0; i < i1; ++i) {
    cp_async_wait<kDecodeStages - 2>();
    __syncthreads();  // item i landed for every thread; every warp is done with item i - 1's stage
    {
      const long long next = i + kDecodeStages - 1;
      if (next < i1) {
        load_item<T, D, BN>(stage_of(next), p, a, ld);
        advance<BN>(ld, p, a);
      }
      cp_async_commit();
    }
    const int n = cur.blk;
    if (n < blocks_vis) {
      const T* sK = stage_of(i) + kw * KW * kLd;
      const T* sV = sK + BN * kLd;
      float s[KW / 8][4] = {};
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
        for (int j = 0; j < KW / 8; j += 2) {
          uint32_t kf[4];
          ldmatrix_x4(kf, sK + (j * 8 + (lane / 16) * 8 + lane % 8) * kLd + kk * 16 + ((lane / 8) % 2) * 8);
          Mma<T>::run(s[j], qf[kk], kf[0], kf[1]);
          Mma<T>::run(s[j + 1], qf[kk], kf[2], kf[3]);
        }
      const int col0 = n * BN + kw * KW;
      if ((n + 1) * BN - 1 > first_last) {
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
          ldmatrix_x4_trans(vf, sV + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kLd + j * 8 + (lane / 16) * 8);
          Mma<T>::run(o[j], pa, vf[0], vf[1]);
          Mma<T>::run(o[j + 1], pa, vf[2], vf[3]);
        }
      }
    }
    if (cur.blk == cur.nb - 1 || i == i1 - 1) {
      finish_piece(reinterpret_cast<unsigned char*>(stage_of(i)));
      if (i + 1 == i1) break;
      __syncthreads();  // the merge's reads of the stage are done before the next item's load reuses it
      advance<BN>(cur, p, a);
      enter_unit();
    } else {
      advance<BN>(cur, p, a);
    }
  }
  cp_async_wait<0>();
}

template <typename T, int D, int RT>
cudaError_t launch(const Params& p, const DecodeArgs& a, int ctas, cudaStream_t stream) {
  constexpr int kSmem = decode_shared_bytes(D);
  auto* kernel = fused_fwd_decode<T, D, RT>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (e != cudaSuccess) return e;
  kernel<<<unsigned(ctas), kDecodeThreads, kSmem, stream>>>(p, a);
  return cudaGetLastError();
}

template <typename T, int D>
cudaError_t launch_rows(const Params& p, const DecodePlan& d, const DecodeArgs& a, int ctas, cudaStream_t stream) {
  if (d.row_tiles == 1) return launch<T, D, 1>(p, a, ctas, stream);
  if (d.row_tiles == 2) return launch<T, D, 2>(p, a, ctas, stream);
  return launch<T, D, 4>(p, a, ctas, stream);
}

}  // namespace

std::size_t decode_scratch(const Params& p, int sms) {
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  return decode_scratch_bytes(decode_plan(p, sms), p.head_dim);
}

cudaError_t launch_decode(const Params& p, cudaStream_t stream) {
  DecodePlan d = decode_plan(p, sm_count());
  const std::size_t scratch = decode_scratch_bytes(d, p.head_dim);
  if (scratch == 0 || !p.tail_workspace || p.tail_workspace_bytes < scratch) d.balanced = false;
  DecodeArgs a{};
  a.group = p.heads / p.kv_heads;
  a.rows = d.rows;
  a.chunk_rows = d.chunk_rows;
  a.row_chunks = d.row_chunks;
  a.units_per_seq = p.kv_heads * d.row_chunks;
  a.balanced = d.balanced;
  long long ctas = d.ctas;
  if (d.balanced) {
    char* w = static_cast<char*>(p.tail_workspace);
    const std::size_t partial = decode_partial_bytes(d, p.head_dim);
    a.partial_o = reinterpret_cast<float*>(w);
    a.partial_lse = a.partial_o + std::size_t(d.ctas + d.units) * d.chunk_rows * p.head_dim;
    a.counters = reinterpret_cast<int*>(w + (partial + 255) / 256 * 256);
    const cudaError_t e = cudaMemsetAsync(a.counters, 0, std::size_t(d.units) * sizeof(int), stream);
    if (e != cudaSuccess) return e;
  } else {
    ctas = d.units;  // one CTA a unit: no partials
  }
  if (ctas < 1) return cudaSuccess;
  if (ctas > INT_MAX) return cudaErrorInvalidConfiguration;
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch_rows<__nv_bfloat16, 64>(p, d, a, int(ctas), stream)
                            : launch_rows<__nv_bfloat16, 128>(p, d, a, int(ctas), stream);
  return p.head_dim == 64 ? launch_rows<__half, 64>(p, d, a, int(ctas), stream)
                          : launch_rows<__half, 128>(p, d, a, int(ctas), stream);
}

}  // namespace attnprof::fused
