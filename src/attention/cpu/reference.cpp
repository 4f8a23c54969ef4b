// The fp64 reference: exact softmax attention in double, the oracle for every
// other implementation. Slow on purpose, simple on purpose.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"

namespace attnprof::attention::cpu {

void reference_rows(const AttentionParams& p, int b, int h, int row_begin, int row_end, double* out, double* lse) {
  const int kvh = h / (p.q_heads / p.kv_heads);
  const int d = p.head_dim;
  const int rows = row_end - row_begin;
  int keys = 0;  // the keys any of these rows sees: no more are loaded or scored
  for (int i = row_begin; i < row_end; ++i) keys = std::max(keys, last_visible_key(p, i) + 1);
  const auto q = load_slice_f64(p.q, p.q_strides, p.dtype, b, h, row_begin, rows, d);
  // K as [head_dim][keys]: the score loop runs over contiguous keys and vectorises without fast-math.
  const auto kt = transpose(load_slice_f64(p.k, p.k_strides, p.dtype, b, kvh, 0, keys, d), keys, d);
  const auto v = load_slice_f64(p.v, p.v_strides, p.dtype, b, kvh, 0, keys, d);
  std::vector<double> s(static_cast<std::size_t>(keys));
  for (int r = 0; r < rows; ++r) {
    double* o = out + static_cast<std::size_t>(r) * d;
    std::fill(o, o + d, 0.0);
    if (lse) lse[r] = -std::numeric_limits<double>::infinity();
    const int last = last_visible_key(p, row_begin + r);
    if (last < 0) continue;  // sees nothing: zeros, lse = -inf
    const double* qrow = q.data() + static_cast<std::size_t>(r) * d;
    std::fill(s.begin(), s.begin() + last + 1, 0.0);
    for (int c = 0; c < d; ++c) {  // scores of the visible keys only
      const double qc = qrow[c];
      const double* ktrow = kt.data() + static_cast<std::size_t>(c) * keys;
      for (int j = 0; j <= last; ++j) s[j] += qc * ktrow[j];
    }
    double max = -std::numeric_limits<double>::infinity();
    for (int j = 0; j <= last; ++j) max = std::fmax(max, s[j] * p.scale);
    double sum = 0.0;
    for (int j = 0; j <= last; ++j) sum += (s[j] = std::exp(s[j] * p.scale - max));
    for (int j = 0; j <= last; ++j) {
      const double w = s[j] / sum;
      const double* vrow = v.data() + static_cast<std::size_t>(j) * d;
      for (int c = 0; c < d; ++c) o[c] += w * vrow[c];
    }
    if (lse) lse[r] = max + std::log(sum);
  }
}

std::vector<double> reference_slice(const AttentionParams& p, int b, int h, std::vector<double>* lse) {
  std::vector<double> out(static_cast<std::size_t>(p.q_len) * p.head_dim);
  if (lse) lse->assign(static_cast<std::size_t>(p.q_len), 0.0);
  reference_rows(p, b, h, 0, p.q_len, out.data(), lse ? lse->data() : nullptr);
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
