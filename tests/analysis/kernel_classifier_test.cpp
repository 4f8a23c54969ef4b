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

}  // namespace
}  // namespace attnprof
