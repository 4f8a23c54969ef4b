// The fused attention backward's main kernel on Hopper (sm_90a): TMA loads and wgmma for all five GEMMs,
// docs/hopper-backward.md's version 1 (its section 5) with step 3's dQ through shared memory and step 4's
// producer warpgroup. It runs between bwd_sm80.cu's preprocess (delta = dO . O, dQ's fp32 sum zeroed, each
// query block's lse and delta laid out for one bulk copy: BackwardBuffers::block_rows) and its dq conversion
// (convert_dq_hopper; and the dK and dV sums' where it splits a group), and computes what that file's main
// kernel does.
//
// A CTA owns BN = 128 keys of one (batch, KV head) and walks every (query head of the GQA group, query
// block of BM rows), as bwd_sm80.cu does, or those of a part of the group where a grid under one wave splits
// it (hopper_bwd_head_split: the parts' dK and dV are added into fp32 sums). Causal grids run longest first,
// a wave's worth of (batch, KV head)s at a time (hopper_bwd_section).
// Three warpgroups (384 threads, setmaxnreg 24 / 240 / 240):
//   the producer: one thread loads K and V (TMA, once), then each block's Q and dO (TMA) and rows (bulk
//     copy) into the stage (of three) that the consumers have released (mbarriers full / empty); another
//     adds each block's dQ, once its D / 64 halves of 64 columns are stored, to the padded fp32 sum (bulk
//     reduce-add, cp.reduce.async.bulk, 16 KB a half) and releases the halves' buffer once read;
//   two consumers, 64 of the keys each, their K and V in shared memory and their dK and dV in fp32
//     registers. Per block:
//   S^T = K Q^T and dP^T = V dO^T (wgmma, both operands K-major in shared memory; at D=64 K and V are
//     held in registers as A fragments instead),
//   P^T = exp2(S^T scale log2(e) - lse2) and dS^T = P^T (dP^T - delta) in registers,
//   dV += P^T dO and dK += dS^T Q (wgmma, A from registers, B MN-major in shared memory),
//   dS^T stored untransposed by stmatrix ([keys][queries], 128B-swizzled as TMA would; two buffers, a
//     block's in buffer it % 2, so that one named barrier a block orders the consumers) for
//   dQ = dS K (wgmma with both operands MN-major: WgmmaSS_TT): all of it by one warpgroup, the two in
//     turn block by block (N = D); stored to shared memory in fragment order, D / 64 halves of 64 x 64,
//     for the producer's bulk add.
// BM = 64 query rows at both head dims.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "bwd_common.cuh"
#include "fused_attention.h"
#include "hopper_launch.cuh"
#include "softmax_fragment.cuh"
#include "wgmma_ops.cuh"

