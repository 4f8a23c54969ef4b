// The Hopper kernel's tile schedulers: which tiles a CTA computes, in order (docs/fused-kernel.md,
// "Schedulers"). The producer and the consumers walk the same sequence, step it = 0, 1, ... each
// giving a tile, nothing, or the end; the dynamic scheduler's producer draws tiles from a counter and
// announces them to its consumers instead (hopper_kernel.cuh).
#pragma once

#include <climits>

#include "fused_params.h"

namespace attnprof::fused::sm90 {

enum TileRole { kWhole, kPartial, kFinal };
enum Step { kTile, kNone, kEnd };

struct Tile {
  int m_block, h, b, n_blocks;
  int n0 = 0;         // the split tail's pieces: the piece's first key block
  int role = kWhole;  // kWhole, or a split piece's kPartial / kFinal
  int last_cta = 0;   // kFinal: the last CTA holding a piece of the item
};

// One CTA per tile: its one tile, the grid's x running the query blocks, heaviest causal ones first.
// Persistent, full attention: tile blockIdx.x + it * gridDim.x, the query blocks of one head side by
// side, so the CTAs running at once share its K and V in L2 (ordering causal tiles longest first over
// all heads made each key block come from HBM). Persistent, causal: work items of two tiles of one
// head, query blocks M-1-k then k, item blockIdx.x + (it / 2) * gridDim.x. While q_len <= kv_len their
// key blocks add up to about M + 1 (+ 2 * causal_offset / BN) whatever k, and equal items keep static
// rounds balanced (single tiles in snake rounds, longest first or long/short within a head, left some
// shapes' CTAs up to 25% uneven); longer queries leave many tiles of equal work.
// Split tail (kSplitTail, where the host set p.tail_units): the static rounds deal the first items -
// items % gridDim.x items; the rest's key blocks (units) go to the CTAs in contiguous ranges of
// p.tail_units, CTA c's from c * tail_units. A range crosses at most one item boundary (tail_units <
// the blocks of an item), so it makes one or two pieces: a piece that starts past an item's first block
// (kPartial, only ever a CTA's first) writes its partial output to the CTA's slot and raises its flag;
// the piece holding an item's first block (kFinal, a range's last) waits for the item's other pieces,
// CTAs c + 1 .. last_cta, which compute them first thing in their ranges, and combines them. No CTA
// waits before its kPartial piece is out, so the waits cannot cycle.
// Dynamic (kDynamic): tile t of drawn_tile's order, sections of p.sched_heads (batch, head)s, each
// longest first.
template <bool kPersistent, bool kDynamic, bool kSplitTail, int BM, int BN>
struct TileScheduler {
  const Params& p;
  int m_tiles;
  int per_head;  // work items per (batch, head)
  int items;
  int static_rounds;  // the static rounds before the split tail (INT_MAX: no tail)

  __device__ __forceinline__ explicit TileScheduler(const Params& params) : p(params) {
    m_tiles = (p.q_len + BM - 1) / BM;
    per_head = kPersistent && !kDynamic ? persistent_items_per_head(p, BM) : m_tiles;
    items = per_head * p.heads * p.batch;
    static_rounds = kSplitTail && p.tail_units > 0 ? items / int(gridDim.x) : INT_MAX;
  }

  // The CTA's piece t = 0, 1 of the split tail.
  __device__ __forceinline__ Step tail_step(int t, Tile& tl) const {
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
  }

  // Step `it` of the static orders (one tile per CTA, persistent rounds, the split tail).
  __device__ __forceinline__ Step step(int it, Tile& tl) const {
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
  }

  // Tile t of the dynamic order.
  __device__ __forceinline__ Step drawn(int t, Tile& tl) const {
    if (t >= items) return kEnd;
    const DrawnTile d = drawn_tile(t, m_tiles, p.heads * p.batch, p.sched_heads);
    tl.m_block = d.m_block;
    tl.h = d.head % p.heads;
    tl.b = d.head / p.heads;
    tl.n_blocks = key_blocks(p, (tl.m_block + 1) * BM, BN);
    return kTile;
  }

  // The split tail's piece for step `it` (role kWhole outside the tail), recomputed after the main
  // loop rather than held in registers through it.
  __device__ __forceinline__ Tile split_piece(int it) const {
    Tile piece;
    if (it < static_rounds || tail_step(it - static_rounds, piece) != kTile) piece.role = kWhole;
    return piece;
  }
};

}  // namespace attnprof::fused::sm90
