// The fused kernels' own view of one attention call: what crosses into the
// kernels as a by-value parameter (flash-attention's Flash_fwd_params idea).
// It is derived in one place, from the project-wide AttentionParams, next to
// the launch (attention_fn.cpp); nothing else builds one. CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attention/params.h"

namespace attnprof::fused {

struct Params {
  const void* q = nullptr;  // [batch, heads, q_len, head_dim] through the q strides
  const void* k = nullptr;  // [batch, kv_heads, kv_len, head_dim] through the k strides
  const void* v = nullptr;  // like k
  void* out = nullptr;      // like q, same dtype
  float* lse = nullptr;     // [batch, heads, q_len] contiguous, natural log; -inf where a row sees no key

  int batch = 0;
  int heads = 0;     // query heads
  int kv_heads = 0;  // divides heads: kv_heads == heads is MHA, 1 is MQA, else GQA
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;  // 64 or 128

  bool causal = false;  // query i sees keys j <= i + causal_offset
  // With seq_lens, bottom-right causal is per sequence: row i of sequence b sees keys j <= i + seq_lens[b] - q_len
  // (causal_offset is then unused). In the padding after `causal`: Params' size stays.
  bool causal_bottom_right = false;
  int causal_offset = 0;  // 0: top-left (PyTorch is_causal=True); kv_len - q_len: bottom-right
  float scale = 0.f;      // softmax scale, as AttentionParams gives it (never 0)
  attention::DType dtype = attention::DType::BF16;  // bf16 or fp16

  // Strides in elements; the head_dim stride is always 1.
  int64_t q_batch_stride = 0, q_head_stride = 0, q_seq_stride = 0;
  int64_t k_batch_stride = 0, k_head_stride = 0, k_seq_stride = 0;
  int64_t v_batch_stride = 0, v_head_stride = 0, v_seq_stride = 0;
  int64_t o_batch_stride = 0, o_head_stride = 0, o_seq_stride = 0;

  // The lab's per-tile timers (benchmarks/fused_lab/tile_timers.h): written only by its timed kernels.
  uint64_t* timers = nullptr;

  // The kernels' scratch (kernel_scratch; the caller's workspace past the lse): the split tail's
  // (split_tail_bytes; without enough of it the tail is not split) or the dynamic scheduler's counter.
  // For the split tail the launch carves it into the partial outputs and their flags, and sets tail_units
  // (split_tail_units; 0: no split).
  void* tail_workspace = nullptr;
  std::size_t tail_workspace_bytes = 0;
  float* tail_partial = nullptr;  // per CTA and consumer warpgroup: 128 threads x (head_dim / 8 + 1) float4
  int* tail_flags = nullptr;      // per CTA and consumer warpgroup: 1 once its partial is written, 0 once read
  int tail_units = 0;             // key blocks per CTA in the split tail

  // The dynamic causal scheduler: the tile counter the CTAs draw from and the count of CTAs done
  // drawing, which the last of them sets back to 0 (the stream's counters, stream_counters.h, else the
  // same workspace, zeroed before the launch), and the (batch, head)s per section of its longest-first
  // order (dynamic_section_heads).
  int sched_heads = 0;
  int* sched_counter = nullptr;

