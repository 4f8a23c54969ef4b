// PyTorch's _scaled_dot_product_attention_math on the CPU: upcast to fp32, q and
// k each scaled by sqrt(scale), fp32 QK^T, additive -inf/0 mask, safe softmax,
// fp32 PV, cast back to the storage type once at the end.
#include <cmath>
#include <limits>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"
#include "attention/cpu/softmax_rows.h"

namespace attnprof::attention::cpu {

void math(const AttentionParams& p, const ExecContext&) {
  validate(p);
  const int d = p.head_dim, n = p.kv_len;
  const float root = std::sqrt(p.scale);
  for_each_head(p, [&](int b, int h, int kvh) {
    auto q = load_slice(p.q, p.q_strides, p.dtype, b, h, p.q_len, d);
    auto k = load_slice(p.k, p.k_strides, p.dtype, b, kvh, n, d);
    const auto v = load_slice(p.v, p.v_strides, p.dtype, b, kvh, n, d);
    for (float& x : q) x *= root;
    for (float& x : k) x *= root;
    const auto kt = transpose(k, n, d);
    std::vector<float> s(static_cast<std::size_t>(p.q_len) * n);
    matmul_rows(q.data(), kt.data(), s.data(), p.q_len, d, n);
    for (int i = 0; i < p.q_len; ++i) {
      const int last = last_visible_key(p, i);
      float* row = s.data() + static_cast<std::size_t>(i) * n;
      for (int j = last + 1; j < n; ++j) row[j] += -std::numeric_limits<float>::infinity();
    }
    softmax_rows(s.data(), p.q_len, n, DType::FP32);
    std::vector<float> o(static_cast<std::size_t>(p.q_len) * d);
    matmul_rows(s.data(), v.data(), o.data(), p.q_len, n, d);
    store_slice(p.out, p.out_strides, p.dtype, b, h, p.q_len, d, o.data());
  });
}

}  // namespace attnprof::attention::cpu
