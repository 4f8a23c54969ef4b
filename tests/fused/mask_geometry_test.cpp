// The kernels' causal geometry (fused_params.h: key_blocks, block_needs_mask) against the
// definition, cell by cell: query i sees key j when j < kv_len and, if causal, j <= i + offset
// (offset 0: top-left, PyTorch's is_causal; kv_len - q_len: bottom-right). For every tile of
// every shape: the key blocks a tile reads cover every key any of its rows sees, no block past
// them holds one, and every block the kernel leaves unmasked has no hidden cell in its rows.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fused_params.h"

using attnprof::fused::block_needs_mask;
using attnprof::fused::key_blocks;
using attnprof::fused::keyless_tiles;
using attnprof::fused::Params;

namespace {

bool visible(const Params& p, int i, int j) { return j < p.kv_len && (!p.causal || j <= i + p.causal_offset); }

// Checks every tile of bm rows (split into warpgroups of wg rows, as the Hopper consumers
// mask from their own first row) against bn-key blocks.
void check_geometry(const Params& p, int bm, int bn, int wg) {
  const std::string shape = "q " + std::to_string(p.q_len) + " kv " + std::to_string(p.kv_len) + " offset " +
                            std::to_string(p.causal_offset) + (p.causal ? " causal" : "") + " bm " +
                            std::to_string(bm) + " bn " + std::to_string(bn);
  int tiles_seeing_nothing = 0;  // tiles whose real rows see no key (the kept-zeros kernel's keyless tiles)
  for (int m = 0; m * bm < p.q_len; ++m) {
    const int n_blocks = key_blocks(p, (m + 1) * bm, bn);
    int last_seen = -1;  // the last key block with a visible cell in this tile's real rows
    for (int i = m * bm; i < (m + 1) * bm && i < p.q_len; ++i)
      for (int j = 0; j < p.kv_len; ++j)
        if (visible(p, i, j)) last_seen = j / bn > last_seen ? j / bn : last_seen;
    if (p.kv_len == 0) {
      EXPECT_EQ(n_blocks, 0) << shape;
      continue;
    }
    tiles_seeing_nothing += last_seen < 0;
    // Every visible key is read and nothing past the last visible block; a tile whose rows see
    // nothing reads no block (it writes zeros).
    EXPECT_EQ(n_blocks, last_seen + 1) << shape << " tile " << m;
    for (int n = 0; n < n_blocks; ++n)
      for (int w = 0; w < bm; w += wg) {
        const int first_row = m * bm + w;
        if (block_needs_mask(p, n, bn, first_row)) continue;
        // Unmasked: every cell of the block in these rows (padding rows past q_len included,
        // their scores are computed too) must be visible.
        for (int i = first_row; i < first_row + wg; ++i)
          for (int j = n * bn; j < (n + 1) * bn; ++j)
            ASSERT_TRUE(visible(p, i, j)) << shape << " tile " << m << " block " << n << " row " << i << " key " << j;
      }
  }
  EXPECT_EQ(keyless_tiles(p, bm), tiles_seeing_nothing) << shape;
}

Params shape(int q_len, int kv_len, bool causal, bool bottom_right) {
  Params p;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.causal = causal;
  p.causal_offset = causal && bottom_right ? kv_len - q_len : 0;
  return p;
}

}  // namespace

TEST(FusedMaskGeometry, TilesReadEveryVisibleKeyAndMaskEveryHiddenOne) {
  // The kernels' tiles (tile_table.h): portable 64 x 64 masked from the tile's first row; Hopper
  // 128 x 128 and 192 x 128, each consumer warpgroup masking from its own first row (64 rows).
  const int tiles[][3] = {{64, 64, 64}, {128, 128, 64}, {192, 128, 64}};
  const int lengths[][2] = {{1, 1},    {17, 17},  {128, 128}, {300, 700}, {257, 2049},  {777, 129},
                            {300, 40}, {1, 1000}, {1000, 1},  {129, 0},   {2049, 2049}, {512, 8192}};
  for (const auto& t : tiles)
    for (const auto& l : lengths)
      for (bool causal : {false, true})
        for (bool bottom_right : {false, true}) {
          if (bottom_right && !causal) continue;
          check_geometry(shape(l[0], l[1], causal, bottom_right), t[0], t[1], t[2]);
        }
}

