// The Hopper backward's grid (bwd_sm90.cu), host and device alike: its tiles, how a small grid splits a
// GQA group over CTAs, and which keys, query heads and query blocks CTA x of its 1-D grid takes.
// Plain constexpr C++ (the CUDA sources compile with --expt-relaxed-constexpr), so that a CPU test checks the
// mapping against the definition (tests/fused/bwd_grid_test.cpp).
#pragma once

#include <cstdint>

#include "fused_params.h"

namespace attnprof::fused {

// The Hopper kernel's query rows a block, 64 at both head dims (FlashAttention-3's causal tile at D=128; at
// D=64 cuDNN's 64 x 64 tile, docs/hopper-backward.md section 13), and its keys a CTA.
constexpr int hopper_bwd_block_m(int) { return 64; }
inline constexpr int kHopperBwdBlockN = 128;
constexpr int hopper_bwd_key_blocks(const Params& p) { return (p.kv_len + kHopperBwdBlockN - 1) / kHopperBwdBlockN; }
// The grid: a CTA a key block, (batch, KV head) and part of the group (split parts: hopper_bwd_head_split).
constexpr int64_t hopper_bwd_ctas(const Params& p, int split) {
  return int64_t(hopper_bwd_key_blocks(p)) * p.kv_heads * p.batch * split;
}

// How many CTAs share a (key block, batch, KV head) of the Hopper kernel, each taking group / split of the GQA
// group's query heads (their dK and dV then summed in fp32: BackwardBuffers::dk_accum). A grid of less than
// one CTA an SM leaves SMs idle: B1 H16/1 S4k has 32 CTAs. The group is halved, as far as it divides:
// - causal: while the grid is under one wave. Its CTAs differ in length, so the step that crosses one wave
//   still pays: on an H100 (docs/hopper-backward.md section 10) B8 H8/2 S1k causal ran 0.244 ms unsplit (128
//   CTAs), 0.215 split 2, 0.240 split 4; B4 H32/8 S1k causal (256 CTAs) 0.366 unsplit and 0.456 split 2.
// - full mask: while the halved grid still fits one wave. Its CTAs are equal, so a second wave only adds the
//   sums' fp32 adds: B8 H8/2 S1k full ran 0.231 ms unsplit (128 CTAs) and 0.272 split 2; B1 H16/1 S4k full
//   (32 CTAs) 2.60 unsplit and 0.78 split 8 (cuDNN 0.67-0.70; this rule gives split 4, 128 CTAs).
constexpr int hopper_bwd_head_split(const Params& p, int sms) {
  const int group = p.kv_heads > 0 ? p.heads / p.kv_heads : 1;
  const int64_t ctas = hopper_bwd_ctas(p, 1);
  const auto halves = [&](int split) {
    return group % (2 * split) == 0 && (p.causal ? ctas * split < int64_t(sms) : ctas * split * 2 <= int64_t(sms));
  };
  int split = 1;
  while (halves(split)) split *= 2;
  return split;
}

// The Hopper kernel's CTA `x` of its 1-D grid (hopper_bwd_ctas of them) and the items it walks. Causal: in
// sections of (batch, KV head, part)s (hopper_bwd_section), key block 0 of each of the section's first,
// then block 1, ...: the CTAs that see the most query blocks start first and the shortest fill the
// section's last wave (FlashAttention-3's longest-processing-time order, in its L2 sections; in launch
// order a late head's block 0 ran on alone at the end). Otherwise a (batch, KV head, part)'s key blocks
// together. A CTA walks, for each of its query heads (the group's, or a part of it: split) in turn,
// the query blocks that see a key of its block (causal skips those whose last row is left of its first key),
// first to last: on an H100 this order ran B2 H32/8 S4k causal 6% faster than the heads inner with the last
// block first, which keeps a head's key blocks in phase (section 10).
struct HopperBwdCta {
  int key_block, batch, kv_head;
  int head0, heads;      // its query heads: head0 ..
  int m_first, m_tiles;  // its query blocks: m_first .. m_tiles - 1
  constexpr int blocks() const { return m_tiles > m_first ? m_tiles - m_first : 0; }
  constexpr int items() const { return blocks() * heads; }
  // Item it's query head and first row.
  constexpr int head(int it) const { return head0 + it / blocks(); }
  constexpr int row0(int it, int bm) const { return (m_first + it % blocks()) * bm; }
};
// How many (batch, KV head, part)s a causal grid runs at a time (hopper_bwd_cta's sections): as many as
// give one wave of their key blocks, at least one. All at once (LPT over the whole grid), the CTAs in flight
// spread over every head, whose Q, dO and fp32 dQ sums then pass through DRAM again and again: on an H100
// B2 H32/8 S4k causal read 1.60 GB and wrote 0.85 GB from DRAM in the main kernel (cuDNN's: 0.31 and
// 0.25); in sections of 4 (128 CTAs) 1.01 and 0.60, and 7% less time. Sections of fewer CTAs than a wave
// cut DRAM further (sections of 2: 0.44 and 0.23) but each section's longest CTAs then start late
// (docs/hopper-backward.md section 12). Full masks: 0, their key blocks are together already.
constexpr int hopper_bwd_section(const Params& p, int sms) {
  const int key_blocks = hopper_bwd_key_blocks(p);
  return !p.causal ? 0 : key_blocks > 0 && sms / key_blocks > 1 ? sms / key_blocks : 1;
}

// Causal grids go section by section: `section` (batch, KV head, part)s at a time (hopper_bwd_section; 0:
// all of them), each section's CTAs longest first.
constexpr HopperBwdCta hopper_bwd_cta(const Params& p, int head_dim, int split, int x, int section) {
  const int key_blocks = hopper_bwd_key_blocks(p), parts = p.kv_heads * p.batch * split;
  const int sec = section > 0 && section < parts ? section : parts;
  const int s = x / (sec * key_blocks), in_sec = parts - s * sec < sec ? parts - s * sec : sec;
  const int r = x - s * sec * key_blocks;
  const int kb = p.causal ? r / in_sec : x % key_blocks;
  const int hbp = p.causal ? s * sec + r % in_sec : x / key_blocks;
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
