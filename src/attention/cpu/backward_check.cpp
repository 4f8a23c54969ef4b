// fp64 reference gradients, one query row at a time (memory O(kv_len x head_dim), not the score
// matrix), threaded over the checked (batch, kv head) groups.
#include "attention/cpu/backward_check.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "attention/cpu/head_slice.h"
#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

double BackwardCheckResult::worst() const { return std::max({dq_error, dk_error, dv_error}); }

void reference_backward_group(const AttentionParams& p, const void* d_out, int b, int kvh, double* dq, double* dk,
                              double* dv) {
  const int group = p.q_heads / p.kv_heads;
  const int d = p.head_dim, skv = p.kv_len;
  const auto k = load_slice_f64(p.k, p.k_strides, p.dtype, b, kvh, 0, skv, d);
  const auto v = load_slice_f64(p.v, p.v_strides, p.dtype, b, kvh, 0, skv, d);
  std::fill(dk, dk + static_cast<std::size_t>(skv) * d, 0.0);
  std::fill(dv, dv + static_cast<std::size_t>(skv) * d, 0.0);
  std::vector<double> s(static_cast<std::size_t>(skv)), dp(static_cast<std::size_t>(skv));
  for (int g = 0; g < group; ++g) {
    const int h = kvh * group + g;
    const auto q = load_slice_f64(p.q, p.q_strides, p.dtype, b, h, 0, p.q_len, d);
    const auto go = load_slice_f64(d_out, p.out_strides, p.dtype, b, h, 0, p.q_len, d);
    double* dqh = dq + static_cast<std::size_t>(g) * p.q_len * d;
    std::fill(dqh, dqh + static_cast<std::size_t>(p.q_len) * d, 0.0);
    for (int i = 0; i < p.q_len; ++i) {
      const int last = last_visible_key(p, i);
      if (last < 0) continue;  // a row that sees no key: zero output, zero gradients
      const double* qi = q.data() + static_cast<std::size_t>(i) * d;
      const double* goi = go.data() + static_cast<std::size_t>(i) * d;
      double max = -std::numeric_limits<double>::infinity();
      for (int j = 0; j <= last; ++j) {
        const double* kj = k.data() + static_cast<std::size_t>(j) * d;
        double dot = 0.0;
        for (int c = 0; c < d; ++c) dot += qi[c] * kj[c];
        s[j] = dot * p.scale;
        max = std::fmax(max, s[j]);
      }
      double sum = 0.0;
      for (int j = 0; j <= last; ++j) sum += (s[j] = std::exp(s[j] - max));
      double row_dot = 0.0;  // sum_j P_ij dP_ij
      for (int j = 0; j <= last; ++j) {
        s[j] /= sum;
        const double* vj = v.data() + static_cast<std::size_t>(j) * d;
        double dot = 0.0;
        for (int c = 0; c < d; ++c) dot += goi[c] * vj[c];
        dp[j] = dot;
        row_dot += s[j] * dot;
      }
      double* dqi = dqh + static_cast<std::size_t>(i) * d;
      for (int j = 0; j <= last; ++j) {
        const double ds = s[j] * (dp[j] - row_dot) * p.scale;
        const double* kj = k.data() + static_cast<std::size_t>(j) * d;
        double* dkj = dk + static_cast<std::size_t>(j) * d;
        double* dvj = dv + static_cast<std::size_t>(j) * d;
        for (int c = 0; c < d; ++c) {
          dqi[c] += ds * kj[c];
          dkj[c] += ds * qi[c];
          dvj[c] += s[j] * goi[c];
        }
      }
    }
  }
}

BackwardCheckResult check_backward_against_reference(const AttentionParams& p, const void* d_out, const void* dq,
                                                     const void* dk, const void* dv, int max_groups) {
  validate(p);
  BackwardCheckResult result;
  result.groups_total = p.batch * p.kv_heads;
  const int count = max_groups <= 0 || max_groups >= result.groups_total ? result.groups_total : max_groups;
  result.groups_checked = count;
  const int group = p.q_heads / p.kv_heads;
  const int d = p.head_dim;
  double diff2[3] = {0, 0, 0}, ref2[3] = {0, 0, 0};
  std::mutex mutex;
  parallel_for(count, [&](int n) {
    const int at = count == result.groups_total || count == 1
                       ? n
                       : static_cast<int>(static_cast<long long>(n) * (result.groups_total - 1) / (count - 1));
    const int b = at / p.kv_heads, kvh = at % p.kv_heads;
    std::vector<double> rq(static_cast<std::size_t>(group) * p.q_len * d);
    std::vector<double> rk(static_cast<std::size_t>(p.kv_len) * d), rv(rk.size());
    reference_backward_group(p, d_out, b, kvh, rq.data(), rk.data(), rv.data());
    double d2[3] = {0, 0, 0}, r2[3] = {0, 0, 0};
    long unwritten = 0;
    const auto compare = [&](int which, const void* got, const TensorStrides& st, int head, int rows,
                             const double* want) {
      for (int i = 0; i < rows; ++i) {
        const std::int64_t base = b * st.batch + head * st.head + i * st.row;
        for (int c = 0; c < d; ++c) {
          const double g = load_element(got, p.dtype, base + c);
          const double w = want[static_cast<std::size_t>(i) * d + c];
          if (std::isnan(g)) ++unwritten;
          d2[which] += (g - w) * (g - w);
          r2[which] += w * w;
        }
      }
    };
    for (int g = 0; g < group; ++g)
      compare(0, dq, p.q_strides, kvh * group + g, p.q_len, rq.data() + static_cast<std::size_t>(g) * p.q_len * d);
    compare(1, dk, p.k_strides, kvh, p.kv_len, rk.data());
    compare(2, dv, p.v_strides, kvh, p.kv_len, rv.data());
    const std::lock_guard<std::mutex> lock(mutex);
    for (int w = 0; w < 3; ++w) {
      diff2[w] += d2[w];
      ref2[w] += r2[w];
    }
    result.unwritten += unwritten;
  });
  double* errors[3] = {&result.dq_error, &result.dk_error, &result.dv_error};
  for (int w = 0; w < 3; ++w)
    *errors[w] = !std::isfinite(diff2[w]) ? std::numeric_limits<double>::infinity()
                 : ref2[w] > 0.0          ? std::sqrt(diff2[w] / ref2[w])
                                          : std::sqrt(diff2[w]);
  return result;
}

double backward_tolerance(DType dtype) { return 2.0 * tolerance(dtype); }

}  // namespace attnprof::attention::cpu