  // Paged KV and per-sequence lengths (AttentionParams' block_table, page_size, seq_lens): only the decode
  // kernel reads them (decode_kernel.cu); the others refuse such calls. Last, so that the Hopper kernels'
  // fields keep their offsets and Params its 256 bytes (hopper_kernel_traits.cuh).
  const int* block_table = nullptr;  // [batch, block_table_stride] page of each page_size keys; null: contiguous
  const int* seq_lens = nullptr;     // [batch] keys of each sequence (<= kv_len); null: kv_len each
  int block_table_stride = 0;
  int page_size = 0;
};

// What the backward adds to a forward call's Params (whose out and lse are the forward's): dO, strided
// like out; the gradients dq like q, dk like k and dv like v, in the call's dtype; and its scratch (backward_scratch):
// each row's dO . O (delta, [batch, heads, q_len]), dQ summed in fp32 ([batch, heads, q_len, head_dim]) and,
// for the Hopper kernel, each query block's rows as it copies them (block_rows, bwd_common.cuh) and, where
// it splits a group, dK and dV summed in fp32.
struct BackwardBuffers {
  const void* d_out = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  float* delta = nullptr;
  float* dq_accum = nullptr;
  float* block_rows = nullptr;
  // The Hopper kernel's dK and dV where it splits a GQA group's query heads over CTAs
  // (hopper_bwd_head_split > 1): fp32 sums [batch, kv_heads, kv_len, head_dim], zeroed before it, converted
  // after; null otherwise.
  float* dk_accum = nullptr;
  float* dv_accum = nullptr;
};

// The split tail's scratch for a grid of `ctas` CTAs of two consumer warpgroups: each CTA's one
// partial output (a thread's accumulator fragment as head_dim / 8 float4, its rows' maximum and
// sum as one more) and a flag per warpgroup.
constexpr std::size_t split_tail_partial_bytes(int ctas, int head_dim) {
  return std::size_t(ctas) * 2 * 128 * std::size_t(head_dim / 8 + 1) * 16;
}
constexpr std::size_t split_tail_bytes(int ctas, int head_dim) {
  return split_tail_partial_bytes(ctas, head_dim) + std::size_t(ctas) * 2 * sizeof(int);
}

// The key blocks (of bn keys) a tile of query rows ending at row_end reads: all of them, or if
// causal those up to the last row's last visible key (row min(row_end, q_len) - 1 sees keys up to
// that plus causal_offset). None for a tile whose rows all see no key (bottom-right causal with
// q_len > kv_len): the kernels load no K/V for it (the Hopper ones not its Q either) and write zeros
// and an lse of -inf, as for any row without a visible key (FlashAttention skips such tiles too).
// Host and device.
constexpr int key_blocks(const Params& p, int row_end, int bn) {
  const int all = (p.kv_len + bn - 1) / bn;
  if (!p.causal || all == 0) return all;
  const int last_row_end = row_end < p.q_len ? row_end : p.q_len;
  const int visible = last_row_end + p.causal_offset;  // keys the tile's last row sees, if <= kv_len
  if (visible <= 0) return 0;
  const int needed = (visible + bn - 1) / bn;
  return needed < all ? needed : all;
}

// The query tiles of block_m rows (per batch and head) that read no key block (key_blocks 0): tiles
// 0 .. n - 1, whose last row i sees no key j <= i + causal_offset. Bottom-right causal with
// q_len - kv_len >= block_m; with no keys at all none (the kernels do not run, every row is zero).
constexpr int keyless_tiles(const Params& p, int block_m) {
  if (!p.causal || p.kv_len <= 0 || p.causal_offset >= 0 || block_m <= 0) return 0;
  return -p.causal_offset / block_m;  // (m + 1) * block_m <= -causal_offset < q_len
}

// The persistent grid's work items per (batch, head): its query tiles of block_m rows, or if causal
// pairs of them (query blocks M-1-k and k, hopper_tile_scheduler.cuh), so that items carry equal work.
constexpr int persistent_items_per_head(const Params& p, int block_m) {
  const int m_tiles = (p.q_len + block_m - 1) / block_m;
  return p.causal ? (m_tiles + 1) / 2 : m_tiles;
}
constexpr long long persistent_items(const Params& p, int block_m) {
  return static_cast<long long>(persistent_items_per_head(p, block_m)) * p.heads * p.batch;
}

// The dynamic scheduler's order (hopper_tile_scheduler.cuh): tile t of the `m_tiles` x `heads` query tiles of a call
// (heads: batch x heads, flattened as b * heads + h). Sections of `section_heads` heads (the last may
// have fewer), one after another, each walked longest first: query block m_tiles-1 of every head of the
// section, then m_tiles-2, ... Host and device.
struct DrawnTile {
  int m_block;
  int head;  // b * heads + h
};
constexpr DrawnTile drawn_tile(int t, int m_tiles, int heads, int section_heads) {
  const int section_tiles = section_heads * m_tiles;
  const int section = t / section_tiles, r = t - section * section_tiles;
  const int first = section * section_heads;
  const int in_section = section_heads < heads - first ? section_heads : heads - first;
  const int mi = r / in_section;
  return {m_tiles - 1 - mi, first + r - mi * in_section};
}

// Whether key block n (bn keys from n * bn) needs masking for query rows from first_row on: it
// runs past kv_len, or (causal) its last key lies beyond first_row's diagonal.
constexpr bool block_needs_mask(const Params& p, int n, int bn, int first_row) {
  return (n + 1) * bn > p.kv_len || (p.causal && (n + 1) * bn - 1 > first_row + p.causal_offset);
}

}  // namespace attnprof::fused
