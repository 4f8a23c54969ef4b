// The tile table: every supported (path, head dim) has one row that fits the
// hardware limits the kernels assume.
#include "tile_table.h"

#include <gtest/gtest.h>

#include "fused_params.h"

using namespace attnprof::fused;

TEST(FusedTileTable, EveryPathAndHeadDimHasOneBaseRow) {
  for (Path path : {Path::Portable, Path::Hopper})
    for (int d : {64, 128}) {
      int base_rows = 0;
      for (const TileConfig& t : kTileTable) base_rows += t.path == path && t.head_dim == d && t.min_q_len == 0;
      EXPECT_EQ(base_rows, 1) << "path " << int(path) << " D " << d;
      EXPECT_EQ(tile_for(path, d).head_dim, d);
      EXPECT_EQ(tile_for(path, d, 1 << 30).head_dim, d);
    }
  EXPECT_EQ(tile_for(Path::Hopper, 96).head_dim, 0);
}

TEST(FusedTileTable, LongestMatchingMinimumLengthWins) {
  EXPECT_EQ(tile_for(Path::Hopper, 64, 2047).block_m, 128);
  EXPECT_EQ(tile_for(Path::Hopper, 64, 2048).block_m, 192);
  EXPECT_EQ(tile_for(Path::Hopper, 64, 16384).block_m, 192);
  EXPECT_EQ(tile_for(Path::Hopper, 128, 16384).block_m, 128);
  EXPECT_EQ(tile_for(Path::Portable, 64, 16384).block_m, 64);
}

TEST(FusedTileTable, PortableRowsFitSm80) {
  for (const TileConfig& t : kTileTable) {
    if (t.path != Path::Portable) continue;
    EXPECT_EQ(t.block_m, 16 * t.threads / 32) << "one warp per 16 query rows";
    EXPECT_EQ(t.block_n % 16, 0);
    EXPECT_LE(shared_bytes(t), 163 * 1024) << "sm_80 opt-in shared memory";
  }
}

TEST(FusedTileTable, HopperRowsFitSm90) {
  for (const TileConfig& t : kTileTable) {
    if (t.path == Path::Portable) continue;
    EXPECT_EQ(t.block_m, 64 * t.consumers) << "each consumer warpgroup owns 64 rows";
    EXPECT_EQ(t.threads, 128 * (t.consumers + 1)) << "one producer warpgroup";
    EXPECT_EQ(t.head_dim % 64, 0) << "128-byte swizzle chunks";
    EXPECT_TRUE(t.block_n % 16 == 0 && t.block_n <= 256) << "wgmma N and TMA box limits";
    EXPECT_LE(t.block_m, 256) << "TMA box limit";
    EXPECT_GE(t.stages, 2);
    EXPECT_LE(shared_bytes(t), 227 * 1024) << "sm_90 opt-in shared memory";
    // Registers: the setmaxnreg split must fit the 64K file.
    EXPECT_LE(producer_registers(t) * 128 + consumer_registers(t) * 128 * t.consumers, 65536);
  }
  // The 3-consumer experiment (BM=192) fits too.
  for (int d : {64, 128}) {
    const TileConfig t = with_consumers(tile_for(Path::Hopper, d), 3);
    EXPECT_EQ(t.block_m, 192);
    EXPECT_LE(shared_bytes(t), 227 * 1024);
    EXPECT_LE(producer_registers(t) * 128 + consumer_registers(t) * 128 * 3, 65536);
  }
}