namespace attnprof::fused {
namespace sm90 {

namespace {

constexpr int kBwdThreads = 384;  // a producer warpgroup and two consumer warpgroups
constexpr int kBwdConsumerThreads = 256;
constexpr int kBwdBlockN = kHopperBwdBlockN;  // keys a CTA: 64 a consumer warpgroup
// setmaxnreg's split of the launch's 168 registers a thread (65536 / 384, down to a multiple of 8): the
// producer's threads only issue copies and wait.
constexpr int kBwdProducerRegs = 24, kBwdConsumerRegs = 240;
static_assert(kBwdProducerRegs + 2 * kBwdConsumerRegs <= ((65536 / kBwdThreads) & ~7) * 3, "setmaxnreg's pool");
static_assert(kBwdConsumerThreads + 128 == kBwdThreads, "one producer warpgroup");

// Shared memory from a 1024-byte boundary (the 128B swizzle's), in bytes: K and V [BN][D], kQStages stages of
// Q and dO [BM][D], two buffers of dS^T [BN][BM] (item it's in buffer it % 2), each as 64-column chunks of
// 128-byte rows (TMA's boxes, chunk c at c x rows x 128); a block's dQ, fp32 [BM x D] as D / 64 halves of
// 64 columns in a warpgroup's fragment order (the bulk reduce's source); then per stage BM floats of
// lse (log2 units, +inf for rows that see nothing) and BM of delta (block_rows' layout); then the
// mbarriers: K/V's, per stage full (its Q, dO and rows landed) and empty (the consumers are done with it),
// per half of dQ dq_full (stored) and dq_empty (the bulk add has read it).
template <int D>
struct BwdLayout {
  static constexpr int BM = hopper_bwd_block_m(D), BN = kBwdBlockN;
  static constexpr uint32_t kKvBytes = BN * D * 2;
  static constexpr uint32_t kTileBytes = BM * D * 2;  // a block of Q or of dO
  static constexpr uint32_t kDsBytes = BN * BM * 2;
  static constexpr uint32_t kK = 0, kV = kK + kKvBytes;
  // Stages of Q, dO and rows: three at both head dims (at D=128 with 424 bytes to spare). With two, the next
  // item's loads were exposed: on an H100 three ran D=128 2-4% faster and D=64 3% (hopper-backward.md 15).
  static constexpr int kQStages = 3;
  static constexpr uint32_t kStages = kV + kKvBytes;  // stage s: Q at kStages + 2 s kTileBytes, dO after it
  static constexpr uint32_t kDs = kStages + 2 * kQStages * kTileBytes;
  static constexpr uint32_t kDq = kDs + 2 * kDsBytes;
  static constexpr uint32_t kDqHalfBytes = 64 * 64 * 4;  // 64 x 64 of dQ, in a warpgroup's fragment order
  static constexpr int kDqHalves = D / 64;               // a block's dQ: BM = 64 rows, D / 64 halves
  static constexpr uint32_t kRows = kDq + kDqHalves * kDqHalfBytes;
  static constexpr uint32_t kRowsBytes = 2 * BM * 4;  // a stage's lse and delta
  static constexpr uint32_t kBars = kRows + kQStages * kRowsBytes;
  static constexpr int kBarriers = 1 + 2 * kQStages + 2 * kDqHalves;  // kv_full; q_full, q_empty; dq_full, dq_empty
  static constexpr int kBytes = int(kBars) + kBarriers * 8 + 1024;    // + the alignment's slack
  static_assert(BM == 64 && kDqHalves * kDqHalfBytes == BM * D * 4, "a block's dQ is D / 64 halves of 64 x 64");
  static_assert(kKvBytes % 1024 == 0 && kTileBytes % 1024 == 0 && kDsBytes % 1024 == 0, "1024-byte atoms");
};

template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads, 1)
    fused_bwd_sm90(const __grid_constant__ Params p, const __grid_constant__ TensorMaps maps,
                   const __grid_constant__ BackwardBuffers g, int head_split, int section) {
#ifdef ATTNPROF_SM90A
  using L = BwdLayout<D>;
  constexpr int BM = L::BM, BN = L::BN;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  const uint32_t s_base = smem_u32(base);
  float* rows = reinterpret_cast<float*>(base + L::kRows);
  uint64_t* kv_full = reinterpret_cast<uint64_t*>(base + L::kBars);
  uint64_t* q_full = kv_full + 1;               // per stage
  uint64_t* q_empty = q_full + L::kQStages;     // per stage
  uint64_t* dq_full = q_empty + L::kQStages;    // per half of dQ
  uint64_t* dq_empty = dq_full + L::kDqHalves;  // per half of dQ

  // The CTA's key block, (batch, KV head), query heads and blocks (the grid's order: hopper_bwd_cta).
  const HopperBwdCta cta = hopper_bwd_cta(p, D, head_split, int(blockIdx.x), section);
  const int kb0 = cta.key_block * BN, hk = cta.kv_head, b = cta.batch;
  // Warp-uniform to the compiler (a shuffle from lane 0, as the forward does): no divergent paths
  // around the wgmma, which ptxas would serialize (C7520).
  const int wg = __shfl_sync(0xffffffff, int(threadIdx.x / 128), 0);
  const int warp = __shfl_sync(0xffffffff, int(threadIdx.x % 128) / 32, 0);
  const int lane = threadIdx.x % 32;

  const int items = cta.items();

  if (threadIdx.x == 0) {
    mbar_init(kv_full, 1);
    for (int i = 0; i < L::kQStages; ++i) {
      mbar_init(&q_full[i], 1);
      mbar_init(&q_empty[i], kBwdConsumerThreads);  // every consumer thread
    }
    for (int i = 0; i < L::kDqHalves; ++i) {
      mbar_init(&dq_full[i], 128);  // every thread of the block's dQ warpgroup
      mbar_init(&dq_empty[i], 1);
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer
    setmaxnreg_dec<kBwdProducerRegs>();
    if (threadIdx.x == 0 && items > 0) {
      // K and V once (a key block no query sees loads nothing: its dK and dV are zeros), then each item's
      // Q and dO by TMA (zero rows past q_len) and its rows (lse and delta, as the preprocess laid them out
      // in block_rows) by one bulk copy, all on its stage's full barrier, once the consumers have released
      // the stage's item before (it - kQStages).
      prefetch_tensormap(&maps.q);
      prefetch_tensormap(&maps.k);
      prefetch_tensormap(&maps.v);
      prefetch_tensormap(&maps.o);
      mbar_arrive_expect_tx(kv_full, 2 * L::kKvBytes);
      for (int c = 0; c < D / 64; ++c) {
        tma_load_4d(base + L::kK + c * BN * 128, &maps.k, c * 64, kb0, hk, b, kv_full);
        tma_load_4d(base + L::kV + c * BN * 128, &maps.v, c * 64, kb0, hk, b, kv_full);
      }
      for (int it = 0; it < items; ++it) {
        constexpr int S = L::kQStages;
        const int stage = it % S, h = cta.head(it), q0 = cta.row0(it, BM);
        if (it >= S) mbar_wait(&q_empty[stage], (it / S - 1) & 1);
        unsigned char* dst = base + L::kStages + 2 * stage * L::kTileBytes;
        mbar_arrive_expect_tx(&q_full[stage], 2 * L::kTileBytes + L::kRowsBytes);
        for (int c = 0; c < D / 64; ++c) {
          tma_load_4d(dst + c * BM * 128, &maps.q, c * 64, q0, h, b, &q_full[stage]);
          tma_load_4d(dst + L::kTileBytes + c * BM * 128, &maps.o, c * 64, q0, h, b, &q_full[stage]);
        }
        bulk_load(rows + 2 * stage * BM, g.block_rows + hopper_bwd_rows_at(int64_t(b) * p.heads + h, p.q_len, D, q0),
                  L::kRowsBytes, &q_full[stage]);
      }
    } else if (threadIdx.x == 32) {  // (another warp than the loads': its own spin loops)
      // Each item's dQ: its D / 64 halves, once its dQ warpgroup has stored them, added to their place in the
      // padded sum (hopper_bwd_dq_rows rows a head) by the bulk copy engine; the buffer is released once read.
      const int dq_rows = hopper_bwd_dq_rows(p.q_len, D);
      for (int it = 0; it < items; ++it) {
        const int h = cta.head(it), q0 = cta.row0(it, BM);
        float* acc = g.dq_accum + ((int64_t(b) * p.heads + h) * dq_rows + q0) * D;
        for (int w = 0; w < L::kDqHalves; ++w) {
          mbar_wait(&dq_full[w], it & 1);
          bulk_reduce_add_f32(acc + w * 64 * 64, s_base + L::kDq + w * L::kDqHalfBytes, L::kDqHalfBytes);
        }
        bulk_commit();
        bulk_wait_read_all();
        for (int w = 0; w < L::kDqHalves; ++w) mbar_arrive(&dq_empty[w]);
      }
      bulk_wait_all();  // shared memory stays until the bulk adds are done
    }
    return;
  }

  // consumers
  setmaxnreg_inc<kBwdConsumerRegs>();
  const int cw = wg - 1;  // this consumer warpgroup: keys 64 cw .. of the block
  const float scale_log2 = p.scale * 1.4426950408889634f;
  const int g_row = lane / 4, t_col = 2 * (lane % 4);
  const int key_row = cw * 64 + warp * 16 + g_row;  // this thread's keys in the block: key_row and key_row + 8
  const int key_row0 = kb0 + key_row;
  // This warpgroup's 64 rows of K and V (8 KB into each 64-column chunk: the 1024-byte alignment holds).
  const uint32_t k_rows = s_base + L::kK + cw * 64 * 128, v_rows = s_base + L::kV + cw * 64 * 128;
  // A block's whole dQ from one warpgroup, the two in turn (below), its halves in turn from here.
  const uint32_t sdq_whole = s_base + L::kDq + (threadIdx.x % 128) * 16;
  float dk[D / 8][4] = {}, dv[D / 8][4] = {};
  // At D=64 this warpgroup's 64 rows of K and V are held as wgmma A fragments for the CTA's life (32
  // registers), so that S^T and dP^T read only Q and dO from shared memory (3-5% faster on an H100:
  // hopper-backward.md section 20). At D=128 they would take 64 registers the consumers do not have (K alone:
  // spills and serialized wgmma); those GEMMs read K and V from shared memory.
  constexpr bool kKvInRegs = D == 64;
  [[maybe_unused]] uint32_t kf[kKvInRegs ? D / 16 : 1][4], vf[kKvInRegs ? D / 16 : 1][4];
  if (items > 0) mbar_wait(kv_full, 0);
  if constexpr (kKvInRegs) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      ldmatrix_a_sw128(k_rows, BN, warp, lane, kk, kf[kk]);
      ldmatrix_a_sw128(v_rows, BN, warp, lane, kk, vf[kk]);
    }
  }

