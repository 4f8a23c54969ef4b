// fp64 CPU reference for the fused attention forward (the harness's own until the
// project reference of issue 4 lands). CUDA-free; reads the same Params strides.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "fused_params.h"

namespace attnprof::fused {

// q/k/v as float (already rounded to the kernel's dtype), laid out by p's strides.
// Writes out [B,H,Sq,D] dense (BHSD) and lse [B,H,Sq].
inline void reference_forward(const Params& p, const float* q, const float* k, const float* v, std::vector<double>& out,
                              std::vector<double>& lse) {
  const int D = p.head_dim;
  const double scale = p.scale != 0.f ? double(p.scale) : 1.0 / std::sqrt(double(D));
  out.assign(size_t(p.batch) * p.heads * p.q_len * D, 0.0);
  lse.assign(size_t(p.batch) * p.heads * p.q_len, -std::numeric_limits<double>::infinity());
  std::vector<double> s(p.kv_len);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) {
      const int hk = h / (p.heads / p.kv_heads);
      for (int i = 0; i < p.q_len; ++i) {
        const float* qi = q + b * p.q_batch_stride + h * p.q_head_stride + i * p.q_seq_stride;
        const int visible = p.causal ? std::min(p.kv_len, i + 1) : p.kv_len;
        double mx = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < visible; ++j) {
          const float* kj = k + b * p.k_batch_stride + hk * p.k_head_stride + j * p.k_seq_stride;
          double acc = 0;
          for (int d = 0; d < D; ++d) acc += double(qi[d]) * kj[d];
          s[j] = acc * scale;
          mx = std::max(mx, s[j]);
        }
        const size_t row = (size_t(b) * p.heads + h) * p.q_len + i;
        if (visible == 0) continue;  // zeros and -inf
        double sum = 0;
        for (int j = 0; j < visible; ++j) sum += (s[j] = std::exp(s[j] - mx));
        double* o = out.data() + row * D;
        for (int j = 0; j < visible; ++j) {
          const float* vj = v + b * p.v_batch_stride + hk * p.v_head_stride + j * p.v_seq_stride;
          const double w = s[j] / sum;
          for (int d = 0; d < D; ++d) o[d] += w * vj[d];
        }
        lse[row] = mx + std::log(sum);
      }
    }
}

}  // namespace attnprof::fused
