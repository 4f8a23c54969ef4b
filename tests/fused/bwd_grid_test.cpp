// The Hopper backward's grid (bwd_grid.h) against the definition: over every CTA of the 1-D grid and every
// item it walks, each (batch, query head, query block, key block) whose rows see a key of the block (query i
// sees key j when j < kv_len and, if causal, j <= i + offset) is taken exactly once, by a CTA of the query
// head's KV head, and nothing outside the shape is, whatever the sections; causal grids go a wave's worth of
// (batch, KV head, part)s at a time (hopper_bwd_section), each section's longest CTAs first; a CTA walks its
// heads in turn and each head's query blocks first to last; and the split of a grid under one wave
// (hopper_bwd_head_split) is the least that gives every SM a CTA, as far as the group divides.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bwd_grid.h"

using attnprof::fused::hopper_bwd_block_m;
using attnprof::fused::hopper_bwd_cta;
using attnprof::fused::hopper_bwd_ctas;
using attnprof::fused::hopper_bwd_head_split;
using attnprof::fused::hopper_bwd_key_blocks;
using attnprof::fused::hopper_bwd_section;
using attnprof::fused::HopperBwdCta;
using attnprof::fused::kHopperBwdBlockN;
using attnprof::fused::Params;

namespace {

struct Shape {
  int batch, heads, kv_heads, q_len, kv_len, head_dim;
  bool causal, bottom_right;
};

Params params(const Shape& s) {
  const bool bottom_right = s.causal && s.bottom_right;
  return Params{.batch = s.batch,
                .heads = s.heads,
                .kv_heads = s.kv_heads,
                .q_len = s.q_len,
                .kv_len = s.kv_len,
                .head_dim = s.head_dim,
                .causal = s.causal,
                .causal_bottom_right = bottom_right,
                .causal_offset = bottom_right ? s.kv_len - s.q_len : 0};
}

std::string describe(const Shape& s, int sms) {
  std::ostringstream o;
  o << "B" << s.batch << " H" << s.heads << "/" << s.kv_heads << " Sq" << s.q_len << " Skv" << s.kv_len << " D"
    << s.head_dim << (s.causal ? (s.bottom_right ? " causal bottom-right" : " causal") : " full") << ", " << sms
    << " SMs";
  return o.str();
}

// Whether a row of query block m (below q_len) sees a key of key block kb (below kv_len).
bool block_sees(const Params& p, int bm, int m, int kb) {
  for (int i = m * bm; i < (m + 1) * bm && i < p.q_len; ++i)
    for (int j = kb * kHopperBwdBlockN; j < (kb + 1) * kHopperBwdBlockN && j < p.kv_len; ++j)
      if (!p.causal || j <= i + p.causal_offset) return true;
  return false;
}

const std::vector<Shape> kShapes = {
    {8, 8, 2, 1024, 1024, 128, true, false},      // 128 CTAs: split 2 on 132 SMs
    {4, 32, 8, 1024, 1024, 128, true, false},     // 256 CTAs: no split on 132 SMs
    {2, 32, 8, 4096, 4096, 128, true, false},     // 512 CTAs: no split
    {1, 16, 1, 4096, 4096, 128, true, false},     // MQA, 32 CTAs: split 8
    {1, 8, 1, 2048, 2048, 64, false, false},      // a full mask, 16 CTAs: split 8, the whole group
    {4, 16, 16, 2048, 2048, 64, true, false},     // MHA
    {1, 4, 1, 113, 203, 128, true, false},        // odd lengths, MQA
    {1, 4, 1, 113, 203, 128, true, true},         // bottom-right, fewer queries than keys
    {1, 6, 2, 517, 300, 64, true, true},          // bottom-right, more queries than keys (rows that see none)
    {1, 6, 2, 517, 300, 64, true, false},         // group 3: no split
    {3, 8, 2, 1000, 1000, 128, false, false},     // a full mask, 48 CTAs: split 2 on 132 SMs (4 takes two waves)
    {2, 16, 4, 1, 4096, 64, true, true},          // one query row
    {8, 8, 2, 1024, 1024, 128, false, false},     // a full mask, 128 CTAs: no split (2 takes two waves)
    {1, 16, 1, 4096, 4096, 128, false, false},    // MQA, a full mask, 32 CTAs: split 4
    {1, 32, 8, 8192, 8192, 128, true, false},     // 512 CTAs, 64 key blocks a KV head
    {1, 16, 16, 16384, 16384, 128, true, false},  // MHA, 128 key blocks a head
};

}  // namespace

