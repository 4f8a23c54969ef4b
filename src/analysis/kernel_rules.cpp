// The kernel classification table. Each row names a family of kernels by the
// substrings of its (demangled) name; first match wins, so specific rows come
// before general ones. GEMM and attention rows then read the math unit and
// precision off the name (gemm_unit / gemm_precision below).
#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <string>

#include "analysis/kernel_classifier.h"
#include "common/text_search.h"

namespace attnprof {
namespace {

bool starts(std::string_view s, std::string_view prefix) { return s.starts_with(prefix); }

// "gemm" as the kernel's op, not inside a vendor's name: FBGEMM's kernels (fbgemm_gpu::permute_2D_data_kernel,
// its FP8 quantizers, elementwise lambdas inside fbgemm_gpu::) are named after the library, not a GEMM.
bool says_gemm(std::string_view n) {
  for (std::string_view word : {"gemm", "Gemm", "GEMM"})
    for (auto at = n.find(word); at != std::string_view::npos; at = n.find(word, at + 1)) {
      const bool vendor = at >= 2 && (n.substr(at - 2, 2) == "fb" || n.substr(at - 2, 2) == "FB");
      if (!vendor) return true;
    }
  return false;
}

// Inductor's generated pointwise and reduction kernels (torch.compile) are named
// after every ATen op fused into them, e.g. triton_poi_fused__scaled_dot_product_
// cudnn_attention__to_copy_..._bmm_... for the copies that feed cuDNN's attention:
// they are never a GEMM or an attention kernel themselves (Inductor's GEMM and
// flex_attention kernels are templates, triton_tem_), but for flex_attention's own
// reductions, which the Triton attention row takes.
bool inductor_generated(std::string_view n) {
  return starts(n, "triton_poi_") || starts(n, "triton_per_") || starts(n, "triton_red_");
}
bool never_gemm_or_attention(std::string_view n) { return inductor_generated(n) && !has(n, "flex_attention"); }

bool legacy_cublas(std::string_view n) {
  for (std::string_view arch : {"maxwell_", "pascal_", "volta_", "turing_", "ampere_", "hopper_", "ada_"})
    if (starts(n, arch) && says_gemm(n)) return true;
  return false;
}

// Softmax kernels of ATen: softmax_warp_forward<in, out, acc, log2_elements, is_log_softmax, is_masked>.
bool log_softmax(std::string_view n) {
  if (has(n, "LogSoftMax") || has(n, "log_softmax") || has(n, "logsoftmax")) return true;
  for (std::string_view warp : {"softmax_warp_forward<", "softmax_warp_backward<"}) {
    const auto at = n.find(warp);
    if (at == std::string_view::npos) continue;
    // The fifth template argument.
    std::size_t p = at + warp.size();
    int depth = 0, commas = 0;
    for (; p < n.size() && commas < 4; ++p) {
      if (n[p] == '<')
        ++depth;
      else if (n[p] == '>')
        --depth;
      else if (n[p] == ',' && depth == 0)
        ++commas;
    }
    while (p < n.size() && n[p] == ' ') ++p;
    return n.substr(p).starts_with("true");
  }
  return false;
}

// The `index`-th top-level template argument after `token` ("<" included in it), "" when absent.
std::string_view template_arg(std::string_view n, std::string_view token, int index) {
  const auto at = n.find(token);
  if (at == std::string_view::npos) return {};
  std::size_t p = at + token.size(), from = p;
  int depth = 0, commas = 0;
  for (; p < n.size(); ++p) {
    const char c = n[p];
    if (c == '<' || c == '(') {
      ++depth;
    } else if ((c == '>' || c == ')') && depth > 0) {
      --depth;
    } else if ((c == ',' && depth == 0) || c == '>') {
      if (commas == index) {
        std::string_view arg = n.substr(from, p - from);
        while (!arg.empty() && arg.front() == ' ') arg.remove_prefix(1);
        return arg;
      }
      if (c == '>') return {};
      ++commas;
      from = p + 1;
    }
  }
  return {};
}

// The number a template argument starts with, past a cast ("16", "(int)16", "128u"); 0 when none.
int leading_int(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  if (!s.empty() && s.front() == '(') {
    const auto close = s.find(')');
    if (close == std::string_view::npos) return 0;
    s.remove_prefix(close + 1);
  }
  int v = 0;
  std::size_t i = 0;
  for (; i < s.size() && i < 7 && std::isdigit(static_cast<unsigned char>(s[i])); ++i) v = v * 10 + (s[i] - '0');
  return v;
}

// Serving engines' attention kernels (FlashInfer, vLLM, TensorRT-LLM, FlashMLA, SGLang), by the
// identifiers their names keep in every tool's spelling (Kineto's "128u", Nsight's "(unsigned int)128").
bool flashinfer_attention(std::string_view n) { return has(n, "flashinfer::") && !has(n, "AppendPagedKV"); }
bool flashmla(std::string_view n) {
  return has(n, "splitkv_mla") || has(n, "mla_combine") || has(n, "sparse_attn_fwd");
}
bool triton_decode(std::string_view n) {  // SGLang's (and vLLM's TRITON_MLA) decode_attention.py
  return starts(n, "_fwd_kernel_stage1") || starts(n, "_fwd_grouped_kernel_stage1") || n == "_fwd_kernel_stage2";
}
// Serving engines' attention kernels that run on CUDA cores: decode kernels written as dot products
// (vLLM's paged attention, FlashInfer's decode, TensorRT-LLM's MMHA, SGLang's MHA stage 1) and the
// merges of split-KV partials.
bool cuda_core_attention(std::string_view n) {
  return has(n, "vllm::paged_attention_v") || has(n, "BatchDecodeWithPagedKVCacheKernel") ||
         has(n, "SingleDecodeWithKVCacheKernel") || has(n, "masked_multihead_attention_kernel") ||
         has(n, "MergeState") || has(n, "AttentionSumKernel") || starts(n, "_fwd_kernel_stage1") ||
         n == "_fwd_kernel_stage2" || n == "reduce_segments";
}
bool kv_cache_write(std::string_view n) {
  return has(n, "reshape_and_cache") || has(n, "concat_and_cache_mla") || has(n, "AppendPagedKV") ||
         has(n, "applyBiasRopeUpdateKVCache");
}

// Convolution kernels (cuDNN, cuBLAS-generated implicit GEMMs): their names say fprop/dgrad/wgrad
// like cuDNN's attention kernels say fprop/bprop, so attention names are ruled out first.
bool convolution(std::string_view n) {
  if (has(n, "sdpa") || has(n, "fmha") || has(n, "flash") || has(n, "attention") || has(n, "Attention")) return false;
  return has(n, "implicit_gemm") || has(n, "implicit_convolve") || has(n, "dgrad") || has(n, "wgrad") ||
         has(n, "Wgrad") || has(n, "Dgrad") || has(n, "winograd") || has(n, "cudnn::cnn::") || has(n, "conv2d") ||
         has(n, "conv_depthwise") || has(n, "convolve") ||
         (has(n, "fprop") && (has(n, "xmma") || has(n, "cudnn") || has(n, "nhwc") || has(n, "nchw")));
}

constexpr std::array kKernelTable = {
    KernelRule{"convolution", "cuDNN / cuBLAS convolution", KernelCategory::Convolution, KernelOp::Other, convolution,
               "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_"
               "warpsize2x2x1_g1_tensor16x8x8_execute_kernel__5x_cudnn"},
    // Fused attention: one kernel for the whole of softmax(QK^T)V. Serving engines' first: their names
    // also hold the generic words below ("flash::", "fmha", "AttentionKernel<").
    KernelRule{"attn-scheduler", "attention scheduler (FlashAttention 3, FlashMLA)", KernelCategory::Other,
               KernelOp::Other,
               [](std::string_view n) { return has(n, "prepare_varlen_num_blocks") || has(n, "get_mla_metadata"); },
               "void flash::prepare_varlen_num_blocks_kernel<1, true>(int, int, int, int const*, int const*, int "
               "const*, int const*, int const*, int const*, int, int, int, int, int, cutlass::FastDivmod, "
               "cutlass::FastDivmod, int*, int*, int*, int*, bool)"},
    KernelRule{"kv-cache-write", "KV-cache write (vLLM, FlashInfer, TensorRT-LLM)", KernelCategory::CopyCast,
               KernelOp::Other, kv_cache_write,
               "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KVCacheDataType)0>"
               "(__nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16*, __nv_bfloat16*, long const*, long, "
               "long, long, long, long, int, int, int, float const*, float const*, int)"},
    KernelRule{"attn-flashmla", "FlashMLA", KernelCategory::FusedAttention, KernelOp::Attention, flashmla,
               "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, "
               "cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, "
               "8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)"},
    KernelRule{"attn-flashinfer", "FlashInfer", KernelCategory::FusedAttention, KernelOp::Attention,
               flashinfer_attention,
               "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned int)2, "
               "(unsigned int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, "
               "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>, Params>(T9)"},
    KernelRule{"attn-trtllm-gen", "TensorRT-LLM trtllm-gen", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return starts(n, "fmhaSm1") || has(n, "fmhaReductionKernel"); },
               "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAbForGen"},
    KernelRule{"attn-trtllm-fmha-v2", "TensorRT-LLM fmha_v2", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return starts(n, "fmha_v2_"); },
               "fmha_v2_flash_attention_fp16_64_32_S_qkv_128_causal_sm86_kernel_nl"},
    KernelRule{"attn-xqa", "TensorRT-LLM XQA", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return n == "kernel_mha"; }, "kernel_mha"},
    KernelRule{"attn-mmha", "TensorRT-LLM MMHA", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return has(n, "masked_multihead_attention_kernel"); },
               "void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel<__nv_bfloat16, __nv_bfloat16, "
               "__nv_bfloat16, tensorrt_llm::kernels::KVBlockArray, tensorrt_llm::kernels::KVBlockArray, 128u, 256u, "
               "false, false, true, false, false, false, false, 4u, 16u, 4u, 8u, 256u, 1u>(tensorrt_llm::kernels::"
               "Multihead_attention_params<__nv_bfloat16, false>, tensorrt_llm::kernels::KVBlockArray, "
               "tensorrt_llm::kernels::KVBlockArray)"},
    KernelRule{"attn-cutlass-fmha", "CUTLASS FMHA (Blackwell)", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return has(n, "Sm100Fmha") || has(n, "cutlass::fmha::kernel"); },
               "void cutlass::device_kernel<cutlass::fmha::kernel::Sm100FmhaMlaReductionKernel<__nv_bfloat16, float, "
               "float, 128ul, 512ul, 256> >(cutlass::fmha::kernel::Sm100FmhaMlaReductionKernel<__nv_bfloat16, float, "
               "float, 128ul, 512ul, 256>::Params)"},
    KernelRule{"attn-vllm-paged", "vLLM paged attention", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) { return has(n, "vllm::paged_attention_v"); },
               "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
               "(vllm::Fp8KVCacheDataType)0, false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*, "
               "__nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, "
               "int, int, int, float const*, float const*, int, int, int, int, int)"},
    KernelRule{"attn-vllm-triton", "vLLM Triton attention", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 return starts(n, "kernel_unified_attention") || starts(n, "kernel_paged_attention_2d") ||
                        n == "reduce_segments";
               },
               "kernel_unified_attention_3d"},
    KernelRule{"attn-triton-decode", "Triton decode attention (SGLang, vLLM)", KernelCategory::FusedAttention,
               KernelOp::Attention, triton_decode, "_fwd_grouped_kernel_stage1"},
    KernelRule{"attn-flash", "FlashAttention", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 return has(n, "flash_fwd") || has(n, "flash_bwd") || has(n, "pytorch_flash::") ||
                        has(n, "FlashAttn") || has(n, "flash::");
               },
               "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, "
               "false, cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> "
               ">, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"},
    KernelRule{"attn-attnprof", "attnprof fused", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 return has(n, "attnprof::fused::") && (has(n, "fused_fwd") || has(n, "fused_bwd"));
               },
               "void attnprof::fused::(anonymous namespace)::fused_fwd_hopper<__nv_bfloat16, 64, false, 2>("
               "attnprof::fused::Params, attnprof::fused::TensorMaps)"},
    KernelRule{"attn-cudnn", "cuDNN", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 // cudnn::fusion:: are the helper kernels of its attention backward (dO.O, dQ
                 // conversion, GQA head reduction).
                 return has(n, "cudnn") && (has(n, "sdpa") || has(n, "fmha") || has(n, "attention") ||
                                            has(n, "cudnn::fusion::"));
               },
               "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
               "cga1x1x1_kernel0_0"},
    KernelRule{"attn-mem-efficient", "PyTorch mem-efficient (xFormers CUTLASS)",
               KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 return has(n, "fmha") || has(n, "AttentionKernel<") || has(n, "AttentionBackwardKernel<");
               },
               "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::"
               "bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"},
    KernelRule{"attn-triton", "Triton", KernelCategory::FusedAttention, KernelOp::Attention,
               [](std::string_view n) {
                 // with flex_attention's own reductions (the decoding template's split-KV combine
                 // after it, the backward's dO.O before it): see classify_kernel
                 return has(n, "attn_fwd") || has(n, "attn_bwd") || has(n, "attention_fwd") ||
                        has(n, "flex_attention");
               },
               "_attn_fwd"},
    // GEMMs, by library.
    KernelRule{"gemm-nvjet", "cuBLAS nvjet", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) { return starts(n, "nvjet"); },
               "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"},
    KernelRule{"gemm-xmma", "cuBLAS xmma", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) { return has(n, "xmma") && says_gemm(n); },
               "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_"
               "alignc4_execute_kernel__5x_cublas"},
    KernelRule{"gemm-cublas-arch", "cuBLAS (per-architecture kernels)", KernelCategory::Gemm,
               KernelOp::Matmul, legacy_cublas, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"},
    KernelRule{"gemm-cutlass3", "CUTLASS 3.x", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) {
                 return has(n, "cutlass3x") || has(n, "cutlass::gemm::kernel::GemmUniversal") ||
                        (has(n, "cutlass::device_kernel") && says_gemm(n));
               },
               "cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma"},
    KernelRule{"gemm-cutlass2", "CUTLASS 2.x", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) { return has(n, "cutlass") && says_gemm(n); },
               "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(cutlass_80_tensorop_"
               "s1688gemm_64x64_16x6_nn_align4::Params)"},
    KernelRule{"gemm-gemv", "cuBLAS gemv / small GEMM", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) {
                 return has(n, "gemv") || has(n, "gemmk1") || has(n, "gemmSN") || has(n, "dot_kernel");
               },
               "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
               "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
               "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> "
               ">(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
               "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, "
               "float, float)"},
    KernelRule{"gemm-triton", "Triton", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) {
                 // Inductor's GEMM templates (triton_tem_fused_mm_0); see classify_kernel for its
                 // pointwise kernels named after a bmm.
                 return starts(n, "triton") &&
                        (has(n, "_mm") || has(n, "matmul") || has(n, "bmm") || has(n, "addmm"));
               },
               "triton_tem_fused_addmm_0"},
    KernelRule{"gemm-generic", "GEMM", KernelCategory::Gemm, KernelOp::Matmul,
               [](std::string_view n) {
                 return says_gemm(n) || has(n, "matmul");
               },
               "sgemm_largek_lds64"},
    KernelRule{"communication", "NCCL / RCCL", KernelCategory::Communication, KernelOp::Other,
               [](std::string_view n) { return starts(n, "nccl") || starts(n, "rccl"); },
               "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"},
    // Softmax and the pieces around it.
    // A log-softmax is the loss's (cross entropy), never attention's.
    KernelRule{"log-softmax", "ATen", KernelCategory::Softmax, KernelOp::LogSoftmax, log_softmax,
               "void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<float, float, float, at::native::"
               "(anonymous namespace)::LogSoftMaxForwardEpilogue, long, 8>(float*, float const*, long)"},
    KernelRule{"softmax-backward", "ATen", KernelCategory::Softmax, KernelOp::SoftmaxBackward,
               [](std::string_view n) {
                 return has(n, "softmax_warp_backward") || has(n, "SoftMaxBackward") || has(n, "softmax_backward");
               },
               "void (anonymous namespace)::softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 9, false, "
               "false>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, int, int, int, bool const*)"},
    KernelRule{"softmax", "ATen / Triton softmax", KernelCategory::Softmax, KernelOp::Softmax,
               [](std::string_view n) { return has(n, "softmax") || has(n, "SoftMax"); },
               "void (anonymous namespace)::softmax_warp_forward<float, float, float, 11, false, false>"
               "(float*, float const*, int, int, int, bool const*, int, bool)"},
    KernelRule{"mask-triangular", "ATen", KernelCategory::FillMask, KernelOp::TriangularMask,
               [](std::string_view n) {
                 return has(n, "triu_tril") || has(n, "::triu") || has(n, "::tril") || has(n, "::Tril>");
               },
               "void at::native::triu_tril_kernel<bool, int, false, 8, false>(at::cuda::detail::"
               "TensorInfo<bool, int>, at::cuda::detail::TensorInfo<bool const, int>, long, long, int)"},
    KernelRule{"isneginf", "ATen", KernelCategory::Elementwise, KernelOp::IsNegInf,
               [](std::string_view n) { return has(n, "isneginf") || has(n, "::EqNegInf<"); },
               "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
               "isneginf_kernel_impl(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::"
               "{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >"},
    KernelRule{"reduce-all", "ATen", KernelCategory::Reduction, KernelOp::AllReduce,
               [](std::string_view n) {
                 return has(n, "and_kernel_cuda") || has(n, "ReduceOp<bool") || has(n, "::all_rows_kernel");
               },
               "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::"
               "func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::"
               "operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, "
               "unsigned int, bool, 4, 4> >"},
    KernelRule{"masked-fill", "ATen", KernelCategory::FillMask, KernelOp::MaskedFill,
               [](std::string_view n) { return has(n, "masked_fill") || has(n, "::MaskedFillNegInf<"); },
               "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
               "(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)"},
    KernelRule{"where", "ATen", KernelCategory::FillMask, KernelOp::Where,
               [](std::string_view n) {
                 return has(n, "where_kernel") || has(n, "::WhereScalars<") || has(n, "::WhereRowElse<") ||
                        has(n, "::BuildAdditive<");
               },
               "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
               "(anonymous namespace)::where_kernel_impl(at::TensorIterator&)"},
    KernelRule{"fill", "ATen", KernelCategory::FillMask, KernelOp::Fill,
               [](std::string_view n) {
                 return has(n, "FillFunctor") || has(n, "fill_kernel") || has(n, "::Fill<") ||
                        has(n, "::BuildMaskedOut>");
               },
               "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<bool>, "
               "std::array<char*, 1ul> >(int, at::native::FillFunctor<bool>, std::array<char*, 1ul>)"},
    // Copies and dtype conversions (direction refined in classify_kernel).
    KernelRule{"cast-16bit", "ATen", KernelCategory::CopyCast, KernelOp::CastTo16Bit,
               [](std::string_view n) {
                 return has(n, "bfloat16_copy_kernel") || has(n, "float16_copy_kernel") ||
                        has(n, "half_copy_kernel");
               },
               "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
               "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >"},
    KernelRule{"copy", "ATen", KernelCategory::CopyCast, KernelOp::Copy,
               [](std::string_view n) {
                 return has(n, "copy_kernel") || has(n, "CatArrayBatchedCopy") || has(n, "direct_copy") ||
                        has(n, "copy_device_to_device") || has(n, "::Convert<") || has(n, "::ToDenseScaled<") ||
                        has(n, "::ToStrided<");
               },
               "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
               "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
               "const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned "
               "int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
               "at::native::memory::StoreWithCast<1> >"},
    KernelRule{"reduce", "ATen / Triton", KernelCategory::Reduction, KernelOp::Reduce,
               [](std::string_view n) {
                 return has(n, "reduce_kernel") || starts(n, "triton_red_") || starts(n, "triton_per_") ||
                        has(n, "Reduce");
               },
               "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
               "MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >"},
    KernelRule{"dropout", "ATen", KernelCategory::Elementwise, KernelOp::Dropout,
               [](std::string_view n) { return has(n, "dropout"); },
               "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, "
               "1, 8, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>)"},
    KernelRule{"mul", "ATen", KernelCategory::Elementwise, KernelOp::Mul,
               [](std::string_view n) { return has(n, "MulFunctor") || has(n, "cuda::Scale<"); },
               "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, "
               "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul> >"},
    KernelRule{"add", "ATen", KernelCategory::Elementwise, KernelOp::Add,
               [](std::string_view n) {
                 return has(n, "CUDAFunctor_add") || has(n, "AddFunctor") || has(n, "::AddBroadcast<");
               },
               "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
               "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)"},
    KernelRule{"elementwise", "ATen / Triton", KernelCategory::Elementwise, KernelOp::Other,
               [](std::string_view n) {
                 return has(n, "elementwise_kernel") || starts(n, "triton_poi") || has(n, "Functor");
               },
               "triton_poi_fused_add_cos_sin_0"},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Math unit of a GEMM or fused-attention kernel, from markers in its name.
