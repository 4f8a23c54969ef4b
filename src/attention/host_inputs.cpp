// Random inputs: one generator per thread-sized chunk, so a few hundred MB of
// inputs take well under a second on 2 cores.
#include "attention/host_inputs.h"

#include <algorithm>
#include <random>

#include "attention/cpu/head_slice.h"
#include "attention/cpu/storage.h"

namespace attnprof::attention {

namespace {

void fill_normal(std::vector<std::uint8_t>& buf, attention::DType dtype, unsigned seed) {
  const auto n = static_cast<std::int64_t>(buf.size() / attention::dtype_bytes(dtype));
  constexpr std::int64_t kChunk = 1 << 20;
  const auto chunks = static_cast<int>((n + kChunk - 1) / kChunk);
  attention::cpu::parallel_for(chunks, [&](int c) {
    std::mt19937 rng(seed * 7919u + static_cast<unsigned>(c));
    std::normal_distribution<float> dist;
    const std::int64_t end = std::min(n, (c + 1) * kChunk);
    for (std::int64_t i = c * kChunk; i < end; ++i) attention::cpu::store_element(buf.data(), dtype, i, dist(rng));
  });
}

}  // namespace

std::vector<std::uint8_t> random_like_out(const attention::AttentionParams& shape, unsigned seed) {
  std::vector<std::uint8_t> out(attention::dtype_bytes(shape.dtype) * shape.batch * shape.q_heads * shape.q_len *
                                shape.head_dim);
  fill_normal(out, shape.dtype, seed);
  return out;
}

void poison(std::vector<std::uint8_t>& bytes) { std::fill(bytes.begin(), bytes.end(), std::uint8_t{0xff}); }

HostInputs make_host_inputs(const attention::AttentionParams& shape, unsigned seed) {
  HostInputs in;
  in.params = shape;
  const auto& p = shape;
  const std::size_t e = attention::dtype_bytes(p.dtype);
  in.q.resize(e * p.batch * p.q_heads * p.q_len * p.head_dim);
  in.k.resize(e * p.batch * p.kv_heads * p.kv_len * p.head_dim);
  in.v.resize(in.k.size());
  in.out.resize(in.q.size());
  fill_normal(in.q, p.dtype, seed);
  fill_normal(in.k, p.dtype, seed + 1);
  fill_normal(in.v, p.dtype, seed + 2);
  poison(in.out);
  in.params.q = in.q.data();
  in.params.k = in.k.data();
  in.params.v = in.v.data();
  in.params.out = in.out.data();
  in.params.lse = nullptr;
  return in;
}

std::vector<int> ragged_lengths(int batch, int kv_len) {
  std::vector<int> lens(static_cast<std::size_t>(batch), kv_len);
  for (int b = 1; b < batch; ++b) lens[b] = static_cast<int>((static_cast<long long>(kv_len) * (b * 37 % 100)) / 100);
  if (batch > 1) lens[1] = std::min(kv_len, 1);
  if (batch > 3) lens[3] = 0;
  return lens;
}

HostKvCache make_kv_cache(const HostInputs& in, int page_size, const std::vector<int>& seq_lens, unsigned seed) {
  const AttentionParams& p = in.params;
  const std::size_t e = dtype_bytes(p.dtype), row = e * p.head_dim;
  HostKvCache c;
  c.seq_lens = seq_lens;
  c.page_size = page_size;
  std::vector<int> page_of;  // page index per (b, page of b)
  std::int64_t pages = 0;
  if (page_size > 0) {
    c.pages_per_seq = std::max(1, (p.kv_len + page_size - 1) / page_size);
    pages = std::int64_t(p.batch) * c.pages_per_seq + 3;  // three spare pages no table names
    std::vector<int> order(static_cast<std::size_t>(pages));
    for (std::int64_t i = 0; i < pages; ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    c.block_table.assign(order.begin(), order.begin() + std::int64_t(p.batch) * c.pages_per_seq);
    c.strides = {std::int64_t(page_size) * p.kv_heads * p.head_dim, p.head_dim, std::int64_t(p.kv_heads) * p.head_dim};
    c.k.assign(static_cast<std::size_t>(pages) * page_size * p.kv_heads * row, std::uint8_t{0xff});
  } else {
    c.strides = p.k_strides;
    c.k.assign(in.k.size(), std::uint8_t{0xff});
  }
  c.v = c.k;
  const auto* k = in.k.data();
  const auto* v = in.v.data();
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.kv_heads; ++h)
      for (int j = 0; j < std::min(p.kv_len, seq_lens[b]); ++j) {
        const std::int64_t src_k = (b * p.k_strides.batch + h * p.k_strides.head + j * p.k_strides.row) * e;
        const std::int64_t src_v = (b * p.v_strides.batch + h * p.v_strides.head + j * p.v_strides.row) * e;
        std::int64_t dst;
        if (page_size > 0) {
          const std::int64_t page = c.block_table[std::size_t(b) * c.pages_per_seq + j / page_size];
          dst = (page * c.strides.batch + h * c.strides.head + (j % page_size) * c.strides.row) * e;
        } else {
          dst = src_k;
        }
        std::copy(k + src_k, k + src_k + row, c.k.data() + dst);
        std::copy(v + src_v, v + src_v + row, c.v.data() + (page_size > 0 ? dst : src_v));
      }
  return c;
}

}  // namespace attnprof::attention
