// The pass-by-pass byte models; they mirror the kernel sequences in src/attention.
#include "bench/bytes_model.h"

namespace attnprof::bench {
namespace bytes {
namespace {

struct Sizes {
  double q, k, s, m, rows;  // elements: q (= out), k (= v), scores, mask, score rows
};

Sizes sizes(const attention::AttentionParams& p) {
  const double bh = static_cast<double>(p.batch) * p.q_heads;
  return {bh * p.q_len * p.head_dim, static_cast<double>(p.batch) * p.kv_heads * p.kv_len * p.head_dim,
          bh * p.q_len * p.kv_len, static_cast<double>(p.q_len) * p.kv_len, bh * p.q_len};
}

// The math sequence in element type of `c` bytes over storage of `e` bytes.
double math_bytes(const attention::AttentionParams& p, bool upcast, bool cached_mask, bool safe) {
  const Sizes n = sizes(p);
  const double e = static_cast<double>(attention::dtype_bytes(p.dtype));
  const double c = upcast ? 4.0 : e;
  double b = 0.0;
  if (upcast) b += (e + c) * (n.q + 2 * n.k);                                // q, k, v .to(float)
  b += 2 * c * n.q + 2 * c * n.k;                                            // q * s, k * s
  if (p.causal && !cached_mask) b += n.m * (1 + 2 + 1 + c);                  // ones, tril, where
  b += c * (n.q + n.k + n.s);                                                // QK^T
  if (p.causal) b += 2 * c * n.s + c * n.m;                                  // add_(mask)
  b += 2 * c * n.s;                                                          // softmax
  if (safe) b += (c * n.s + n.s) + (n.s + n.rows) + (n.rows + 2 * c * n.s);  // eq, all, where
  b += c * (n.s + n.k) + c * n.q;                                            // PV
  if (upcast) b += (c + e) * n.q + (c + e) * n.s;                            // out.to(), attn.to()
  return b;
}

}  // namespace

}  // namespace bytes

double bytes::math(const attention::AttentionParams& p) {
  return math_bytes(p, p.dtype != attention::DType::FP32, false, true);
}
double bytes::math_no_upcast(const attention::AttentionParams& p) { return math_bytes(p, false, false, true); }
double bytes::math_cached_mask(const attention::AttentionParams& p) { return math_bytes(p, false, true, true); }
double bytes::math_plain_softmax(const attention::AttentionParams& p) { return math_bytes(p, false, true, false); }

double bytes::manual(const attention::AttentionParams& p) {
  const Sizes n = sizes(p);
  const double e = static_cast<double>(attention::dtype_bytes(p.dtype));
  double b = e * (n.q + n.k + n.s);      // QK^T
  b += 2 * e * n.s;                      // scale
  if (p.causal) b += 2 * e * n.s + n.m;  // masked_fill_
  b += 2 * e * n.s;                      // softmax
  b += e * (n.s + n.k + n.q);            // PV
  return b;
}

double bytes::eager(const attention::AttentionParams& p) {
  const Sizes n = sizes(p);
  const double e = static_cast<double>(attention::dtype_bytes(p.dtype));
  double b = e * (n.q + n.k + n.s);          // QK^T
  b += 2 * e * n.s;                          // * scaling
  if (p.causal) b += 2 * e * n.s + e * n.m;  // + causal_mask
  b += 2 * e * n.s;                          // softmax
  b += e * (n.s + n.k + n.q);                // PV
  return b;
}

double bytes::eager_fp32_softmax(const attention::AttentionParams& p) {
  if (p.dtype == attention::DType::FP32) return eager(p);
  const Sizes n = sizes(p);
  const double e = static_cast<double>(attention::dtype_bytes(p.dtype));
  const double upcast = p.dtype == attention::DType::FP16 ? 0.0 : (e + 4) * n.s;  // fp16: folded into the softmax
  const double softmax = p.dtype == attention::DType::FP16 ? (4 - e) * n.s : 2 * (4 - e) * n.s;
  return eager(p) + upcast + softmax + (4 + e) * n.s;  // .to(float), the wider softmax, .to(dtype)
}

double bytes::fused(const attention::AttentionParams& p) {
  const Sizes n = sizes(p);
  return static_cast<double>(attention::dtype_bytes(p.dtype)) * (2 * n.q + 2 * n.k);
}

}  // namespace attnprof::bench
