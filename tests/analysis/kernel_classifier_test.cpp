// The classifier table: every row matches its own example (first match wins),
// and the math unit / precision of real kernel families.
#include "analysis/kernel_classifier.h"

#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <simdjson.h>

#include "analysis/trace_index.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

TEST(KernelClassifier, EveryRowMatchesItsOwnExample) {
  std::set<std::string_view> ids;
  for (const KernelRule& r : kernel_rules()) {
    SCOPED_TRACE(r.id);
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate rule id";
    EXPECT_TRUE(r.matches(r.example));
    const KernelClass c = classify_kernel(r.example);
    EXPECT_EQ(c.rule, r.id) << "an earlier row shadows this one";
    EXPECT_EQ(c.category, r.category);
  }
}

struct Case {
  const char* name;
  KernelCategory category;
  MathUnit unit;
  Precision precision;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class GemmUnitTest : public ::testing::TestWithParam<Case> {};

TEST_P(GemmUnitTest, UnitAndPrecision) {
  const Case& c = GetParam();
  const KernelClass k = classify_kernel(c.name);
  EXPECT_EQ(k.category, c.category) << c.name;
  EXPECT_EQ(k.unit, c.unit) << c.name << ": " << to_string(k.unit);
  EXPECT_EQ(k.precision, c.precision) << c.name << ": " << to_string(k.precision);
}

INSTANTIATE_TEST_SUITE_P(
    Families, GemmUnitTest,
    ::testing::Values(
        // cuBLAS FP32 FFMA kernels are named xmma: CUDA-core markers must win.
        Case{"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_"
             "execute_kernel__5x_cublas",
             KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_aligna4_alignc4_execute_"
             "kernel__5x_cublas",
             KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"sm80_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_"
             "execute_kernel__5x_cublas",
             KernelCategory::Gemm, MathUnit::TensorCore, Precision::TF32},
        Case{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_"
             "off_kernel__5x_cublas",
             KernelCategory::Gemm, MathUnit::TensorCore, Precision::BF16},
        Case{"nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", KernelCategory::Gemm, MathUnit::TensorCore,
             Precision::Half16},
        Case{"ampere_sgemm_128x64_nn", KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"volta_sgemm_64x64_nt", KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"volta_h884gemm_64x64_ldg8_nn", KernelCategory::Gemm, MathUnit::TensorCore, Precision::FP16},
        Case{"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn", KernelCategory::Gemm, MathUnit::TensorCore,
             Precision::BF16},
        Case{"ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_tn", KernelCategory::Gemm, MathUnit::TensorCore,
             Precision::FP16},
        Case{"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_16x6_nn_align4>(cutlass_80_tensorop_"
             "s1688gemm_64x64_16x6_nn_align4::Params)",
             KernelCategory::Gemm, MathUnit::TensorCore, Precision::TF32},
        Case{"void cutlass::Kernel<cutlass_80_simt_sgemm_128x128_8x4_nn_align1>(cutlass_80_simt_sgemm_128x128_"
             "8x4_nn_align1::Params)",
             KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_"
             "cooperative_epi_tma",
             KernelCategory::Gemm, MathUnit::TensorCore, Precision::BF16},
        Case{"cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_128x128x128_1x1x1_0_tnn_align16",
             KernelCategory::Gemm, MathUnit::TensorCore, Precision::FP8},
        Case{"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>",
             KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP32},
        Case{"volta_dgemm_128x64_nn", KernelCategory::Gemm, MathUnit::CudaCore, Precision::FP64},
        Case{"triton_tem_fused_mm_0", KernelCategory::Gemm, MathUnit::Unknown, Precision::Unknown},
        // Fused attention.
        Case{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_"
             "kernel0_0",
             KernelCategory::FusedAttention, MathUnit::TensorCore, Precision::Half16},
        Case{"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true>",
             KernelCategory::FusedAttention, MathUnit::TensorCore, Precision::BF16},
        Case{"fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::"
             "bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
             KernelCategory::FusedAttention, MathUnit::TensorCore, Precision::BF16},
        Case{"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
             "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)",
             KernelCategory::FusedAttention, MathUnit::Unknown, Precision::FP32},
        // Not GEMMs.
        Case{"triton_poi_fused_add_cos_sin_0", KernelCategory::Elementwise, MathUnit::None, Precision::Unknown},
        Case{"triton_per_fused__softmax_0", KernelCategory::Softmax, MathUnit::None, Precision::Unknown},
        Case{"triton_red_fused_sum_1", KernelCategory::Reduction, MathUnit::None, Precision::Unknown},
        // torch.compile names its kernels after the ATen ops fused into them: the copies that feed
        // cuDNN's attention (a CUDA-graph replay, session 16 run 93) are no attention kernel; flex_attention's
        // template and its backward's dO.O reduction are (run 92).
        Case{"triton_poi_fused__scaled_dot_product_cudnn_attention__to_copy__unsafe_view_add_arange_bmm_cat_clone_"
             "cos_expand_le_mul_neg_scalar_tensor_sin_slice_transpose_unsqueeze_view_where_4",
             KernelCategory::Elementwise, MathUnit::None, Precision::Unknown},
        Case{"triton_tem_fused_flex_attention_0", KernelCategory::FusedAttention, MathUnit::TensorCore,
             Precision::Unknown},
        Case{"triton_per_fused_flex_attention_backward_mul_0", KernelCategory::FusedAttention, MathUnit::TensorCore,
             Precision::Unknown},
        Case{"triton_red_fused_flex_attention_mul_1", KernelCategory::FusedAttention, MathUnit::TensorCore,
             Precision::Unknown},  // flex decoding's split-KV combine (run 97)
        Case{"void cunn_SoftMaxForward<4, float, float, float, Epilogue>(float*, float const*, int)",
             KernelCategory::Softmax, MathUnit::None, Precision::Unknown},
        Case{"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", KernelCategory::Communication,
             MathUnit::None, Precision::Unknown}),
    // Readable test names: the case's index and the start of its kernel name.
    [](const ::testing::TestParamInfo<Case>& p) {
      std::string n = std::to_string(p.index) + "_";
      std::string_view kernel = p.param.name;
      if (kernel.starts_with("void ")) kernel.remove_prefix(5);
      for (char c : kernel.substr(0, 40)) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(KernelClassifier, CastDirections) {
  const KernelClass up = classify_kernel(
      "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
      "{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, "
      "4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
      "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >");
  EXPECT_EQ(up.op, KernelOp::CastToFp32);
  const KernelClass down = classify_kernel(
      "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::"
      "TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >");
  EXPECT_EQ(down.op, KernelOp::CastTo16Bit);
  const KernelClass same = classify_kernel(
      "void at::native::vectorized_elementwise_kernel<4, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
      "::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> "
      ">");
  EXPECT_EQ(same.op, KernelOp::Copy);  // float to float: a copy, not a conversion
}

TEST(KernelClassifier, ElementEstimatesFromLaunchGrids) {
  // Real launches from the H200 sdpa_math trace (B=4, H=16, S=2048, D=64).
  EXPECT_EQ(estimate_elements("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::"
                              "TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>, 4, "
                              "TrivialOffsetCalculator<1, unsigned int> >",
                              16384, 128),
            4 * 16 * 2048 * 64);
  EXPECT_EQ(estimate_elements("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
                              "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >",
                              262144, 128),
            std::int64_t{4} * 16 * 2048 * 2048);
  EXPECT_EQ(estimate_elements("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::"
                              "native::CUDAFunctor_add<float> >",
                              1048576, 128),
            std::int64_t{4} * 16 * 2048 * 2048);
  EXPECT_EQ(estimate_elements("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", 2, 384), 0);
}

// attnprof's own bench kernels (src/attention/cuda) tell the same story as ATen's.
TEST(KernelClassifier, OwnBenchKernels) {
  struct Own {
    const char* name;
    KernelOp op;
  };
  const std::string ns = "void attnprof::attention::cuda::elementwise_kernel<attnprof::attention::cuda::";
  for (const Own& o :
       {Own{"ToDenseScaled<__nv_bfloat16, float> >", KernelOp::CastToFp32},
        Own{"Convert<float, __nv_bfloat16> >", KernelOp::CastTo16Bit}, Own{"Convert<__half, __half> >", KernelOp::Copy},
        Own{"Tril>", KernelOp::TriangularMask}, Own{"Fill<bool> >", KernelOp::Fill},
        Own{"WhereScalars<float> >", KernelOp::Where}, Own{"AddBroadcast<float> >", KernelOp::Add},
        Own{"EqNegInf<float> >", KernelOp::IsNegInf}, Own{"WhereRowElse<float> >", KernelOp::Where},
        Own{"MaskedFillNegInf<__nv_bfloat16> >", KernelOp::MaskedFill},
        Own{"Scale<__nv_bfloat16, __nv_bfloat16> >", KernelOp::Mul},
        Own{"MapAt<attnprof::attention::cuda::Convert<__nv_bfloat16, float> > >", KernelOp::CastToFp32}}) {
    const std::string name = ns + o.name + "(long, ...)";
    EXPECT_EQ(classify_kernel(name).op, o.op) << name;
  }
  EXPECT_EQ(classify_kernel("attnprof::attention::cuda::all_rows_kernel(bool const*, bool*, long, int)").op,
            KernelOp::AllReduce);
  const KernelClass fused = classify_kernel(
      "void attnprof::fused::(anonymous namespace)::fused_fwd_portable<__half, 128>(attnprof::fused::Params)");
  EXPECT_EQ(fused.category, KernelCategory::FusedAttention);
  EXPECT_EQ(fused.unit, MathUnit::TensorCore);
  EXPECT_EQ(fused.precision, Precision::FP16);
}

// The kernels attnprof bench recorded on an H200 (CUPTI, demangled names; tests/data/
// bench/h200_study_shape.json, 2026-11-29): each classifies as the op PyTorch's own
// kernel for that step does, in PyTorch 2.11's order.
TEST(KernelClassifier, OwnBenchKernelsRecordedOnH200) {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.load(test::data_file("bench/h200_study_shape.json"));
  auto ops_of = [&](std::string_view impl) {
    std::vector<KernelOp> ops;
    for (simdjson::dom::element row : doc["impls"].get_array())
      if (row["name"].get_string().value() == impl)
        for (simdjson::dom::element name : row["kernel_names"].get_array())
          ops.push_back(classify_kernel(name.get_string().value()).op);
    return ops;
  };
  using enum KernelOp;
  EXPECT_EQ(ops_of("math"),
            (std::vector<KernelOp>{CastToFp32, CastToFp32, CastToFp32, Mul,         Fill,   TriangularMask, Fill,
                                   Fill,       Where,      Mul,        Matmul,      Add,    Softmax,        IsNegInf,
                                   AllReduce,  Fill,       Where,      CastTo16Bit, Matmul, CastTo16Bit}));
  EXPECT_EQ(ops_of("manual"), (std::vector<KernelOp>{Matmul, Mul, MaskedFill, Softmax, Matmul}));
  EXPECT_EQ(ops_of("fused"), (std::vector<KernelOp>{Attention}));
}

// On the real traces: what each experiment ran, by class.
TEST(KernelClassifier, RealTracesClassifyAsTheExperimentRan) {
  auto classes = [](const std::string& file) {
    const Trace t = read_trace_file(test::example_trace(file));
    const TraceIndex index(t);
    std::vector<KernelClass> out;
    for (const auto& a : index.activities())
      if (index.event(a).kind == EventKind::Kernel) out.push_back(a.cls);
    return out;
  };
  int gemms = 0;
  for (const KernelClass& c : classes("sdpa_math.json")) {
    if (c.category != KernelCategory::Gemm) continue;
    ++gemms;
    EXPECT_EQ(c.unit, MathUnit::CudaCore);
    EXPECT_EQ(c.precision, Precision::FP32);
  }
  EXPECT_EQ(gemms, 6);
  gemms = 0;
  for (const KernelClass& c : classes("manual.json")) {
    if (c.category != KernelCategory::Gemm) continue;
    ++gemms;
    EXPECT_EQ(c.unit, MathUnit::TensorCore);
    // nvjet's name says only "h" (16-bit); the trace's softmax<c10::BFloat16> says which.
    EXPECT_EQ(c.precision, Precision::BF16);
  }
  EXPECT_EQ(gemms, 6);
  // cuDNN's kernel is alone in its trace: nothing says bf16 rather than fp16.
  EXPECT_EQ(classes("sdpa_cudnn.json")[0].precision, Precision::Half16);
  for (const char* f : {"sdpa_flash.json", "sdpa_cudnn.json", "sdpa_efficient.json"}) {
    const auto cs = classes(f);
    ASSERT_EQ(cs.size(), 3u) << f;
    for (const KernelClass& c : cs) {
      EXPECT_EQ(c.category, KernelCategory::FusedAttention) << f;
      EXPECT_EQ(c.unit, MathUnit::TensorCore) << f;
    }
  }
}

// Serving engines' attention kernels, as traces spell them (Kineto's "128u", Nsight's "(unsigned int)128",
// Triton's bare names): each under its engine, with what its name says of the phase, a paged KV cache
// and its page size. The names are from profiler output of vLLM, SGLang and TensorRT-LLM runs and from
// the engines' sources (flashinfer, vllm, FlashMLA, TensorRT-LLM, sglang).
struct ServingCase {
  const char* name;
  const char* rule;
  KernelPhase phase;
  bool paged;
  int page_size;
};

void PrintTo(const ServingCase& c, std::ostream* os) { *os << c.name; }

class ServingKernelTest : public ::testing::TestWithParam<ServingCase> {};

TEST_P(ServingKernelTest, EngineAndWhatTheNameSays) {
  const ServingCase& c = GetParam();
  EXPECT_EQ(classify_kernel(c.name).rule, std::string_view(c.rule));
  const AttentionKernelName said = read_attention_kernel_name(c.name);
  EXPECT_EQ(said.phase, c.phase);
  EXPECT_EQ(said.paged, c.paged);
  EXPECT_EQ(said.page_size, c.page_size);
}

// cuDNN's tile as its generated SDPA forward kernels name it: query rows x keys x head dim.
TEST(CudnnSdpaKernelName, TileAndHeadDim) {
  const AttentionKernelName decode = read_attention_kernel_name(
      "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x64_1x4x1_cga1x1x1_kernel0_0");
  EXPECT_EQ(decode.tile_rows, 16);
  EXPECT_EQ(decode.tile_keys, 128);
  EXPECT_EQ(decode.head_dim, 64);
  const AttentionKernelName prefill = read_attention_kernel_name(
      "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0");
  EXPECT_EQ(prefill.tile_rows, 64);
  EXPECT_EQ(prefill.head_dim, 128);
  // Not a forward, or no tile in the name: nothing said.
  EXPECT_EQ(read_attention_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3_64x128x128_"
                                       "4x1x1_cga1x1x1_kernel0_0")
                .head_dim,
            0);
  EXPECT_EQ(read_attention_kernel_name("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_knob_7_kernel0_0").head_dim,
            0);
}

INSTANTIATE_TEST_SUITE_P(
    Engines, ServingKernelTest,
    ::testing::Values(
        // FlashInfer: decode by name; the paged prefill kernel serves both phases; MLA's name holds
        // "AttentionKernel<" (PyTorch's mem-efficient kernel's word).
        ServingCase{"void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned "
                    "int)2, (unsigned int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, "
                    "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>, Params>(T9)",
                    "attn-flashinfer", KernelPhase::Decode, true, 0},
        ServingCase{"void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::"
                    "MaskMode)1, (unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned "
                    "int)8, (unsigned int)4, (unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, "
                    "__nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, "
                    "(bool)0>>, PagedParams>(T2)",
                    "attn-flashinfer", KernelPhase::Unknown, true, 0},
        ServingCase{"void flashinfer::BatchPrefillWithRaggedKVCacheKernel<flashinfer::KernelTraits<(flashinfer::"
                    "MaskMode)1, (unsigned int)128, (unsigned int)2, (unsigned int)2, (unsigned int)8, (unsigned "
                    "int)8, (unsigned int)4, (unsigned int)1, (flashinfer::PosEncodingMode)0, __nv_bfloat16, "
                    "__nv_bfloat16, __nv_bfloat16, float, int, flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, "
                    "(bool)0>>, RaggedParams>(T2)",
                    "attn-flashinfer", KernelPhase::Prefill, false, 0},
        ServingCase{"void flashinfer::mla::BatchMLAPagedAttentionKernel<flashinfer::mla::KernelTraits<true, 2u, "
                    "true, 512u, 64u, 64u, 64u, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>, "
                    "flashinfer::MLAParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int> >(flashinfer::"
                    "MLAParams<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16, int>)",
                    "attn-flashinfer", KernelPhase::Unknown, true, 0},
        ServingCase{"void flashinfer::PersistentVariableLengthMergeStatesKernel<8u, 16u, 8u, 4u, __nv_bfloat16, "
                    "__nv_bfloat16, int>(__nv_bfloat16*, float*, int*, __nv_bfloat16*, float*, unsigned int, "
                    "unsigned int*, unsigned int)",
                    "attn-flashinfer", KernelPhase::Unknown, false, 0},
        // trtllm-gen (TensorRT-LLM, and through FlashInfer vLLM's and SGLang's Blackwell backends): the
        // name says the phase (ForGen / Context), the paged cache and its page (P64); its "fmha" is not
        // PyTorch's mem-efficient kernel.
        ServingCase{"fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAb"
                    "ForGen",
                    "attn-trtllm-gen", KernelPhase::Decode, true, 64},
        ServingCase{"fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvSlidingOrChunkedCausalP16VarSeqQ128Kv128Persistent"
                    "Context",
                    "attn-trtllm-gen", KernelPhase::Prefill, true, 16},
        ServingCase{"fmha_v2_flash_attention_fp16_64_32_S_qkv_128_causal_sm86_kernel_nl", "attn-trtllm-fmha-v2",
                    KernelPhase::Prefill, false, 0},
        ServingCase{"kernel_mha", "attn-xqa", KernelPhase::Decode, true, 0},
        ServingCase{"void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel<__nv_bfloat16, "
                    "__nv_bfloat16, __nv_bfloat16, tensorrt_llm::kernels::KVBlockArray, tensorrt_llm::kernels::"
                    "KVBlockArray, 128u, 256u, false, false, true, false, false, false, false, 4u, 16u, 4u, 8u, 256u, "
                    "1u>(tensorrt_llm::kernels::Multihead_attention_params<__nv_bfloat16, false>, tensorrt_llm::"
                    "kernels::KVBlockArray, tensorrt_llm::kernels::KVBlockArray)",
                    "attn-mmha", KernelPhase::Decode, true, 0},
        // vLLM: paged attention's page size is its 4th template argument; its v2 reduce is no ATen reduction.
        ServingCase{"void vllm::paged_attention_v1_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
                    "(vllm::Fp8KVCacheDataType)0, false>(__nv_bfloat16*, __nv_bfloat16 const*, __nv_bfloat16 const*, "
                    "__nv_bfloat16 const*, int, float, int const*, int const*, int, float const*, int, int, int, float "
                    "const*, float const*, int, int, int, int, int)",
                    "attn-vllm-paged", KernelPhase::Decode, true, 16},
        ServingCase{"void vllm::paged_attention_v2_reduce_kernel<__nv_bfloat16, 128, 128, 512>(__nv_bfloat16*, "
                    "float const*, float const*, __nv_bfloat16 const*, int const*, int)",
                    "attn-vllm-paged", KernelPhase::Unknown, false, 0},
        ServingCase{"kernel_unified_attention_2d", "attn-vllm-triton", KernelPhase::Unknown, true, 0},
        ServingCase{"reduce_segments", "attn-vllm-triton", KernelPhase::Unknown, false, 0},
        // cuDNN's generated SDPA forward (PyTorch's cuDNN backend), from the decode grid's traces (an H100,
        // make_corpus.py --set decode): a tile of 16 query rows for the decode calls, 64 for the prefill; the
        // name alone says no phase (the call finder weighs the tile against the trace's other cuDNN calls).
        ServingCase{"cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_cga1x1x1_"
                    "kernel0_0",
                    "attn-cudnn", KernelPhase::Unknown, false, 0},
        ServingCase{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_"
                    "kernel0_0",
                    "attn-cudnn", KernelPhase::Unknown, false, 0},
        // SGLang's Triton decode (a token-indexed cache: a page of one token) and its split-KV reduce.
        ServingCase{"_fwd_grouped_kernel_stage1", "attn-triton-decode", KernelPhase::Decode, true, 1},
        ServingCase{"_fwd_kernel_stage2", "attn-triton-decode", KernelPhase::Unknown, false, 0},
        // FlashMLA: its v1 kernel's kBlockN (the traits' 3rd argument) is the page size; FlashAttention's
        // words in its names ("flash::", "flash_fwd") are not FlashAttention.
        ServingCase{"void flash::flash_fwd_splitkv_mla_kernel<Flash_fwd_kernel_traits_mla<576, 64, 64, 8, "
                    "cutlass::bfloat16_t, 512>, true, flash::SharedStorageMLA<Flash_fwd_kernel_traits_mla<576, 64, 64, "
                    "8, cutlass::bfloat16_t, 512> > >(Flash_fwd_mla_params)",
                    "attn-flashmla", KernelPhase::Decode, true, 64},
        ServingCase{"void smxx::decode::flash_fwd_mla_combine_kernel<cutlass::bfloat16_t, (int)512, (int)8, "
                    "(int)160, (int)256>(CombineParams)",
                    "attn-flashmla", KernelPhase::Unknown, false, 0},
        // FlashAttention 3 as vLLM and SGLang run it: FlashAttention (the name says no phase); its
        // scheduler kernel is no attention call's.
        ServingCase{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
                    "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cute::tuple<cute::"
                    "C<64>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, cutlass::arch::Sm90, true, "
                    "false, false, true, true, false, false, true, true, true, true, false, cutlass::bfloat16_t, 1>, "
                    "flash::CollectiveEpilogueFwd<cute::tuple<cute::C<64>, cute::C<128>, cute::C<128> >, cute::tuple<"
                    "cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 128, true, true, "
                    "true, false>, flash::VarlenDynamicPersistentTileScheduler<64, 128, 128, 128, true, true, true, "
                    "true, true, true> > > >",
                    "attn-flash", KernelPhase::Unknown, false, 0},
        ServingCase{"void flash::prepare_varlen_num_blocks_kernel<1, true>(int, int, int, int const*, int const*, "
                    "int const*, int const*, int const*, int const*, int, int, int, int, int, cutlass::FastDivmod, "
                    "cutlass::FastDivmod, int*, int*, int*, int*, bool)",
                    "attn-scheduler", KernelPhase::Unknown, false, 0},
        // Writes into the KV cache are copies, not attention (the word "flash" in vLLM's is its layout).
        ServingCase{"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, "
                    "(vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, "
                    "unsigned char*, long const*, long, long, long, long, long, int, int, int, float const*, float "
                    "const*, int)",
                    "kv-cache-write", KernelPhase::Unknown, false, 0}));

// Decode kernels written as dot products run on CUDA cores, the split-KV merges too; the engines'
// tiled kernels (trtllm-gen, FlashMLA, FlashInfer's prefill, SGLang's grouped stage 1) on tensor cores.
TEST(ServingKernels, MathUnitOfTheEnginesKernels) {
  for (const char* n :
       {"void vllm::paged_attention_v1_kernel<__nv_bfloat16, __nv_bfloat16, 128, 16, 128, "
        "(vllm::Fp8KVCacheDataType)0, false>(__nv_bfloat16*)",
        "void flashinfer::BatchDecodeWithPagedKVCacheKernel<(flashinfer::PosEncodingMode)0, (unsigned int)2, "
        "(unsigned int)1, (unsigned int)8, (unsigned int)16, (unsigned int)2, (unsigned int)4, "
        "flashinfer::DefaultAttention<(bool)0, (bool)0, (bool)0, (bool)0>, Params>(T9)",
        "void flashinfer::MergeStatesKernel<8u, __nv_bfloat16, __nv_bfloat16>(__nv_bfloat16*)", "_fwd_kernel_stage1",
        "_fwd_kernel_stage2", "reduce_segments"})
    EXPECT_EQ(classify_kernel(n).unit, MathUnit::CudaCore) << n;
  for (const char* n :
       {"fmhaSm100fKernel_QkvBfloat16OBfloat16H128PagedKvCausalP64MultiCtasKvVarSeqQ8Kv128StaticSwapsAbForGen",
        "_fwd_grouped_kernel_stage1", "kernel_unified_attention_2d"})
    EXPECT_EQ(classify_kernel(n).unit, MathUnit::TensorCore) << n;
}

// PyTorch's own kernels say nothing of a phase or a paged cache: FlashAttention's split-KV kernel decodes
// only when its combine runs, which the attention view sees, not the name.
TEST(ServingKernels, PyTorchsKernelsSayNoPhase) {
  for (const char* n :
       {"void pytorch_flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, false, false, false, "
        "false, true, false, true, false>(pytorch_flash::Flash_fwd_params)",
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"}) {
    const AttentionKernelName said = read_attention_kernel_name(n);
    EXPECT_EQ(said.phase, KernelPhase::Unknown) << n;
    EXPECT_FALSE(said.paged) << n;
  }
}

}  // namespace
}  // namespace attnprof
