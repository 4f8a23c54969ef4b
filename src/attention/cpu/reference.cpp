// The fp64 reference: exact softmax attention in double, the oracle for every
// other implementation. Slow on purpose, simple on purpose.
#include <cmath>
#include <limits>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"

namespace attnprof::attention::cpu {

std::vector<double> reference_slice(const AttentionParams& p, int b, int h, std::vector<double>* lse) {
  const int kvh = h / (p.q_heads / p.kv_heads);
  const int d = p.head_dim;
  const auto q = load_slice_f64(p.q, p.q_strides, p.dtype, b, h, p.q_len, d);
  const auto kt = transpose(load_slice_f64(p.k, p.k_strides, p.dtype, b, kvh, p.kv_len, d), p.kv_len, d);
  const auto v = load_slice_f64(p.v, p.v_strides, p.dtype, b, kvh, p.kv_len, d);
  std::vector<double> out(static_cast<std::size_t>(p.q_len) * d, 0.0);
  std::vector<double> s(static_cast<std::size_t>(p.kv_len));
  if (lse) lse->assign(static_cast<std::size_t>(p.q_len), -std::numeric_limits<double>::infinity());
  for (int i = 0; i < p.q_len; ++i) {
    const int last = last_visible_key(p, i);
    if (last < 0) continue;  // sees nothing: zeros, lse = -inf
    matmul_rows(q.data() + static_cast<std::size_t>(i) * d, kt.data(), s.data(), 1, d, p.kv_len);
    double max = -std::numeric_limits<double>::infinity();
    for (int j = 0; j <= last; ++j) max = std::fmax(max, s[j] * p.scale);
    double sum = 0.0;
    for (int j = 0; j <= last; ++j) sum += (s[j] = std::exp(s[j] * p.scale - max));
    double* o = out.data() + static_cast<std::size_t>(i) * d;
    for (int j = 0; j <= last; ++j) {
      const double w = s[j] / sum;
      const double* vrow = v.data() + static_cast<std::size_t>(j) * d;
      for (int c = 0; c < d; ++c) o[c] += w * vrow[c];
    }
    if (lse) (*lse)[i] = max + std::log(sum);
  }
  return out;
}

void reference(const AttentionParams& p, const ExecContext&) {
  validate(p);
  for_each_head(p, [&](int b, int h, int) {
    std::vector<double> lse;
    const auto o = reference_slice(p, b, h, p.lse ? &lse : nullptr);
    const std::vector<float> of(o.begin(), o.end());
    store_slice(p.out, p.out_strides, p.dtype, b, h, p.q_len, p.head_dim, of.data());
    if (p.lse) {
      float* row = p.lse + (static_cast<std::int64_t>(b) * p.q_heads + h) * p.q_len;
      for (int i = 0; i < p.q_len; ++i) row[i] = static_cast<float>(lse[i]);
    }
  });
}

}  // namespace attnprof::attention::cpu