  for (int it = 0; it < items; ++it) {
    const int stage = it % L::kQStages;
    mbar_wait(&q_full[stage], (it / L::kQStages) & 1);
    const uint32_t q_addr = s_base + L::kStages + 2 * stage * L::kTileBytes, do_addr = q_addr + L::kTileBytes;
    const uint32_t ds_addr = s_base + L::kDs + (it & 1) * L::kDsBytes;  // item it's dS^T buffer: it % 2
    // This stage's lse (log2 units) and delta, read two columns at a time (a thread's e = 0, 1) by LDS.64.
    const uint32_t lse2_addr = s_base + L::kRows + 2 * stage * BM * 4, delta_addr = lse2_addr + BM * 4;
    const int q0 = cta.row0(it, BM);

    // S^T = K Q^T and dP^T = V dO^T: this warpgroup's 64 keys against the block's BM rows, K-major
    // operands a 16-column k step at (kk / 4) chunks + (kk % 4) x 32 bytes (the forward's Q K^T).
    float s[BM / 8][4], dp[BM / 8][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t koff = (kk % 4) * 32;
      const uint64_t q_desc = make_desc_sw128(q_addr + (kk / 4) * BM * 128 + koff, 16, 1024);
      if constexpr (kKvInRegs)
        WgmmaRS_K<T, BM>::run(s, kf[kk], q_desc, kk > 0);
      else
        WgmmaSS<T, BM>::run(s, make_desc_sw128(k_rows + (kk / 4) * BN * 128 + koff, 16, 1024), q_desc, kk > 0);
    }
    wgmma_commit();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t koff = (kk % 4) * 32;
      const uint64_t do_desc = make_desc_sw128(do_addr + (kk / 4) * BM * 128 + koff, 16, 1024);
      if constexpr (kKvInRegs)
        WgmmaRS_K<T, BM>::run(dp, vf[kk], do_desc, kk > 0);
      else
        WgmmaSS<T, BM>::run(dp, make_desc_sw128(v_rows + (kk / 4) * BN * 128 + koff, 16, 1024), do_desc, kk > 0);
    }
    wgmma_commit();
    wgmma_wait<1>();  // S^T is done; dP^T may still run
    fence_operands(s);