TEST(FusedTileTable, PersistentKernelFitsAndIsPickedWhereItMeasuredFaster) {
  // Version 7 stages the output in a buffer of its own (BM x D) beside Q and the K/V ring.
  for (int d : {64, 128}) {
    const TileConfig t = with_consumers(tile_for(Path::Hopper, d), 2);
    EXPECT_LE(shared_bytes(t) + t.block_m * d * 2, 227 * 1024) << "D " << d;
  }
  // Short tiles and causal D=128 take the persistent grid; long D=64 (three consumers there) and
  // long D=128 full attention keep one CTA per tile.
  EXPECT_TRUE(use_persistent(64, 512, false));
  EXPECT_FALSE(use_persistent(64, 2048, false));
  EXPECT_TRUE(use_persistent(64, 4096, true));
  EXPECT_FALSE(use_persistent(64, 8192, true));
  EXPECT_TRUE(use_persistent(128, 4096, false));
  EXPECT_TRUE(use_persistent(128, 8192, false));
  EXPECT_TRUE(use_persistent(128, 16384, false));
  EXPECT_TRUE(use_persistent(128, 512, true));
  EXPECT_TRUE(use_persistent(128, 8192, true));
  EXPECT_FALSE(use_persistent(128, 16384, true));
  // Rounds: 144 items on 132 SMs leave the second round 9% busy; 1024 items fill 97% of 8 rounds.
  EXPECT_FALSE(persistent_rounds_full(144, 132));
  EXPECT_TRUE(persistent_rounds_full(1024, 132));
  EXPECT_TRUE(persistent_rounds_full(132, 132));
  EXPECT_TRUE(persistent_rounds_full(120, 132));  // one round, 91% of the CTAs busy
  EXPECT_FALSE(persistent_rounds_full(64, 132));
  EXPECT_FALSE(persistent_rounds_full(0, 132));
}

// Causal calls: the rounds against version 6's fixed cost per tile. Items and blocks from the
// shapes (top-left causal, 128-row tiles and 128-key blocks: M tiles per head make pairs of M + 1
// blocks, and a middle tile of (M + 1) / 2 when M is odd); the picks are run 65's faster kernel.
TEST(FusedTileTable, CausalRoundsPayWherePersistenceMeasuredFaster) {
  EXPECT_TRUE(persistent_rounds_pay(13 * 16 * 2, 132, 5, 2));    // B13 H16 S512: 79% full, +10%
  EXPECT_TRUE(persistent_rounds_pay(5 * 16 * 4, 132, 9, 2));     // B5 H16 S1024: 81%, +11%
  EXPECT_TRUE(persistent_rounds_pay(7 * 16 * 4, 132, 9, 2));     // B7 H16 S1024: 85%, +11%
  EXPECT_TRUE(persistent_rounds_pay(4 * 16 * 9, 132, 18, 2));    // B4 H16 S2049 (M 17): 87%, +2%
  EXPECT_FALSE(persistent_rounds_pay(2 * 16 * 17, 132, 34, 2));  // B2 H16 S4097 (M 33): 82%, -3%
  EXPECT_TRUE(persistent_rounds_pay(5 * 12 * 8, 132, 17, 2));    // B5 H12 S2048: 91%, +13%
  // Nearly empty rounds stay with version 6: B1 H8 S2048 is 64 items on 132 CTAs.
  EXPECT_FALSE(persistent_rounds_pay(64, 132, 17, 2));
  EXPECT_FALSE(persistent_rounds_pay(0, 132, 17, 2));
}

// Full attention: equal tiles, so the persistent grid pays from a second round on (run 66).
TEST(FusedTileTable, FullRoundsPayFromTheSecondRound) {
  EXPECT_TRUE(full_rounds_pay(5 * 16 * 4, 132));   // B5 H16 S512: 320 tiles, 81% of 3 rounds, +16%
  EXPECT_TRUE(full_rounds_pay(3 * 12 * 8, 132));   // B3 H12 S1024: 288 tiles, 73% of 3 rounds, +10%
  EXPECT_FALSE(full_rounds_pay(1 * 12 * 8, 132));  // B1 H12 S1024: 96 tiles, one round, a tie
  EXPECT_FALSE(full_rounds_pay(132, 132));
  EXPECT_TRUE(full_rounds_pay(133, 132));
}

