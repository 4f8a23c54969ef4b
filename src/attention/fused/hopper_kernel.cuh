// The fused attention forward's Hopper kernel (sm_90a), one template composed of its roles
// (docs/fused-kernel.md, "Roles in the Hopper kernel"). A CTA of 1 + kConsumers warpgroups owns
// BM = 64 * kConsumers query rows of one (batch, head) at a time:
//   warpgroup 0, the producer, drops to few registers (setmaxnreg) and one thread loads Q and
//     streams K and V tiles through a STAGES-deep ring with TMA (cp.async.bulk.tensor, 128B
//     swizzle, zero fill past the sequence end), each stage guarded by a full and an empty mbarrier;
//   the consumers take the rest of the registers and own 64 query rows each: the mainloop, S = Q K^T
//     with wgmma (both operands in shared memory), masking and online softmax in fp32 registers,
//     then O += P V with wgmma taking P from registers and V (MN-major) from shared memory, the
//     warpgroups taking turns at the tensor cores (ping-pong); then the epilogue
//     (hopper_epilogue.cuh) stores the output through shared memory and TMA.
// Which tiles a CTA computes is its tile scheduler's (hopper_tile_scheduler.cuh). Causal key tiles
// past the diagonal are never loaded. The product's instantiations are schedule.h's kProductKernels;
// the lab instantiates the same template with its timers (Timers::kEnabled).
#pragma once

#include "hopper_epilogue.cuh"
#include "hopper_kernel_traits.cuh"
#include "hopper_mainloop.cuh"
#include "hopper_ptx.cuh"
#include "hopper_tile_scheduler.cuh"

