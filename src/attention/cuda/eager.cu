// Hugging Face transformers' eager attention (eager_attention_forward), kernel
// for kernel, as the stand-in for an "unfused" call of a traced model:
//   scores = q @ k^T           cuBLAS, input dtype (tensor cores for 16-bit)
//   scores * scaling           one pass (out of place in PyTorch; in place here)
//   scores + causal_mask       the additive mask, built once per shape (causal only)
//   softmax(scores)            in the input dtype (GPT-2, BERT), or with
//                              dtype=float32 (Llama, Mistral, Qwen2): an upcast
//                              copy (bf16; ATen folds it into the softmax for
//                              fp16), a fp32 softmax and a downcast copy
//   dropout(probs, p)          training with attention dropout only (the keep mask written too)
//   out = probs @ v            cuBLAS, straight into out
// K and V are read by stride for GQA: the repeat_kv copies before the call are
// not part of the attention call in a trace and are not timed here either.
// 5 kernels causal (4 not), 7 (6) with the fp32 softmax.
#include <type_traits>

#include <fmt/core.h>

#include "attention/cuda/aten_ops.cuh"
#include "attention/cuda/batched_gemm.h"
#include "attention/cuda/cuda_attention.h"
#include "attention/cuda/mask_cache.h"
#include "attention/cuda/softmax.cuh"
#include "attention/cuda/workspace.h"

namespace attnprof::attention::cuda {

namespace {

constexpr std::size_t kAlign = 256;
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
std::size_t score_count(const AttentionParams& p) {
  return static_cast<std::size_t>(p.batch) * p.q_heads * p.q_len * p.kv_len;
}
// The scores in the input dtype, then (fp32 softmax of a 16-bit input) their fp32 copy.
std::size_t scores_bytes(const AttentionParams& p) { return align_up(score_count(p) * dtype_bytes(p.dtype)); }
std::size_t wide_bytes(const AttentionParams& p, bool fp32_softmax) {
  return fp32_softmax && p.dtype != DType::FP32 ? align_up(score_count(p) * sizeof(float)) : 0;
}
// The scores, their fp32 copy, the dropout keep mask.
std::size_t workspace_bytes(const AttentionParams& p, bool fp32_softmax) {
  return scores_bytes(p) + wide_bytes(p, fp32_softmax) + (p.dropout > 0.0f ? score_count(p) : 0);
}

template <typename T>
void eager_forward(const AttentionParams& p, const ExecContext& ctx, bool fp32_softmax) {
  validate(p);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  require_workspace(ctx, workspace_bytes(p, fp32_softmax), "eager");
  const int B = p.batch, H = p.q_heads, S = p.q_len, Skv = p.kv_len;
  const std::int64_t nm = static_cast<std::int64_t>(S) * Skv;
  const std::int64_t ns = static_cast<std::int64_t>(B) * H * nm;
  const std::int64_t rows = static_cast<std::int64_t>(B) * H * S;
  T* scores = static_cast<T*>(ctx.workspace);

  run_batched_gemm(
      scores_gemm(p, p.dtype, strided_operand(p.q, p.q_strides), strided_operand(p.k, p.k_strides), scores), stream);
  launch_map(ns, Scale<T, T>{{scores, scores}, p.scale}, stream);
  if (p.causal) {
    const T* mask = static_cast<const T*>(cached_additive_mask(p, p.dtype, stream));
    launch_elementwise<kBroadcastVT>(ns, AddBroadcast<T>{scores, mask, nm}, stream);
  }
  if (fp32_softmax && !std::is_same_v<T, float>) {
    float* wide = reinterpret_cast<float*>(static_cast<char*>(ctx.workspace) + scores_bytes(p));
    if constexpr (std::is_same_v<T, __half>) {
      launch_softmax(scores, wide, rows, Skv, stream);  // ATen folds fp16 -> fp32 into the softmax
    } else {
      launch_map(ns, Convert<T, float>{{scores, wide}}, stream);  // bf16: an upcast copy first
      launch_softmax(wide, wide, rows, Skv, stream);
    }
    launch_map(ns, Convert<float, T>{{wide, scores}}, stream);
  } else {
    launch_softmax(scores, scores, rows, Skv, stream);
  }
  if (p.dropout > 0.0f) {  // nn.functional.dropout(attn_weights, p, training=True)
    bool* keep =
        reinterpret_cast<bool*>(static_cast<char*>(ctx.workspace) + scores_bytes(p) + wide_bytes(p, fp32_softmax));
    launch_dropout(scores, keep, ns, p.dropout, 0x5eedu, stream);
  }
  run_batched_gemm(output_gemm(p, p.dtype, dense_operand(scores, H, S, Skv), strided_operand(p.v, p.v_strides), p.out,
                               p.out_strides),
                   stream);
}

void run_eager(const AttentionParams& p, const ExecContext& ctx, bool fp32_softmax) {
  switch (p.dtype) {
    case DType::BF16:
      eager_forward<__nv_bfloat16>(p, ctx, fp32_softmax);
      return;
    case DType::FP16:
      eager_forward<__half>(p, ctx, fp32_softmax);
      return;
    case DType::FP32:
      eager_forward<float>(p, ctx, fp32_softmax);
      return;
  }
}

}  // namespace

void eager(const AttentionParams& p, const ExecContext& ctx) { run_eager(p, ctx, false); }
void eager_fp32_softmax(const AttentionParams& p, const ExecContext& ctx) { run_eager(p, ctx, true); }
std::size_t eager_workspace(const AttentionParams& p) { return workspace_bytes(p, false); }
std::size_t eager_fp32_softmax_workspace(const AttentionParams& p) { return workspace_bytes(p, true); }

}  // namespace attnprof::attention::cuda