TEST(FusedMaskGeometry, BottomRightShiftsTheDiagonalByTheLengthDifference) {
  // Chunked prefill: 256 new queries after 1792 cached keys; the first query row sees 1793 keys.
  const Params p = shape(256, 2048, true, true);
  EXPECT_EQ(p.causal_offset, 1792);
  EXPECT_EQ(key_blocks(p, 128, 128), (1792 + 128 + 127) / 128);  // rows 0..127 see up to key 1919
  EXPECT_EQ(key_blocks(p, 256, 128), 16);                        // the last tile sees all 2048
  EXPECT_FALSE(block_needs_mask(p, 13, 128, 0));                 // keys 1664..1791: every row sees them
  EXPECT_TRUE(block_needs_mask(p, 14, 128, 0));                  // key 1793 is hidden from row 0
  // Top-left, the same lengths: the first tile reads one block.
  EXPECT_EQ(key_blocks(shape(256, 2048, true, false), 128, 128), 1);
  // 8192 queries over 512 keys: rows below 7680 see nothing, so their tiles read no block; the
  // last tile reads all four.
  const Params tall = shape(8192, 512, true, true);
  EXPECT_EQ(key_blocks(tall, 7680, 128), 0);
  EXPECT_EQ(key_blocks(tall, 7681, 128), 1);  // row 7680 sees key 0
  EXPECT_EQ(key_blocks(tall, 8192, 128), 4);
  // Keyless tiles of 128 rows: the first 7680 rows, 60 tiles; from q_len - kv_len = 128 on one.
  EXPECT_EQ(keyless_tiles(tall, 128), 60);
  EXPECT_EQ(keyless_tiles(shape(256, 128, true, true), 128), 1);
  EXPECT_EQ(keyless_tiles(shape(256, 129, true, true), 128), 0);    // row 127 sees key 0
  EXPECT_EQ(keyless_tiles(shape(8192, 512, true, false), 128), 0);  // top-left: row 0 sees key 0
  EXPECT_EQ(keyless_tiles(shape(8192, 512, false, false), 128), 0);
  EXPECT_EQ(keyless_tiles(shape(8192, 0, true, true), 128), 0);  // no keys at all: no kernel runs
}

TEST(FusedMaskGeometry, PersistentItemsAreTilesOrCausalPairs) {
  Params p = shape(1000, 1000, false, false);  // 8 query tiles of 128 rows
  p.heads = 2;
  p.batch = 3;
  EXPECT_EQ(attnprof::fused::persistent_items_per_head(p, 128), 8);
  EXPECT_EQ(attnprof::fused::persistent_items(p, 128), 8 * 2 * 3);
  p.causal = true;  // pairs (7, 0), (6, 1), ...
  EXPECT_EQ(attnprof::fused::persistent_items_per_head(p, 128), 4);
  p.q_len = 1100;  // 9 tiles: the middle one alone in the fifth item
  EXPECT_EQ(attnprof::fused::persistent_items_per_head(p, 128), 5);
  EXPECT_EQ(attnprof::fused::persistent_items(p, 128), 5 * 2 * 3);
}

// Version 29's order: every (query tile, head) drawn exactly once; the heads in contiguous sections
// of at most section_heads, one section's tiles before the next's; inside a section no tile drawn
// after a shorter one (causal: a lower query block sees fewer keys), and each head's tiles from the
// last query block down. Shapes with even and uneven last sections, one tile per head, one section.
TEST(FusedMaskGeometry, DrawnTilesCoverEveryTileOnceLongestFirstPerSection) {
  using attnprof::fused::drawn_tile;
  struct Case {
    int m_tiles, heads, section_heads;
  };
  for (const Case c : {Case{16, 256, 64}, Case{17, 64, 22}, Case{33, 32, 11}, Case{4, 1024, 256}, Case{1, 7, 3},
                       Case{5, 7, 7}, Case{3, 10, 1}}) {
    const std::string name = std::to_string(c.m_tiles) + " tiles x " + std::to_string(c.heads) + " heads / " +
                             std::to_string(c.section_heads);
    std::vector<int> seen(std::size_t(c.m_tiles) * c.heads, 0);
    std::vector<int> next_m(c.heads, c.m_tiles - 1);  // each head's tiles come from the last one down
    int section = 0, prev_m = c.m_tiles;
    for (int t = 0; t < c.m_tiles * c.heads; ++t) {
      const auto d = drawn_tile(t, c.m_tiles, c.heads, c.section_heads);
      ASSERT_GE(d.m_block, 0) << name << " t " << t;
      ASSERT_LT(d.m_block, c.m_tiles) << name << " t " << t;
      ASSERT_GE(d.head, 0) << name << " t " << t;
      ASSERT_LT(d.head, c.heads) << name << " t " << t;
      ++seen[std::size_t(d.head) * c.m_tiles + d.m_block];
      const int s = d.head / c.section_heads;
      ASSERT_GE(s, section) << name << ": section " << s << " after " << section << " at t " << t;
      if (s > section) prev_m = c.m_tiles;  // a new section starts over from the longest
      section = s;
      EXPECT_LE(d.m_block, prev_m) << name << ": a longer tile after a shorter one at t " << t;
      prev_m = d.m_block;
      EXPECT_EQ(d.m_block, next_m[d.head]) << name << " head " << d.head;
      --next_m[d.head];
    }
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << name << " tile " << i;
  }
}
