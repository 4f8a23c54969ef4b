// Test shapes (a readable name each) and their inputs, from the project's one
// input generator: fresh normal(0,1) q, k, v, the output poisoned with NaN.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "attention/host_inputs.h"
#include "attention/params.h"

namespace attnprof::attention::testing {

struct Shape {
  int batch, heads, kv_heads, q_len, kv_len, head_dim;
  bool causal;
  CausalAlign align = CausalAlign::TopLeft;
  DType dtype = DType::BF16;
  Layout layout = Layout::BHSD;
};

// A readable test name for a shape: b2h4kv2s17x45d64_causal_bf16_bhsd.
inline std::string shape_name(const Shape& s) {
  return fmt::format("b{}h{}kv{}s{}x{}d{}{}_{}_{}", s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                     s.causal ? (s.align == CausalAlign::TopLeft ? "_causal" : "_causalbr") : "", dtype_name(s.dtype),
                     layout_name(s.layout));
}

// Inputs for a shape from the project's one generator (attention/host_inputs.h).
inline HostInputs make_host_attention(const Shape& s, unsigned seed) {
  AttentionParams p =
      make_params(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, s.causal, s.dtype, s.layout);
  p.causal_align = s.align;
  return make_host_inputs(p, seed);
}

}  // namespace attnprof::attention::testing