// CUDA-core markers win over "xmma": cuBLAS's FP32 FFMA kernels are xmma_gemm.
MathUnit gemm_unit(std::string_view lo, KernelCategory category) {
  const bool fp32_pair = has(lo, "f32f32_f32f32") || has(lo, "f32f32f32");
  if (has(lo, "ffma") || has(lo, "simt") || has(lo, "sgemm") || has(lo, "hgemm") || has(lo, "gemv") ||
      (has(lo, "dgemm") && !has(lo, "dmma")) || has(lo, "_dfma") || (fp32_pair && !has(lo, "tf32")))
    return MathUnit::CudaCore;
  if (category == KernelCategory::FusedAttention) return MathUnit::TensorCore;
  for (std::string_view m :
       {"nvjet",  "tensorop", "hmma", "imma",  "gmma", "dmma", "tf32", "xmma", "s1688",     "s16816", "h1688",
        "h16816", "h884",     "s884", "i8816", "bf16", "f16",  "e4m3", "e5m2", "cutlass3x", "tensor"})
    if (has(lo, m)) return MathUnit::TensorCore;
  return MathUnit::Unknown;
}

Precision gemm_precision(std::string_view lo, MathUnit unit) {
  if (has(lo, "e4m3") || has(lo, "e5m2") || has(lo, "fp8") || has(lo, "qgmma")) return Precision::FP8;
  if (has(lo, "i8816") || has(lo, "imma") || has(lo, "int8") || has(lo, "igemm")) return Precision::INT8;
  // "dmma" as a token: CuTe's "TiledMMA" lower-cased holds it too.
  const bool dmma = has(lo, "_dmma") || has(lo, "dmma_") || lo.starts_with("dmma");
  if (has(lo, "dgemm") || dmma || has(lo, "f64") || has(lo, "double") || has(lo, "_dfma")) return Precision::FP64;
  if (has(lo, "tf32")) return Precision::TF32;
  if (has(lo, "bf16") || has(lo, "bfloat16")) return Precision::BF16;
  if (has(lo, "cudnn") && has(lo, "f16")) return Precision::Half16;  // cuDNN's "wgmma_f16": bf16 or fp16
  if (has(lo, "h884") || has(lo, "h1688") || has(lo, "h16816") || has(lo, "fp16") || has(lo, "half_t") ||
      has(lo, "hgemm") || has(lo, "_f16_") || has(lo, "c10::half") || has(lo, "<__half"))
    return Precision::FP16;
  if (has(lo, "nvjet") && has(lo, "_h_")) return Precision::Half16;
  if (unit == MathUnit::CudaCore) return Precision::FP32;
  if (has(lo, "s1688") || has(lo, "s16816")) return Precision::TF32;  // fp32 operands on tensor cores
  if (has(lo, "f32") || has(lo, "float")) return unit == MathUnit::TensorCore ? Precision::TF32 : Precision::FP32;
  return Precision::Unknown;
}

