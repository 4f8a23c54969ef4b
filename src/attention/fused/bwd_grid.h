// The Hopper backward's grid (bwd_sm90.cu), host and device alike: its tiles, how a small causal grid
// splits a GQA group over CTAs, and which keys, query heads and query blocks CTA x of its 1-D grid takes.
// Plain constexpr C++ (the CUDA sources compile with --expt-relaxed-constexpr), so that a CPU test checks the
// mapping against the definition (tests/fused/bwd_grid_test.cpp).
#pragma once

#include <cstdint>

#include "fused_params.h"

namespace attnprof::fused {

// The Hopper kernel's query rows a block: 64 at head dim 128, 128 at 64 (FlashAttention-3's causal tiles),
// and its keys a CTA.
constexpr int hopper_bwd_block_m(int head_dim) { return head_dim == 128 ? 64 : 128; }
inline constexpr int kHopperBwdBlockN = 128;

// How many CTAs share a (key block, batch, KV head) of the Hopper kernel, each taking group / split of the GQA
// group's query heads (their dK and dV then summed in fp32: BackwardBuffers::dk_accum). Causal CTAs differ in
// length (key block 0 sees every query block, the last few), so a grid of less than two CTAs an SM ends on
// its longest ones: B8 H8/2 S1k has 128 CTAs, the longest 64 items, the mean 36. Doubling the CTAs while the
// grid is under two an SM, as far as the group divides, brings the longest under the mean of a wave. A full
// mask's CTAs are equal: a split only adds the sums.
constexpr int hopper_bwd_head_split(const Params& p, int sms) {
  const int group = p.kv_heads > 0 ? p.heads / p.kv_heads : 1;
  const int64_t ctas = int64_t((p.kv_len + kHopperBwdBlockN - 1) / kHopperBwdBlockN) * p.kv_heads * p.batch;
  int split = 1;
  while (p.causal && ctas * split < 2 * int64_t(sms) && group % (2 * split) == 0) split *= 2;
  return split;
}

// The Hopper kernel's CTA `x` of its 1-D grid (hopper_bwd_ctas of them) and the items it walks. Causal: key
// block 0 of every (batch, KV head, part) first, then block 1, ...: the CTAs that see the most query blocks
// start first and the shortest fill the last wave (FlashAttention-3's longest-processing-time order; in
// launch order a late head's block 0 ran alone at the end). Otherwise a (batch, KV head, part)'s key blocks
// together. A CTA walks the query blocks that see a key of its block (causal skips those whose last row is
// left of its first key) for each of its query heads (the group's, or a part of it: split), the last block
// first and the heads inner, so that the CTAs of a head that start together (its key blocks, whatever their
// first query block) read the same Q and dO and add to the same dQ at about the same time, from L2.
struct HopperBwdCta {
  int key_block, batch, kv_head;
  int head0, heads;      // its query heads: head0 ..
  int m_first, m_tiles;  // its query blocks: m_first .. m_tiles - 1
  constexpr int items() const { return (m_tiles > m_first ? m_tiles - m_first : 0) * heads; }
  // Item it's query head and first row.
  constexpr int head(int it) const { return head0 + it % heads; }
  constexpr int row0(int it, int bm) const { return (m_tiles - 1 - it / heads) * bm; }
};
constexpr int64_t hopper_bwd_ctas(const Params& p, int split) {
  return int64_t((p.kv_len + kHopperBwdBlockN - 1) / kHopperBwdBlockN) * p.kv_heads * p.batch * split;
}
constexpr HopperBwdCta hopper_bwd_cta(const Params& p, int head_dim, int split, int x) {
  const int key_blocks = (p.kv_len + kHopperBwdBlockN - 1) / kHopperBwdBlockN, parts = p.kv_heads * p.batch * split;
  const int kb = p.causal ? x / parts : x % key_blocks;
  const int hbp = p.causal ? x % parts : x / key_blocks;
  const int part = hbp % split, hb = hbp / split, kv_head = hb % p.kv_heads;
  const int group = p.heads / p.kv_heads, bm = hopper_bwd_block_m(head_dim);
  int m_first = 0;
  if (p.causal) {
    const int first_row = kb * kHopperBwdBlockN - p.causal_offset;  // the first query row that sees the block
    m_first = first_row <= 0 ? 0 : first_row / bm;
  }
  return {kb,      hb / p.kv_heads,        kv_head, kv_head * group + part * (group / split), group / split,
          m_first, (p.q_len + bm - 1) / bm};
}

}  // namespace attnprof::fused