TEST(FusedTileTable, The176KeyRowFitsOnlyWithSharedStaging) {
  // Versions 9 and 10: FlashAttention-3's D=128 tile, 128 query rows by 176 keys, two stages.
  const TileConfig t = tile_for(Path::HopperV9, 128);
  ASSERT_EQ(t.head_dim, 128);
  EXPECT_EQ(t.block_n, 176);
  EXPECT_EQ(tile_for(Path::HopperV9, 64).head_dim, 0) << "head dim 64 runs version 6 or 8's rows";
  // 88 score and 64 output registers per consumer thread: the 240-register split.
  EXPECT_EQ(consumer_registers(t), 240);
  EXPECT_EQ(producer_registers(t) * 128 + consumer_registers(t) * 256, 64512);
  // One CTA per tile stages the output in Q (fits); a persistent CTA has no room for a BM-row
  // staging buffer, but has for 64 rows (version 10's, taken by the warpgroups in turn).
  const int q_bytes = t.block_m * 128 * 2;
  EXPECT_LE(shared_bytes(t), 227 * 1024);
  EXPECT_GT(shared_bytes(t) + q_bytes, 227 * 1024);
  EXPECT_LE(shared_bytes(t) + q_bytes / 2, 227 * 1024);
}

TEST(FusedTileTable, PersistentGridTakesEqualTilesWhenOneCtaPerTileLeavesTheLastWaveEmpty) {
  EXPECT_DOUBLE_EQ(wave_fill(132, 132), 1.0);
  EXPECT_DOUBLE_EQ(wave_fill(133, 132), 133.0 / 264);
  EXPECT_DOUBLE_EQ(wave_fill(0, 132), 0.0);
  // B4 H16 S2048 D64: version 6 runs 11 tiles of 192 rows x 64 heads = 704 CTAs (5.3 waves, 89%
  // busy), version 8 16 x 64 = 1024 items (97%): the persistent grid.
  EXPECT_TRUE(persistent_fills_better(704, 1024, 132));
  // B8 H32 S2048 D64: 2816 CTAs and 4096 items, both 97%: version 6's faster tiles.
  EXPECT_FALSE(persistent_fills_better(2816, 4096, 132));
  // Two full waves against two full rounds: one CTA per tile.
  EXPECT_FALSE(persistent_fills_better(264, 264, 132));
}

TEST(FusedTileTable, Version11RowsFitWithTwoQBuffers) {
  // D=128: 160-key blocks; two Q buffers and the ring fit, a staging buffer beside them does not
  // (so the output is staged in the tile's own Q buffer).
  const TileConfig t = tile_for(Path::HopperV11, 128);
  ASSERT_EQ(t.block_n, 160);
  const int q_bytes = t.block_m * 128 * 2;
  EXPECT_LE(shared_bytes(t) + q_bytes, 227 * 1024);
  EXPECT_GT(shared_bytes(t) + 2 * q_bytes, 227 * 1024);
  EXPECT_EQ(consumer_registers(t), 240);
  // D=64: a 3-stage ring with both Q buffers and a staging buffer of its own.
  const TileConfig s = tile_for(Path::HopperV11, 64);
  ASSERT_EQ(s.stages, 3);
  EXPECT_LE(shared_bytes(s) + 2 * s.block_m * 64 * 2, 227 * 1024);
}

TEST(FusedTileTable, Version11WhereItMeasuredFaster) {
  EXPECT_TRUE(persistent_v11(64, 512, true));
  EXPECT_TRUE(persistent_v11(64, 4096, false));
  EXPECT_TRUE(persistent_v11(128, 8192, false));
  EXPECT_FALSE(persistent_v11(128, 4096, false)) << "within noise of version 8 below 8k keys";
  EXPECT_FALSE(persistent_v11(128, 1024, false)) << "1024 keys are 6.4 blocks of 160";
  EXPECT_FALSE(persistent_v11(128, 16384, true)) << "causal keeps 128-key blocks";
}

