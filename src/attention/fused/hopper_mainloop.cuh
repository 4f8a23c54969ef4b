// The Hopper kernel's consumer warpgroups and their mainloop: per key block S = Q K^T by wgmma, the
// mask where the block needs it, the online softmax, O += P V by wgmma; S(n) and P(n-1) V(n-1) in
// flight together inside a warpgroup, and the warpgroups taking turns to issue their GEMMs (ping-pong:
// named barriers, round robin), so one's softmax runs under another's GEMMs. The state a consumer
// warpgroup carries from tile to tile lives in Consumer; the epilogue is hopper_epilogue.cuh's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "hopper_kernel_traits.cuh"
#include "hopper_ptx.cuh"
#include "hopper_tile_scheduler.cuh"
#include "softmax_fragment.cuh"
#include "wgmma_ops.cuh"

namespace attnprof::fused::sm90 {

// What the epilogue needs of a tile's mainloop: its Q buffer, the warpgroup's rows in the tile (64 *
// rw: swapped in a causal pair's second tile with the halved diagonal) and this thread's first row.
struct TileFrame {
  int qb, rw, row0;
};

template <typename T, int D, typename K>
struct Consumer {
  static constexpr TileConfig kT = K::template tile<D>();
  static constexpr int kConsumers = K::kConsumers, BM = kT.block_m, BN = kT.block_n, STAGES = kT.stages;
  static constexpr int kQBuffers = K::kPersistent ? 2 : 1;
  static constexpr uint32_t kQBytes = BM * D * 2, kKVBytes = BN * D * 2;
  static constexpr int kStagingRows = staging_rows(kT, K::kPersistent);
  static constexpr bool kStageInQ = kStagingRows == 0;
  static constexpr int kStageRows = kStageInQ ? BM : kStagingRows;  // rows per 64-column chunk of the staging
  // Staged in the Q buffer (the wide rows at D=128): a warpgroup's Q rows hold its output until the TMA
  // store has read them, so its leading warp releases the Q buffer only then (at the next tile's first
  // S), not after its last S.
  static constexpr bool kDeferQRelease = K::kPersistent && kStageInQ;
  // The halved diagonal at D=128 builds its wgmma descriptors as a base plus the operand's offset (in
  // 16-byte units, below the 14-bit address field's carry): the K and V rings' first stage's here, the
  // tile's Q buffer's per tile. Its main loop has 722 SASS instructions instead of 784 and ran ~1% faster
  // at S256-S512, the same from S2k; at D=64, and in the other kernels, the same form ran 0.2-2.8% slower
  // (ptxas), so they keep make_desc_sw128 per operand.
  static constexpr bool kDescAdd = K::kHalfDiag && D == 128;
  static constexpr int kTurnThreads = 128 * kConsumers;

  const Params& p;
  const TensorMaps& maps;
  const Barriers bar;
  unsigned char* const sQ;
  unsigned char* const sK;
  unsigned char* const sV;
  unsigned char* const sO;
  const int cw;  // consumer warpgroup: query rows 64*cw ..
  const int warp, lane;
  const int active;  // kSkipIdle: the warpgroups with a row before q_len
  const float scale, scale_log2;
  const uint32_t o_addr;  // this warpgroup's staging rows
  const uint64_t k_desc, v_desc;
  int g = 0;                     // K/V blocks consumed so far, over all tiles (as the producer counts them)
  int done = 0;                  // tiles computed with a Q loaded
  int held_q = -1;               // kDeferQRelease: the Q buffer the leading warp still holds (its output's)
  bool zeros_staged = false;     // kKeepZeros: this warpgroup's staging rows hold zeros
  const bool q_release_after_s;  // whether this warp releases the tile's Q buffer after its last S
  uint64_t q_issue_clock = 0;    // timers: when the producer issued this tile's Q (0: it loaded none)

