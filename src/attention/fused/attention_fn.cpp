// AttentionParams -> fused::Params, checks, launch (see attention_fn.h).
#include "attention_fn.h"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "common/input_error.h"
#include "fused_attention.h"

namespace attnprof::fused {

namespace {

void copy_strides(const attention::TensorStrides& s, int64_t& batch, int64_t& head, int64_t& seq) {
  batch = s.batch;
  head = s.head;
  seq = s.row;
}

}  // namespace

std::size_t attention_workspace(const attention::AttentionParams& p) {
  return p.lse ? 0 : std::size_t(p.batch) * p.q_heads * p.q_len * sizeof(float);
}

void attention_forward(const attention::AttentionParams& a, const attention::ExecContext& ctx) {
  if (a.dtype == attention::DType::fp32) throw InputError("fused: takes bf16 or fp16, not fp32");
  if (a.causal && a.causal_align == attention::CausalAlign::bottom_right && a.q_len != a.kv_len)
    throw InputError("fused: bottom-right causal with q_len != kv_len is not supported (top-left only)");
  Params p;
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.out = a.out;
  p.lse = a.lse;
  if (!p.lse) {
    if (ctx.workspace_bytes < attention_workspace(a)) throw InputError("fused: workspace too small for the lse");
    p.lse = static_cast<float*>(ctx.workspace);
  }
  p.batch = a.batch;
  p.heads = a.q_heads;
  p.kv_heads = a.kv_heads;
  p.q_len = a.q_len;
  p.kv_len = a.kv_len;
  p.head_dim = a.head_dim;
  p.causal = a.causal;
  p.scale = a.scale;
  p.dtype = a.dtype == attention::DType::bf16 ? Dtype::bf16 : Dtype::fp16;
  copy_strides(a.q_strides, p.q_batch_stride, p.q_head_stride, p.q_seq_stride);
  copy_strides(a.k_strides, p.k_batch_stride, p.k_head_stride, p.k_seq_stride);
  copy_strides(a.v_strides, p.v_batch_stride, p.v_head_stride, p.v_seq_stride);
  copy_strides(a.out_strides, p.o_batch_stride, p.o_head_stride, p.o_seq_stride);
  const char* why = validate(p);
  if (why[0] != '\0') throw InputError(why);
  const cudaError_t e = forward(p, static_cast<cudaStream_t>(ctx.stream));
  if (e != cudaSuccess) throw std::runtime_error(std::string("fused: launch failed: ") + cudaGetErrorString(e));
}

}  // namespace attnprof::fused