TEST(FusedTileTable, SplitTailWhereTheLastRoundIsPartial) {
  // B4 H16 S4096 D128 full: 2048 tiles of 32 key blocks on 132 SMs; 15 full rounds leave 68 tiles,
  // 2176 key blocks: ranges of 17 blocks on every CTA instead of 32 on 68 of them (15 saved).
  EXPECT_EQ(split_tail_units(2048, 132, 32), 17);
  // S16384 at 160-key blocks: 103 a tile, ranges of 54.
  EXPECT_EQ(split_tail_units(2048, 132, 103), 54);
  // S2048: ranges of 9 of 16 blocks save 7, under the split's own cost.
  EXPECT_EQ(split_tail_units(2048, 132, 16), 0);
  // Full rounds: nothing to split.
  EXPECT_EQ(split_tail_units(264, 132, 32), 0);
  // B4 H16 S2048 D64: 1024 tiles leave 100 on the last round; ranges of 13 of 16 blocks save 3.
  EXPECT_EQ(split_tail_units(1024, 132, 16), 0);
  // One item left over: its 64 blocks spread over 132 CTAs would be ranges of one; the floor of
  // kMinTailUnits makes 16 CTAs take 4 each.
  EXPECT_EQ(split_tail_units(133, 132, 64), kMinTailUnits);
  // Fewer items than SMs (the whole call is the tail): B1 H16 S1024 D128, 128 tiles of 8 blocks,
  // would need ranges of 8: no split. B1 H2 S16384: 256 tiles of 128 blocks, 124 left, ranges of 121: no.
  EXPECT_EQ(split_tail_units(128, 132, 8), 0);
  EXPECT_EQ(split_tail_units(256, 132, 128), 0);
  // Items of too few blocks never split: a range would cover a whole item.
  EXPECT_EQ(split_tail_units(140, 132, 4), 0);
  // The checks' floor of one block splits wherever a range is shorter than an item.
  EXPECT_EQ(split_tail_units(16, 132, 8, 1), 1);
  EXPECT_EQ(split_tail_units(16, 3, 8, 1), 3);
  EXPECT_EQ(split_tail_units(6, 3, 8, 1), 0);
  EXPECT_EQ(split_tail_units(0, 132, 8), 0);
  EXPECT_EQ(split_tail_units(16, 0, 8), 0);
  // The kernel counts the tail's blocks in 32 bits.
  EXPECT_EQ(split_tail_units(2048, 132, 1 << 26), 0);
}

TEST(FusedTileTable, SplitTailScratchHoldsEveryCtasPartial) {
  // 132 CTAs x 2 warpgroups x 128 threads x (128 / 8 + 1) float4, then a flag per warpgroup.
  EXPECT_EQ(split_tail_partial_bytes(132, 128), std::size_t(132) * 2 * 128 * 17 * 16);
  EXPECT_EQ(split_tail_bytes(132, 64), std::size_t(132) * 2 * 128 * 9 * 16 + 132 * 2 * 4);
}

// Version 26 where most of a causal call's 128-row tiles see no key. The counts below follow from
// the bottom-right geometry: Sq 8192 over Skv 512 leaves rows 0..7679 keyless (60 of 64 tiles),
// Sq 4096 over 1024 rows 0..3071 (24 of 32), Sq 8192 over 4096 half (32 of 64).
TEST(FusedTileTable, KeepsZerosWhereMostTilesSeeNoKey) {
  EXPECT_TRUE(keeps_zeros(60, 64, 2 * 16, true, 132));
  EXPECT_TRUE(keeps_zeros(24, 32, 4 * 16, true, 132));
  EXPECT_FALSE(keeps_zeros(32, 64, 2 * 32, true, 132));  // half: the tiles with keys carry the time
  EXPECT_FALSE(keeps_zeros(1, 16, 8 * 16, true, 132));
  EXPECT_FALSE(keeps_zeros(0, 64, 32, true, 132));
  // Off the persistent grid's lengths (use_persistent false): only where the 4 tiles with keys of
  // each of 32 heads fit in one round of 132 CTAs, not 33 heads' 132 + 4.
  EXPECT_TRUE(keeps_zeros(60, 64, 32, false, 132));
  EXPECT_FALSE(keeps_zeros(60, 64, 34, false, 132));
  EXPECT_FALSE(keeps_zeros(64, 128, 16, false, 132));  // Sq 16384 over 8192: half keyless
}