  __device__ __forceinline__ Consumer(const Params& params, const TensorMaps& tensor_maps, const Barriers& barriers,
                                      unsigned char* q, unsigned char* k, unsigned char* v, unsigned char* o, int group,
                                      int active_groups)
      : p(params),
        maps(tensor_maps),
        bar(barriers),
        sQ(q),
        sK(k),
        sV(v),
        sO(o),
        cw(group),
        warp(__shfl_sync(0xffffffff, int(threadIdx.x % 128) / 32, 0)),
        lane(threadIdx.x % 32),
        active(active_groups),
        scale(params.scale),
        scale_log2(params.scale * 1.4426950408889634f),
        o_addr(smem_u32(o) + group * 64 * 128),
        k_desc(kDescAdd ? make_desc_sw128(smem_u32(k), 16, 1024) : 0),
        v_desc(kDescAdd ? make_desc_sw128(smem_u32(v), BN * 128, 1024) : 0),
        q_release_after_s(!(kDeferQRelease && warp == 0)) {
    // Ping-pong: warpgroup cw issues its GEMMs after bar.sync on barrier 1 + cw, which the other
    // warpgroups' arrivals complete; after issuing, it arrives on theirs. The later warpgroups arrive
    // once up front, so warpgroup 0 goes first and the turns go round robin (over tiles too: every
    // warpgroup of a CTA takes the same number of turns per tile).
    for (int j = 0; j < cw; ++j) named_bar_arrive(1 + j, kTurnThreads);
  }

  __device__ __forceinline__ void release(uint64_t* b) const {
    __syncwarp();
    if (lane == 0) mbar_arrive(b);
  }
  // kSkipIdle: a warpgroup left alone takes no turns.
  __device__ __forceinline__ void turn_begin() const {
    if (!K::kSkipIdle || active > 1) named_bar_sync(1 + cw, kTurnThreads);
  }
  __device__ __forceinline__ void turn_end() const {
    if (K::kSkipIdle && active == 1) return;
#pragma unroll
    for (int k = 1; k < kConsumers; ++k) named_bar_arrive(1 + (cw + k) % kConsumers, kTurnThreads);
  }
  // kDeferQRelease: once the previous tile's output store has read this warpgroup's Q rows, its
  // leading warp releases that Q buffer (the other warps did after their last S).
  __device__ __forceinline__ void release_held_q() {
    if constexpr (kDeferQRelease)
      if (held_q >= 0) {
        if (threadIdx.x % 128 == 0) bulk_wait_read_all();
        if (warp == 0) release(&bar.q_empty[held_q]);
        held_q = -1;
      }
  }

  // The dynamic grid: the producer's announcement in the next tile's Q buffer slot (the mainloop's
  // wait on q_full then passes at once).
  __device__ __forceinline__ Step announced(volatile int* tile_slots, Tile& tl) const {
    const int qs = done % kQBuffers;
    mbar_wait(&bar.q_full[qs], (done / kQBuffers) & 1);
    // Lane 0 reads and shuffles: the compiler then sees the tile warp-uniform (read per thread, every
    // branch on it was a divergent path to ptxas, which serialized the wgmma: C7520), and the reader is
    // the lane whose q_empty arrive later frees the slot (racecheck found the other lanes' reads
    // unordered before the producer's next write there).
    int slot[3] = {0, 0, 0};
    if (lane == 0)
      for (int i = 0; i < 3; ++i) slot[i] = tile_slots[4 * qs + i];
    tl.m_block = __shfl_sync(0xffffffff, slot[0], 0);
    tl.h = __shfl_sync(0xffffffff, slot[1], 0);
    tl.b = __shfl_sync(0xffffffff, slot[2], 0);
    const Step next = tl.m_block < 0 ? kEnd : kTile;
    tl.n_blocks = key_blocks(p, (tl.m_block + 1) * BM, BN);
    return next;
  }

