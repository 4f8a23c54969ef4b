// Random attention inputs for tests: fresh normal(0,1) q, k, v in any dtype and
// layout, an output buffer poisoned with NaN, and params pointing at them.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attention/cpu/storage.h"
#include "attention/params.h"

namespace attnprof::attention::testing {

struct Shape {
  int batch, heads, kv_heads, q_len, kv_len, head_dim;
  bool causal;
  CausalAlign align = CausalAlign::top_left;
  DType dtype = DType::bf16;
  Layout layout = Layout::BHSD;
};

struct HostAttention {
  std::vector<std::uint8_t> q, k, v, out;
  AttentionParams params;
};

// A readable test name for a shape: b2h4kv2s17x45d64_causal_bf16_bhsd.
inline std::string shape_name(const Shape& s) {
  return fmt::format("b{}h{}kv{}s{}x{}d{}{}_{}_{}", s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                     s.causal ? (s.align == CausalAlign::top_left ? "_causal" : "_causalbr") : "", dtype_name(s.dtype),
                     layout_name(s.layout));
}

inline std::size_t tensor_bytes(DType dtype, int b, int h, int s, int d) {
  return dtype_bytes(dtype) * static_cast<std::size_t>(b) * h * s * d;
}

inline void fill_normal(std::vector<std::uint8_t>& buf, DType dtype, std::mt19937& rng) {
  std::normal_distribution<float> dist;
  const std::size_t n = buf.size() / dtype_bytes(dtype);
  for (std::size_t i = 0; i < n; ++i) cpu::store_element(buf.data(), dtype, static_cast<std::int64_t>(i), dist(rng));
}

inline void poison(std::vector<std::uint8_t>& buf) {
  // 0xff bytes are NaN in bf16, fp16 and fp32 alike.
  for (auto& byte : buf) byte = 0xff;
}

inline HostAttention make_host_attention(const Shape& s, unsigned seed) {
  HostAttention a;
  a.params = make_params(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, s.causal, s.dtype, s.layout);
  a.params.causal_align = s.align;
  std::mt19937 rng(seed);
  a.q.resize(tensor_bytes(s.dtype, s.batch, s.heads, s.q_len, s.head_dim));
  a.k.resize(tensor_bytes(s.dtype, s.batch, s.kv_heads, s.kv_len, s.head_dim));
  a.v.resize(a.k.size());
  a.out.resize(a.q.size());
  fill_normal(a.q, s.dtype, rng);
  fill_normal(a.k, s.dtype, rng);
  fill_normal(a.v, s.dtype, rng);
  poison(a.out);
  a.params.q = a.q.data();
  a.params.k = a.k.data();
  a.params.v = a.v.data();
  a.params.out = a.out.data();
  return a;
}

}  // namespace attnprof::attention::testing