// Version 29's sections: K and V of one K/V head are kv_len x head_dim x 2 bytes x 2; 32 MiB holds
// floor(32 MiB / that) of them, and the call's K/V heads are then split into that many sections, evenly.
TEST(FusedTileTable, DynamicSectionsFitL2AndAreEven) {
  // S2048 D64: 512 KiB per head, 64 fit; 256 heads make 4 sections of 64.
  EXPECT_EQ(dynamic_section_heads(2048, 64, 1, 256), 64);
  // S2049 D128: 1,049,088 bytes per head, 31 fit; 64 heads make 3 sections: 22, 22 and 20, not 31, 31, 2.
  EXPECT_EQ(dynamic_section_heads(2049, 128, 1, 64), 22);
  // S4097 D128: 2,097,664 bytes, 15 fit; 32 heads in 3 sections of 11, 11, 10.
  EXPECT_EQ(dynamic_section_heads(4097, 128, 1, 32), 11);
  // S16384 D128: 8 MiB, 4 fit; 16 heads in 4 sections of 4.
  EXPECT_EQ(dynamic_section_heads(16384, 128, 1, 16), 4);
  // GQA, 4 query heads per K/V head, S2048 D128: 32 K/V heads fit; 256 query heads (64 K/V) in 2
  // sections of 32 K/V heads, 128 query heads.
  EXPECT_EQ(dynamic_section_heads(2048, 128, 4, 256), 128);
  // GQA S32768 D128, 4 per K/V head: 16 MiB per K/V head, 2 fit; 32 query heads (8 K/V) in 4 of 8.
  EXPECT_EQ(dynamic_section_heads(32768, 128, 4, 32), 8);
  // Whole groups: 7 K/V heads of 10 MiB (S20480 D128), 3 fit: sections of 3, 3, 1 K/V heads.
  EXPECT_EQ(dynamic_section_heads(20480, 128, 8, 56), 24);
  // Everything fits: one section.
  EXPECT_EQ(dynamic_section_heads(2048, 128, 1, 8), 8);
  // One K/V head larger than the budget: a section of one group.
  EXPECT_EQ(dynamic_section_heads(1 << 20, 128, 2, 8), 2);
  EXPECT_EQ(dynamic_section_heads(2048, 64, 1, 0), 1);
}

// The default's version 29 where runs 71-72 measured it faster. Tiles: batch x heads x ceil(q_len / 128).
TEST(FusedTileTable, DynamicSchedulerWhereItMeasuredFaster) {
  EXPECT_TRUE(use_dynamic(64, 512, 32 * 32 * 4, 132));      // B32 H32 S512: +5.2%
  EXPECT_TRUE(use_dynamic(64, 4096, 4 * 32 * 32, 132));     // B4 H32 S4096: +3.2%
  EXPECT_TRUE(use_dynamic(128, 2049, 4 * 16 * 17, 132));    // B4 H16 S2049: +10%
  EXPECT_TRUE(use_dynamic(128, 32768, 1 * 32 * 256, 132));  // B1 H32 S32768: +1.5%
  EXPECT_FALSE(use_dynamic(128, 1024, 16 * 16 * 8, 132));   // B16 H16 S1024: -3.5%
  EXPECT_FALSE(use_dynamic(128, 256, 128 * 32 * 2, 132));   // B128 H32 S256: -5.6%
  EXPECT_FALSE(use_dynamic(64, 8192, 2 * 32 * 64, 132));    // B2 H32 S8192: version 6 3.6% faster
  EXPECT_FALSE(use_dynamic(128, 2048, 1 * 8 * 16, 132));    // B1 H8 S2048: 128 tiles, one CTA each
}
