// The schedule rules (schedule.h), each where it measured faster, and choose_schedule's picks: every
// pick is a kernel the product compiles, the rules' order holds, the forced paths fall back where
// they cannot take a call.
#include "schedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "fused_params.h"

using namespace attnprof::fused;

TEST(FusedSchedule, PersistentKernelFitsAndIsPickedWhereItMeasuredFaster) {
  // The persistent grid stages the output in a buffer of its own (BM x D) beside Q and the K/V ring.
  for (int d : {64, 128}) {
    const TileConfig t = with_consumers(tile_for(TileRows::Hopper, d), 2);
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

// Causal calls: the rounds against one CTA per tile's fixed cost per tile. Items and blocks from the
// shapes (top-left causal, 128-row tiles and 128-key blocks: M tiles per head make pairs of M + 1
// blocks, and a middle tile of (M + 1) / 2 when M is odd); the picks are the faster grid as measured.
TEST(FusedSchedule, CausalRoundsPayWherePersistenceMeasuredFaster) {
  EXPECT_TRUE(persistent_rounds_pay(13 * 16 * 2, 132, 5, 2));    // B13 H16 S512: 79% full, +10%
  EXPECT_TRUE(persistent_rounds_pay(5 * 16 * 4, 132, 9, 2));     // B5 H16 S1024: 81%, +11%
  EXPECT_TRUE(persistent_rounds_pay(7 * 16 * 4, 132, 9, 2));     // B7 H16 S1024: 85%, +11%
  EXPECT_TRUE(persistent_rounds_pay(4 * 16 * 9, 132, 18, 2));    // B4 H16 S2049 (M 17): 87%, +2%
  EXPECT_FALSE(persistent_rounds_pay(2 * 16 * 17, 132, 34, 2));  // B2 H16 S4097 (M 33): 82%, -3%
  EXPECT_TRUE(persistent_rounds_pay(5 * 12 * 8, 132, 17, 2));    // B5 H12 S2048: 91%, +13%
  // Nearly empty rounds stay with one CTA per tile: B1 H8 S2048 is 64 items on 132 CTAs.
  EXPECT_FALSE(persistent_rounds_pay(64, 132, 17, 2));
  EXPECT_FALSE(persistent_rounds_pay(0, 132, 17, 2));
}

// Full attention: equal tiles, so the persistent grid pays from a second round on.
TEST(FusedSchedule, FullRoundsPayFromTheSecondRound) {
  EXPECT_TRUE(full_rounds_pay(5 * 16 * 4, 132));   // B5 H16 S512: 320 tiles, 81% of 3 rounds, +16%
  EXPECT_TRUE(full_rounds_pay(3 * 12 * 8, 132));   // B3 H12 S1024: 288 tiles, 73% of 3 rounds, +10%
  EXPECT_FALSE(full_rounds_pay(1 * 12 * 8, 132));  // B1 H12 S1024: 96 tiles, one round, a tie
  EXPECT_FALSE(full_rounds_pay(132, 132));
  EXPECT_TRUE(full_rounds_pay(133, 132));
}

TEST(FusedSchedule, PersistentGridTakesEqualTilesWhenOneCtaPerTileLeavesTheLastWaveEmpty) {
  EXPECT_DOUBLE_EQ(wave_fill(132, 132), 1.0);
  EXPECT_DOUBLE_EQ(wave_fill(133, 132), 133.0 / 264);
  EXPECT_DOUBLE_EQ(wave_fill(0, 132), 0.0);
  // B4 H16 S2048 D64: one CTA per tile runs 11 tiles of 192 rows x 64 heads = 704 CTAs (5.3 waves,
  // 89% busy), the persistent grid 16 x 64 = 1024 items (97%): the persistent grid.
  EXPECT_TRUE(persistent_fills_better(704, 1024, 132));
  // B8 H32 S2048 D64: 2816 CTAs and 4096 items, both 97%: one CTA per tile's faster tiles.
  EXPECT_FALSE(persistent_fills_better(2816, 4096, 132));
  // Two full waves against two full rounds: one CTA per tile.
  EXPECT_FALSE(persistent_fills_better(264, 264, 132));
}

TEST(FusedSchedule, WideRowsFitWithTwoQBuffers) {
  // D=128: 160-key blocks; two Q buffers and the ring fit, a staging buffer beside them does not
  // (so the output is staged in the tile's own Q buffer).
  const TileConfig t = tile_for(TileRows::HopperWide, 128);
  ASSERT_EQ(t.block_n, 160);
  const int q_bytes = t.block_m * 128 * 2;
  EXPECT_LE(shared_bytes(t) + q_bytes, 227 * 1024);
  EXPECT_GT(shared_bytes(t) + 2 * q_bytes, 227 * 1024);
  EXPECT_EQ(consumer_registers(t), 240);
  // D=64: a 3-stage ring with both Q buffers and a staging buffer of its own.
  const TileConfig s = tile_for(TileRows::HopperWide, 64);
  ASSERT_EQ(s.stages, 3);
  EXPECT_LE(shared_bytes(s) + 2 * s.block_m * 64 * 2, 227 * 1024);
}

TEST(FusedSchedule, WideRowsWhereTheyMeasuredFaster) {
  EXPECT_TRUE(wide_rows_pay(64, 512, true));
  EXPECT_TRUE(wide_rows_pay(64, 4096, false));
  EXPECT_TRUE(wide_rows_pay(128, 8192, false));
  EXPECT_FALSE(wide_rows_pay(128, 4096, false)) << "within noise of the 128-key rows below 8k keys";
  EXPECT_FALSE(wide_rows_pay(128, 1024, false)) << "1024 keys are 6.4 blocks of 160";
  EXPECT_FALSE(wide_rows_pay(128, 16384, true)) << "causal keeps 128-key blocks";
}

TEST(FusedSchedule, SplitTailWhereTheLastRoundIsPartial) {
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

TEST(FusedSchedule, SplitTailScratchHoldsEveryCtasPartial) {
  // 132 CTAs x 2 warpgroups x 128 threads x (128 / 8 + 1) float4, then a flag per warpgroup.
  EXPECT_EQ(split_tail_partial_bytes(132, 128), std::size_t(132) * 2 * 128 * 17 * 16);
  EXPECT_EQ(split_tail_bytes(132, 128), std::size_t(132) * 2 * 128 * 17 * 16 + 132 * 2 * 4);
}

// Kept zeros where most of a causal call's 128-row tiles see no key. The counts below follow from
// the bottom-right geometry: Sq 8192 over Skv 512 leaves rows 0..7679 keyless (60 of 64 tiles),
// Sq 4096 over 1024 rows 0..3071 (24 of 32), Sq 8192 over 4096 half (32 of 64).
TEST(FusedSchedule, KeepsZerosWhereMostTilesSeeNoKey) {
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

// The dynamic scheduler's sections: K and V of one K/V head are kv_len x head_dim x 2 bytes x 2; 32 MiB holds
// floor(32 MiB / that) of them, and the call's K/V heads are then split into that many sections, evenly.
TEST(FusedSchedule, DynamicSectionsFitL2AndAreEven) {
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

// The dynamic scheduler where it measured faster. Tiles: batch x heads x ceil(q_len / 128).
TEST(FusedSchedule, DynamicSchedulerWhereItMeasuredFaster) {
  EXPECT_TRUE(use_dynamic(64, 512, 32 * 32 * 4, 132));      // B32 H32 S512: +5.2%
  EXPECT_TRUE(use_dynamic(64, 4096, 4 * 32 * 32, 132));     // B4 H32 S4096: +3.2%
  EXPECT_TRUE(use_dynamic(128, 2049, 4 * 16 * 17, 132));    // B4 H16 S2049: +10%
  EXPECT_TRUE(use_dynamic(128, 32768, 1 * 32 * 256, 132));  // B1 H32 S32768: +1.5%
  EXPECT_FALSE(use_dynamic(128, 1024, 16 * 16 * 8, 132));   // B16 H16 S1024: -3.5%
  EXPECT_FALSE(use_dynamic(128, 256, 128 * 32 * 2, 132));   // B128 H32 S256: -5.6%
  EXPECT_FALSE(use_dynamic(64, 8192, 2 * 32 * 64, 132));    // B2 H32 S8192: one CTA per tile 3.6% faster
  EXPECT_FALSE(use_dynamic(128, 2048, 1 * 8 * 16, 132));    // B1 H8 S2048: 128 tiles, one CTA each
}

namespace {

// A call's sizes as the launch sees them (pointers left null: choose_schedule reads only sizes, the
// causal geometry and whether the workspace holds the scratch).
Params call(int b, int h, int kvh, int sq, int skv, int d, int causal, bool scratch = true) {
  Params p;
  p.batch = b;
  p.heads = h;
  p.kv_heads = kvh;
  p.q_len = sq;
  p.kv_len = skv;
  p.head_dim = d;
  p.causal = causal != 0;
  p.causal_offset = causal == 2 ? skv - sq : 0;  // 2: bottom-right
  static char workspace[1];
  if (scratch) {
    p.tail_workspace = workspace;
    p.tail_workspace_bytes = std::size_t(1) << 30;
  }
  return p;
}

constexpr int kSms = 132;

KernelChoice pick(const Params& p, Path path = Path::Hopper) { return choose_schedule(p, path, kSms).kernel; }

}  // namespace

TEST(FusedSchedule, EveryPickIsAKernelTheProductCompiles) {
  std::set<int> used;
  int calls = 0;
  for (int d : {64, 128})
    for (int causal : {0, 1, 2})
      for (int sq : {1, 17, 300, 512, 1000, 1025, 2048, 2049, 4096, 8192, 16384})
        for (int skv_kind : {0, 1, 2})
          for (auto [b, h, kvh] : {std::tuple{1, 8, 8}, std::tuple{2, 16, 4}, std::tuple{8, 32, 32}})
            for (bool scratch : {true, false})
              for (Path path :
                   {Path::Hopper, Path::OneTile, Path::Persistent, Path::SplitTail, Path::Dynamic, Path::KeepZeros})
                for (int cap : {0, 3}) {
                  const int skv = skv_kind == 0 ? sq : skv_kind == 1 ? std::max(1, sq / 8) : 2 * sq;
                  const Params p = call(b, h, kvh, sq, skv, d, causal, scratch);
                  LaunchOverrides o;
                  o.persistent_ctas = cap;
                  const Schedule s = choose_schedule(p, path, kSms, o);
                  const int index = product_kernel_index(s.kernel);
                  ASSERT_GE(index, 0) << "B" << b << " H" << h << " S" << sq << "/" << skv << " D" << d << " causal "
                                      << causal << " path " << path_name(path);
                  used.insert(index);
                  ++calls;
                  if (s.kernel.grid == Grid::OneTile) {
                    EXPECT_EQ(s.ctas, 0);
                  } else {
                    EXPECT_GT(s.ctas, 0);
                    EXPECT_LE(s.ctas, cap > 0 ? cap : kSms);
                  }
                  EXPECT_EQ(s.tail_units > 0, (s.kernel.features & feature::kSplitTail) != 0);
                  EXPECT_EQ(s.section_heads > 0, s.kernel.grid == Grid::Dynamic);
                  if (s.kernel.grid == Grid::Dynamic || (s.kernel.features & feature::kKeepZeros)) {
                    EXPECT_TRUE(p.causal);
                  }
                  if (s.kernel.features & feature::kSplitTail) {
                    EXPECT_TRUE(!p.causal && d == 128 && scratch);
                  }
                  if (s.kernel.grid == Grid::Dynamic) {
                    EXPECT_TRUE(scratch && keyless_tiles(p, 128) == 0);
                  }
                }
  EXPECT_GT(calls, 10000);
  // Every compiled kernel is picked for some call: none is dead weight.
  EXPECT_EQ(int(used.size()), kProductKernelCount);
}

TEST(FusedSchedule, TheRulesInTheirOrder) {
  // The study's shape, B8 H16 S1024 D64 causal: 1024 tiles on 132 SMs, the dynamic scheduler.
  const KernelChoice dynamic64{Grid::Dynamic, TileRows::HopperWide, 2, 0, 64};
  EXPECT_EQ(pick(call(8, 16, 16, 1024, 1024, 64, 1)), dynamic64);
  // Without the counter's scratch: 512 pairs of 9 key blocks in 4 rounds pay (512 x 13 >= 4 x 132 x 9):
  // the persistent grid on the wide rows.
  const KernelChoice wide64{Grid::Persistent, TileRows::HopperWide, 2, 0, 64};
  EXPECT_EQ(pick(call(8, 16, 16, 1024, 1024, 64, 1, false)), wide64);
  // B4 H16 S4096 D128 full: 2048 tiles of 32 blocks leave 68 on the last round: ranges of 17 blocks.
  const Schedule split = choose_schedule(call(4, 16, 16, 4096, 4096, 128, 0), Path::Hopper, kSms);
  EXPECT_EQ(split.kernel, (KernelChoice{Grid::Persistent, TileRows::Hopper, 2, feature::kSplitTail, 128}));
  EXPECT_EQ(split.tail_units, 17);
  EXPECT_EQ(split.ctas, kSms);
  // ... and without its scratch the persistent grid's 128-key rows (below 8192 keys).
  EXPECT_EQ(pick(call(4, 16, 16, 4096, 4096, 128, 0, false)),
            (KernelChoice{Grid::Persistent, TileRows::Hopper, 2, 0, 128}));
  // Decode, B1 H32/8 Sq1 Skv16384 D128: 32 tiles of 103 wide blocks on 132 SMs, all of them the tail:
  // ranges of 25 blocks over every SM.
  EXPECT_EQ(pick(call(1, 32, 8, 1, 16384, 128, 0)),
            (KernelChoice{Grid::Persistent, TileRows::HopperWide, 2, feature::kSplitTail, 128}));
  // Bottom-right Sq8192/Skv512 D128: 60 of 64 tiles see no key (no counter for such calls): kept zeros
  // on the halved diagonal's rows.
  EXPECT_EQ(pick(call(2, 16, 16, 8192, 512, 128, 2)),
            (KernelChoice{Grid::Persistent, TileRows::Hopper, 2, feature::kHalfDiagonal | feature::kKeepZeros, 128}));
  // Causal D=128 S2049: the dynamic scheduler, sections of 22, 22 and 20 heads.
  const Schedule s2049 = choose_schedule(call(4, 16, 16, 2049, 2049, 128, 1), Path::Hopper, kSms);
  EXPECT_EQ(s2049.kernel, (KernelChoice{Grid::Dynamic, TileRows::Hopper, 2, feature::kHalfDiagonal, 128}));
  EXPECT_EQ(s2049.section_heads, 22);
  // Causal D=128 S1024 (below the dynamic scheduler's 2048 rows): the persistent grid's halved diagonal.
  EXPECT_EQ(pick(call(16, 16, 16, 1024, 1024, 128, 1)),
            (KernelChoice{Grid::Persistent, TileRows::Hopper, 2, feature::kHalfDiagonal, 128}));
  // Causal D=64 S8192: one CTA per tile with three consumer warpgroups.
  EXPECT_EQ(pick(call(2, 32, 32, 8192, 8192, 64, 1)), (KernelChoice{Grid::OneTile, TileRows::Hopper, 3, 0, 64}));
  // One round of full attention tiles (B1 H12 S1024 D128, 96 tiles): one CTA per tile; S1025 leaves
  // the last tile's second warpgroup without a row.
  EXPECT_EQ(pick(call(1, 12, 12, 1024, 1024, 128, 0)), (KernelChoice{Grid::OneTile, TileRows::Hopper, 2, 0, 128}));
  EXPECT_EQ(pick(call(1, 12, 12, 1025, 1025, 128, 0)),
            (KernelChoice{Grid::OneTile, TileRows::Hopper, 2, feature::kSkipIdleGroup, 128}));
}

TEST(FusedSchedule, ForcedPathsFallBackToThePersistentGrid) {
  const KernelChoice persistent128{Grid::Persistent, TileRows::Hopper, 2, 0, 128};
  // The split tail: full attention at D=128 with its scratch only.
  EXPECT_EQ(pick(call(4, 16, 16, 4096, 4096, 128, 0, false), Path::SplitTail), persistent128);
  EXPECT_EQ(pick(call(4, 16, 16, 4096, 4096, 64, 0), Path::SplitTail),
            (KernelChoice{Grid::Persistent, TileRows::HopperWide, 2, 0, 64}));
  // The dynamic scheduler: causal calls whose tiles all see a key, with the counter.
  EXPECT_EQ(pick(call(2, 16, 16, 8192, 512, 128, 2), Path::Dynamic),
            (KernelChoice{Grid::Persistent, TileRows::Hopper, 2, feature::kHalfDiagonal, 128}));
  EXPECT_EQ(pick(call(2, 16, 16, 2048, 2048, 128, 0), Path::Dynamic), persistent128);
  // Kept zeros: causal calls.
  EXPECT_EQ(pick(call(2, 16, 16, 2048, 2048, 128, 0), Path::KeepZeros), persistent128);
  // A capped grid: its CTAs, and the split's ranges over them.
  LaunchOverrides o;
  o.persistent_ctas = 3;
  o.split_tail_min_units = 1;
  const Schedule s = choose_schedule(call(1, 2, 2, 1000, 1000, 128, 0), Path::SplitTail, kSms, o);
  EXPECT_EQ(s.ctas, 3);
  EXPECT_EQ(s.kernel.features, feature::kSplitTail);
  EXPECT_GT(s.tail_units, 0);
}

TEST(FusedSchedule, ScratchOnlyWhereAKernelUsesIt) {
  EXPECT_EQ(schedule_scratch(call(1, 8, 8, 2048, 2048, 64, 0), kSms), 0u) << "no split at D=64";
  EXPECT_EQ(schedule_scratch(call(4, 16, 16, 4096, 4096, 128, 0), kSms), split_tail_bytes(kSms, 128));
  EXPECT_EQ(schedule_scratch(call(4, 16, 16, 2048, 2048, 128, 1), kSms), 16u) << "the dynamic counter";
  EXPECT_EQ(schedule_scratch(call(2, 16, 16, 8192, 512, 128, 2), kSms), 0u) << "keyless tiles: no counter";
  EXPECT_EQ(schedule_scratch(call(1, 8, 8, 64, 64, 96, 0), kSms), 0u);
}

// The decode kernel's plan (schedule.h, "The decode kernel"): the rows a KV head packs, the units, and
// splits that spread a unit's keys over the GPU's 132 SMs where the units do not fill them.

// The key blocks the busiest of `sms` SMs streams with `splits` splits (CTAs going round the SMs).
long long busiest_sm_blocks(long long units, int splits, int blocks, int sms) {
  const int per = (blocks + splits - 1) / splits;
  return (units * splits + sms - 1) / sms * per;
}

TEST(FusedSchedule, DecodePlanPacksAKvHeadsQueryRows) {
  // B1 H32/8 Sq1 Skv8192 D128: 4 rows a KV head in one 16-row tile; 8 units of 128 key blocks split in
  // 16 of 8 blocks: 128 CTAs, one an SM (the lab's sweep: 27 us against 28 for 32 splits).
  DecodePlan d = decode_plan(call(1, 32, 8, 1, 8192, 128, 0, false), 132);
  EXPECT_EQ(d.rows, 4);
  EXPECT_EQ(d.row_tiles, 1);
  EXPECT_EQ(d.row_chunks, 1);
  EXPECT_EQ(d.block_n, 64);
  EXPECT_EQ(d.blocks, 128);
  EXPECT_EQ(d.units, 8);
  EXPECT_EQ(d.splits * d.blocks_per_split >= d.blocks, true);
  EXPECT_LT((d.splits - 1) * d.blocks_per_split, d.blocks);  // no empty split
  EXPECT_EQ(d.splits, 16);
  EXPECT_EQ(d.blocks_per_split, 8);
  // B1 H32/4 Skv32768: 4 units of 512 blocks in 32 splits of 16 (the sweep: 46 us, 49-51 for 57 or 64).
  d = decode_plan(call(1, 32, 4, 1, 32768, 128, 0, false), 132);
  EXPECT_EQ(d.units * d.splits, 128);
  EXPECT_EQ(d.blocks_per_split, 16);
  // B1 H32/8 Skv131072: 8 units of 2048 blocks; 33 splits of 63 (two CTAs an SM) load the busiest SM
  // least in one wave (the sweep: 32 and 33 splits 199-201 us, 16 202, the old choice 204).
  EXPECT_EQ(decode_plan(call(1, 32, 8, 1, 131072, 128, 0, false), 132).splits, 33);
  // B2 H32/8 Skv16384: 8 splits of 32 blocks and 16 of 16 tie; 16 are short: 8 (66 us against 66-69).
  EXPECT_EQ(decode_plan(call(2, 32, 8, 1, 16384, 128, 0, false), 132).splits, 8);
  // The lab's forced splits replace the choice.
  EXPECT_EQ(decode_plan(call(1, 32, 4, 1, 32768, 128, 0, false), 132, kDecodeMaxSplits, 64).splits, 64);
  // B64 H32/8: 512 units fill the GPU alone: no split, no scratch.
  d = decode_plan(call(64, 32, 8, 1, 4096, 128, 0, false), 132);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(decode_scratch_bytes(d, 128), 0u);
  // Speculative q_len 8 with group 4: 32 rows in two tiles; q_len 16 with group 8: 128 rows in two
  // chunks of 64 (four tiles each), each chunk a unit reading its KV head's keys.
  d = decode_plan(call(32, 32, 8, 8, 4096, 128, 0, false), 132);
  EXPECT_EQ(d.rows, 32);
  EXPECT_EQ(d.row_tiles, 2);
  EXPECT_EQ(d.row_chunks, 1);
  d = decode_plan(call(4, 32, 4, 16, 4096, 64, 0, false), 132);
  EXPECT_EQ(d.rows, 128);
  EXPECT_EQ(d.chunk_rows, 64);
  EXPECT_EQ(d.row_tiles, 4);
  EXPECT_EQ(d.row_chunks, 2);
  EXPECT_EQ(d.block_n, 128);
  EXPECT_EQ(d.units, 4 * 4 * 2);
  // Three rows (q_len 3, MHA) still take a whole tile; no keys: no split.
  EXPECT_EQ(decode_plan(call(2, 8, 8, 3, 65, 128, 0, false), 132).row_tiles, 1);
  EXPECT_EQ(decode_plan(call(2, 8, 8, 1, 0, 128, 0, false), 132).splits, 1);
}

TEST(FusedSchedule, DecodeSplitsFillTheGpuWithoutEmptyOrTinySplits) {
  for (long long units : {1LL, 2LL, 7LL, 8LL, 33LL, 100LL, 211LL, 212LL, 264LL, 1000LL})
    for (int blocks : {1, 2, 3, 16, 127, 2048}) {
      const int s = decode_splits(units, 264, blocks);
      ASSERT_GE(s, 1);
      EXPECT_LE(s, kDecodeMaxSplits);
      if (units * 5 >= 264 * 4) {
        EXPECT_EQ(s, 1) << units;  // 80% of the slots: no split
        continue;
      }
      if (s > 1) {
        EXPECT_GE(blocks / s, 2) << units << " " << blocks;  // two key blocks a split at least
      }
      // No count of splits in one wave (two blocks each at least, up to the cap) leaves the busiest SM
      // fewer key blocks; one with as few and fewer splits only where the choice keeps long splits.
      EXPECT_TRUE(s == 1 || units * s <= 264) << units << " " << blocks;
      const long long chosen = busiest_sm_blocks(units, s, blocks, 132);
      const bool long_wave = (blocks + s - 1) / s >= kDecodeLongSplit;
      for (int t = 1; t <= std::min(kDecodeMaxSplits, std::max(1, blocks / 2)); ++t) {
        if (t > 1 && units * t > 264) break;
        EXPECT_GE(busiest_sm_blocks(units, t, blocks, 132), chosen) << units << " " << blocks << " " << t;
        if (t < s && !long_wave) {
          EXPECT_GT(busiest_sm_blocks(units, t, blocks, 132), chosen) << units << " " << blocks << " " << t;
        }
      }
    }
  // One KV head of 128k keys (2048 blocks of 64) spreads over the GPU's slots.
  EXPECT_GE(decode_splits(1, 264, 2048), 100);
}

// The decode kernel's TMA boxes: a dense tensor's key block whole; a paged cache's a block or a page, the
// pages a serving engine uses (16-256 tokens) all boxed; other sizes copied by cp.async. A box never
// spans two pages, and whole boxes make a block.
TEST(FusedSchedule, DecodeTmaBoxesNeverSpanTwoPages) {
  for (int d : {64, 128}) {
    const int block = decode_block_n(d);
    EXPECT_EQ(decode_tma_box_keys(d, 0), block) << d;
    for (int page : {16, 32, 64, 128, 256, 512}) EXPECT_GT(decode_tma_box_keys(d, page), 0) << d << " " << page;
    for (int page : {1, 7, 8, 48, 96, 100, 1000}) EXPECT_EQ(decode_tma_box_keys(d, page), 0) << d << " " << page;
    for (int page = 1; page <= 1024; ++page) {
      const int box = decode_tma_box_keys(d, page);
      if (box == 0) continue;
      EXPECT_EQ(page % box, 0) << d << " " << page;   // a box lies in one page
      EXPECT_EQ(block % box, 0) << d << " " << page;  // whole boxes make a block
      EXPECT_GE(box, kDecodeMinTmaPage) << d << " " << page;
    }
  }
}

TEST(FusedSchedule, DecodeKernelFitsTwoCtasAnSm) {
  for (int d : {64, 128}) {
    EXPECT_LE(kDecodeCtasPerSm * (decode_shared_bytes(d) + 1024), 228 * 1024) << d;
    // The key warps' merge slots fit in the stages' space.
    EXPECT_LE(4 * 32 * (d / 8 + 1) * 16, decode_shared_bytes(d)) << d;
  }
}

TEST(FusedSchedule, PagedAndRaggedCallsTakeTheDecodeKernel) {
  Params p = call(2, 8, 2, 1, 100, 128, 0, false);
  EXPECT_TRUE(takes_decode(p, Path::Automatic));  // dense, one query a sequence: chosen per call
  EXPECT_TRUE(takes_decode(p, Path::Decode));
  EXPECT_FALSE(takes_decode(p, Path::Hopper));  // a forced prefill path keeps its kernel on dense calls
  EXPECT_FALSE(takes_decode(call(2, 8, 2, 17, 100, 128, 0, false), Path::Automatic));  // q_len 17: prefill
  EXPECT_FALSE(takes_decode(call(2, 16, 1, 8, 100, 128, 0, false), Path::Automatic));  // 128 rows a KV head
  int table[2] = {0, 1}, lens[2] = {100, 5};
  p.block_table = table;
  p.page_size = 64;
  p.block_table_stride = 2;
  for (Path path : {Path::Automatic, Path::Hopper, Path::Portable, Path::Persistent})
    EXPECT_TRUE(takes_decode(p, path));
  p.block_table = nullptr;
  p.seq_lens = lens;
  EXPECT_TRUE(takes_decode(p, Path::OneTile));
  EXPECT_TRUE(use_decode(1, 8));
  EXPECT_TRUE(use_decode(16, 4));
  EXPECT_FALSE(use_decode(16, 8));  // 128 rows: two chunks, each reading the keys
  EXPECT_FALSE(use_decode(17, 1));
}