namespace attnprof::fused::sm90 {

// The variants (K::kFeatures):
// kSplitTail: the persistent grid with full attention's last, partial round split along the keys
//   (p.tail_units > 0; split_tail_units): the tile scheduler's tail_step.
// kHalfDiag: a warpgroup whose rows see at most the first half of its tile's last key block (the
//   causal diagonal's upper half for the first warpgroup, a short last block) runs that block's S,
//   mask, softmax and P V over the half (64-key wgmma; its own copy of the loop's step), and a causal
//   pair's second tile gives the warpgroups each other's rows, so each has one halved block per pair:
//   the ping-pong ties the two warpgroups' chains together, so a chain shorter in one of them alone
//   wins nothing.
// kKeepZeros: for calls whose tiles see no key (bottom-right causal, kv_len <= q_len - BM): a
//   warpgroup's staging rows that hold the zeros of such a tile keep them, so each later keyless tile
//   of a run is only its TMA store (and its -inf LSE): no wait for the previous store's reads, no
//   shared-memory writes, no barriers.
// kSkipIdle: one CTA per tile, two consumer warpgroups, where a warpgroup's 64 rows all lie past q_len
//   (the last row of tiles when q_len % 128 is 1..64): that warpgroup leaves at once, the Q and K/V
//   barriers count the other's warps only, and the one left takes no turns (a branch around the turns'
//   barriers; counting the active warpgroups' threads instead ran 0.6-1.5% slower).
// Dynamic grid: single tiles, longest first within sections of p.sched_heads (batch, head)s whose K and
//   V share L2 (FlashAttention-3's order), each CTA drawing its next tile from p.sched_counter with an
//   atomic as it starts the current one; the producer announces each tile (or the end) to the consumers
//   in its Q buffer's slot, published by q_full. Every drawn tile must see a key (the host's
//   dynamic_scratch): a keyless one would be announced with no Q loaded behind it, and its consumers
//   would wait for q_full forever.
template <typename T, int D, typename K>
__global__ void __launch_bounds__(128 * (K::kConsumers + 1), 1)
    fused_fwd_hopper(const __grid_constant__ Params p, const __grid_constant__ TensorMaps maps) {
#ifdef ATTNPROF_SM90A
  constexpr bool kPersistent = K::kPersistent, kDynamic = K::kDynamic, kSplitTail = K::kSplitTail;
  constexpr bool kKeepZeros = K::kKeepZeros, kSkipIdle = K::kSkipIdle, kTimers = K::kTimers;
  constexpr int kConsumers = K::kConsumers;
  static_assert(!kSplitTail || (kPersistent && !kDynamic && !kTimers), "the split tail is the static rounds'");
  static_assert(!kSplitTail || kConsumers == 2, "split_tail_bytes holds two warpgroups' partials per CTA");
  constexpr int kQBuffers = kPersistent ? 2 : 1;  // the persistent grid loads the next tile's Q early
  constexpr TileConfig kT = K::template tile<D>();
  static_assert(kT.head_dim == D, "the table has a row for this head dim");
  constexpr int BM = kT.block_m, BN = kT.block_n, STAGES = kT.stages;
  static_assert(!K::kHalfDiag || (BN == 128 && !kSplitTail && !kTimers && kConsumers == 2 && kPersistent),
                "the halved diagonal cuts 128-key blocks of the persistent grid, two warpgroups' rows swapped");
  constexpr int kStagingRows = staging_rows(kT, kPersistent);
  constexpr bool kStageInQ = kStagingRows == 0;
  static_assert(!kSkipIdle || (!kPersistent && kConsumers == 2 && !kTimers), "one CTA per tile, two warpgroups");
  static_assert(!kKeepZeros || (kPersistent && !kStageInQ && !kSplitTail && !kTimers),
                "kept zeros live in the persistent grid's own staging rows");
  static_assert(!kDynamic || (!kSplitTail && !kTimers && !kKeepZeros), "the dynamic grid draws plain tiles");
  constexpr int kChunks = D / 64;  // 64-column (128-byte) swizzle chunks
  constexpr uint32_t kQBytes = BM * D * 2, kKVBytes = BN * D * 2;
  constexpr int kConsumerWarps = kT.consumers * 4;
  // The split tail's producer also walks the pieces: at the wide rows' 24 registers it spilled
  // (ptxas), so it takes the 128-key rows' split there too (0 spills on either side).
  constexpr int kProducerRegs = kSplitTail ? 40 : producer_registers(kT);
  constexpr int kConsumerRegs = kSplitTail ? 232 : consumer_registers(kT);
  // The pool setmaxnreg moves registers within is the CTA's launch allocation, __launch_bounds__'s
  // registers per thread (65536 / threads, down to a multiple of 8: 168 at 384 threads) times its
  // threads, not the 64K file: a split over it leaves setmaxnreg.inc waiting forever.
  static_assert(kProducerRegs + kConsumerRegs * kConsumers <= (65536 / kT.threads & ~7) * (kConsumers + 1),
                "setmaxnreg's pool");
  [[maybe_unused]] uint64_t clk[kTimers ? 6 : 1] = {};  // entry, consumer start, Q ready, first S, last P V, end
  [[maybe_unused]] uint64_t global_start = 0;
  if constexpr (kTimers) {
    clk[0] = clock64();
    global_start = global_timer();
  }

  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = base;
  unsigned char* sK = sQ + kQBuffers * kQBytes;
  unsigned char* sV = sK + STAGES * kKVBytes;
  unsigned char* sO = kStageInQ ? sQ : sV + STAGES * kKVBytes;  // the output's staging rows (+ the Q buffer's)
  uint64_t* bars = reinterpret_cast<uint64_t*>(sV + STAGES * kKVBytes + kStagingRows * D * 2);
  Barriers bar;
  bar.q_full = bars;  // one per Q buffer, tile t in buffer t % kQBuffers
  bar.q_empty = bars + kQBuffers;
  bar.k_full = bars + 2 * kQBuffers;
  bar.k_empty = bar.k_full + STAGES;
  bar.v_full = bar.k_empty + STAGES;
  bar.v_empty = bar.v_full + STAGES;
  // Timers: the producer's clock when it issued the Q load of the tile in each Q buffer (published to
  // the consumers by q_full's arrive, read after its wait).
  [[maybe_unused]] volatile uint64_t* q_issued = bar.v_empty + STAGES + 1;
  // Dynamic grid: each Q buffer's tile (m_block, head, batch; m_block -1: the end), written by the
  // producer before q_full's arrive and read by the consumers after its wait.
  [[maybe_unused]] volatile int* tile_slots = reinterpret_cast<volatile int*>(bars + 4 * kQBuffers + 4 * STAGES);

  const TileScheduler<kPersistent, kDynamic, kSplitTail, BM, BN> sched(p);
  const int group = p.heads / p.kv_heads;
  // Warp-uniform to the compiler (a shuffle from lane 0, as CUTLASS does): branches on it are not
  // divergent paths, where ptxas would otherwise put injected warpgroup.arrives and serialize wgmma.
  const int wg = __shfl_sync(0xffffffff, int(threadIdx.x / 128), 0);

  // kSkipIdle: the consumer warpgroups with a row before q_len in this CTA's one tile.
  [[maybe_unused]] int active = kConsumers;
  if constexpr (kSkipIdle) {
    const int rows = p.q_len - int(gridDim.x - 1 - blockIdx.x) * BM;  // the tile's rows before q_len
    active = rows >= 64 * kConsumers ? kConsumers : (rows + 63) / 64;
  }
  [[maybe_unused]] const int consumer_warps = kSkipIdle ? 4 * active : kConsumerWarps;
  if (threadIdx.x == 0) {
    for (int b = 0; b < kQBuffers; ++b) {
      mbar_init(&bar.q_full[b], 1);
      mbar_init(&bar.q_empty[b], consumer_warps);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&bar.k_full[s], 1);
      mbar_init(&bar.v_full[s], 1);
      mbar_init(&bar.k_empty[s], consumer_warps);
      mbar_init(&bar.v_empty[s], consumer_warps);
    }
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      prefetch_tensormap(&maps.q);
      prefetch_tensormap(&maps.k);
      prefetch_tensormap(&maps.v);
      prefetch_tensormap(&maps.o);
      int g = 0;                                     // K/V blocks loaded so far, over all tiles: the ring's position
      int done = 0;                                  // tiles whose Q was loaded
      [[maybe_unused]] int drawn = int(blockIdx.x);  // dynamic grid: this CTA's next tile (its first: blockIdx.x)
      for (int it = 0;; ++it) {
        Tile tl;
        const Step next = kDynamic ? sched.drawn(drawn, tl) : sched.step(it, tl);
        if constexpr (kDynamic) {
          // Announce the tile, or the end, in its Q buffer's slot once the consumers are done with it.
          const int qb = done % kQBuffers;
          if (done >= kQBuffers) mbar_wait(&bar.q_empty[qb], ((done - kQBuffers) / kQBuffers) & 1);
          tile_slots[4 * qb] = next == kEnd ? -1 : tl.m_block;
          tile_slots[4 * qb + 1] = next == kEnd ? 0 : tl.h;
          tile_slots[4 * qb + 2] = next == kEnd ? 0 : tl.b;
          if (next == kEnd) {
            mbar_arrive(&bar.q_full[qb]);  // no Q: the phase completes on this arrive
            break;
          }
          // The next tile, drawn now: the atomic's latency passes under this tile's K/V loads.
          drawn = atomicAdd(p.sched_counter, 1) + int(gridDim.x);
        }
        if (next == kEnd) break;
        // A tile whose rows see no key (bottom-right, q_len > kv_len) needs neither Q nor K/V.
        if (next == kNone || tl.n_blocks == 0) continue;
        const int hk = tl.h / group;
        // The consumers are done with the Q this buffer held kQBuffers tiles ago.
        const int qb = done % kQBuffers;
        if (done >= kQBuffers) mbar_wait(&bar.q_empty[qb], ((done - kQBuffers) / kQBuffers) & 1);
        ++done;
        if constexpr (kTimers) q_issued[qb] = clock64();
        mbar_arrive_expect_tx(&bar.q_full[qb], kQBytes);
        for (int c = 0; c < kChunks; ++c)
          tma_load_4d(sQ + qb * kQBytes + c * BM * 128, &maps.q, c * 64, tl.m_block * BM, tl.h, tl.b, &bar.q_full[qb]);
        const int n0 = kSplitTail ? tl.n0 : 0;  // the first key block (the split tail's pieces)
        const int n_end = n0 + tl.n_blocks;
        for (int n = n0; n < n_end; ++n, ++g) {
          const int s = g % STAGES;
          const uint32_t phase = (g / STAGES) & 1;
          if (g >= STAGES) mbar_wait(&bar.k_empty[s], phase ^ 1);
          mbar_arrive_expect_tx(&bar.k_full[s], kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(sK + s * kKVBytes + c * BN * 128, &maps.k, c * 64, n * BN, hk, tl.b, &bar.k_full[s]);
          if (g >= STAGES) mbar_wait(&bar.v_empty[s], phase ^ 1);
          mbar_arrive_expect_tx(&bar.v_full[s], kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(sV + s * kKVBytes + c * BN * 128, &maps.v, c * 64, n * BN, hk, tl.b, &bar.v_full[s]);
        }
      }
      if constexpr (kDynamic) {
        // This CTA's draws are done (its last found the end). The last CTA to finish sets the draw and
        // finish counters back to 0 for the next call on the stream (stream_counters.h).
        __threadfence();
        if (atomicAdd(p.sched_counter + 1, 1) == int(gridDim.x) - 1) {
          p.sched_counter[0] = 0;
          p.sched_counter[1] = 0;
        }
      }
    }
    return;
  }

  // consumers
  setmaxnreg_inc<kConsumerRegs>();
  if constexpr (kSkipIdle)
    if (wg - 1 >= active) return;  // every row of this warpgroup lies past q_len
  if constexpr (kTimers) clk[1] = clock64();
  Consumer<T, D, K> c(p, maps, bar, sQ, sK, sV, sO, wg - 1, active);
  for (int it = 0;; ++it) {
    Tile tl;
    Step next;
    if constexpr (kDynamic) {
      next = c.announced(tile_slots, tl);
    } else {
      next = sched.step(it, tl);
    }
    if (next == kEnd) break;
    if (next == kNone) continue;
    float o[D / 8][4];
    RowState st;
    if constexpr (kTimers) c.q_issue_clock = 0;
    const TileFrame f = c.mainloop(tl, it, o, st, q_issued, clk);
    if constexpr (kSplitTail)
      if (split_tail_piece(c, sched.split_piece(it), f, o, st)) continue;  // a partial piece: no output
    epilogue(c, tl, f, o, st);
    if constexpr (kTimers) {
      clk[5] = clock64();
      if (threadIdx.x % 128 == 0) {
        // The record of the one-tile grid's CTA for this tile: blockIdx.x = m_tiles - 1 - m_block.
        const uint64_t cta = (uint64_t(tl.b) * p.heads + tl.h) * sched.m_tiles + (sched.m_tiles - 1 - tl.m_block);
        K::Timers::record(p.timers, cta * kConsumers + (wg - 1), global_start, clk, tl.n_blocks, c.q_issue_clock);
      }
      // The next tile (persistent) starts now: its setup is nil, its Q wait is what remains.
      clk[0] = clk[1] = clk[5];
      global_start = global_timer();
    }
  }
  // The persistent grid's last store's shared-memory reads, before the CTA's shared memory goes.
  if constexpr (kPersistent)
    if (threadIdx.x % 128 == 0) bulk_wait_read_all();
#endif
}

}  // namespace attnprof::fused::sm90