  // The tile's S, softmax and P V over its key blocks into o and st (zeros and an empty row state for
  // a tile that sees no key). Step `it` of the CTA's sequence (the halved diagonal swaps rows on odd
  // steps of causal pairs); clk and q_issued are the timers' (unused otherwise).
  __device__ __forceinline__ TileFrame mainloop(const Tile& tl, int it, float (&o)[D / 8][4], RowState& st,
                                                [[maybe_unused]] volatile uint64_t* q_issued,
                                                [[maybe_unused]] uint64_t* clk) {
    const int m_block = tl.m_block, n_blocks = tl.n_blocks;
    const int qb = done % kQBuffers;  // this tile's Q buffer
    const int rw = K::kHalfDiag && p.causal && (it & 1) ? 1 - cw : cw;
    const uint32_t q_rows = smem_u32(sQ) + rw * 64 * 128;
    const int row0 = m_block * BM + rw * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    st.init();

    // S = Q K^T for this warpgroup's 64 rows, Q from the tile's buffer qb, K from stage s (issued, not
    // waited), over the stage's first 8 * (sc's rows) keys: BN, or the halved diagonal's half (sh).
    [[maybe_unused]] const uint64_t q_desc = kDescAdd ? make_desc_sw128(q_rows + qb * kQBytes, 16, 1024) : 0;
    auto issue_qk = [&](auto& sc, int s) {
      constexpr int kKeys = 8 * int(std::extent_v<std::remove_reference_t<decltype(sc)>>);
      const uint32_t k_addr = smem_u32(sK + s * kKVBytes);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        const uint32_t koff = (kk % 4) * 32;  // 16 columns inside the 128-byte swizzle row
        const uint64_t da = kDescAdd ? q_desc + (((kk / 4) * BM * 128 + koff) >> 4)
                                     : make_desc_sw128(q_rows + qb * kQBytes + (kk / 4) * BM * 128 + koff, 16, 1024);
        const uint64_t db = kDescAdd ? k_desc + ((s * kKVBytes + (kk / 4) * BN * 128 + koff) >> 4)
                                     : make_desc_sw128(k_addr + (kk / 4) * BN * 128 + koff, 16, 1024);
        WgmmaSS<T, kKeys>::run(sc, da, db, kk > 0);
      }
      wgmma_commit();
    };
    // O += P V with V from stage s (issued, not waited), over the stage's first 16 * (pa's rows) keys:
    // BN, or the halved diagonal's half (ph).
    auto issue_pv = [&](auto& pa, int s) {
      constexpr int kSteps = int(std::extent_v<std::remove_reference_t<decltype(pa)>>);
      const uint32_t v_addr = smem_u32(sV + s * kKVBytes);
#pragma unroll
      for (int kk = 0; kk < kSteps; ++kk) {
        // 16 keys = two 8-row atoms; chunks of 64 head-dim columns are BN*128 bytes apart.
        const uint64_t dv = kDescAdd ? v_desc + ((s * kKVBytes + kk * 16 * 128) >> 4)
                                     : make_desc_sw128(v_addr + kk * 16 * 128, BN * 128, 1024);
        WgmmaRS<T, D>::run(o, pa[kk], dv);
      }
      wgmma_commit();
    };
    // The halved diagonal: this warpgroup's rows see at most the first half of the tile's last key block
    // (keys at or past `limit` are masked for all of them), so that block's S and P V run over those 64
    // keys: the first half of the score fragment (sh) and of P's A fragments (ph).
    [[maybe_unused]] bool half = false;
    if constexpr (K::kHalfDiag) {
      const int last_row = min(m_block * BM + rw * 64 + 63, p.q_len - 1);
      const int limit = p.causal ? min(p.kv_len, last_row + p.causal_offset + 1) : p.kv_len;
      half = n_blocks > 0 && limit - (n_blocks - 1) * BN <= BN / 2;
    }
    const int n0 = K::kSplitTail ? tl.n0 : 0;  // the first key block (the split tail's pieces)
    auto mask = [&](float(&sc)[BN / 8][4], int n) {
      const int kb = n0 + n;
      if (block_needs_mask(p, kb, BN, m_block * BM + rw * 64)) mask_scores(sc, row0, kb * BN, p);
    };
    // The ring's stage and phase of this tile's key block n.
    auto stage = [&](int n) { return (g + n) % STAGES; };
    auto phase = [&](int n) { return uint32_t((g + n) / STAGES) & 1; };

