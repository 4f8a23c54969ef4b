// The tile table: every supported (path, head dim) has one row that fits the
// hardware limits the kernels assume.
#include "tile_table.h"

#include <gtest/gtest.h>

#include "fused_params.h"

using namespace attnprof::fused;

TEST(FusedTileTable, EveryRowSetAndHeadDimHasOneBaseRow) {
  for (TileRows rows : {TileRows::Portable, TileRows::Hopper, TileRows::HopperWide})
    for (int d : {64, 128}) {
      int base_rows = 0;
      for (const TileConfig& t : kTileTable) base_rows += t.rows == rows && t.head_dim == d && t.min_q_len == 0;
      EXPECT_EQ(base_rows, 1) << "rows " << int(rows) << " D " << d;
      EXPECT_EQ(tile_for(rows, d).head_dim, d);
      EXPECT_EQ(tile_for(rows, d, 1 << 30).head_dim, d);
    }
  EXPECT_EQ(tile_for(TileRows::Hopper, 96).head_dim, 0);
}

TEST(FusedTileTable, LongestMatchingMinimumLengthWins) {
  EXPECT_EQ(tile_for(TileRows::Hopper, 64, 2047).block_m, 128);
  EXPECT_EQ(tile_for(TileRows::Hopper, 64, 2048).block_m, 192);
  EXPECT_EQ(tile_for(TileRows::Hopper, 64, 16384).block_m, 192);
  EXPECT_EQ(tile_for(TileRows::Hopper, 128, 16384).block_m, 128);
  EXPECT_EQ(tile_for(TileRows::Portable, 64, 16384).block_m, 64);
}

TEST(FusedTileTable, PortableRowsFitSm80) {
  for (const TileConfig& t : kTileTable) {
    if (t.rows != TileRows::Portable) continue;
    EXPECT_EQ(t.block_m, 16 * t.threads / 32) << "one warp per 16 query rows";
    EXPECT_EQ(t.block_n % 16, 0);
    EXPECT_LE(shared_bytes(t), 163 * 1024) << "sm_80 opt-in shared memory";
  }
}

TEST(FusedTileTable, HopperRowsFitSm90) {
  for (const TileConfig& t : kTileTable) {
    if (t.rows == TileRows::Portable) continue;
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
  // Three consumer warpgroups (BM=192) fit too.
  for (int d : {64, 128}) {
    const TileConfig t = with_consumers(tile_for(TileRows::Hopper, d), 3);
    EXPECT_EQ(t.block_m, 192);
    EXPECT_LE(shared_bytes(t), 227 * 1024);
    EXPECT_LE(producer_registers(t) * 128 + consumer_registers(t) * 128 * 3, 65536);
  }
}