bool is_16bit(std::string_view type) { return has(type, "bfloat16") || has(type, "half") || has(type, "Half"); }

// attnprof's own conversion functors name their types: Convert<Src, Dst>.
std::optional<KernelOp> functor_direction(std::string_view n) {
  for (std::string_view functor : {"::Convert<", "::ToDenseScaled<", "::ToStrided<"}) {
    const auto at = n.find(functor);
    if (at == std::string_view::npos) continue;
    const std::string_view args = n.substr(at + functor.size());
    const auto comma = args.find(", ");
    const auto close = args.find('>');
    if (comma == std::string_view::npos || close == std::string_view::npos || comma > close) return KernelOp::Copy;
    const std::string_view src = args.substr(0, comma);
    const std::string_view dst = args.substr(comma + 2, close - comma - 2);
    if (is_16bit(src) && dst == "float") return KernelOp::CastToFp32;
    if (src == "float" && is_16bit(dst)) return KernelOp::CastTo16Bit;
    return KernelOp::Copy;
  }
  return std::nullopt;
}

// Destination dtype of an ATen copy: the lambda's parameter type.
KernelOp copy_direction(std::string_view n) {
  if (const auto own = functor_direction(n)) return *own;
  const bool converts = has(n, "LoadWithCast") || has(n, "StoreWithCast") || has(n, "convert");
  if (!converts) return KernelOp::Copy;
  if (has(n, "{lambda(float)#") || has(n, "{lambda(double)#")) return KernelOp::CastToFp32;
  if (has(n, "lambda(c10::BFloat16)") || has(n, "lambda(c10::Half)")) return KernelOp::CastTo16Bit;
  return KernelOp::Copy;
}

}  // namespace

