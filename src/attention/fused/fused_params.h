// The plain parameter struct that is the only thing crossing from host into the
// fused attention kernels (flash-attention's Flash_fwd_params idea). CUDA-free.
// Mirrors the fields of the project-wide attention params (issue 4) so the two can
// be converted field by field once that header lands.
#pragma once

#include <cmath>
#include <cstdint>

namespace attnprof::fused {

enum class Dtype : int { bf16 = 0, fp16 = 1 };

// Memory order of q/k/v/out: [batch, heads, seq, dim] or [batch, seq, heads, dim].
enum class Layout : int { bhsd = 0, bshd = 1 };

struct Params {
  const void* q = nullptr;  // [batch, heads, q_len, head_dim] through the q strides
  const void* k = nullptr;  // [batch, kv_heads, kv_len, head_dim] through the k strides
  const void* v = nullptr;  // like k
  void* out = nullptr;      // like q, same dtype
  float* lse = nullptr;     // [batch, heads, q_len] contiguous, natural log; -inf where a row sees no key

  int batch = 0;
  int heads = 0;     // query heads
  int kv_heads = 0;  // divides heads: kv_heads == heads is MHA, 1 is MQA, else GQA
  int q_len = 0;
  int kv_len = 0;
  int head_dim = 0;  // 64 or 128

  bool causal = false;  // top-left (PyTorch is_causal=True): query i sees keys j <= i
  float scale = 0.f;    // softmax scale; 0 means 1/sqrt(head_dim)
  Dtype dtype = Dtype::bf16;

  // Strides in elements; the head_dim stride is always 1.
  int64_t q_batch_stride = 0, q_head_stride = 0, q_seq_stride = 0;
  int64_t k_batch_stride = 0, k_head_stride = 0, k_seq_stride = 0;
  int64_t v_batch_stride = 0, v_head_stride = 0, v_seq_stride = 0;
  int64_t o_batch_stride = 0, o_head_stride = 0, o_seq_stride = 0;

  float softmax_scale() const { return scale != 0.f ? scale : 1.f / std::sqrt(float(head_dim)); }
};

// Fills the strides of a densely packed tensor in the given layout.
inline void dense_strides(Layout layout, int heads, int seq, int dim, int64_t& batch_stride, int64_t& head_stride,
                          int64_t& seq_stride) {
  if (layout == Layout::bhsd) {
    seq_stride = dim;
    head_stride = int64_t(seq) * dim;
    batch_stride = int64_t(heads) * seq * dim;
  } else {
    head_stride = dim;
    seq_stride = int64_t(heads) * dim;
    batch_stride = int64_t(seq) * heads * dim;
  }
}

// Sets all strides of p for densely packed q/k/v/out in one layout.
inline void set_dense_strides(Params& p, Layout layout) {
  dense_strides(layout, p.heads, p.q_len, p.head_dim, p.q_batch_stride, p.q_head_stride, p.q_seq_stride);
  dense_strides(layout, p.kv_heads, p.kv_len, p.head_dim, p.k_batch_stride, p.k_head_stride, p.k_seq_stride);
  dense_strides(layout, p.kv_heads, p.kv_len, p.head_dim, p.v_batch_stride, p.v_head_stride, p.v_seq_stride);
  dense_strides(layout, p.heads, p.q_len, p.head_dim, p.o_batch_stride, p.o_head_stride, p.o_seq_stride);
}

// Forward FLOPs as the TFLOP/s figures count them: 4*B*H*Sq*Skv*D, halved
// for causal when Sq == Skv (the usual convention of the FA papers and PyTorch).
inline double forward_flops(const Params& p) {
  double f = 4.0 * p.batch * p.heads * double(p.q_len) * p.kv_len * p.head_dim;
  return p.causal ? f / 2 : f;
}

}  // namespace attnprof::fused
