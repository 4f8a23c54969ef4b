// Fresh random q, k, v on the host in a shape's dtype and layout (normal(0,1),
// never zeros), the params that point at them, and the NaN poison for outputs:
// the one input generator of the bench and the fused-kernel lab.
#pragma once

#include <cstdint>
#include <vector>

#include "attention/params.h"

namespace attnprof::attention {

struct HostInputs {
  std::vector<std::uint8_t> q, k, v, out;
  AttentionParams params;  // points at the vectors above
};

// `shape` supplies sizes, dtype, layout, causal and scale; its pointers are ignored.
HostInputs make_host_inputs(const AttentionParams& shape, unsigned seed);
// A random tensor the size of `shape`'s output (normal(0,1), out's dense strides): the dO a
// backward is given.
std::vector<std::uint8_t> random_like_out(const AttentionParams& shape, unsigned seed);
// 0xff bytes: NaN in bf16, fp16 and fp32.
void poison(std::vector<std::uint8_t>& bytes);

// The keys of `in` as a serving engine's cache holds them: per sequence its own length (seq_lens[b] of
// in's kv_len keys), and, with page_size > 0, in pages of page_size tokens laid out [page, token, kv head,
// dim] (vLLM's and FlashInfer's NHD) in a shuffled order a block table gives. Where no key lives (past a
// sequence's length, the spare pages) the bytes are NaN, so an implementation that reads them shows.
struct HostKvCache {
  std::vector<std::uint8_t> k, v;  // page_size 0: in's dense k and v, NaN past each sequence
  std::vector<int> block_table;    // [batch, pages_per_seq]; empty when not paged
  std::vector<int> seq_lens;       // [batch]
  int pages_per_seq = 0;
  int page_size = 0;
  TensorStrides strides;  // of k and v: between pages (or batches), heads, tokens
};
HostKvCache make_kv_cache(const HostInputs& in, int page_size, const std::vector<int>& seq_lens, unsigned seed);
// Lengths for a ragged batch of `batch` sequences of at most kv_len keys: the first kv_len, the others
// spread below it (one of 1 key, one empty when batch > 3), deterministic.
std::vector<int> ragged_lengths(int batch, int kv_len);

}  // namespace attnprof::attention