TEST(HopperBackwardGrid, EveryVisiblePairOnceByItsKvHead) {
  for (const Shape& s : kShapes)
    for (const int sms : {1, 8, 132})
      for (const int section : {3, -1}) {  // -1: the product's (hopper_bwd_section)
        const Params p = params(s);
        const int split = hopper_bwd_head_split(p, sms), bm = hopper_bwd_block_m(s.head_dim);
        const int group = s.heads / s.kv_heads;
        const std::string at = describe(s, sms) + " section " + std::to_string(section);
        ASSERT_EQ(group % split, 0) << at;
        std::map<std::tuple<int, int, int, int>, int> taken;  // (batch, head, query block, key block)
        std::map<std::tuple<int, int, int, int>, int> ctas;   // (batch, KV head, first query head, key block)
        for (int x = 0; x < hopper_bwd_ctas(p, split); ++x) {
          const HopperBwdCta c =
              hopper_bwd_cta(p, s.head_dim, split, x, section < 0 ? hopper_bwd_section(p, sms) : section);
          ASSERT_TRUE(c.batch >= 0 && c.batch < s.batch && c.kv_head >= 0 && c.kv_head < s.kv_heads) << at;
          ASSERT_EQ(c.heads, group / split) << at;
          ASSERT_TRUE(c.head0 >= c.kv_head * group && c.head0 + c.heads <= (c.kv_head + 1) * group) << at;
          ++ctas[{c.batch, c.kv_head, c.head0, c.key_block}];
          for (int it = 0; it < c.items(); ++it) {
            const int h = c.head(it), row0 = c.row0(it, bm);
            ASSERT_TRUE(h >= c.head0 && h < c.head0 + c.heads && row0 >= 0 && row0 < s.q_len) << at;
            ++taken[{c.batch, h, row0 / bm, c.key_block}];
          }
        }
        for (const auto& [cta, n] : ctas) EXPECT_EQ(n, 1) << at << ": a CTA twice";
        for (const auto& [pair, n] : taken) EXPECT_EQ(n, 1) << at << ": a (head, block, key block) twice";
        // Every pair whose rows see a key of the block is taken; one taken whose rows see none is a causal
        // block's rows past q_len only (its P is zero there).
        for (int b = 0; b < s.batch; ++b)
          for (int h = 0; h < s.heads; ++h)
            for (int m = 0; m * bm < s.q_len; ++m)
              for (int kb = 0; kb * kHopperBwdBlockN < s.kv_len; ++kb) {
                const bool sees = block_sees(p, bm, m, kb), took = taken.count({b, h, m, kb}) > 0;
                if (sees) {
                  EXPECT_TRUE(took) << at << ": head " << h << " block " << m << " key block " << kb;
                }
                if (took && !sees) {
                  EXPECT_TRUE(s.causal) << at;
                  EXPECT_GE(kb * kHopperBwdBlockN - p.causal_offset, s.q_len) << at << ": key block " << kb;
                }
              }
      }
}

TEST(HopperBackwardGrid, CausalSectionsLongestFirstAndHeadByHead) {
  for (const Shape& s : kShapes)
    for (const int sms : {8, 132}) {
      const Params p = params(s);
      const int split = hopper_bwd_head_split(p, sms), bm = hopper_bwd_block_m(s.head_dim);
      const int section = hopper_bwd_section(p, sms), key_blocks = hopper_bwd_key_blocks(p);
      const std::string at = describe(s, sms);
      // A section's CTAs: those of `section` (batch, KV head, part)s, all their key blocks, in a row.
      const int per_section = s.causal ? section * key_blocks : 0;
      std::map<int, std::set<std::tuple<int, int, int>>> units;  // section -> (batch, KV head, first head)
      for (int x = 0; x < hopper_bwd_ctas(p, split); ++x) {
        const HopperBwdCta c = hopper_bwd_cta(p, s.head_dim, split, x, section);
        if (s.causal) {
          units[x / per_section].insert({c.batch, c.kv_head, c.head0});
          if (x % per_section > 0) {
            EXPECT_LE(c.items(), hopper_bwd_cta(p, s.head_dim, split, x - 1, section).items()) << at;
          }
        }
        // (head, query block) rises item by item: the heads in turn, each head's blocks first to last.
        for (int it = 1; it < c.items(); ++it) {
          const std::pair<int, int> before{c.head(it - 1), c.row0(it - 1, bm)}, now{c.head(it), c.row0(it, bm)};
          EXPECT_LT(before, now) << at;
          if (now.first != before.first) {
            EXPECT_EQ(now.second, c.m_first * bm) << at << ": a head starts at the first block";
          }
        }
      }
      const int parts = s.batch * s.kv_heads * split;
      for (const auto& [sec, in] : units) {
        EXPECT_EQ(int(in.size()), std::min(section, parts - sec * section)) << at << ": section " << sec;
      }
    }
}