    // P^T from the forward's log-sum-exp; zero past the keys, past the rows and right of the diagonal.
    const bool masked = kb0 + BN > p.kv_len || q0 + BM > p.q_len || (p.causal && kb0 + BN - 1 > q0 + p.causal_offset);
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) {
      const float2 l2 = ld_shared_v2(lse2_addr + (8 * j + t_col) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int c = 8 * j + t_col + (e & 1);
        float x = exp2_ftz(fmaf(s[j][e], scale_log2, -((e & 1) ? l2.y : l2.x)));
        if (masked) {
          const int key = key_row0 + 8 * (e >> 1), row = q0 + c;
          if (key >= p.kv_len || row >= p.q_len || (p.causal && key > row + p.causal_offset)) x = 0.f;
        }
        s[j][e] = x;
      }
    }
    wgmma_wait<0>();
    fence_operands(dp);
    // dS^T = P^T (dP^T - delta) in place.
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) {
      const float2 d2 = ld_shared_v2(delta_addr + (8 * j + t_col) * 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) dp[j][e] = s[j][e] * (dp[j][e] - ((e & 1) ? d2.y : d2.x));
    }
    uint32_t pa[BM / 16][4], da[BM / 16][4];
    scores_to_a<T>(s, pa);
    scores_to_a<T>(dp, da);

    // dS^T into shared memory untransposed, [BN keys][BM queries] in 64-query chunks, 128B-swizzled (the
    // forward epilogue's layout), a fragment a stmatrix.x4: A fragment kk holds columns 16 kk .. (regs 0, 1:
    // the warp's rows 0-7 and 8-15) and 16 kk + 8 .. (regs 2, 3), each an 8 x 8 matrix in stmatrix's layout;
    // lane l gives row l % 8 + 8 ((l / 8) % 2) of 8-column block 2 kk + l / 16 (a 16-byte row of the swizzle),
    // as the fragments of K and V are taken.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk)
      stmatrix_x4(fragment_row_sw128(ds_addr + cw * 64 * 128, BN, warp, lane, kk), da[kk]);
    fence_proxy_async_shared();  // the generic stores, read next by wgmma (the async proxy)

    // dV += P^T dO: dO MN-major, 16 query rows a k step, its 64-column chunks BM x 128 apart.
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk)
      WgmmaRS<T, D>::run(dv, pa[kk], make_desc_sw128(do_addr + kk * 16 * 128, BM * 128, 1024));
    wgmma_commit();
    // dK += dS^T Q (scaled at the end).
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk)
      WgmmaRS<T, D>::run(dk, da[kk], make_desc_sw128(q_addr + kk * 16 * 128, BM * 128, 1024));
    wgmma_commit();
    // Both warpgroups' dS^T are in. Past this barrier for item it, the other warpgroup is done with item
    // it - 1, whose dQ read the buffer this one writes for item it + 1.
    named_bar_sync(1, kBwdConsumerThreads);
    wgmma_wait<1>();  // dV is done; dK may still run
    fence_operands(dv);
    fence_operands(pa);  // P^T's fragments, live until dV's wgmma is done
    // dQ = dS K whole (all 128 keys, all of D: 8 m64nDk16), by the warpgroups in turn, one block each,
    // issued behind dK: FlashAttention-3 and cuDNN issue it as N = 128 wgmma at D=128 too, half the
    // instructions of two 64-column halves, and the warpgroup without a dQ goes on to its next block's S^T
    // meanwhile.
    if ((it & 1) == cw) {
      float dq[D / 8][4];
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
        WgmmaSS_TT<T, D>::run(dq, make_desc_sw128(ds_addr + kk * 16 * 128, BN * 128, 1024),
                              make_desc_sw128(s_base + L::kK + kk * 16 * 128, BN * 128, 1024), kk > 0);
      wgmma_commit();
      wgmma_wait<0>();
      fence_operands(dq);
      if (it > 0)  // the producer's bulk adds have read item it - 1's halves
        for (int w = 0; w < L::kDqHalves; ++w) mbar_wait(&dq_empty[w], (it - 1) & 1);
      // Half w (columns 64 w ..) is fragments 8 w .., in the layout a warpgroup's m64n64 half had.
#pragma unroll
      for (int w = 0; w < L::kDqHalves; ++w)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          st_shared_v4(sdq_whole + w * L::kDqHalfBytes + j * 128 * 16, dq[8 * w + j][0], dq[8 * w + j][1],
                       dq[8 * w + j][2], dq[8 * w + j][3]);
      fence_proxy_async_shared();  // the generic stores, read next by the bulk copy (async proxy)
      for (int w = 0; w < L::kDqHalves; ++w) mbar_arrive(&dq_full[w]);
    }
    wgmma_wait<0>();
    fence_operands(dk);
    fence_operands(da);            // dS^T's fragments, live until dK's wgmma is done
    mbar_arrive(&q_empty[stage]);  // this thread is done with the stage's Q, dO and rows
  }

  // dK (scaled) and dV of this CTA's keys, summed over its query heads: stored, or added to the sums the
  // group's other CTAs add to (converted, dK scaled, after this kernel).
  if (head_split == 1) {
    store_dk_dv<T, D>(p, g, b, hk, key_row0, t_col, dk, dv);
  } else {
    const int64_t at = (int64_t(b) * p.kv_heads + hk) * p.kv_len * D;
    add_fragment_tile<D, D / 8>(dk, g.dk_accum + at, key_row0, p.kv_len, 0, lane);
    add_fragment_tile<D, D / 8>(dv, g.dv_accum + at, key_row0, p.kv_len, 0, lane);
  }
