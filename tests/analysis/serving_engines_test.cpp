// The serving engines' attention kernels in a real program's launches (kernel_classifier_test holds each
// name's rule; this holds what the call finder makes of a trace that runs them).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"
#include "corpus_facts.h"
#include "test_paths.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

using Program = test::Facts;

// The serving engines' kernels in a real decode program's launches: qwen2_sdpa_bf16_infer_generate_record
// (an H200, attnprof record, generate() with a dynamic cache: 3 steps of one prefill forward and 15 decode
// forwards over 2 layers, so 6 prefill calls and 90 decode calls, each decode a split-KV kernel and its
// combine) with its three attention kernels renamed to one engine's prefill, decode and combine kernels (the
// names as the engines' sources make them: kernel_classifier_test's Engines). An engine whose decode has
// no combine launch takes the combine's launch as an ATen fill. The launches, grids and times stay the
// real program's.
struct EngineKernels {
  const char* engine;
  const char* prefill;  // the prefill's main kernel
  const char* decode;   // the decode's
  const char* combine;  // after each decode launch (or an ATen fill's name)
  std::string_view prefill_family, decode_family;
  bool combines;  // the combine is the engine's (merges split-KV partials)
  bool paged;     // the decode kernel's name says it reads a paged cache
  int page_size;  // its page as the name says (0: not named)
};

constexpr const char* kFa3Prefill =
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
    "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<128>, "
    "cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, "
    "true, false, false, true, true, false, true, false, cutlass::bfloat16_t, 1>, flash::CollectiveEpilogueFwd<cute::"
    "tuple<cute::C<128>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::"
    "bfloat16_t, cutlass::arch::Sm90, 256, true, true, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, "
    "128, 256, 128, false, true, true, true, true, true> > > >";
