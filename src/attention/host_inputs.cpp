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

}  // namespace attnprof::attention