#endif
}

template <typename T, int D>
cudaError_t launch_main(const Params& p, const BackwardBuffers& g, int split, cudaStream_t stream) {
  using L = BwdLayout<D>;
  static_assert(L::kBytes <= kSmemLimit, "an sm_90 CTA has 227 KB of shared memory");
  TensorMaps maps;  // maps.o: dO, strided like out
  if (!encode(&maps.q, p.dtype, p.q, p.batch, p.heads, p.q_len, D, p.q_batch_stride, p.q_head_stride, p.q_seq_stride,
              L::BM) ||
      !encode(&maps.k, p.dtype, p.k, p.batch, p.kv_heads, p.kv_len, D, p.k_batch_stride, p.k_head_stride,
              p.k_seq_stride, L::BN) ||
      !encode(&maps.v, p.dtype, p.v, p.batch, p.kv_heads, p.kv_len, D, p.v_batch_stride, p.v_head_stride,
              p.v_seq_stride, L::BN) ||
      !encode(&maps.o, p.dtype, g.d_out, p.batch, p.heads, p.q_len, D, p.o_batch_stride, p.o_head_stride,
              p.o_seq_stride, L::BM))
    return cudaErrorInvalidValue;
  constexpr auto* kernel = &fused_bwd_sm90<T, D>;
  const cudaError_t e = allow_dynamic_shared<kernel>(L::kBytes);
  if (e != cudaSuccess) return e;
  // One a key block, (batch, KV head) and part of the group.
  const int64_t ctas = hopper_bwd_ctas(p, split);
  if (ctas > INT32_MAX) return cudaErrorInvalidConfiguration;
  kernel<<<unsigned(ctas), kBwdThreads, L::kBytes, stream>>>(p, maps, g, split, hopper_bwd_section(p, sm_count()));
  return cudaGetLastError();
}

}  // namespace
}  // namespace sm90

cudaError_t launch_backward_hopper(const Params& p, const BackwardBuffers& g, int head_split, cudaStream_t stream) {
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? sm90::launch_main<__nv_bfloat16, 64>(p, g, head_split, stream)
                            : sm90::launch_main<__nv_bfloat16, 128>(p, g, head_split, stream);
  return p.head_dim == 64 ? sm90::launch_main<__half, 64>(p, g, head_split, stream)
                          : sm90::launch_main<__half, 128>(p, g, head_split, stream);
}

}  // namespace attnprof::fused
