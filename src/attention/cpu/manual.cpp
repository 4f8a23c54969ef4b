// The hand-written attention of the study, on the CPU: each of its five steps
// (QK^T, scale, masked fill, softmax, PV) rounds its result to the storage type,
// as the five CUDA kernels do.
#include <cmath>
#include <limits>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"
#include "attention/cpu/softmax_rows.h"
#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

void manual(const AttentionParams& p, const ExecContext&) {
  validate(p);
  const int d = p.head_dim, n = p.kv_len;
  for_each_head(p, [&](int b, int h, int kvh) {
    const auto q = load_slice(p.q, p.q_strides, p.dtype, b, h, p.q_len, d);
    const auto kt = transpose(load_slice(p.k, p.k_strides, p.dtype, b, kvh, n, d), n, d);
    const auto v = load_slice(p.v, p.v_strides, p.dtype, b, kvh, n, d);
    std::vector<float> s(static_cast<std::size_t>(p.q_len) * n);
    matmul_rows(q.data(), kt.data(), s.data(), p.q_len, d, n);
    for (int i = 0; i < p.q_len; ++i) {
      float* row = s.data() + static_cast<std::size_t>(i) * n;
      const int last = last_visible_key(p, i);
      for (int j = 0; j < n; ++j) {
        const float scaled = round_to(p.dtype, round_to(p.dtype, row[j]) * p.scale);
        row[j] = j <= last ? scaled : -std::numeric_limits<float>::infinity();
      }
    }
    softmax_rows(s.data(), p.q_len, n, p.dtype);
    std::vector<float> o(static_cast<std::size_t>(p.q_len) * d);
    matmul_rows(s.data(), v.data(), o.data(), p.q_len, n, d);
    store_slice(p.out, p.out_strides, p.dtype, b, h, p.q_len, d, o.data());
  });
}

}  // namespace attnprof::attention::cpu