constexpr const char* kAtenFill =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >("
    "int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";

TEST(ServingEngines, DecodeProgramOnEachEnginesKernels) {
  const std::string path = test::data_file("serving/qwen2_sdpa_bf16_infer_generate_record.json.gz");
  const std::vector<Program> all = test::corpus_facts("serving/facts.json");
  const auto it = std::find_if(all.begin(), all.end(),
                               [](const Program& f) { return f.name == "qwen2_sdpa_bf16_infer_generate_record"; });
  ASSERT_NE(it, all.end());
  const Program& p = *it;
  std::string text;
  {
    const std::unique_ptr<ByteSource> in = open_file_source(path, false);
    char buf[1 << 16];
    while (const std::size_t n = in->read(buf, sizeof buf)) text.append(buf, n);
  }
  // The program's own kernels, each renamed whole wherever it stands.
  const std::string prefill_kernel =
      "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0";
  const std::string decode_kernel =
      "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_kernel0_0";
  const std::string combine_prefix = "void cudnn::fusion::lean_reduction_kernel<false, false, false>(";
  const EngineKernels engines[] = {
      {"FlashInfer",
       "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::MaskMode)1, "
       "(unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned int)8, (unsigned int)4, "
       "(unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, int, "
       "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>>, PagedParams>(T2)",
       "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned int)2, "
       "(unsigned int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, "
       "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>, Params>(T9)",
       "void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, __nv_bfloat16, "
       "int>(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, unsigned int, unsigned int*, unsigned int)",
       "FlashInfer", "FlashInfer", true, true, 0},
      {"vLLM paged attention v2", kFa3Prefill,
       "void vllm::paged_attention_v2_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, "
       "false, 512>(float*, float*, __nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 "
       "const*, int, float, int const*, int const*, int, float const*, int, int, int, float const*, float const*, "
       "int, int, int, int, int)",
       "void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(__nv_bfloat16*, float const*, "
       "float const*, __nv_bfloat16 const*, int const*, int)",
       "FlashAttention", "vLLM paged attention", true, true, 16},
      {"vLLM paged attention v1", kFa3Prefill,
       "void vllm::paged_attention_v1_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, (vllm::Fp8KVCacheDataType)0, "
       "false>(__nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int, float, int "
       "const*, int const*, int, float const*, int, int, int, float const*, float const*, int, int, int, int, int)",
       kAtenFill, "FlashAttention", "vLLM paged attention", false, true, 16},
      {"vLLM Triton unified attention", "kernel_unified_attention_2d", "kernel_unified_attention_3d", "reduce_segments",
       "vLLM Triton attention", "vLLM Triton attention", true, true, 0},
      {"FlashMLA", kFa3Prefill,
       "void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, "
       "512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, cutlass::bfloat16_t, 512> > "
       ">(Flash_fwd_mla_params)",
       "void smxx::decode::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, (int)512, (int)8, (int)160, "
       "(int)256>(CombineParams)",
       "FlashAttention", "FlashMLA", true, true, 64},
      {"TensorRT-LLM fmha_v2 and XQA", "fmha_v2_flash_attention_bf16_64_128_S_q_paged_kv_128_causal_sm90_kernel_nl",
       "kernel_mha", kAtenFill, "TensorRT-LLM fmha_v2", "TensorRT-LLM XQA", false, true, 0},
      {"TensorRT-LLM trtllm-gen",
       "fmhaSm100aKernel_QkvBfloat16OBfloat16H128PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
       "fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP16VarSeqQ8Kv128StaticSwapsAbForGen", kAtenFill,
       "TensorRT-LLM trtllm-gen", "TensorRT-LLM trtllm-gen", false, true, 16},
      // FlashAttention 3 as the engines run it: the split instantiation and its combine for decode, one
      // family for both phases, no paged cache. (FlashAttention 2's split-KV kernels are left out: the call
      // finder reads their shapes from their grids, which here would be cuDNN's.)
      {"FlashAttention 3 split-KV", kFa3Prefill,
       "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
       "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, "
       "cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, false, false, true, "
       "true, false, false, true, true, true, true, false, cutlass::bfloat16_t, 1>, flash::CollectiveEpilogueFwd<"
       "cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
       "cutlass::bfloat16_t, cutlass::arch::Sm90, 128, true, true, true, false>, flash::"
       "VarlenDynamicPersistentTileScheduler<64, 128, 128, 128, true, true, true, true, true, true> > > >",
       "void cutlass::device_kernel<flash::FlashAttnFwdCombine<cute::tuple<cute::C<8>, cute::C<128> >, 7, 256, 1, "
       "false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90> >(flash::FlashAttnFwdCombine<cute::tuple<"
       "cute::C<8>, cute::C<128> >, 7, 256, 1, false, true, cutlass::bfloat16_t, float, cutlass::arch::Sm90>::Params)",
       "FlashAttention", "FlashAttention", true, false, 0},
  };
  const auto replace_all = [](std::string s, std::string_view from, std::string_view to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
    return s;
  };
  // The combine's name as the trace writes it: up to its closing quote.
  const std::size_t combine_at = text.find(combine_prefix);
  ASSERT_NE(combine_at, std::string::npos);
  const std::string combine_kernel = text.substr(combine_at, text.find('"', combine_at) - combine_at);
  for (const EngineKernels& e : engines) {
    SCOPED_TRACE(e.engine);
    std::string renamed = replace_all(text, prefill_kernel, e.prefill);
    renamed = replace_all(std::move(renamed), decode_kernel, e.decode);
    renamed = replace_all(std::move(renamed), combine_kernel, e.combine);
    const Trace trace = read_trace_bytes(renamed, e.engine, ReadOptions{.detail = ReadDetail::Analysis});
    const TraceIndex index(trace);
    const Analysis a = analyze(index, {""}, e.engine);
    std::map<AttentionPhase, std::int64_t> calls;
    for (const AttentionCall& c : a.attention_calls.calls) {
      EXPECT_EQ(c.impl, AttentionImpl::Fused);
      EXPECT_EQ(c.pass, AttentionPass::Forward);
      calls[c.phase] += 1;
      if (c.phase == AttentionPhase::Decode) {
        EXPECT_EQ(c.family, e.decode_family);
        EXPECT_EQ(c.combines_splits, e.combines);
        EXPECT_EQ(c.paged, e.paged);
        EXPECT_EQ(c.page_size, e.page_size);
      } else {
        EXPECT_EQ(c.family, e.prefill_family);
      }
    }
    EXPECT_EQ(calls[AttentionPhase::Prefill], p.prefill_calls);
    EXPECT_EQ(calls[AttentionPhase::Decode], p.decode_calls);
    EXPECT_EQ(static_cast<std::int64_t>(a.attention_calls.calls.size()), p.forward_calls);
  }
}

}  // namespace
}  // namespace attnprof
