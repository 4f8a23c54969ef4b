// AttentionParams -> fused::Params, checks, launch (see attention_fn.h).
#include "attention_fn.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention/cuda/cuda_check.h"
#include "common/input_error.h"
#include "fused_attention.h"

namespace attnprof::fused {

namespace {

void copy_strides(const attention::TensorStrides& s, int64_t& batch, int64_t& head, int64_t& seq) {
  batch = s.batch;
  head = s.head;
  seq = s.row;
}

// The one place a kernel-side Params is made: from the checked AttentionParams.
Params kernel_params(const attention::AttentionParams& a, float* lse) {
  Params p;
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.out = a.out;
  p.lse = lse;
  p.batch = a.batch;
  p.heads = a.q_heads;
  p.kv_heads = a.kv_heads;
  p.q_len = a.q_len;
  p.kv_len = a.kv_len;
  p.head_dim = a.head_dim;
  p.causal = a.causal;
  p.causal_offset = a.causal && a.causal_align == attention::CausalAlign::BottomRight ? a.kv_len - a.q_len : 0;
  p.causal_bottom_right = a.causal && a.causal_align == attention::CausalAlign::BottomRight;
  p.block_table = a.block_table;
  p.block_table_stride = a.block_table_stride;
  p.page_size = a.page_size;
  p.seq_lens = a.seq_lens;
  p.scale = a.scale;
  p.dtype = a.dtype;
  copy_strides(a.q_strides, p.q_batch_stride, p.q_head_stride, p.q_seq_stride);
  copy_strides(a.k_strides, p.k_batch_stride, p.k_head_stride, p.k_seq_stride);
  copy_strides(a.v_strides, p.v_batch_stride, p.v_head_stride, p.v_seq_stride);
  copy_strides(a.out_strides, p.o_batch_stride, p.o_head_stride, p.o_seq_stride);
  return p;
}

}  // namespace

namespace {
// The workspace: the lse when the caller gives none, then (from a 256-byte boundary) the kernels'
// scratch when the call has any (kernel_scratch: the split tail's partials, the dynamic scheduler's counter).
std::size_t lse_bytes(const attention::AttentionParams& p) {
  return p.lse ? 0 : std::size_t(p.batch) * p.q_heads * p.q_len * sizeof(float);
}
std::size_t tail_offset(const attention::AttentionParams& p) { return (lse_bytes(p) + 255) / 256 * 256; }
}  // namespace

std::size_t attention_scratch(const attention::AttentionParams& p, const LaunchOverrides& overrides) {
  // The tail's scratch only where the kernels would take the call.
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  return kernel_scratch(kernel_params(p, nullptr), overrides);
}

std::size_t attention_workspace(const attention::AttentionParams& p, const LaunchOverrides& overrides) {
  const std::size_t tail = attention_scratch(p, overrides);
  return tail > 0 ? tail_offset(p) + tail : lse_bytes(p);
}
std::size_t attention_workspace(const attention::AttentionParams& p) { return attention_workspace(p, {}); }

Params checked_params(const attention::AttentionParams& a, const attention::ExecContext& ctx) {
  attention::validate(a);
  if (a.dtype == attention::DType::FP32) throw InputError("fused: takes bf16 or fp16, not fp32");
  // The kernels take the row maximum of the raw scores and mask with -inf before scaling: both
  // hold only for a positive scale.
  if (!(a.scale > 0.0f)) throw InputError("fused: takes a positive scale, got " + std::to_string(a.scale));
  float* lse = a.lse;
  if (!lse) {
    if (!ctx.workspace || ctx.workspace_bytes < lse_bytes(a))
      throw InputError("fused: workspace too small for the lse");
    lse = static_cast<float*>(ctx.workspace);
  }
  Params p = kernel_params(a, lse);
  const char* why = unsupported(p);
  if (why[0] != '\0') throw InputError(why);
  // The rest of the workspace is the kernels' scratch (without enough, the split tail and the dynamic
  // scheduler are not chosen).
  if (const std::size_t offset = tail_offset(a); ctx.workspace && ctx.workspace_bytes > offset) {
    p.tail_workspace = static_cast<char*>(ctx.workspace) + offset;
    p.tail_workspace_bytes = ctx.workspace_bytes - offset;
  }
  return p;
}

void attention_forward_on(const attention::AttentionParams& a, const attention::ExecContext& ctx, Path path,
                          const LaunchOverrides& overrides) {
  ATTNPROF_CUDA_CHECK(forward(checked_params(a, ctx), static_cast<cudaStream_t>(ctx.stream), path, overrides));
}

void attention_forward(const attention::AttentionParams& a, const attention::ExecContext& ctx) {
  attention_forward_on(a, ctx, Path::Automatic);
}

namespace {
std::size_t backward_offset(const attention::AttentionParams& p) { return (attention_workspace(p) + 255) / 256 * 256; }
}  // namespace

std::size_t attention_backward_workspace(const attention::AttentionParams& p) {
  if (p.head_dim != 64 && p.head_dim != 128) return 0;
  return backward_offset(p) + backward_scratch(kernel_params(p, nullptr));
}

void attention_backward_on(const attention::AttentionParams& a, const attention::AttentionGrads& grads,
                           const attention::ExecContext& ctx, BackwardPath path) {
  if (a.block_table || a.seq_lens)
    throw InputError("fused: the backward takes dense K/V, not a paged or per-sequence (ragged) cache");
  if (a.dropout > 0.0f) throw InputError("fused: has no attention dropout");
  const Params p = checked_params(a, ctx);
  if (path == BackwardPath::Hopper && resolve_path(Path::Automatic) != Path::Hopper)
    throw InputError("fused: the Hopper backward (bwd_sm90.cu) runs on sm_90 devices only");
  if (!grads.d_out || !grads.dq || !grads.dk || !grads.dv)
    throw InputError("fused: the backward needs d_out, dq, dk and dv");
  for (const void* ptr : {grads.d_out, static_cast<const void*>(grads.dq), static_cast<const void*>(grads.dk),
                          static_cast<const void*>(grads.dv)})
    if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0)
      throw InputError("fused: d_out, dq, dk and dv must be 16-byte aligned (strided as out, q, k and v)");
  const std::size_t offset = backward_offset(a);
  if (!ctx.workspace || ctx.workspace_bytes < offset + backward_scratch(p))
    throw InputError("fused: workspace too small for the backward (attention_backward_workspace)");
  BackwardBuffers g;
  g.d_out = grads.d_out;
  g.dq = grads.dq;
  g.dk = grads.dk;
  g.dv = grads.dv;
  carve_backward_scratch(p, static_cast<char*>(ctx.workspace) + offset, g);
  ATTNPROF_CUDA_CHECK(backward(p, g, static_cast<cudaStream_t>(ctx.stream), path));
}

void attention_backward(const attention::AttentionParams& a, const attention::AttentionGrads& grads,
                        const attention::ExecContext& ctx) {
  attention_backward_on(a, grads, ctx, BackwardPath::Automatic);
}

}  // namespace attnprof::fused
