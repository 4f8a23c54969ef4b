// The one table of tile choices for the fused attention kernels, per row set and head dim.
// CUDA-free, so the CPU tests can check it; the kernels are instantiated from these rows and
// nothing else picks a tile size. The per-call rules that choose among them are schedule.h's.
#pragma once

namespace attnprof::fused {

// portable: mma.sync (sm_80+). hopper: TMA + wgmma + warp specialization (sm_90a), 128-key blocks
// and a 2-stage ring. hopper_wide: the persistent grid's larger rings, which leave no room for an
// output staging buffer at head dim 128 (the output is staged in the tile's own Q buffer there).
enum class TileRows : int { Portable, Hopper, HopperWide };

struct TileConfig {
  TileRows rows;
  int head_dim;
  int block_m;    // query rows per CTA
  int block_n;    // keys per inner-loop step
  int stages;     // K/V shared-memory ring depth (hopper); 1 for portable
  int threads;    // CTA size
  int consumers;  // hopper: consumer warpgroups (each owns 64 query rows)
  int min_q_len;  // row applies from this query length on (the longest matching wins)
};

// Measured on an H200 (docs/fused-kernel.md): for D=64 one CTA per tile, BM=192 (3 consumer
// warpgroups) is up to 12% faster from 2048 query rows on, and up to 11% slower below (short
// causal sequences: too few, too uneven tiles).
inline constexpr TileConfig kTileTable[] = {
    // rows                D    BM   BN  st threads consumers min_q_len
    {TileRows::Portable, 64, 64, 64, 1, 128, 0, 0},
    {TileRows::Portable, 128, 64, 64, 1, 128, 0, 0},
    {TileRows::Hopper, 64, 128, 128, 2, 384, 2, 0},
    {TileRows::Hopper, 64, 192, 128, 2, 512, 3, 2048},
    {TileRows::Hopper, 128, 128, 128, 2, 384, 2, 0},
    // Larger rings for the persistent grid: 160-key blocks at D=128 (fewer per-block costs; two Q
    // buffers and the ring fill 226 KB, so the output is staged in the tile's own Q buffer) and three
    // 128-key stages at D=64.
    {TileRows::HopperWide, 64, 128, 128, 3, 384, 2, 0},
    {TileRows::HopperWide, 128, 128, 160, 2, 384, 2, 0},
};

// The row for (rows, head_dim, q_len); a row with head_dim 0 when none exists.
constexpr TileConfig tile_for(TileRows rows, int head_dim, int q_len = 0) {
  TileConfig best{rows, 0, 0, 0, 0, 0, 0, -1};
  for (const TileConfig& t : kTileTable)
    if (t.rows == rows && t.head_dim == head_dim && t.min_q_len <= q_len && t.min_q_len > best.min_q_len) best = t;
  return best;
}

// A hopper row with another number of consumer warpgroups (64 query rows each).
constexpr TileConfig with_consumers(TileConfig t, int consumers) {
  t.consumers = consumers;
  t.block_m = 64 * consumers;
  t.threads = 128 * (consumers + 1);
  return t;
}

// setmaxnreg split of the 64K-register file for a Hopper CTA (multiples of 8): blocks of more than
// 128 keys hold more score registers per consumer thread beside D=128's 64 output ones, and take
// FlashAttention-3's 240 (the producer only issues TMA).
constexpr int producer_registers(const TileConfig& t) { return t.consumers == 2 && t.block_n <= 128 ? 40 : 24; }
constexpr int consumer_registers(const TileConfig& t) {
  return t.consumers == 2 ? (t.block_n <= 128 ? 232 : 240) : 160;
}

// Dynamic shared memory a config needs, in bytes (16-bit elements).
constexpr int shared_bytes(const TileConfig& t) {
  if (t.rows == TileRows::Portable) {
    const int row = (t.head_dim + 8) * 2;  // padded row: ldmatrix without bank conflicts
    return (t.block_m + 2 * t.block_n) * row;
  }
  // Q tile + K and V rings, 128B-swizzled, plus 1 KB for alignment and barriers.
  return (t.block_m + 2 * t.stages * t.block_n) * t.head_dim * 2 + 2048;
}

}  // namespace attnprof::fused
