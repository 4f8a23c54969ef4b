// Flash-style attention on the CPU: 64 x 64 tiles, online softmax (running max
// and sum per row, output rescaled as the max grows), the score matrix never
// stored whole; fully masked causal tiles are skipped. P is rounded to the
// storage type before PV, as a tensor-core kernel does.
#include <algorithm>
#include <cmath>
#include <limits>

#include "attention/cpu/cpu_attention.h"
#include "attention/cpu/head_slice.h"
#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

namespace {
constexpr int kTileQ = 64;
constexpr int kTileKv = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

void flash(const AttentionParams& p, const ExecContext&) {
  validate(p);
  const int d = p.head_dim, n = p.kv_len;
  for_each_head(p, [&](int b, int h, int kvh) {
    const auto q = load_slice(p.q, p.q_strides, p.dtype, b, h, p.q_len, d);
    const auto kt = transpose(load_slice(p.k, p.k_strides, p.dtype, b, kvh, n, d), n, d);
    const auto v = load_slice(p.v, p.v_strides, p.dtype, b, kvh, n, d);
    std::vector<float> o(static_cast<std::size_t>(p.q_len) * d);
    std::vector<float> s(static_cast<std::size_t>(kTileKv));
    std::vector<float> acc(static_cast<std::size_t>(kTileQ) * d);
    float m[kTileQ], l[kTileQ];
    for (int i0 = 0; i0 < p.q_len; i0 += kTileQ) {
      const int rows = std::min(kTileQ, p.q_len - i0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      std::fill(m, m + kTileQ, kNegInf);
      std::fill(l, l + kTileQ, 0.0f);
      const int tile_last = last_visible_key(p, i0 + rows - 1);  // largest key any row sees
      for (int j0 = 0; j0 <= tile_last; j0 += kTileKv) {
        const int cols = std::min(kTileKv, n - j0);
        for (int r = 0; r < rows; ++r) {
          const int last = last_visible_key(p, i0 + r);
          if (last < j0) continue;  // this row sees nothing in this tile
          // s[c] = q_row . k[j0 + c] (K^T is [d][n], so walk d outside).
          std::fill(s.begin(), s.begin() + cols, 0.0f);
          const float* qrow = q.data() + static_cast<std::size_t>(i0 + r) * d;
          for (int c = 0; c < d; ++c) {
            const float* krow = kt.data() + static_cast<std::size_t>(c) * n + j0;
            for (int t = 0; t < cols; ++t) s[t] += qrow[c] * krow[t];
          }
          float tile_max = kNegInf;
          for (int t = 0; t < cols; ++t) {
            s[t] = j0 + t <= last ? s[t] * p.scale : kNegInf;
            tile_max = std::fmax(tile_max, s[t]);
          }
          const float m_new = std::fmax(m[r], tile_max);
          const float correction = std::exp(m[r] - m_new);  // exp(-inf) = 0 on the first tile
          float* arow = acc.data() + static_cast<std::size_t>(r) * d;
          for (int c = 0; c < d; ++c) arow[c] *= correction;
          float sum = 0.0f;
          for (int t = 0; t < cols; ++t) {
            const float pv = std::exp(s[t] - m_new);
            sum += pv;
            const float pr = round_to(p.dtype, pv);
            const float* vrow = v.data() + static_cast<std::size_t>(j0 + t) * d;
            for (int c = 0; c < d; ++c) arow[c] += pr * vrow[c];
          }
          l[r] = l[r] * correction + sum;
          m[r] = m_new;
        }
      }
      for (int r = 0; r < rows; ++r) {
        const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
        for (int c = 0; c < d; ++c)
          o[static_cast<std::size_t>(i0 + r) * d + c] = acc[static_cast<std::size_t>(r) * d + c] * inv;
        if (p.lse) {
          float* lse = p.lse + (static_cast<std::int64_t>(b) * p.q_heads + h) * p.q_len;
          lse[i0 + r] = l[r] > 0.0f ? m[r] + std::log(l[r]) : kNegInf;
        }
      }
    }
    store_slice(p.out, p.out_strides, p.dtype, b, h, p.q_len, d, o.data());
  });
}

}  // namespace attnprof::attention::cpu