// A causal grid's sections are as many (batch, KV head, part)s as give one wave of key blocks (at least one);
// a full mask's grid has none.
TEST(HopperBackwardGrid, SectionsFillOneWave) {
  for (const Shape& s : kShapes)
    for (const int sms : {1, 8, 132, 264}) {
      const Params p = params(s);
      const int section = hopper_bwd_section(p, sms), key_blocks = hopper_bwd_key_blocks(p);
      const std::string at = describe(s, sms);
      if (!s.causal) {
        EXPECT_EQ(section, 0) << at;
        continue;
      }
      EXPECT_GE(section, 1) << at;
      if (section > 1) {
        EXPECT_LE(section * key_blocks, sms) << at;
      }
      EXPECT_GT((section + 1) * key_blocks, sms) << at << ": a section short of a wave";
    }
  // On an H100's 132 SMs, the shapes measured in docs/hopper-backward.md section 12 (their best sections).
  EXPECT_EQ(hopper_bwd_section(params(kShapes[2]), 132), 4);   // B2 H32/8 S4k: 32 key blocks
  EXPECT_EQ(hopper_bwd_section(params(kShapes[14]), 132), 2);  // B1 H32/8 S8k: 64
  EXPECT_EQ(hopper_bwd_section(params(kShapes[15]), 132), 1);  // B1 H16 S16k: 128
  EXPECT_EQ(hopper_bwd_section(params(kShapes[0]), 132), 16);  // B8 H8/2 S1k: 8
}

// The split is, as far as the group's power-of-two divisors go, for a causal mask the least power of two that
// gives every SM a CTA, for a full mask the most that keeps the grid in one wave.
TEST(HopperBackwardGrid, SplitFillsOneWave) {
  for (const Shape& s : kShapes)
    for (const int sms : {1, 8, 132, 264}) {
      const Params p = params(s);
      const int split = hopper_bwd_head_split(p, sms), group = s.heads / s.kv_heads;
      const std::int64_t ctas = hopper_bwd_ctas(p, 1);
      const std::string at = describe(s, sms);
      EXPECT_EQ(split & (split - 1), 0) << at;
      if (split > 1 && s.causal) {
        EXPECT_LT(ctas * (split / 2), sms) << at << ": more split than needed";
      }
      if (split > 1 && !s.causal) {
        EXPECT_LE(ctas * split, sms) << at << ": a full mask's second wave";
      }
      const bool halves = s.causal ? ctas * split < sms : ctas * split * 2 <= sms;
      EXPECT_TRUE(!halves || group % (2 * split) != 0) << at << ": less split than the rule";
    }
  // On an H100's 132 SMs, the shapes measured in docs/hopper-backward.md section 10.
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[0]), 132), 2);   // B8 H8/2 S1k: 128 CTAs
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[1]), 132), 1);   // B4 H32/8 S1k: 256
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[3]), 132), 8);   // B1 H16/1 S4k: 32
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[4]), 132), 8);   // full mask, group 8: 16 CTAs
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[10]), 132), 2);  // full mask, 48 CTAs
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[12]), 132), 1);  // B8 H8/2 S1k full: 128 CTAs
  EXPECT_EQ(hopper_bwd_head_split(params(kShapes[13]), 132), 4);  // B1 H16/1 S4k full: 32 CTAs
}