std::span<const KernelRule> kernel_rules() { return kKernelTable; }

AttentionKernelName read_attention_kernel_name(std::string_view n) {
  AttentionKernelName out;
  // cuDNN's generated SDPA forward: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_...
  // (a tile of 64 query rows, 128 keys, head dim 128). For short queries against a cache it runs a tile of 16
  // rows, the query heads of a K/V head packed in them, its keys split over CTAs (grid: splits, K/V heads,
  // batch), and a combine where it splits (cudnn::fusion::lean_reduction_kernel); prefill runs 64-128 rows.
  // The tile alone says no phase (a short encoder may run 16 rows too): the call finder weighs it.
  if (starts(n, "cudnn_generated_") && has(n, "sdpa") && has(n, "_fprop_")) {
    if (const auto knob = n.find("_knob_"); knob != std::string_view::npos) {
      std::string_view t = n.substr(knob + 6);
      t.remove_prefix(std::min(t.find('_') + 1, t.size()));  // the knob's number
      const auto dim = [&t] {
        const int v = leading_int(t);
        const auto x = t.find_first_not_of("0123456789");
        t.remove_prefix(x == std::string_view::npos ? t.size() : x);
        return v;
      };
      const int rows = dim();
      const bool x1 = !t.empty() && t.front() == 'x';
      t.remove_prefix(x1 ? 1 : t.size());
      const int keys = dim();
      const bool x2 = !t.empty() && t.front() == 'x';
      t.remove_prefix(x2 ? 1 : t.size());
      const int head_dim = dim();
      if (rows > 0 && keys > 0 && head_dim > 0 && x1 && x2) {
        out.tile_rows = rows;
        out.tile_keys = keys;
        out.head_dim = head_dim;
      }
    }
    return out;
  }
  const auto decode = [&out](bool paged) {
    out.phase = KernelPhase::Decode;
    out.paged = paged;
  };
  if (has(n, "BatchDecodeWithPagedKVCacheKernel")) {
    decode(true);
  } else if (has(n, "SingleDecodeWithKVCacheKernel")) {
    decode(false);
  } else if (n == "kernel_mha") {  // XQA reads TensorRT-LLM's paged cache
    decode(true);
  } else if (has(n, "masked_multihead_attention_kernel")) {
    decode(has(n, "KVBlockArray"));
  } else if (has(n, "vllm::paged_attention_v1_kernel") || has(n, "vllm::paged_attention_v2_kernel")) {
    decode(true);
    out.page_size =
        leading_int(template_arg(n, has(n, "_v1_") ? "paged_attention_v1_kernel<" : "paged_attention_v2_kernel<", 3));
  } else if (has(n, "splitkv_mla")) {  // FlashMLA's paged latent cache; v1's kBlockN is its page size
    decode(true);
    out.page_size = leading_int(template_arg(n, "Flash_fwd_kernel_traits_mla<", 2));
  } else if (starts(n, "_fwd_kernel_stage1") || starts(n, "_fwd_grouped_kernel_stage1")) {
    decode(true);  // SGLang's token-indexed cache (a page of one token)
    out.page_size = 1;
  } else if (has(n, "Sm100FmhaGen") || has(n, "Sm100FmhaMlaKernel")) {
    decode(true);
  } else if (starts(n, "fmhaSm1")) {  // trtllm-gen: ...PagedKv<mask>P<page>...ForGen / ...Context
    if (n.ends_with("Context")) out.phase = KernelPhase::Prefill;
    if (has(n, "ForGen")) out.phase = KernelPhase::Decode;
    if (const auto at = n.find("PagedKv"); at != std::string_view::npos) {
      out.paged = true;
      for (std::size_t p = at + 7; p + 2 < n.size(); ++p)
        if (n[p] == 'P' && std::islower(static_cast<unsigned char>(n[p - 1])) &&
            std::isdigit(static_cast<unsigned char>(n[p + 1]))) {
          out.page_size = leading_int(n.substr(p + 1));
          break;
        }
    }
  } else if (starts(n, "fmha_v2_")) {
    out.phase = KernelPhase::Prefill;
    out.paged = has(n, "q_paged_kv");
  } else if (has(n, "BatchPrefillWithRaggedKVCacheKernel") || has(n, "SinglePrefillWithKVCacheKernel") ||
             has(n, "sparse_attn_fwd") || has(n, "Sm100FmhaFwd")) {
    out.phase = KernelPhase::Prefill;
  } else if (has(n, "BatchPrefillWithPagedKVCacheKernel") || has(n, "SparseCollectiveMainloop") ||
             has(n, "flashinfer::mla::") || has(n, "PODWithKVCacheTensorKernel") ||
             has(n, "BlockBatchPagedAttentionPersistent") || starts(n, "kernel_unified_attention") ||
             starts(n, "kernel_paged_attention_2d")) {
    out.paged = true;  // prefill and decode alike
  }
  return out;
}

