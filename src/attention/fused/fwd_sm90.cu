// The fused attention forward's Hopper path (sm_90a), versions 2-29 (docs/fused-kernel.md).
// A CTA of 1 + kConsumers warpgroups owns BM = 64 * kConsumers query rows of one (batch, head)
// at a time:
//   warpgroup 0, the producer, drops to few registers (setmaxnreg) and one thread loads Q and
//     streams K and V tiles through a STAGES-deep ring with TMA (cp.async.bulk.tensor, 128B
//     swizzle, zero fill past the sequence end), each stage guarded by a full and an empty mbarrier;
//   the consumers take the rest of the registers and own 64 query rows each: S = Q K^T with wgmma
//     (both operands in shared memory), masking and online softmax in fp32 registers, then
//     O += P V with wgmma taking P from registers and V (MN-major) from shared memory.
// The schedule (kSched) orders the consumers' GEMMs; the epilogue writes O directly or through
// shared memory and TMA (kStoreTma); the grid is a CTA per tile or a persistent one (kPersistent).
// Causal key tiles past the diagonal are never loaded.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "fused_attention.h"
#include "hopper_ptx.cuh"
#include "softmax_fragment.cuh"
#include "tile_timers.h"
#include "wgmma_ops.cuh"

namespace attnprof::fused {
namespace {

using namespace sm90;

struct TensorMaps {
  CUtensorMap q, k, v;
  CUtensorMap o;  // boxes of 64 rows: one consumer warpgroup's output (kStoreTma)
};
// The kernels take p, then the maps at the next boundary of their alignment (CUtensorMap's, 128 bytes
// in CUDA 13): Params within 256 bytes keeps the maps at byte 256, and so every kernel's SASS, as a
// field added to it for one version leaves the others.
constexpr std::size_t kMapsOffset =
    (sizeof(Params) + alignof(TensorMaps) - 1) / alignof(TensorMaps) * alignof(TensorMaps);
static_assert(kMapsOffset == 256, "the tensor maps stay at byte 256 of the kernels' parameters");

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTNPROF_SM90A 1
#endif

// An sm_90 CTA's opt-in shared memory.
constexpr int kSmemLimit = 227 * 1024;

// Rows of the persistent kernel's output staging buffer: BM (each consumer warpgroup stages in its
// own 64), or where that does not fit beside Q and the K/V ring: with two Q buffers none (version
// 11's 160-key row: each warpgroup stages in its rows of the tile's own Q buffer, which the producer
// refills two tiles later), with one 64 rows that the consumer warpgroups take in turn (version 10's
// 176-key row). One CTA per tile stages in its Q rows: none.
constexpr int staging_rows(const TileConfig& t, bool persistent, bool early_q) {
  if (!persistent) return 0;
  const int q_bytes = t.block_m * t.head_dim * 2;
  if (shared_bytes(t) + (early_q ? q_bytes : 0) + q_bytes <= kSmemLimit) return t.block_m;
  return early_q ? 0 : 64;
}
// The dynamic shared memory of a Hopper CTA: Q, the ring and the alignment slack (shared_bytes), a
// second Q buffer (version 8) and the output staging.
constexpr int hopper_shared_bytes(const TileConfig& t, bool persistent, bool early_q) {
  return shared_bytes(t) + (early_q ? t.block_m * t.head_dim * 2 : 0) +
         staging_rows(t, persistent, early_q) * t.head_dim * 2;
}

// The consumer warpgroups' schedule.
enum Sched : int {
  kSerial = 0,    // version 2: S, softmax, P V one after another in each warpgroup
  kOverlap = 1,   // version 3: S(n) overlaps P(n-1) V(n-1) inside a warpgroup
  kPingPong = 2,  // version 5: version 3 with the warpgroups taking turns to issue their GEMMs
                  // (named barriers, round robin), so one's softmax runs under another's GEMMs
};

// kConsumers: consumer warpgroups (BM = 64 * kConsumers).
// kStoreTma: version 6's epilogue: each warpgroup writes its normalized output into shared
// memory, 128B-swizzled (its own Q rows, which it no longer reads, or with kPersistent a buffer
// of its own), and one thread stores it with TMA; false: each thread stores its fragment to
// global memory directly.
// kPersistent: version 7: a grid of one CTA per SM walks the tiles in static rounds (causal: work
// items of two tiles, see step() below); the producer loads the next tile's Q as soon as the
// consumers' last Q K^T of this tile is done, so Q's latency and the CTA start-up are hidden
// after the first.
// kTimers: each consumer warpgroup's leading thread writes its tile's timers to p.timers
// (tile_timers.h), one record per tile. The other instantiations compile none of it.
// kEarlyQ: version 8: version 7 with two Q buffers, so the producer loads the next tile's Q while
// this one's last key blocks run, and the leading thread waits for its output store's shared-memory
// reads at the next tile's epilogue instead of right after issuing it.
// kRows: the tile table's rows (Path::Hopper, or Path::HopperV9's 176-key blocks at D=128: versions
// 9 and 10; Path::HopperV11's: version 11).
// kSplitTail: version 13: version 8 or 11 with full attention's last, partial round split along the
// keys (p.tail_units > 0; split_tail_units): see tail_step below.
// kHalfDiag: version 18: a warpgroup whose rows see at most the first half of its tile's last key
// block (the causal diagonal's upper half for the first warpgroup, a short last block) runs that
// block's S, mask, softmax and P V over the half (64-key wgmma; its own copy of the loop's step), and
// a causal pair's second tile gives the warpgroups each other's rows, so each has one halved block
// per pair: the ping-pong ties the two warpgroups' chains together, so a chain shorter in one of them
// alone won nothing (versions 15-17 and 19, runs 49-51, docs/fused-kernel.md).
// kKeepZeros: version 26: version 8's staged output (version 18's too) for calls whose tiles see no
// key (bottom-right causal, kv_len <= q_len - BM): a warpgroup's staging rows that hold the zeros of
// such a tile keep them, so each later keyless tile of a run is only its TMA store (and its -inf
// LSE): no wait for the previous store's reads, no shared-memory writes, no barriers.
// kSkipIdle: version 27: version 6 (one CTA per tile, two consumer warpgroups) where a warpgroup's 64
// rows all lie past q_len (the last row of tiles when q_len % 128 is 1..64): that warpgroup leaves at
// once, the Q and K/V barriers count the other's warps only, and the one left takes no turns (a
// branch around the turns' barriers; lab version 28 had them count the active warpgroups' threads
// instead and ran 0.6-1.5% slower, run 67, code in cf10631).
// kDynamic: version 29: version 18 (11 at D=64) for causal calls with a dynamic tile scheduler: single
// tiles, longest first within sections of p.sched_heads (batch, head)s whose K and V share L2
// (FlashAttention-3's order), each CTA drawing its next tile from p.sched_counter with an atomic as it
// starts the current one; the producer announces each tile (or the end) to the consumers in its Q
// buffer's slot, published by q_full. The static rounds' last round leaves up to a whole pair of
// tiles' time idle on the CTAs it misses; drawn longest first, the tiles end within about one short
// tile of each other. Every drawn tile must see a key (the host's takes_dynamic): a keyless one would
// be announced with no Q loaded behind it, and its consumers would wait for q_full forever.
template <typename T, int D, int kSched, int kConsumers, bool kStoreTma, bool kPersistent, bool kTimers = false,
          bool kEarlyQ = false, Path kRows = Path::Hopper, bool kSplitTail = false, bool kHalfDiag = false,
          bool kKeepZeros = false, bool kSkipIdle = false, bool kDynamic = false>
__global__ void __launch_bounds__(128 * (kConsumers + 1), 1)
    fused_fwd_hopper(const __grid_constant__ Params p, const __grid_constant__ TensorMaps maps) {
#ifdef ATTNPROF_SM90A
  static_assert(!kPersistent || (kStoreTma && kSched == kPingPong), "version 7 builds on version 6");
  static_assert(!kEarlyQ || kPersistent, "version 8 builds on version 7");
  static_assert(!kSplitTail || (kEarlyQ && !kTimers), "version 13 builds on versions 8 and 11");
  static_assert(!kSplitTail || kConsumers == 2, "split_tail_bytes holds two warpgroups' partials per CTA");
  constexpr int kQBuffers = kEarlyQ ? 2 : 1;
  constexpr bool kOverlapped = kSched != kSerial;
  [[maybe_unused]] uint64_t clk[kTimers ? 6 : 1] = {};  // entry, consumer start, Q ready, first S, last P V, end
  [[maybe_unused]] uint64_t global_start = 0;
  if constexpr (kTimers) {
    clk[0] = clock64();
    global_start = global_timer();
  }
  constexpr TileConfig kT = with_consumers(tile_for(kRows, D), kConsumers);
  static_assert(kT.head_dim == D, "the table has a row for this head dim");
  constexpr int BM = kT.block_m, BN = kT.block_n, STAGES = kT.stages;
  static_assert(
      !kHalfDiag || (BN == 128 && kSched == kPingPong && !kSplitTail && !kTimers && kConsumers == 2 && kPersistent),
      "version 18 halves 128-key blocks of the persistent ping-pong schedule, two warpgroups' rows swapped");
  // The output staging: in the tile's Q buffer (one CTA per tile; version 11's 160-key row) or a
  // buffer of its own, of BM rows or of 64 the warpgroups share in turn (version 10); its rows per
  // 64-column chunk.
  constexpr int kStagingRows = staging_rows(kT, kPersistent, kEarlyQ);
  constexpr bool kStageInQ = kStagingRows == 0;
  constexpr int kStageRows = kStageInQ ? BM : kStagingRows;
  constexpr bool kSharedStaging = kStagingRows == 64 && BM > 64;
  // Version 11: a warpgroup's Q rows hold its output until the TMA store has read them, so its
  // leading warp releases the Q buffer only then (at the next tile's first S), not after its last S.
  constexpr bool kDeferQRelease = kPersistent && kStageInQ;
  static_assert(!kDeferQRelease || (kStoreTma && kEarlyQ), "version 11 builds on version 8");
  // Two warpgroups: a turn's wait on o_free's parity is then never two phases behind (the one before
  // the turn it waits for is the warpgroup's own).
  static_assert(!kSharedStaging || (kStoreTma && !kEarlyQ && kConsumers == 2), "version 10 builds on version 7");
  static_assert(!kSkipIdle || (!kPersistent && kConsumers == 2 && kSched == kPingPong && !kTimers),
                "version 27 builds on version 6's two warpgroups");
  static_assert(!kKeepZeros || (kEarlyQ && !kStageInQ && !kSplitTail && !kTimers),
                "version 26 keeps zeros in version 8's own staging rows");
  static_assert(!kDynamic || (kEarlyQ && !kSplitTail && !kTimers && !kKeepZeros),
                "version 29 draws version 8's, 11's or 18's tiles");
  constexpr int kChunks = D / 64;  // 64-column (128-byte) swizzle chunks
  constexpr uint32_t kQBytes = BM * D * 2, kKVBytes = BN * D * 2;
  constexpr int kConsumerWarps = kT.consumers * 4;
  // Version 13's producer also walks the split tail's pieces: at 160-key blocks' 24 registers it
  // spilled (ptxas), so it takes the 128-key rows' split there too (0 spills on either side).
  constexpr int kProducerRegs = kSplitTail ? 40 : producer_registers(kT);
  constexpr int kConsumerRegs = kSplitTail ? 232 : consumer_registers(kT);
  // The pool setmaxnreg moves registers within is the CTA's launch allocation, __launch_bounds__'s
  // registers per thread (65536 / threads, down to a multiple of 8: 168 at 384 threads) times its
  // threads, not the 64K file: a split over it leaves setmaxnreg.inc waiting forever (run 78: lab
  // versions 31 and 32 at 240/32 and 224/64 registers hung).
  static_assert(kProducerRegs + kConsumerRegs * kConsumers <= (65536 / kT.threads & ~7) * (kConsumers + 1),
                "setmaxnreg's pool");

  extern __shared__ unsigned char smem_raw[];
  unsigned char* base =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = base;
  unsigned char* sK = sQ + kQBuffers * kQBytes;
  unsigned char* sV = sK + STAGES * kKVBytes;
  unsigned char* sO = kStageInQ ? sQ : sV + STAGES * kKVBytes;  // the output's staging rows (+ the Q buffer's)
  uint64_t* bars = reinterpret_cast<uint64_t*>(sV + STAGES * kKVBytes + kStagingRows * D * 2);
  uint64_t* q_full = bars;  // one per Q buffer, tile t in buffer t % kQBuffers
  uint64_t* q_empty = bars + kQBuffers;
  uint64_t* k_full = bars + 2 * kQBuffers;
  uint64_t* k_empty = k_full + STAGES;
  uint64_t* v_full = k_empty + STAGES;
  uint64_t* v_empty = v_full + STAGES;
  uint64_t* o_free = v_empty + STAGES;  // version 10: the shared staging rows were read by their last store
  // kTimers: the producer's clock when it issued the Q load of the tile in each Q buffer (published to
  // the consumers by q_full's arrive, read after its wait).
  [[maybe_unused]] volatile uint64_t* q_issued = o_free + 1;
  // Version 29: each Q buffer's tile (m_block, head, batch; m_block -1: the end), written by the producer
  // before q_full's arrive and read by the consumers after its wait.
  [[maybe_unused]] volatile int* tile_slots = reinterpret_cast<volatile int*>(bars + 4 * kQBuffers + 4 * STAGES);

  // The tiles this CTA computes, in order: step it = 0, 1, ... gives a tile, nothing, or the end.
  // One CTA per tile: its one tile (the grid's x runs the query blocks, heaviest causal ones
  // first). Persistent, full attention: tile blockIdx.x + it * gridDim.x, the query blocks of one
  // head side by side, so the CTAs running at once share its K and V in L2 (run 8 ordered causal
  // tiles longest first over all heads: each key block then came from HBM, 1.71 us against 1.62).
  // Persistent, causal: work items of two tiles of one head, query blocks M-1-k then k, item
  // blockIdx.x + (it / 2) * gridDim.x. While q_len <= kv_len their key blocks add up to about
  // M + 1 (+ 2 * causal_offset / BN) whatever k, and equal items keep static rounds balanced (runs
  // 10 and 11 tried single tiles in snake rounds, ordered longest first or long/short within a
  // head: each order left some shapes' CTAs uneven, up to 25% lost); longer queries leave many
  // tiles of equal work, and the items uneven.
  const int m_tiles = (p.q_len + BM - 1) / BM;
  const int per_head = kPersistent && !kDynamic ? persistent_items_per_head(p, BM) : m_tiles;  // work items
  const int items = per_head * p.heads * p.batch;
  // Version 13, where the host split the tail (full attention only): the static rounds deal the
  // first items - items % gridDim.x items; the rest's key blocks (units) go to the CTAs in
  // contiguous ranges of p.tail_units, CTA c's from c * tail_units. A range crosses at most one
  // item boundary (tail_units < the blocks of an item), so it makes one or two pieces: a piece
  // that starts past an item's first block (kPartial, only ever a CTA's first) writes its partial
  // output to the CTA's slot and raises its flag; the piece holding an item's first block (kFinal,
  // a range's last) waits for the item's other pieces, CTAs c + 1 .. last_cta, which compute them
  // first thing in their ranges, and combines them. No CTA waits before its kPartial piece is out,
  // so the waits cannot cycle.
  // The static rounds before the split tail (INT_MAX: no tail); one register across the tiles.
  const int static_rounds = kSplitTail && p.tail_units > 0 ? items / int(gridDim.x) : INT_MAX;
  enum Role { kWhole, kPartial, kFinal };
  struct Tile {
    int m_block, h, b, n_blocks;
    int n0 = 0;         // version 13: the piece's first key block
    int role = kWhole;  // version 13: kWhole, kPartial or kFinal
    int last_cta = 0;   // version 13, kFinal: the last CTA holding a piece of the item
  };
  enum Step { kTile, kNone, kEnd };
  // Version 13: the CTA's piece t = 0, 1 of the split tail.
  auto tail_step = [&](int t, Tile& tl) {
    // 32-bit: split_tail_units keeps the tail's key blocks under 2^31 (64-bit division is a call).
    const int nb = key_blocks(p, BM, BN);  // full attention: every tile reads them all
    const int static_items = static_rounds * int(gridDim.x);
    const int units = p.tail_units, total = (items - static_items) * nb;
    int s = int(blockIdx.x) * units;
    const int e = s + units < total ? s + units : total;
    if (t == 1) s = (s / nb + 1) * nb;  // the next item's first block
    if (t > 1 || s >= e) return kEnd;
    const int rel = s / nb;
    const int n1 = e - rel * nb < nb ? e - rel * nb : nb;
    tl.n0 = s - rel * nb;
    tl.n_blocks = n1 - tl.n0;
    tl.role = tl.n0 > 0 ? kPartial : n1 < nb ? kFinal : kWhole;
    tl.last_cta = ((rel + 1) * nb - 1) / units;
    const int item = static_items + rel;
    tl.m_block = item % per_head;
    tl.h = (item / per_head) % p.heads;
    tl.b = (item / per_head) / p.heads;
    return kTile;
  };
  auto step = [&](int it, Tile& tl) {
    if constexpr (kSplitTail)
      if (it >= static_rounds) return tail_step(it - static_rounds, tl);
    if constexpr (!kPersistent) {
      if (it > 0) return kEnd;
      tl.m_block = gridDim.x - 1 - blockIdx.x;
      tl.h = blockIdx.y;
      tl.b = blockIdx.z;
    } else {
      const bool pairs = p.causal;
      const int item = int(blockIdx.x) + (pairs ? it / 2 : it) * int(gridDim.x);
      if (item >= items) return kEnd;
      const int k = item % per_head, hb = item / per_head;
      if (pairs && (it & 1) && k == m_tiles - 1 - k) return kNone;  // the middle block of an odd M
      tl.m_block = !pairs ? k : (it & 1) ? k : m_tiles - 1 - k;
      tl.h = hb % p.heads;
      tl.b = hb / p.heads;
    }
    tl.n_blocks = key_blocks(p, (tl.m_block + 1) * BM, BN);
    return kTile;
  };
  // Version 29: tile t of the dynamic order (drawn_tile: sections of p.sched_heads (batch, head)s, each
  // longest first).
  [[maybe_unused]] auto next_drawn = [&](int t, Tile& tl) {
    if (t >= items) return kEnd;
    const DrawnTile d = drawn_tile(t, m_tiles, p.heads * p.batch, p.sched_heads);
    tl.m_block = d.m_block;
    tl.h = d.head % p.heads;
    tl.b = d.head / p.heads;
    tl.n_blocks = key_blocks(p, (tl.m_block + 1) * BM, BN);
    return kTile;
  };
  const int group = p.heads / p.kv_heads;
  // Warp-uniform to the compiler (a shuffle from lane 0, as CUTLASS does): branches on it are not
  // divergent paths, where ptxas would otherwise put injected warpgroup.arrives and serialize wgmma.
  const int wg = __shfl_sync(0xffffffff, int(threadIdx.x / 128), 0);

  // Version 27: the consumer warpgroups with a row before q_len in this CTA's one tile.
  [[maybe_unused]] int active = kConsumers;
  if constexpr (kSkipIdle) {
    const int rows = p.q_len - int(gridDim.x - 1 - blockIdx.x) * BM;  // the tile's rows before q_len
    active = rows >= 64 * kConsumers ? kConsumers : (rows + 63) / 64;
  }
  [[maybe_unused]] const int consumer_warps = kSkipIdle ? 4 * active : kConsumerWarps;
  if (threadIdx.x == 0) {
    for (int b = 0; b < kQBuffers; ++b) {
      mbar_init(&q_full[b], 1);
      mbar_init(&q_empty[b], consumer_warps);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(&k_full[s], 1);
      mbar_init(&v_full[s], 1);
      mbar_init(&k_empty[s], consumer_warps);
      mbar_init(&v_empty[s], consumer_warps);
    }
    if constexpr (kSharedStaging) mbar_init(o_free, 1);
    fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // producer
    setmaxnreg_dec<kProducerRegs>();
    if (threadIdx.x == 0) {
      prefetch_tensormap(&maps.q);
      prefetch_tensormap(&maps.k);
      prefetch_tensormap(&maps.v);
      if constexpr (kStoreTma) prefetch_tensormap(&maps.o);
      int g = 0;                                     // K/V blocks loaded so far, over all tiles: the ring's position
      int done = 0;                                  // tiles whose Q was loaded
      [[maybe_unused]] int drawn = int(blockIdx.x);  // version 29: this CTA's next tile (its first: blockIdx.x)
      for (int it = 0;; ++it) {
        Tile tl;
        const Step next = kDynamic ? next_drawn(drawn, tl) : step(it, tl);
        if constexpr (kDynamic) {
          // Announce the tile, or the end, in its Q buffer's slot once the consumers are done with it.
          const int qb = done % kQBuffers;
          if (done >= kQBuffers) mbar_wait(&q_empty[qb], ((done - kQBuffers) / kQBuffers) & 1);
          tile_slots[4 * qb] = next == kEnd ? -1 : tl.m_block;
          tile_slots[4 * qb + 1] = next == kEnd ? 0 : tl.h;
          tile_slots[4 * qb + 2] = next == kEnd ? 0 : tl.b;
          if (next == kEnd) {
            mbar_arrive(&q_full[qb]);  // no Q: the phase completes on this arrive
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
        if (done >= kQBuffers) mbar_wait(&q_empty[qb], ((done - kQBuffers) / kQBuffers) & 1);
        ++done;
        if constexpr (kTimers) q_issued[qb] = clock64();
        mbar_arrive_expect_tx(&q_full[qb], kQBytes);
        for (int c = 0; c < kChunks; ++c)
          tma_load_4d(sQ + qb * kQBytes + c * BM * 128, &maps.q, c * 64, tl.m_block * BM, tl.h, tl.b, &q_full[qb]);
        const int n0 = kSplitTail ? tl.n0 : 0;  // the first key block (version 13's pieces)
        const int n_end = n0 + tl.n_blocks;
        for (int n = n0; n < n_end; ++n, ++g) {
          const int s = g % STAGES;
          const uint32_t phase = (g / STAGES) & 1;
          if (g >= STAGES) mbar_wait(&k_empty[s], phase ^ 1);
          mbar_arrive_expect_tx(&k_full[s], kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(sK + s * kKVBytes + c * BN * 128, &maps.k, c * 64, n * BN, hk, tl.b, &k_full[s]);
          if (g >= STAGES) mbar_wait(&v_empty[s], phase ^ 1);
          mbar_arrive_expect_tx(&v_full[s], kKVBytes);
          for (int c = 0; c < kChunks; ++c)
            tma_load_4d(sV + s * kKVBytes + c * BN * 128, &maps.v, c * 64, n * BN, hk, tl.b, &v_full[s]);
        }
      }
    }
    return;
  }

  // consumers
  setmaxnreg_inc<kConsumerRegs>();
  if constexpr (kSkipIdle)
    if (wg - 1 >= active) return;  // version 27: every row of this warpgroup lies past q_len
  if constexpr (kTimers) clk[1] = clock64();
  const int cw = wg - 1;  // consumer warpgroup: query rows 64*cw ..
  const int warp = __shfl_sync(0xffffffff, int(threadIdx.x % 128) / 32, 0), lane = threadIdx.x % 32;
  const float scale = p.scale;  // as AttentionParams gave it
  const float scale_log2 = scale * 1.4426950408889634f;
  const uint32_t o_addr = smem_u32(sO) + (kSharedStaging ? 0 : cw * 64 * 128);
  // Version 18 at D=128 builds its wgmma descriptors as a base plus the operand's offset (in 16-byte
  // units, below the 14-bit address field's carry): the K and V rings' first stage's here, the tile's
  // Q buffer's per tile. Its main loop has 722 SASS instructions instead of 784 and ran ~1% faster
  // at S256-S512, the same from S2k (runs 56-57, as version 21); at D=64, and in versions 8, 11 and
  // 13, the same form ran 0.2-2.8% slower (ptxas), so they keep make_desc_sw128 per operand.
  constexpr bool kDescAdd = kHalfDiag && D == 128;
  [[maybe_unused]] const uint64_t k_desc = kDescAdd ? make_desc_sw128(smem_u32(sK), 16, 1024) : 0;
  [[maybe_unused]] const uint64_t v_desc = kDescAdd ? make_desc_sw128(smem_u32(sV), BN * 128, 1024) : 0;

  auto release = [&](uint64_t* bar) {
    __syncwarp();
    if (lane == 0) mbar_arrive(bar);
  };
  // Ping-pong: warpgroup cw issues its GEMMs after bar.sync on barrier 1 + cw, which the other
  // warpgroups' arrivals complete; after issuing, it arrives on theirs. The later warpgroups
  // arrive once up front, so warpgroup 0 goes first and the turns go round robin (over tiles
  // too: every warpgroup of a CTA takes the same number of turns per tile).
  constexpr int kTurnThreads = 128 * kConsumers;
  // Version 27: a warpgroup left alone takes no turns.
  auto turn_begin = [&] {
    if constexpr (kSched == kPingPong)
      if (!kSkipIdle || active > 1) named_bar_sync(1 + cw, kTurnThreads);
  };
  auto turn_end = [&] {
    if constexpr (kSched == kPingPong) {
      if (kSkipIdle && active == 1) return;
#pragma unroll
      for (int k = 1; k < kConsumers; ++k) named_bar_arrive(1 + (cw + k) % kConsumers, kTurnThreads);
    }
  };
  if constexpr (kSched == kPingPong)
    for (int j = 0; j < cw; ++j) named_bar_arrive(1 + j, kTurnThreads);

  int g = 0;                         // K/V blocks consumed so far, over all tiles (as the producer counts them)
  int done = 0;                      // tiles computed with a Q loaded
  int tiles = 0;                     // tiles computed (version 10: each warpgroup's turns at the staging rows)
  [[maybe_unused]] int held_q = -1;  // version 11: the Q buffer the leading warp still holds (its output's)
  [[maybe_unused]] bool zeros_staged = false;  // version 26: this warpgroup's staging rows hold zeros
  // Version 11: once the previous tile's output store has read this warpgroup's Q rows, its leading
  // warp releases that Q buffer (the other warps did after their last S).
  auto release_held_q = [&] {
    if constexpr (kDeferQRelease)
      if (held_q >= 0) {
        if (threadIdx.x % 128 == 0) bulk_wait_read_all();
        if (warp == 0) release(&q_empty[held_q]);
        held_q = -1;
      }
  };
  // Whether this warp releases the tile's Q buffer after its last S (version 11's leading warp: later).
  const bool q_release_after_s = !(kDeferQRelease && warp == 0);
  for (int it = 0;; ++it) {
    Tile tl;
    Step next;
    if constexpr (kDynamic) {
      // Version 29: the producer's announcement in the tile's Q buffer slot (the wait below then passes).
      const int qs = done % kQBuffers;
      mbar_wait(&q_full[qs], (done / kQBuffers) & 1);
      // Lane 0 reads and shuffles: the compiler then sees the tile warp-uniform (as wg; read per thread,
      // every branch on it was a divergent path to ptxas, which serialized the wgmma: C7520), and the
      // reader is the lane whose q_empty arrive later frees the slot (racecheck found the other lanes'
      // reads unordered before the producer's next write there).
      int slot[3] = {0, 0, 0};
      if (lane == 0)
        for (int i = 0; i < 3; ++i) slot[i] = tile_slots[4 * qs + i];
      tl.m_block = __shfl_sync(0xffffffff, slot[0], 0);
      tl.h = __shfl_sync(0xffffffff, slot[1], 0);
      tl.b = __shfl_sync(0xffffffff, slot[2], 0);
      next = tl.m_block < 0 ? kEnd : kTile;
      tl.n_blocks = key_blocks(p, (tl.m_block + 1) * BM, BN);
    } else {
      next = step(it, tl);
    }
    if (next == kEnd) break;
    if (next == kNone) continue;
    const int m_block = tl.m_block, n_blocks = tl.n_blocks;
    const int qb = done % kQBuffers;  // this tile's Q buffer
    // The warpgroup's rows in the tile: 64 * rw (version 18: swapped in a causal pair's second tile).
    const int rw = kHalfDiag && p.causal && (it & 1) ? 1 - cw : cw;
    const uint32_t q_rows = smem_u32(sQ) + rw * 64 * 128;
    const int row0 = m_block * BM + rw * 64 + warp * 16 + lane / 4;
    float o[D / 8][4];
#pragma unroll
    for (int j = 0; j < D / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    RowState st;
    st.init();

    // S = Q K^T for this warpgroup's 64 rows, Q from the tile's buffer qb, K from stage s (issued, not waited).
    // Over the stage's first 8 * (sc's rows) keys: BN, or version 18's half (sh).
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
    // BN, or version 18's half (ph).
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
    // Version 18: this warpgroup's rows see at most the first half of the tile's last key block (keys
    // at or past `limit` are masked for all of them), so that block's S and P V run over those 64 keys:
    // the first half of the score fragment (sh) and of P's A fragments (ph).
    [[maybe_unused]] bool half = false;
    if constexpr (kHalfDiag) {
      const int last_row = min(m_block * BM + rw * 64 + 63, p.q_len - 1);
      const int limit = p.causal ? min(p.kv_len, last_row + p.causal_offset + 1) : p.kv_len;
      half = n_blocks > 0 && limit - (n_blocks - 1) * BN <= BN / 2;
    }
    const int n0 = kSplitTail ? tl.n0 : 0;  // the first key block (version 13's pieces)
    auto mask = [&](float(&sc)[BN / 8][4], int n) {
      const int kb = n0 + n;
      if (block_needs_mask(p, kb, BN, m_block * BM + rw * 64)) mask_scores(sc, row0, kb * BN, p);
    };
    // The ring's stage and phase of this tile's key block n.
    auto stage = [&](int n) { return (g + n) % STAGES; };
    auto phase = [&](int n) { return uint32_t((g + n) / STAGES) & 1; };

    // A tile whose rows see no key has no Q loaded (the producer skips it): it only writes zeros.
    if (n_blocks > 0) mbar_wait(&q_full[qb], (done / kQBuffers) & 1);
    [[maybe_unused]] uint64_t q_issue_clock = 0;  // 0: this tile loaded no Q
    if constexpr (kTimers) {
      clk[2] = clock64();
      if (n_blocks > 0) q_issue_clock = q_issued[qb];
    }
    if constexpr (!kOverlapped) {
      // Version 2: S, softmax, P V one after another within the warpgroup.
      for (int n = 0; n < n_blocks; ++n) {
        const int s = stage(n);
        float sc[BN / 8][4];
        mbar_wait(&k_full[s], phase(n));
        wgmma_fence();
        issue_qk(sc, s);
        wgmma_wait<0>();
        fence_operands(sc);
        if constexpr (kTimers)
          if (n == 0) clk[3] = clock64();
        release(&k_empty[s]);
        mask(sc, n);
        online_softmax(sc, o, st, scale_log2);
        uint32_t pa[BN / 16][4];
        scores_to_a<T>(sc, pa);
        mbar_wait(&v_full[s], phase(n));
        fence_operands(o);
        wgmma_fence();
        issue_pv(pa, s);
        wgmma_wait<0>();
        fence_operands(o);
        release(&v_empty[s]);
      }
      if constexpr (kTimers) clk[4] = clock64();
    } else if (n_blocks > 0) {
      // Version 3: S(n) = Q K(n)^T and O += P(n-1) V(n-1) are in flight together; the
      // softmax of S(n) runs while the tensor cores do P(n-1) V(n-1).
      uint32_t pa[BN / 16][4];
      // Version 18: the last block's half: its scores and P (the loop leaves that block to its own step).
      [[maybe_unused]] float sh[kHalfDiag ? BN / 16 : 1][4];
      [[maybe_unused]] uint32_t ph[kHalfDiag ? BN / 32 : 1][4];
      const bool half_last = kHalfDiag && half;
      if (half_last && n_blocks == 1) {
        if constexpr (kHalfDiag) {
          mbar_wait(&k_full[stage(0)], phase(0));
          turn_begin();
          wgmma_fence();
          issue_qk(sh, stage(0));
          turn_end();
          wgmma_wait<0>();
          fence_operands(sh);
          release(&k_empty[stage(0)]);
          if (q_release_after_s) release(&q_empty[qb]);
          release_held_q();
          mask_scores(sh, row0, 0, p);
          float alpha[2];
          softmax_scores(sh, st, scale_log2, alpha);  // o is still zero: no rescale
          scores_to_a<T>(sh, ph);
        }
      } else {
        float sc[BN / 8][4];
        mbar_wait(&k_full[stage(0)], phase(0));
        turn_begin();
        wgmma_fence();
        issue_qk(sc, stage(0));
        turn_end();
        wgmma_wait<0>();
        if constexpr (kTimers) clk[3] = clock64();
        fence_operands(sc);
        release(&k_empty[stage(0)]);
        if (n_blocks == 1 && q_release_after_s) release(&q_empty[qb]);  // the last Q K^T of this tile is done
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
        mbar_wait(&k_full[s], phase(n));
        turn_begin();
        fence_operands(o);
        wgmma_fence();
        issue_qk(sc, s);
        mbar_wait(&v_full[sp], phase(n - 1));
        issue_pv(pa, sp);
        turn_end();
        wgmma_wait<1>();  // S(n) is done; P(n-1) V(n-1) may still run
        fence_operands(sc);
        release(&k_empty[s]);
        if (n == n_blocks - 1 && q_release_after_s) release(&q_empty[qb]);
        mask(sc, n);
        float alpha[2];
        softmax_scores(sc, st, scale_log2, alpha);
        wgmma_wait<0>();
        fence_operands(o);
#pragma unroll
        for (int kk = 0; kk < BN / 16; ++kk)
          asm volatile("" : "+r"(pa[kk][0]), "+r"(pa[kk][1]), "+r"(pa[kk][2]), "+r"(pa[kk][3])::"memory");
        release(&v_empty[sp]);
        rescale(o, alpha);
        scores_to_a<T>(sc, pa);
      }
      if constexpr (kHalfDiag)
        if (half_last && n_blocks > 1) {
          // The loop's step for the last block, on its half: S(n) over 64 keys beside P(n-1) V(n-1). A
          // copy of the loop's code on purpose: a lambda shared with the loop reschedules the loops of
          // every version (session 9, docs/fused-kernel.md).
          const int n = n_blocks - 1, s = stage(n), sp = stage(n - 1);
          mbar_wait(&k_full[s], phase(n));
          turn_begin();
          fence_operands(o);
          wgmma_fence();
          issue_qk(sh, s);
          mbar_wait(&v_full[sp], phase(n - 1));
          issue_pv(pa, sp);
          turn_end();
          wgmma_wait<1>();
          fence_operands(sh);
          release(&k_empty[s]);
          if (q_release_after_s) release(&q_empty[qb]);
          mask_scores(sh, row0, n * BN, p);
          float alpha[2];
          softmax_scores(sh, st, scale_log2, alpha);
          wgmma_wait<0>();
          fence_operands(o);
#pragma unroll
          for (int kk = 0; kk < BN / 16; ++kk)
            asm volatile("" : "+r"(pa[kk][0]), "+r"(pa[kk][1]), "+r"(pa[kk][2]), "+r"(pa[kk][3])::"memory");
          release(&v_empty[sp]);
          rescale(o, alpha);
          scores_to_a<T>(sh, ph);
        }
      const int sl = stage(n_blocks - 1);
      mbar_wait(&v_full[sl], phase(n_blocks - 1));
      fence_operands(o);
      wgmma_fence();
      if (half_last) {
        if constexpr (kHalfDiag) issue_pv(ph, sl);
      } else {
        issue_pv(pa, sl);
      }
      wgmma_wait<0>();
      fence_operands(o);
      release(&v_empty[sl]);
      if constexpr (kTimers) clk[4] = clock64();
    }
    if (n_blocks > 0 && !kOverlapped) release(&q_empty[qb]);
    if constexpr (kTimers)
      if (n_blocks == 0) clk[3] = clk[4] = clk[2];  // a tile that sees no key: no S, no main loop
    g += n_blocks;
    done += n_blocks > 0;  // tiles with a Q loaded

    if constexpr (kSplitTail) {
      // Version 13's pieces (tail_step): slot c holds CTA c's partial, per consumer warpgroup.
      auto slot = [&](int cta) {
        return reinterpret_cast<float4*>(p.tail_partial) + (size_t(cta) * kConsumers + cw) * (D / 8 + 1) * 128;
      };
      // The piece's role, recomputed here rather than held in registers through the main loop.
      Tile piece;
      if (it < static_rounds || tail_step(it - static_rounds, piece) != kTile) piece.role = kWhole;
      if (piece.role == kPartial) {
        store_partial(o, st, slot(blockIdx.x));
        named_bar_sync(5 + cw, 128);
        if (threadIdx.x % 128 == 0) flag_release(p.tail_flags + blockIdx.x * kConsumers + cw);
        // Version 11's leading warp still holds the Q buffer (nothing staged in it): released at the
        // next tile's first S, as after a store.
        if constexpr (kDeferQRelease) held_q = qb;
        __syncwarp();
        ++tiles;
        continue;
      }
      if (piece.role == kFinal)
        for (int c = int(blockIdx.x) + 1; c <= piece.last_cta; ++c) {
          if (threadIdx.x % 128 == 0) flag_wait(p.tail_flags + c * kConsumers + cw);
          __syncwarp();
          named_bar_sync(5 + cw, 128);
          merge_partial(o, st, slot(c), scale_log2);
        }
    }

    const int b = tl.b, h = tl.h;
    float* lse = p.lse + (int64_t(b) * p.heads + h) * p.q_len;
    if (kStoreTma && kDeferQRelease && n_blocks == 0) {
      // Version 11: a tile whose rows see no key has no Q buffer to stage in; its zeros go straight
      // from registers.
      release_held_q();
      T* out = static_cast<T*>(p.out) + b * p.o_batch_stride + h * p.o_head_stride;
      write_output<T>(o, st, out, p.o_seq_stride, lse, row0, p.q_len, scale);
    } else if constexpr (kStoreTma) {
      // O goes to shared memory in the 128B-swizzled layout TMA reads, one 64-row box per
      // 64-column chunk: the warpgroup's own Q rows (done with: its last Q K^T is waited for,
      // and no other warpgroup reads them; version 11: of this tile's Q buffer) or, persistent, its
      // rows of the staging buffer, whose last store the leading thread saw read before it passed
      // the barrier below (version 8: the barrier just before the rows are written).
      // Version 18 stages version 11's output in the Q rows the warpgroup read (rw); version 8's own
      // staging rows stay the warpgroup's (cw: its previous store may still be reading them).
      const uint32_t tile_o =
          (kHalfDiag && kStageInQ ? smem_u32(sO) + rw * 64 * 128 : o_addr) + (kStageInQ ? qb * kQBytes : 0);
      float inv[2];
      finish_rows(st, lse, row0, p.q_len, scale, inv);
      const int lr = warp * 16 + lane / 4;  // row within the warpgroup's 64 (and lr + 8)
      // Version 26: a keyless tile after another stores the zeros its staging rows still hold.
      const bool zeros_kept = kKeepZeros && n_blocks == 0 && zeros_staged;
      if (!zeros_kept) {
        if constexpr (kPersistent) {
          // Version 8 waits for its previous store's shared-memory reads only now, when it needs
          // the staging rows again; version 10 for the store before its turn at the shared rows
          // (warpgroup 0, 1, ... of each tile in order), however far back that was.
          if constexpr (kEarlyQ && !kStageInQ)
            if (threadIdx.x % 128 == 0) bulk_wait_read_all();
          if constexpr (kSharedStaging) {
            const int turn = tiles * kConsumers + cw;
            if (threadIdx.x % 128 == 0 && turn > 0) mbar_wait(o_free, uint32_t(turn - 1) & 1);
          }
          __syncwarp();
          named_bar_sync(5 + cw, 128);
        }
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int j = 0; j < D / 8; ++j) {
            const uint32_t addr =
                tile_o + (j / 8) * kStageRows * 128 + (lr + 8 * r) * 128 + (((j % 8) ^ (lr % 8)) << 4) + 4 * (lane % 4);
            st_shared_u32(addr, Pack2<T>::pack(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]));
          }
        fence_proxy_async_shared();
        named_bar_sync(5 + cw, 128);
      }
      if constexpr (kKeepZeros) zeros_staged = n_blocks == 0;
      const int first_row = m_block * BM + rw * 64;
      if (threadIdx.x % 128 == 0 && first_row < p.q_len) {
#pragma unroll
        for (int c = 0; c < kChunks; ++c) tma_store_4d(&maps.o, tile_o + c * kStageRows * 128, c * 64, first_row, h, b);
        bulk_commit();
        if constexpr (!kEarlyQ) bulk_wait_read_all();  // shared memory stays until TMA has read it
      }
      if constexpr (kDeferQRelease) held_q = qb;  // released once the store has read it
      if constexpr (kSharedStaging)
        if (threadIdx.x % 128 == 0) mbar_arrive(o_free);  // read (or nothing stored): the next turn's
      // Reconverge before the next tile's wgmma: without this, ptxas puts the warpgroup.arrive it
      // injects for the accumulators on this divergent path and serializes every wgmma (C7520).
      __syncwarp();
    } else {
      T* out = static_cast<T*>(p.out) + b * p.o_batch_stride + h * p.o_head_stride;
      write_output<T>(o, st, out, p.o_seq_stride, lse, row0, p.q_len, scale);
    }
    if constexpr (kTimers) {
      clk[5] = clock64();
      if (threadIdx.x % 128 == 0) {
        const uint64_t global_end = global_timer();
        // The record of the non-persistent grid's CTA for this tile: blockIdx.x = m_tiles - 1 - m_block.
        const uint64_t cta = (uint64_t(b) * p.heads + h) * m_tiles + (m_tiles - 1 - m_block);
        uint64_t* rec = p.timers + (cta * kConsumers + cw) * kTimerSlots;
        rec[kGlobalStart] = global_start;
        rec[kGlobalEnd] = global_end;
        for (int i = 0; i < 6; ++i) rec[kClockEntry + i] = clk[i];
        rec[kSmId] = sm_id();
        rec[kKvBlocks] = uint64_t(n_blocks);
        rec[kClockQIssued] = q_issue_clock;
      }
      // The next tile (persistent) starts now: its setup is nil, its Q wait is what remains.
      clk[0] = clk[1] = clk[5];
      global_start = global_timer();
    }
    ++tiles;
  }
  // Version 8: the last store's shared-memory reads, before the CTA's shared memory goes.
  if constexpr (kEarlyQ)
    if (threadIdx.x % 128 == 0) bulk_wait_read_all();
#endif
}

// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda).
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn() {
  static EncodeTiled fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return EncodeTiled(nullptr);
    return reinterpret_cast<EncodeTiled>(f);
  }();
  return fn;
}

// [batch, heads, seq, dim] through strides, boxes of 64 columns x box_rows rows.
bool encode(CUtensorMap* map, attention::DType dtype, const void* ptr, int batch, int heads, int seq, int dim,
            int64_t batch_stride, int64_t head_stride, int64_t seq_stride, int box_rows) {
  EncodeTiled fn = encode_fn();
  if (!fn) return false;
  const cuuint64_t dims[4] = {cuuint64_t(dim), cuuint64_t(seq), cuuint64_t(heads), cuuint64_t(batch)};
  const cuuint64_t strides[3] = {cuuint64_t(seq_stride) * 2, cuuint64_t(head_stride) * 2, cuuint64_t(batch_stride) * 2};
  const cuuint32_t box[4] = {64, cuuint32_t(box_rows), 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  const CUresult r =
      fn(map, dtype == attention::DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4,
         const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

std::atomic<int> g_persistent_limit{0};
std::atomic<int> g_tail_min_units{0};
std::atomic<int> g_section_heads{0};

// Version 29's (batch, head)s per section: dynamic_section_heads, or the lab's choice.
int section_heads(const Params& p) {
  const long long hb_all = static_cast<long long>(p.heads) * p.batch;
  if (const int forced = g_section_heads.load(std::memory_order_relaxed); forced > 0)
    return int(std::min<long long>(forced, hb_all));
  return dynamic_section_heads(p.kv_len, p.head_dim, p.heads / p.kv_heads, hb_all);
}

// The current device's SM count (cached per device): the persistent grid's size.
int sm_count() {
  static std::atomic<int> counts[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) return 0;
  int n = dev < 64 ? counts[dev].load(std::memory_order_relaxed) : 0;
  if (n == 0) {
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) return 0;
    if (dev < 64) counts[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

// The persistent grid's CTAs: one per SM, or the lab's cap.
int persistent_ctas() {
  int ctas = sm_count();
  if (const int limit = g_persistent_limit.load(std::memory_order_relaxed); limit > 0 && ctas > 0)
    ctas = std::min(ctas, limit);
  return ctas;
}

// Version 13's key blocks per CTA in the split tail of full attention on a grid of `ctas` (0: none).
int tail_units(const Params& p, int block_m, int block_n, int ctas) {
  if (p.causal || p.kv_len <= 0) return 0;
  const int blocks = (p.kv_len + block_n - 1) / block_n;
  const int forced = g_tail_min_units.load(std::memory_order_relaxed);
  return split_tail_units(persistent_items(p, block_m), ctas, blocks, forced > 0 ? forced : kMinTailUnits);
}

// Version 29's scratch: its tile counter (causal calls with keys whose tiles all see one).
constexpr std::size_t kDynamicScratch = 16;
std::size_t dynamic_scratch(const Params& p) {
  return p.causal && p.kv_len > 0 && keyless_tiles(p, 128) == 0 ? kDynamicScratch : 0;
}

// Version 13's scratch for p on a Hopper device (kernel_scratch without the device check).
std::size_t tail_scratch(const Params& p) {
  if (p.causal || p.kv_len <= 0 || (p.head_dim != 64 && p.head_dim != 128)) return 0;
  // The default splits only at D=128 (takes_split_tail; run 31): at D=64 only the checks' forced
  // splits (set_split_tail_min_units) get scratch, so no caller allocates what no kernel uses.
  if (p.head_dim == 64 && g_tail_min_units.load(std::memory_order_relaxed) == 0) return 0;
  const int ctas = persistent_ctas();
  // launch_hopper_v13's rows: version 11's or version 8's, two consumer warpgroups.
  const Path rows = persistent_v11(p.head_dim, p.kv_len, p.causal) ? Path::HopperV11 : Path::Hopper;
  const TileConfig t = with_consumers(tile_for(rows, p.head_dim), 2);
  if (ctas <= 0 || tail_units(p, t.block_m, t.block_n, ctas) == 0) return 0;
  return split_tail_bytes(ctas, p.head_dim);
}

template <typename T, int D, int kSched, int kConsumers, bool kStoreTma, bool kPersistent, bool kTimers = false,
          bool kEarlyQ = false, Path kRows = Path::Hopper, bool kSplitTail = false, bool kHalfDiag = false,
          bool kKeepZeros = false, bool kSkipIdle = false, bool kDynamic = false>
cudaError_t launch(const Params& params, cudaStream_t stream) {
  Params p = params;
  constexpr TileConfig kT = with_consumers(tile_for(kRows, D), kConsumers);
  constexpr int kSmem = hopper_shared_bytes(kT, kPersistent, kEarlyQ);
  static_assert(kSmem <= kSmemLimit, "an sm_90 CTA has 227 KB of shared memory");
  TensorMaps maps;
  if (!encode(&maps.q, p.dtype, p.q, p.batch, p.heads, p.q_len, D, p.q_batch_stride, p.q_head_stride, p.q_seq_stride,
              kT.block_m) ||
      !encode(&maps.k, p.dtype, p.k, p.batch, p.kv_heads, p.kv_len, D, p.k_batch_stride, p.k_head_stride,
              p.k_seq_stride, kT.block_n) ||
      !encode(&maps.v, p.dtype, p.v, p.batch, p.kv_heads, p.kv_len, D, p.v_batch_stride, p.v_head_stride,
              p.v_seq_stride, kT.block_n) ||
      (kStoreTma && !encode(&maps.o, p.dtype, p.out, p.batch, p.heads, p.q_len, D, p.o_batch_stride, p.o_head_stride,
                            p.o_seq_stride, 64)))
    return cudaErrorInvalidValue;
  auto* kernel = fused_fwd_hopper<T, D, kSched, kConsumers, kStoreTma, kPersistent, kTimers, kEarlyQ, kRows, kSplitTail,
                                  kHalfDiag, kKeepZeros, kSkipIdle, kDynamic>;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (e != cudaSuccess) return e;
  const int m_tiles = (p.q_len + kT.block_m - 1) / kT.block_m;
  dim3 grid(m_tiles, p.heads, p.batch);
  if constexpr (kPersistent) {
    // Tiles, or for causal calls pairs of tiles (version 29: single tiles).
    const int64_t tiles = kDynamic ? int64_t(m_tiles) * p.heads * p.batch : persistent_items(p, kT.block_m);
    const int ctas = persistent_ctas();
    if (ctas <= 0) return cudaErrorInvalidDevice;
    grid = dim3(unsigned(std::min<int64_t>(tiles, ctas)));
    if constexpr (kDynamic) {  // launch_hopper_v29 checked the scratch (takes_dynamic)
      p.sched_counter = static_cast<int*>(p.tail_workspace);
      p.sched_heads = section_heads(p);
      e = cudaMemsetAsync(p.sched_counter, 0, sizeof(int), stream);
      if (e != cudaSuccess) return e;
    }
    // Version 13: with fewer items than CTAs the whole call is the tail, on every CTA.
    p.tail_units = 0;
    if constexpr (kSplitTail)
      if (const int units = tail_units(p, kT.block_m, kT.block_n, ctas);
          units > 0 && p.tail_workspace && p.tail_workspace_bytes >= split_tail_bytes(ctas, D)) {
        p.tail_units = units;
        p.tail_partial = static_cast<float*>(p.tail_workspace);
        p.tail_flags = reinterpret_cast<int*>(static_cast<char*>(p.tail_workspace) + split_tail_partial_bytes(ctas, D));
        grid = dim3(unsigned(ctas));
        e = cudaMemsetAsync(p.tail_flags, 0, std::size_t(ctas) * kConsumers * sizeof(int), stream);
        if (e != cudaSuccess) return e;
      }
  }
  kernel<<<grid, kT.threads, kSmem, stream>>>(p, maps);
  return cudaGetLastError();
}

// kHalfDiag (version 18) where the head dim's row has 128-key blocks; the other rows run without. kSkipIdle
// (version 27) at both head dims.
template <int kSched, int kConsumers64, int kConsumers128, bool kStoreTma = false, bool kPersistent = false,
          bool kEarlyQ = false, Path kRows = Path::Hopper, bool kSplitTail = false, bool kHalfDiag = false,
          bool kSkipIdle = false>
cudaError_t launch_variant(const Params& p, cudaStream_t stream) {
  constexpr bool kHalf64 = kHalfDiag && tile_for(kRows, 64).block_n == 128;
  constexpr bool kHalf128 = kHalfDiag && tile_for(kRows, 128).block_n == 128;
  // No keys: nothing to stream (and a zero-length tensor map is invalid).
  if (p.kv_len == 0) return launch_portable(p, stream);
  if (p.dtype == attention::DType::BF16)
    return p.head_dim == 64 ? launch<__nv_bfloat16, 64, kSched, kConsumers64, kStoreTma, kPersistent, false, kEarlyQ,
                                     kRows, kSplitTail, kHalf64, false, kSkipIdle>(p, stream)
                            : launch<__nv_bfloat16, 128, kSched, kConsumers128, kStoreTma, kPersistent, false, kEarlyQ,
                                     kRows, kSplitTail, kHalf128, false, kSkipIdle>(p, stream);
  return p.head_dim == 64 ? launch<__half, 64, kSched, kConsumers64, kStoreTma, kPersistent, false, kEarlyQ, kRows,
                                   kSplitTail, kHalf64, false, kSkipIdle>(p, stream)
                          : launch<__half, 128, kSched, kConsumers128, kStoreTma, kPersistent, false, kEarlyQ, kRows,
                                   kSplitTail, kHalf128, false, kSkipIdle>(p, stream);
}
// A schedule with the table's rows for q_len (3 consumers for D=64 from 2048 query rows).
template <int kSched, bool kStoreTma, bool kPersistent = false>
cudaError_t launch_rows(const Params& p, cudaStream_t stream) {
  static_assert(tile_for(Path::Hopper, 128).consumers == 2 && tile_for(Path::Hopper, 64).consumers == 2 &&
                    tile_for(Path::Hopper, 64, 1 << 30).consumers == 3,
                "the Hopper rows are exactly these");
  if (tile_for(Path::Hopper, p.head_dim, p.q_len).consumers == 3)
    return launch_variant<kSched, 3, 2, kStoreTma, kPersistent>(p, stream);
  return launch_variant<kSched, 2, 2, kStoreTma, kPersistent>(p, stream);
}

}  // namespace

void set_persistent_grid_limit(int ctas) { g_persistent_limit.store(ctas > 0 ? ctas : 0); }
void set_split_tail_min_units(int units) { g_tail_min_units.store(units > 0 ? units : 0); }
void set_dynamic_section_heads(int heads) { g_section_heads.store(heads > 0 ? heads : 0); }

std::size_t kernel_scratch(const Params& p) {
  if (resolve_path(Path::Automatic) != Path::Hopper || (p.head_dim != 64 && p.head_dim != 128)) return 0;
  return std::max(tail_scratch(p), dynamic_scratch(p));
}

// Version 7 (persistent; ping-pong, output through shared memory and TMA). Two consumer
// warpgroups at both head dims: with three (160 registers each) the persistent loop's state spills.
cudaError_t launch_hopper_v7(const Params& p, cudaStream_t stream) {
  return launch_variant<kPingPong, 2, 2, true, true>(p, stream);
}
// Version 8: version 7 with two Q buffers (the next tile's Q loaded earlier) and the output store's
// shared-memory reads waited for at the next tile's epilogue.
cudaError_t launch_hopper_v8(const Params& p, cudaStream_t stream) {
  return launch_variant<kPingPong, 2, 2, true, true, true>(p, stream);
}
cudaError_t launch_hopper_v6(const Params& p, cudaStream_t stream) { return launch_rows<kPingPong, true>(p, stream); }
namespace {
// Version 6 or 7 on the 176-key row (head dim 128 only).
template <bool kPersistent>
cudaError_t launch_n176(const Params& p, cudaStream_t stream) {
  if (p.dtype == attention::DType::BF16)
    return launch<__nv_bfloat16, 128, kPingPong, 2, true, kPersistent, false, false, Path::HopperV9>(p, stream);
  return launch<__half, 128, kPingPong, 2, true, kPersistent, false, false, Path::HopperV9>(p, stream);
}
}  // namespace
// Version 9: version 6 with 176-key blocks at head dim 128 (version 6 at 64, or without keys).
cudaError_t launch_hopper_v9(const Params& p, cudaStream_t stream) {
  return p.head_dim == 128 && p.kv_len > 0 ? launch_n176<false>(p, stream) : launch_hopper_v6(p, stream);
}
// Version 10: version 7 with 176-key blocks at head dim 128 and one 64-row output staging buffer
// the consumer warpgroups take in turn (version 8 at 64, or without keys).
cudaError_t launch_hopper_v10(const Params& p, cudaStream_t stream) {
  return p.head_dim == 128 && p.kv_len > 0 ? launch_n176<true>(p, stream) : launch_hopper_v8(p, stream);
}
// Version 11: version 8 on its own rows (160-key blocks and the output staged in the tile's Q buffer
// at head dim 128; a 3-stage ring at 64).
cudaError_t launch_hopper_v11(const Params& p, cudaStream_t stream) {
  return launch_variant<kPingPong, 2, 2, true, true, true, Path::HopperV11>(p, stream);
}
// Whether the default takes version 13 for p: full attention at head dim 128 whose tail splits
// (split_tail_units) with the scratch for it. Run 31: +1.3-2.1% over versions 8 and 11 where it
// splits; at head dim 64 its kernel ran 5-9% slower even unsplit (ptxas scheduled the
// exponentials differently: Nsight Compute's MIO stalls on MUFU.EX2 rose from 1% to 6.5%).
namespace {
bool takes_split_tail(const Params& p) {
  if (p.head_dim != 128 || p.causal) return false;
  const std::size_t bytes = tail_scratch(p);  // launch_hopper runs on a Hopper device only
  return bytes > 0 && p.tail_workspace && p.tail_workspace_bytes >= bytes;
}
}  // namespace

// Version 13: version 11 or 8 (persistent_v11) with the split tail (split_tail_units; needs
// kernel_scratch's scratch in p.tail_workspace, else it runs as they do).
cudaError_t launch_hopper_v13(const Params& p, cudaStream_t stream) {
  return persistent_v11(p.head_dim, p.kv_len, p.causal)
             ? launch_variant<kPingPong, 2, 2, true, true, true, Path::HopperV11, true>(p, stream)
             : launch_variant<kPingPong, 2, 2, true, true, true, Path::Hopper, true>(p, stream);
}
// Version 18: version 8 (11 where persistent_v11 picks it) with the causal diagonal's masked half
// skipped, each warpgroup's on its own rows (kHalfDiag). Version 11's 160-key row at head dim 128
// (full attention from 8192 keys) has no halves: it runs as version 11. The default takes it for
// causal calls at head dim 128 where it would run version 8 (run 51: +0.5-2% from S1k and at S256,
// -1.2% at S512).
cudaError_t launch_hopper_v18(const Params& p, cudaStream_t stream) {
  return persistent_v11(p.head_dim, p.kv_len, p.causal)
             ? launch_variant<kPingPong, 2, 2, true, true, true, Path::HopperV11, false, true>(p, stream)
             : launch_variant<kPingPong, 2, 2, true, true, true, Path::Hopper, false, true>(p, stream);
}
// Version 26: the default's persistent kernel for causal calls (version 11 at head dim 64, 18 at 128)
// with the zeros of tiles that see no key kept in its staging rows (kKeepZeros) from one such tile to
// the next. Runs 63-64: +6.6% at B2 H16 Sq8192/Skv512 D128 bottom-right (1920 of 2048 tiles see no
// key), +2.5% at Sq4096/Skv1024, 0.7% under version 18 at Sq8192/Skv4096 (GQA, half the tiles
// keyless but nearly all the work in the others), the same at Sq2048/Skv1920; at D=64 Sq8192/Skv512
// +10% over version 11 (and 41% over version 6). Version 25, the same rows' state recomputed from the
// previous tile's step instead of carried in a register (main loop SASS-identical to version 18's),
// gained only 1% there and lost 5% at D=64 (code in 5fb2028).
namespace {
// The default's persistent causal rows with version 26's or 29's flag: version 11's at head dim 64,
// version 18's (version 8's with the halved diagonal) at 128. Not launch_variant, which takes one row
// for both head dims and would compile two kernels nothing runs.
template <bool kKeepZeros, bool kDynamic>
cudaError_t launch_causal_rows(const Params& p, cudaStream_t stream) {
  constexpr int S = kPingPong;
  constexpr Path V11 = Path::HopperV11, V8 = Path::Hopper;
  constexpr bool Z = kKeepZeros, Dy = kDynamic;
  if (p.head_dim == 64)
    return p.dtype == attention::DType::BF16
               ? launch<__nv_bfloat16, 64, S, 2, true, true, false, true, V11, false, false, Z, false, Dy>(p, stream)
               : launch<__half, 64, S, 2, true, true, false, true, V11, false, false, Z, false, Dy>(p, stream);
  return p.dtype == attention::DType::BF16
             ? launch<__nv_bfloat16, 128, S, 2, true, true, false, true, V8, false, true, Z, false, Dy>(p, stream)
             : launch<__half, 128, S, 2, true, true, false, true, V8, false, true, Z, false, Dy>(p, stream);
}
}  // namespace
cudaError_t launch_hopper_v26(const Params& p, cudaStream_t stream) {
  if (p.kv_len == 0) return launch_hopper_v18(p, stream);  // no keys: the portable path, as every version
  return launch_causal_rows<true, false>(p, stream);
}
namespace {
// persistent_rounds_pay for a causal call on the persistent rows (128-row tiles, 128-key blocks): its
// items are pairs of query tiles M-1-k and k (step()), the first the longest; with one tile per head
// the middle tile alone.
bool causal_rounds_pay(const Params& p, long long items, int sms) {
  const int m_tiles = (p.q_len + 127) / 128;
  const long long first = key_blocks(p, 128, 128), last = key_blocks(p, m_tiles * 128, 128);
  return m_tiles > 1 ? persistent_rounds_pay(items, sms, first + last, 2) : persistent_rounds_pay(items, sms, last, 1);
}
}  // namespace
// Version 27: version 6 with the warpgroups whose rows all lie past q_len left out (kSkipIdle), where
// the table's rows have two consumer warpgroups (else version 6). Run 67 against version 6: +1.9% at
// B2 H16 S4097 D128 causal (its last tile: 1 row, 33 key blocks), +2.6% at B4 H16 S2049, +3.4% at
// B8 H16 S1025 D64, +0.9% at B1 H16 S16385, and +0.5% at S4096, where no warpgroup idles.
cudaError_t launch_hopper_v27(const Params& p, cudaStream_t stream) {
  if (tile_for(Path::Hopper, p.head_dim, p.q_len).consumers != 2) return launch_hopper_v6(p, stream);
  return launch_variant<kPingPong, 2, 2, true, false, false, Path::Hopper, false, false, true>(p, stream);
}
namespace {
// Whether version 29 can take p: a causal call whose tiles all see a key, with its counter's scratch.
bool takes_dynamic(const Params& p) {
  const std::size_t bytes = dynamic_scratch(p);
  return bytes > 0 && p.tail_workspace && p.tail_workspace_bytes >= bytes;
}
}  // namespace
// Version 29: the default's persistent causal kernel (version 18 at head dim 128, 11 at 64) with the
// dynamic tile scheduler (kDynamic); version 18 where it cannot take the call (takes_dynamic).
cudaError_t launch_hopper_v29(const Params& p, cudaStream_t stream) {
  if (!takes_dynamic(p)) return launch_hopper_v18(p, stream);
  return launch_causal_rows<false, true>(p, stream);
}
namespace {
// One CTA per tile: version 27 where the last row of tiles has a warpgroup with no row before q_len.
cudaError_t launch_one_cta_per_tile(const Params& p, cudaStream_t stream) {
  const int rest = p.q_len % 128;
  return rest > 0 && rest <= 64 ? launch_hopper_v27(p, stream) : launch_hopper_v6(p, stream);
}
}  // namespace
// The default's pick: version 13 where its tail splits (takes_split_tail), version 29 for causal calls
// where its dynamic scheduler measured faster (use_dynamic), version 26 where most tiles see no key
// (keeps_zeros), else the persistent grid (version 8, 11 or 18; 8 was faster than 7 on
// every shape run 19 timed) or one CTA per tile (version 6), whichever measured faster for this kind
// of call (use_persistent, persistent_fills_better, persistent_v11; version 18 for causal calls that
// would run version 8).
cudaError_t launch_hopper(const Params& p, cudaStream_t stream) {
  // Versions 8 and 11 run two consumer warpgroups at both head dims; version 6 the table's rows.
  const long long items = persistent_items(p, with_consumers(tile_for(Path::Hopper, p.head_dim), 2).block_m);
  const int sms = sm_count();
  bool persistent = use_persistent(p.head_dim, p.q_len, p.causal);
  if (!persistent && !p.causal) {  // equal tiles: compare the two grids' last waves
    // Full attention's items are its tiles: version 6's grid, one CTA per tile of the table's rows.
    const long long v6_ctas = persistent_items(p, tile_for(Path::Hopper, p.head_dim, p.q_len).block_m);
    persistent = persistent_fills_better(v6_ctas, items, sms);
  }
  // The split tail first: where the items leave most SMs idle (decode, Sq 1: one tile per head) it
  // deals their key blocks over every SM (run 35).
  if (persistent && takes_split_tail(p)) return launch_hopper_v13(p, stream);
  // Causal calls whose tiles all see a key: version 29's dynamic scheduler (use_dynamic), wherever it
  // has its counter's scratch (takes_dynamic, asked once: straight to its rows). Both persistent rows
  // have 128-row tiles.
  const int tiles_per_head = (p.q_len + 127) / 128;
  const long long heads = static_cast<long long>(p.heads) * p.batch;
  if (p.causal && takes_dynamic(p) && use_dynamic(p.head_dim, p.q_len, tiles_per_head * heads, sms))
    return launch_causal_rows<false, true>(p, stream);
  // Most tiles see no key (bottom-right): version 26 (keeps_zeros).
  if (p.causal && persistent_rounds_full(items, sms) &&
      keeps_zeros(keyless_tiles(p, 128), tiles_per_head, heads, persistent, sms))
    return launch_hopper_v26(p, stream);
  if (!persistent || !(p.causal ? causal_rounds_pay(p, items, sms) : full_rounds_pay(items, sms)))
    return launch_one_cta_per_tile(p, stream);
  if (persistent_v11(p.head_dim, p.kv_len, p.causal)) return launch_hopper_v11(p, stream);
  return p.causal ? launch_hopper_v18(p, stream) : launch_hopper_v8(p, stream);
}
// The earlier versions, kept for the ladder.
cudaError_t launch_hopper_v2(const Params& p, cudaStream_t stream) { return launch_rows<kSerial, false>(p, stream); }
cudaError_t launch_hopper_v5(const Params& p, cudaStream_t stream) { return launch_rows<kPingPong, false>(p, stream); }
cudaError_t launch_hopper_overlap(const Params& p, cudaStream_t stream) {
  return launch_variant<kOverlap, 2, 2>(p, stream);
}
// BM=192 for head dim 64 at every length (the 160-register consumers cannot hold
// D=128's accumulators, so D=128 runs the version 2 rows).
cudaError_t launch_hopper_m192(const Params& p, cudaStream_t stream) {
  return p.head_dim == 64 ? launch_variant<kSerial, 3, 2>(p, stream) : launch_hopper_v2(p, stream);
}

namespace {
// A schedule with per-tile timers (bf16 only: the lab's question is the schedule).
template <int kSched, bool kStoreTma, bool kPersistent, bool kEarlyQ = false, Path kRows = Path::Hopper>
cudaError_t launch_timed(const Params& p, cudaStream_t stream) {
  if constexpr (!kPersistent)  // the persistent path runs 2 consumers at every head dim
    if (tile_for(Path::Hopper, p.head_dim, p.q_len).consumers == 3)
      return launch<__nv_bfloat16, 64, kSched, 3, kStoreTma, kPersistent, true>(p, stream);
  return p.head_dim == 64
             ? launch<__nv_bfloat16, 64, kSched, 2, kStoreTma, kPersistent, true, kEarlyQ, kRows>(p, stream)
             : launch<__nv_bfloat16, 128, kSched, 2, kStoreTma, kPersistent, true, kEarlyQ, kRows>(p, stream);
}
}  // namespace

cudaError_t launch_hopper_timed(const Params& p, cudaStream_t stream, Path path) {
  if (p.timers == nullptr || p.dtype != attention::DType::BF16 || p.kv_len == 0) return cudaErrorInvalidValue;
  switch (path) {
    case Path::HopperV11:
      return launch_timed<kPingPong, true, true, true, Path::HopperV11>(p, stream);
    case Path::HopperV8:
      return launch_timed<kPingPong, true, true, true>(p, stream);
    case Path::HopperV7:
      return launch_timed<kPingPong, true, true>(p, stream);
    case Path::HopperV2:
      return launch_timed<kSerial, false, false>(p, stream);
    case Path::HopperV5:
      return launch_timed<kPingPong, false, false>(p, stream);
    case Path::HopperV6:
      return launch_timed<kPingPong, true, false>(p, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace attnprof::fused
