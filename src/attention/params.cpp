// Construction, validation and naming for AttentionParams.
#include "attention/params.h"

#include <cmath>

#include <fmt/core.h>

#include "common/input_error.h"

namespace attnprof::attention {

TensorStrides dense_strides(Layout layout, int heads, int seq, int dim) {
  const std::int64_t h = heads, s = seq, d = dim;
  if (layout == Layout::BHSD) return {h * s * d, s * d, d};
  return {s * h * d, d, h * d};
}

AttentionParams make_params(int batch, int q_heads, int kv_heads, int q_len, int kv_len, int head_dim, bool causal,
                            DType dtype, Layout layout) {
  AttentionParams p;
  p.batch = batch;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_dim = head_dim;
  p.causal = causal;
  p.dtype = dtype;
  p.layout = layout;
  p.scale = head_dim > 0 ? 1.0f / std::sqrt(static_cast<float>(head_dim)) : 0.0f;
  p.q_strides = dense_strides(layout, q_heads, q_len, head_dim);
  p.k_strides = dense_strides(layout, kv_heads, kv_len, head_dim);
  p.v_strides = p.k_strides;
  p.out_strides = p.q_strides;
  return p;
}

void validate(const AttentionParams& p) {
  auto positive = [](int value, const char* what) {
    if (value < 1) throw InputError(fmt::format("{} must be at least 1, got {}", what, value));
  };
  positive(p.batch, "batch");
  positive(p.q_heads, "heads");
  positive(p.kv_heads, "kv heads");
  positive(p.q_len, "seq");
  if (p.kv_len < 0)
    throw InputError(fmt::format("kv seq must be at least 0, got {}", p.kv_len));  // 0: rows see nothing
  positive(p.head_dim, "head dim");
  if (p.q_heads % p.kv_heads != 0)
    throw InputError(fmt::format("kv heads {} does not divide heads {}", p.kv_heads, p.q_heads));
  if (!(p.dropout >= 0.0f && p.dropout < 1.0f))
    throw InputError(fmt::format("dropout must be in [0, 1), got {}", p.dropout));
  if (!std::isfinite(p.scale) || p.scale == 0.0f)
    throw InputError(fmt::format("scale must be finite and non-zero, got {}", p.scale));
  if (p.block_table) {
    if (p.page_size < 1) throw InputError(fmt::format("page size must be at least 1, got {}", p.page_size));
    if (static_cast<std::int64_t>(p.block_table_stride) * p.page_size < p.kv_len)
      throw InputError(fmt::format("block table of {} pages of {} tokens holds fewer than kv seq {}",
                                   p.block_table_stride, p.page_size, p.kv_len));
  }
}

std::string describe(const AttentionParams& p) {
  std::string s =
      fmt::format("B={} H={} H_kv={} S={} S_kv={} D={} {} {}{}", p.batch, p.q_heads, p.kv_heads, p.q_len, p.kv_len,
                  p.head_dim, dtype_name(p.dtype), layout_name(p.layout), p.causal ? " causal" : "");
  if (p.causal && p.causal_align == CausalAlign::BottomRight) s += " (bottom-right)";
  if (p.dropout > 0.0f) s += fmt::format(" dropout={:g}", p.dropout);
  if (p.block_table) s += fmt::format(" paged={}", p.page_size);
  if (p.seq_lens) s += " seq_lens";
  if (p.head_dim > 0 && p.scale != 1.0f / std::sqrt(static_cast<float>(p.head_dim)))
    s += fmt::format(" scale={}", p.scale);
  return s;
}

std::size_t dtype_bytes(DType dtype) { return dtype == DType::FP32 ? 4 : 2; }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::BF16:
      return "bf16";
    case DType::FP16:
      return "fp16";
    case DType::FP32:
      return "fp32";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (name == "fp16" || name == "half" || name == "float16") return DType::FP16;
  if (name == "fp32" || name == "float" || name == "float32") return DType::FP32;
  throw InputError(fmt::format("dtype '{}' is not one of bf16, fp16, fp32", name));
}

const char* layout_name(Layout layout) { return layout == Layout::BHSD ? "bhsd" : "bshd"; }

double attention_flops(const AttentionParams& p) {
  const double per_pair = 4.0 * p.batch * p.q_heads * p.head_dim;
  if (!p.causal) return per_pair * static_cast<double>(p.q_len) * p.kv_len;
  if (p.q_len == p.kv_len)  // both alignments are the same mask here
    return per_pair * static_cast<double>(p.q_len) * p.kv_len / 2.0;
  double pairs = 0;  // the visible (query, key) pairs, row by row
  for (int i = 0; i < p.q_len; ++i) pairs += last_visible_key(p, i) + 1;
  return per_pair * pairs;
}

const char* attention_flops_rule(const AttentionParams& p) {
  if (!p.causal) return "4*B*H*S*S_kv*D";
  if (p.q_len == p.kv_len) return "4*B*H*S*S_kv*D, halved for causal";
  return "4*B*H*D per (query, key) pair the causal mask leaves";
}

}  // namespace attnprof::attention