KernelClass classify_kernel(std::string_view name) {
  KernelClass c;
  const KernelRule* rule = nullptr;
  const bool no_gemm = never_gemm_or_attention(name);
  for (const auto& r : kKernelTable) {
    if (no_gemm && (r.category == KernelCategory::Gemm || r.category == KernelCategory::FusedAttention)) continue;
    if (r.matches(name)) {
      rule = &r;
      break;
    }
  }
  if (rule == nullptr) {
    c.rule = "other";
    c.family = "unknown";
    return c;
  }
  c.category = rule->category;
  c.op = rule->op;
  c.rule = rule->id;
  c.family = rule->family;
  if (c.category == KernelCategory::Gemm || c.category == KernelCategory::FusedAttention) {
    const std::string lo = lower(name);
    c.unit = gemm_unit(lo, c.category);
    c.precision = gemm_precision(lo, c.unit);
    if (c.category == KernelCategory::FusedAttention && (has(lo, "_f32_") || has(lo, "<float,"))) {
      c.precision = Precision::FP32;
      c.unit = MathUnit::Unknown;  // fp32 attention kernels may run SIMT or 3xTF32
    }
    if (c.category == KernelCategory::FusedAttention && cuda_core_attention(name)) c.unit = MathUnit::CudaCore;
  }
  if (c.op == KernelOp::Copy) c.op = copy_direction(name);
  return c;
}

}  // namespace attnprof
