// The hand-written attention of the study, 5 kernels per causal forward, all in
// the storage dtype (bf16 GEMMs on tensor cores):
//   scores = q @ k^T            cuBLAS, tensor cores, fp32 accumulate
//   scores *= scale             one pass over the scores
//   scores.masked_fill_(mask)   in place, with a mask built once per shape
//   probs = softmax(scores)     in place
//   out = probs @ v             cuBLAS, written straight into out
// (4 kernels when not causal.) The one intermediate is the score matrix.
#include <fmt/core.h>

#include "attention/cuda/aten_ops.cuh"
#include "attention/cuda/batched_gemm.h"
#include "attention/cuda/cuda_attention.h"
#include "attention/cuda/mask_cache.h"
#include "attention/cuda/softmax.cuh"
#include "attention/cuda/workspace.h"

namespace attnprof::attention::cuda {

namespace {

template <typename T>
void manual_forward(const AttentionParams& p, const ExecContext& ctx) {
  validate(p);
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  require_workspace(ctx, manual_workspace(p), "manual");
  const int B = p.batch, H = p.q_heads, S = p.q_len, Skv = p.kv_len;
  const std::int64_t nm = static_cast<std::int64_t>(S) * Skv;
  const std::int64_t ns = static_cast<std::int64_t>(B) * H * nm;
  T* scores = static_cast<T*>(ctx.workspace);
  const bool* masked_out = p.causal ? cached_masked_out(p, stream) : nullptr;

  run_batched_gemm(
      scores_gemm(p, p.dtype, strided_operand(p.q, p.q_strides), strided_operand(p.k, p.k_strides), scores), stream);

  launch_map(ns, Scale<T, T>{{scores, scores}, p.scale}, stream);
  if (masked_out) launch_elementwise<kMaskedFillVT>(ns, MaskedFillNegInf<T>{scores, masked_out, nm}, stream);
  launch_softmax(scores, scores, static_cast<std::int64_t>(B) * H * S, Skv, stream);

  run_batched_gemm(output_gemm(p, p.dtype, dense_operand(scores, H, S, Skv), strided_operand(p.v, p.v_strides), p.out,
                               p.out_strides),
                   stream);
}

}  // namespace

std::size_t manual_workspace(const AttentionParams& p) {
  return static_cast<std::size_t>(p.batch) * p.q_heads * p.q_len * p.kv_len * dtype_bytes(p.dtype);
}

void manual(const AttentionParams& p, const ExecContext& ctx) {
  switch (p.dtype) {
    case DType::BF16:
      manual_forward<__nv_bfloat16>(p, ctx);
      return;
    case DType::FP16:
      manual_forward<__half>(p, ctx);
      return;
    case DType::FP32:
      manual_forward<float>(p, ctx);
      return;
  }
}

}  // namespace attnprof::attention::cuda