    // A tile whose rows see no key has no Q loaded (the producer skips it): it only writes zeros.
    if (n_blocks > 0) mbar_wait(&bar.q_full[qb], (done / kQBuffers) & 1);
    if constexpr (K::kTimers) {
      clk[2] = clock64();
      if (n_blocks > 0) q_issue_clock = q_issued[qb];
    }
    if (n_blocks > 0) {
      uint32_t pa[BN / 16][4];
      // The halved diagonal: the last block's half, its scores and P (the loop leaves that block to its
      // own step).
      [[maybe_unused]] float sh[K::kHalfDiag ? BN / 16 : 1][4];
      [[maybe_unused]] uint32_t ph[K::kHalfDiag ? BN / 32 : 1][4];
      const bool half_last = K::kHalfDiag && half;
      if (half_last && n_blocks == 1) {
        if constexpr (K::kHalfDiag) {
          mbar_wait(&bar.k_full[stage(0)], phase(0));
          turn_begin();
          wgmma_fence();
          issue_qk(sh, stage(0));
          turn_end();
          wgmma_wait<0>();
          fence_operands(sh);
          release(&bar.k_empty[stage(0)]);
          if (q_release_after_s) release(&bar.q_empty[qb]);
          release_held_q();
          mask_scores(sh, row0, 0, p);
          float alpha[2];
          softmax_scores(sh, st, scale_log2, alpha);  // o is still zero: no rescale
          scores_to_a<T>(sh, ph);
        }
      } else {
        float sc[BN / 8][4];
        mbar_wait(&bar.k_full[stage(0)], phase(0));
        turn_begin();
        wgmma_fence();
        issue_qk(sc, stage(0));
        turn_end();
        wgmma_wait<0>();
        if constexpr (K::kTimers) clk[3] = clock64();
        fence_operands(sc);
        release(&bar.k_empty[stage(0)]);
        if (n_blocks == 1 && q_release_after_s) release(&bar.q_empty[qb]);  // the tile's last Q K^T is done
        release_held_q();
        mask(sc, 0);
        float alpha[2];
        softmax_scores(sc, st, scale_log2, alpha);  // o is still zero: no rescale
        scores_to_a<T>(sc, pa);
      }
      const int loop_end = half_last ? n_blocks - 1 : n_blocks;
      for (int n = 1; n < loop_end; ++n) {
        const int s = stage(n), sp = stage(n - 1);
        float sc[BN / 8][4];
        mbar_wait(&bar.k_full[s], phase(n));
        turn_begin();
        fence_operands(o);
        wgmma_fence();
        issue_qk(sc, s);
        mbar_wait(&bar.v_full[sp], phase(n - 1));
        issue_pv(pa, sp);
        turn_end();
        wgmma_wait<1>();  // S(n) is done; P(n-1) V(n-1) may still run
        fence_operands(sc);
        release(&bar.k_empty[s]);
        if (n == n_blocks - 1 && q_release_after_s) release(&bar.q_empty[qb]);
        mask(sc, n);
        float alpha[2];
        softmax_scores(sc, st, scale_log2, alpha);
        wgmma_wait<0>();
        fence_operands(o);
        fence_operands(pa);
        release(&bar.v_empty[sp]);
        rescale(o, alpha);
        scores_to_a<T>(sc, pa);
      }
      if constexpr (K::kHalfDiag)
        if (half_last && n_blocks > 1) {
          // The loop's step for the last block, on its half: S(n) over 64 keys beside P(n-1) V(n-1). A
          // copy of the loop's code on purpose: a lambda shared with the loop reschedules the loops of
          // every kernel (docs/fused-kernel.md).
          const int n = n_blocks - 1, s = stage(n), sp = stage(n - 1);
          mbar_wait(&bar.k_full[s], phase(n));
          turn_begin();
          fence_operands(o);
          wgmma_fence();
          issue_qk(sh, s);
          mbar_wait(&bar.v_full[sp], phase(n - 1));
          issue_pv(pa, sp);
          turn_end();
          wgmma_wait<1>();
          fence_operands(sh);
          release(&bar.k_empty[s]);
          if (q_release_after_s) release(&bar.q_empty[qb]);
          mask_scores(sh, row0, n * BN, p);
          float alpha[2];
          softmax_scores(sh, st, scale_log2, alpha);
          wgmma_wait<0>();
          fence_operands(o);
          fence_operands(pa);
          release(&bar.v_empty[sp]);
          rescale(o, alpha);
          scores_to_a<T>(sh, ph);
        }
      const int sl = stage(n_blocks - 1);
      mbar_wait(&bar.v_full[sl], phase(n_blocks - 1));
      fence_operands(o);
      wgmma_fence();
      if (half_last) {
        if constexpr (K::kHalfDiag) issue_pv(ph, sl);
      } else {
        issue_pv(pa, sl);
      }
      wgmma_wait<0>();
      fence_operands(o);
      release(&bar.v_empty[sl]);
      if constexpr (K::kTimers) clk[4] = clock64();
    }
    if constexpr (K::kTimers)
      if (n_blocks == 0) clk[3] = clk[4] = clk[2];  // a tile that sees no key: no S, no main loop
    g += n_blocks;
    done += n_blocks > 0;  // tiles with a Q loaded
    return {qb, rw, row0};
  }
};

}  // namespace attnprof::fused::sm90
