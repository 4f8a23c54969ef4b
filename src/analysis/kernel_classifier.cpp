// Names for the classifier's enums, the element estimate for ATen kernels, and a fused kernel's role in its call.
#include "analysis/kernel_classifier.h"

#include <charconv>

namespace attnprof {
namespace {

// The integer right after `marker` in `name` (e.g. "vectorized_elementwise_kernel<" -> 4).
std::int64_t int_after(std::string_view name, std::string_view marker) {
  const auto at = name.find(marker);
  if (at == std::string_view::npos) return 0;
  const char* p = name.data() + at + marker.size();
  const char* end = name.data() + name.size();
  while (p < end && *p == ' ') ++p;
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(p, end, v);
  return ec == std::errc() ? v : 0;
}

}  // namespace

std::int64_t estimate_elements(std::string_view name, std::int64_t grid_x, std::int64_t block_x) {
  if (grid_x <= 0 || block_x <= 0) return 0;
  std::int64_t per_thread = 0;
  if (name.find("vectorized_elementwise_kernel<") != std::string_view::npos) {
    per_thread = int_after(name, "vectorized_elementwise_kernel<");
  } else if (name.find("unrolled_elementwise_kernel<") != std::string_view::npos) {
    // ..., std::array<char*, 2ul>, 4, ... : the unroll factor follows the pointer array.
    const auto arr = name.find("std::array<char*, ");
    if (arr != std::string_view::npos) {
      const auto close = name.find(">, ", arr);
      if (close != std::string_view::npos) per_thread = int_after(name.substr(close), ">, ");
    }
  } else if (name.find("elementwise_kernel<") != std::string_view::npos) {
    // elementwise_kernel<num_threads, items_per_thread, ...>
    const auto at = name.find("elementwise_kernel<");
    const auto comma = name.find(',', at);
    if (comma != std::string_view::npos) per_thread = int_after(name.substr(comma), ",");
  }
  if (per_thread <= 0 || per_thread > 64) return 0;
  return grid_x * block_x * per_thread;
}

std::string_view to_string(KernelCategory c) {
  switch (c) {
    case KernelCategory::Gemm:
      return "gemm";
    case KernelCategory::FusedAttention:
      return "fused-attention";
    case KernelCategory::Softmax:
      return "softmax";
    case KernelCategory::Elementwise:
      return "elementwise";
    case KernelCategory::Reduction:
      return "reduction";
    case KernelCategory::CopyCast:
      return "copy/cast";
    case KernelCategory::FillMask:
      return "fill/mask";
    case KernelCategory::Memcpy:
      return "memcpy";
    case KernelCategory::Memset:
      return "memset";
    case KernelCategory::Convolution:
      return "convolution";
    case KernelCategory::Communication:
      return "communication";
    case KernelCategory::Other:
      return "other";
  }
  return "other";
}

std::string_view to_string(MathUnit u) {
  switch (u) {
    case MathUnit::None:
      return "-";
    case MathUnit::TensorCore:
      return "tensor-core";
    case MathUnit::CudaCore:
      return "cuda-core";
    case MathUnit::Unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::Unknown:
      return "-";
    case Precision::FP64:
      return "fp64";
    case Precision::FP32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::BF16:
      return "bf16";
    case Precision::FP16:
      return "fp16";
    case Precision::Half16:
      return "bf16/fp16";
    case Precision::FP8:
      return "fp8";
    case Precision::INT8:
      return "int8";
  }
  return "-";
}

std::string_view to_string(KernelOp o) {
  switch (o) {
    case KernelOp::None:
      return "-";
    case KernelOp::Matmul:
      return "matmul";
    case KernelOp::Attention:
      return "attention";
    case KernelOp::Softmax:
      return "softmax";
    case KernelOp::CastToFp32:
      return "cast-to-fp32";
    case KernelOp::CastTo16Bit:
      return "cast-to-16bit";
    case KernelOp::Copy:
      return "copy";
    case KernelOp::TriangularMask:
      return "triu/tril";
    case KernelOp::Fill:
      return "fill";
    case KernelOp::Where:
      return "where";
    case KernelOp::MaskedFill:
      return "masked_fill";
    case KernelOp::IsNegInf:
      return "isneginf";
    case KernelOp::AllReduce:
      return "all-reduce";
    case KernelOp::Mul:
      return "mul";
    case KernelOp::Add:
      return "add";
    case KernelOp::Reduce:
      return "reduce";
    case KernelOp::SoftmaxBackward:
      return "softmax-bwd";
    case KernelOp::LogSoftmax:
      return "log-softmax";
    case KernelOp::Dropout:
      return "dropout";
    case KernelOp::Other:
      return "other";
  }
  return "-";
}

int bytes_per_element(Precision p) {
  switch (p) {
    case Precision::FP64:
      return 8;
    case Precision::FP32:
    case Precision::TF32:
      return 4;
    case Precision::BF16:
    case Precision::FP16:
    case Precision::Half16:
      return 2;
    case Precision::FP8:
    case Precision::INT8:
      return 1;
    case Precision::Unknown:
      return 0;
  }
  return 0;
}

FusedRole fused_role(std::string_view n) {
  const auto has = [n](std::string_view part) { return n.find(part) != std::string_view::npos; };
  // flex_attention's reductions, each under its own op: the backward's dO.O before its template
  // (triton_per_fused_flex_attention_backward_*), the decoding split-KV combine after the forward's
  // (triton_red_fused_flex_attention_*).
  if (has("flex_attention") && !n.starts_with("triton_tem_"))
    return has("backward") ? FusedRole::Before : FusedRole::After;
  // FlashAttention 2 (dot_do_o), 3 (FlashAttnBwdPreprocess), Triton (_attn_bwd_preprocess).
  if (has("dot_do_o") || has("BwdPreprocess") || has("bwd_preprocess")) return FusedRole::Before;
  // attnprof's own: fused_bwd_convert_dq_hopper, fused_bwd_convert_sum (dQ, or a split group's dK and dV).
  if (has("fused_bwd_convert") || has("convert_dq") || has("ConvertdQ") || has("BwdPostprocess") ||
      has("splitkv_combine") || has("FwdCombine") || has("reduce_head") || has("cudnn::fusion::"))
    return FusedRole::After;
  // Serving engines' combines of split-KV partial results: FlashInfer's merges, trtllm-gen's and
  // CUTLASS MLA's reductions, vLLM's v2 reduce and Triton segments, SGLang's stage 2, FlashMLA's.
  if (has("MergeState") || has("AttentionSumKernel") || has("fmhaReductionKernel") || has("MlaReductionKernel") ||
      has("paged_attention_v2_reduce_kernel") || n == "reduce_segments" || n == "_fwd_kernel_stage2" ||
      has("mla_combine"))
    return FusedRole::After;
  return FusedRole::Main;
}

}  // namespace attnprof
