// Each diagnosis rule, positive and negative, on the real traces; plus traces
// the rules were not written from (V100 FP32 training, A100 training, MI250).
#include <gtest/gtest.h>

#include <algorithm>

#include <fmt/format.h>

#include "analysis/analysis.h"
#include "analysis/rules/rule.h"
#include "report/report.h"
#include "test_doctor.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

// Full detail, as the rules were first written against.
struct Doctor : test::Doctor {
  explicit Doctor(const std::string& path, const std::string& region = "")
      : test::Doctor(path, region, ReadDetail::Full) {}
};

// Sum of kernel durations in the trace whose name contains `part`.
std::int64_t kernel_time(const Trace& t, std::string_view part) {
  std::int64_t ns = 0;
  for (const Event& e : t.events)
    if (e.kind == EventKind::Kernel && t.name(e).find(part) != std::string_view::npos) ns += e.dur_ns;
  return ns;
}

TEST(Rules, SdpaMathHasEveryCause) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  for (const char* id : {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax", "unfused-attention"}) {
    SCOPED_TRACE(id);
    const Finding* f = d.find(id);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->instances, 3);
    EXPECT_GT(f->time_ns, 0);
    EXPECT_FALSE(f->fix.empty());
    // Every cause is inside the one attention call of each fwd range.
    EXPECT_EQ(f->scope, Scope::Attention);
    EXPECT_GE(f->after_ns, 0);
    EXPECT_LT(f->after_ns, f->time_ns + (f->id == "unfused-attention" ? f->after_ns : 0));
  }
  EXPECT_EQ(d.find("hidden-copy"), nullptr);
  // Ranked by time: replacing the whole call saves most, then the FP32 GEMMs.
  EXPECT_EQ(d.analysis.findings.front().id, "unfused-attention");
  EXPECT_EQ(d.analysis.findings[1].id, "cuda-core-gemm");
}

TEST(Rules, CudaCoreGemmTimeIsTheFfmaKernels) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Finding* f = d.find("cuda-core-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->time_ns, kernel_time(d.trace, "_ffma_"));
  EXPECT_EQ(f->severity, Severity::High);
  EXPECT_NE(f->detail.find("sm_90"), std::string::npos);
  EXPECT_NE(f->fix.find("upcast"), std::string::npos);  // 16-bit inputs: the fix is to stay 16-bit
  ASSERT_EQ(f->evidence.size(), 2u);
  EXPECT_EQ(f->evidence[0].count + f->evidence[1].count, 6);
}

TEST(Rules, Fp32UpcastCountsBothDirectionsAndBytes) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Finding* f = d.find("fp32-upcast");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("3 casts up and 2 down per fwd"), std::string::npos) << f->title;
  // q, k, v up (3 x 4*16*2048*64) and the weights + output down (4*16*2048*2048 + 4*16*2048*64), 6 B each.
  EXPECT_NE(f->detail.find("1811.9 MB per fwd"), std::string::npos) << f->detail;
  EXPECT_EQ(f->time_ns, kernel_time(d.trace, "direct_copy_kernel_cuda") + kernel_time(d.trace, "bfloat16_copy_kernel"));
}

TEST(Rules, MaskRebuiltFindsTheMaskKernels) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Finding* f = d.find("mask-rebuilt");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("3 of 3 fwd regions (5 kernels each)"), std::string::npos) << f->title;
  int kernels = 0;
  for (const auto& e : f->evidence) kernels += e.count;
  EXPECT_EQ(kernels, 15);
}

TEST(Rules, SafeSoftmaxCountsTheEpilogue) {
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Finding* f = d.find("safe-softmax");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("4 extra kernels per fwd"), std::string::npos) << f->title;
  // Independent check from the CPU side: kernels launched under aten::_safe_softmax, minus the softmax.
  std::int64_t expected = 0;
  for (const GpuActivity& a : d.index->activities())
    if (d.index->under(a, "aten::_safe_softmax") && a.cls.op != KernelOp::Softmax) expected += d.index->event(a).dur_ns;
  EXPECT_EQ(f->time_ns, expected);
}

TEST(Rules, UnfusedAttentionIsChargedWithWhatFusingSaves) {
  // The study's SDPA math trace: one sdpa call per fwd range, 20 kernels
  // (README: 20 vs 5 vs 1), on an H200; no shapes recorded, so the fused time
  // is estimated from the call's own (FP32) matmuls as bf16 tensor-core work.
  const Doctor d(test::example_trace("sdpa_math.json"));
  const Finding* f = d.find("unfused-attention");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("SDPA math-backend attention forward"), std::string::npos) << f->title;
  // One attention call per forward (the study's program): "1 call", not "1 calls".
  EXPECT_NE(f->title.find("1 call per fwd, 20 kernels each"), std::string::npos) << f->title;
  // The whole call is attention: what it costs minus the estimate is the saving.
  const AttentionSummary& s = d.analysis.groups[0].attention.at(0);
  EXPECT_EQ(f->time_ns + f->after_ns, s.kernel_ns);
  EXPECT_EQ(s.kernel_ns, [&] {
    std::int64_t ns = 0;
    for (const GpuActivity& a : d.index->activities())
      if (d.index->under(a, "aten::scaled_dot_product_attention")) ns += d.index->event(a).dur_ns;
    return ns;
  }());
  // The FP32 FFMA GEMMs as bf16 (6x, the H200 ratio of the study's traces) is under what the fused
  // kernels took in the same study: a fused kernel must take less than the call's GEMMs at bf16 speed.
  EXPECT_LT(f->after_ns, (kernel_time(d.trace, "_ffma_") / 6) + 1);
  EXPECT_GT(f->share, 0.5);
}

TEST(Rules, ManualHasOnlyWhatIsTrue) {
  const Doctor d(test::example_trace("manual.json"));
  for (const char* id : {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax"})
    EXPECT_EQ(d.find(id), nullptr) << id;
  EXPECT_EQ(d.analysis.groups[0].tensor_core_share, 1.0);
  // True of manual: 5 kernels where 1 would do, and masked_fill copying its input.
  const Finding* count = d.find("unfused-attention");
  ASSERT_NE(count, nullptr);
  EXPECT_NE(count->title.find("unfused attention forward"), std::string::npos) << count->title;
  EXPECT_NE(count->title.find("5 kernels each"), std::string::npos) << count->title;
  const Finding* copy = d.find("hidden-copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_NE(copy->title.find("536.9 MB"), std::string::npos) << copy->title;
  EXPECT_NE(copy->title.find("aten::masked_fill"), std::string::npos) << copy->title;
  EXPECT_NE(copy->fix.find("masked_fill_"), std::string::npos);
  EXPECT_EQ(copy->scope, Scope::Attention);  // the copy sits between QK^T and the softmax
}

TEST(Rules, FusedBackendsRaiseNothing) {
  for (const char* f : {"sdpa_flash.json", "sdpa_cudnn.json", "sdpa_efficient.json"}) {
    const Doctor d(test::example_trace(f));
    EXPECT_TRUE(d.analysis.findings.empty()) << f << ": " << d.analysis.findings.front().id;
    EXPECT_EQ(d.analysis.groups[0].kernels_per_instance, 1.0) << f;
  }
}

TEST(Rules, Fp32TrainingOnV100IsNotAnUpcast) {
  // HTA's ns_resolution trace: an FP32 model on a V100 (sm_70). FP32 GEMMs are the user's choice:
  // cuda-core-gemm is true (fp16 tensor cores were there) but there is no upcast round trip.
  const Doctor d(test::data_file("ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  EXPECT_EQ(d.find("fp32-upcast"), nullptr);
  EXPECT_EQ(d.find("safe-softmax"), nullptr);
  EXPECT_EQ(d.find("mask-rebuilt"), nullptr);
  EXPECT_EQ(d.find("unfused-attention"), nullptr);  // a CNN: no attention at all
  EXPECT_TRUE(d.analysis.attention.empty());
  const Finding* f = d.find("cuda-core-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("sm_70"), std::string::npos);
  EXPECT_NE(f->detail.find("no TF32"), std::string::npos);
  EXPECT_NE(f->fix.find("autocast"), std::string::npos);
  EXPECT_EQ(f->fix.find("upcast"), std::string::npos);
}

TEST(Rules, OtherTracesReadAndStayQuiet) {
  // A100 training with TF32 CUTLASS kernels, an MI250 trace, a CPU-only trace, a Triton kernel.
  const Doctor a100(test::data_file("trace_diff__control__control.json.gz"));
  EXPECT_EQ(a100.find("fp32-upcast"), nullptr);
  EXPECT_EQ(a100.find("safe-softmax"), nullptr);
  EXPECT_LE(a100.count("hidden-copy"), 1);
  for (const char* f :
       {"amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "triton_example__triton_example.json.gz"}) {
    const Doctor d(test::data_file(f));
    EXPECT_TRUE(d.analysis.findings.empty()) << f;
  }
}

// A trace with no CPU ops (as `attnprof record` writes without NVTX): rules work from kernel names alone.
TEST(Rules, KernelNamesAloneAreEnough) {
  Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  std::erase_if(t.events, [](const Event& e) { return e.kind == EventKind::CpuOp; });
  const TraceIndex index(t);
  const Analysis a = analyze(index, {}, "no-ops");
  for (const char* id : {"cuda-core-gemm", "fp32-upcast", "mask-rebuilt", "safe-softmax", "unfused-attention"})
    EXPECT_TRUE(std::any_of(a.findings.begin(), a.findings.end(), [&](const Finding& f) { return f.id == id; })) << id;
}

// A trace written by `attnprof record` on an H200 (scripts/record/sdpa_math.py: SDPA math, bf16,
// B=4 H=16 S=2048 D=64, three forwards in NVTX ranges): no ATen ops, kernels linked to the launch
// calls the recorder kept. The same diagnosis as torch.profiler's trace of the same experiment.
TEST(Rules, RecordedTraceGetsTheSameDiagnosis) {
  const Doctor recorded(test::data_file("sdpa_math_attnprof_record.json"));
  const Doctor profiled(test::example_trace("sdpa_math.json"));
  ASSERT_EQ(recorded.analysis.groups.size(), 1u);
  EXPECT_EQ(recorded.analysis.groups[0].group.name, "fwd");
  EXPECT_EQ(recorded.analysis.groups[0].group.instances.size(), 3u);
  EXPECT_EQ(recorded.analysis.groups[0].kernels_per_instance, 20.0);
  std::vector<std::string> a, b;
  for (const auto& f : recorded.analysis.findings) a.push_back(f.id);
  for (const auto& f : profiled.analysis.findings) b.push_back(f.id);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

TEST(Rules, SeverityFollowsShare) {
  EXPECT_EQ(severity_for_share(0.30), Severity::High);
  EXPECT_EQ(severity_for_share(0.10), Severity::Medium);
  EXPECT_EQ(severity_for_share(0.01), Severity::Low);
  EXPECT_EQ(severity_for_share(0.0), Severity::Info);
}

}  // namespace
}  // namespace attnprof

namespace attnprof {
namespace {

// Wording that was wrong on traces the rules were not written from (HTA's A100 and V100 traces).
TEST(Wording, InPlaceOnlyForAtenOpsWithAnInPlaceTwin) {
  // copies by AccumulateGrad and DDP's copy_bucket_to_grad were told to "use the in-place ..._".
  for (const char* f : {"negative_queue_length_values_check__rank0.json.gz", "trace_diff__control__control.json.gz"}) {
    const Doctor d(test::data_file(f));
    for (const Finding& x : d.analysis.findings)
      if (x.id == "hidden-copy") {
        EXPECT_EQ(x.fix.find("in-place"), std::string::npos) << f << ": " << x.fix;
        EXPECT_EQ(x.fix.find("_ ("), std::string::npos) << f << ": " << x.fix;
      }
  }
}

TEST(Wording, CudaCoreGemmSaysWhatShareDidUseTensorCores) {
  // An A100 trace whose GEMM time is mostly tensor-core: "none of them was used" was false.
  const Doctor d(test::data_file("trace_diff__control__control.json.gz"));
  const Finding* f = d.find("cuda-core-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->detail.find("none of them was used"), std::string::npos) << f->detail;
  EXPECT_NE(f->detail.find("% of this region's GEMM time ran on tensor cores"), std::string::npos) << f->detail;
  EXPECT_EQ(f->scope, Scope::Model);  // a training step with no attention at all
  EXPECT_TRUE(d.analysis.attention.empty());
  EXPECT_EQ(f->fix.find("SDPA"), std::string::npos) << "no attention fix in a trace without attention";
}

TEST(Wording, NoTf32AdviceWithoutTf32) {
  const Doctor d(test::data_file("ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"));
  const Finding* f = d.find("cuda-core-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix.find("set_float32_matmul_precision"), std::string::npos) << f->fix;
  EXPECT_EQ(f->fix.find("Allow TF32"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("float16"), std::string::npos) << f->fix;
}

TEST(Wording, NarrowedRegionKeepsTheUpcastCause) {
  // --region aten::matmul on SDPA math: the casts run outside the matmuls, in the same attention call.
  const Doctor d(test::example_trace("sdpa_math.json"), "aten::matmul");
  const Finding* f = d.find("cuda-core-gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix.find("The inputs are FP32"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("upcast"), std::string::npos) << f->fix;
}

TEST(Wording, RocmTraceIsNotDiagnosed) {
  const Doctor d(test::data_file("amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz"));
  EXPECT_NE(d.analysis.unsupported.find("AMD"), std::string::npos);
  EXPECT_TRUE(d.analysis.findings.empty());
  const std::string text = text_report(d.analysis);
  EXPECT_EQ(text.find("sm_90"), std::string::npos) << "an MI250 is no sm_90";
  EXPECT_NE(text.find("Not diagnosed"), std::string::npos);
}

TEST(Wording, NoGpuKernelsSaysSoAndHowToRecordThem) {
  const Doctor d(test::data_file("cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"));
  EXPECT_EQ(d.analysis.gpu_kernels, 0);
  const std::string text = text_report(d.analysis);
  EXPECT_NE(text.find("No GPU kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("ProfilerActivity.CUDA"), std::string::npos);
  EXPECT_EQ(text.find("nothing here looks slower"), std::string::npos);
}

TEST(Wording, ConvolutionAndNcclAreTheirOwnCategories) {
  const Doctor conv(test::data_file("critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz"));
  for (const KernelSummary& k : conv.analysis.kernels)
    if (k.name.find("fprop_implicit_gemm") != std::string::npos) {
      EXPECT_EQ(k.cls.category, KernelCategory::Convolution);
    }
  EXPECT_TRUE(conv.analysis.attention.empty());
  const Doctor nccl(test::data_file("trace_diff__control__control.json.gz"));
  int seen = 0;
  for (const KernelSummary& k : nccl.analysis.kernels)
    if (k.name.starts_with("nccl")) {
      EXPECT_EQ(k.cls.category, KernelCategory::Communication) << k.name;
      ++seen;
    }
  EXPECT_GT(seen, 0);
}

// HTA's trace_filter rank is a recommendation model: embedding tables through FBGEMM, MLPs through
// CUTLASS and cuBLAS. FBGEMM's kernels are named after the library, not a GEMM; the MLPs' are GEMMs.
TEST(Wording, VendorNamesAreNotTheOp) {
  const Doctor d(test::data_file("trace_filter__sampled_rank-0.json.gz"));
  int fbgemm = 0, gemms = 0;
  for (const KernelSummary& k : d.analysis.kernels) {
    const bool library =
        k.name.find("fbgemm_gpu::") != std::string::npos || k.name.find("split_embedding_") != std::string::npos;
    const bool mlp =
        k.name.find("cutlass_80_tensorop_s1688gemm") != std::string::npos || k.name.starts_with("ampere_sgemm_");
    if (library) {
      ++fbgemm;
      EXPECT_NE(k.cls.category, KernelCategory::Gemm) << k.name;
    }
    if (mlp) {
      ++gemms;
      EXPECT_EQ(k.cls.category, KernelCategory::Gemm) << k.name;
    }
  }
  EXPECT_GE(fbgemm, 15);
  EXPECT_GE(gemms, 10);
}

// A finding names another only if that one fired (cuda-core-gemm cited an
// fp32-upcast finding that did not fire).
TEST(Wording, CitedFindingsFired) {
  for (const std::string& path : test::real_trace_files()) {
    const Doctor d(path);
    for (const Finding& f : d.analysis.findings)
      for (const std::string* text : {&f.title, &f.detail, &f.fix})
        for (const RuleEntry& rule : all_rules()) {
          if (rule.id == f.id || text->find("see " + std::string(rule.id)) == std::string::npos) continue;
          EXPECT_TRUE(std::any_of(d.analysis.findings.begin(), d.analysis.findings.end(),
                                  [&](const Finding& g) { return g.id == rule.id && g.group == f.group; }))
              << path << ": " << f.id << " cites " << rule.id;
        }
  }
}

// A finding's title states the same time per region instance as its header
// line and the tables (the report prints time_ns / instances for both).
TEST(Wording, TitleNumbersAgreeWithTheHeader) {
  for (const std::string& path : test::real_trace_files()) {
    const Doctor d(path);
    for (const Finding& f : d.analysis.findings) {
      const auto g = std::find_if(d.analysis.groups.begin(), d.analysis.groups.end(),
                                  [&](const GroupStats& s) { return s.group.name == f.group; });
      ASSERT_NE(g, d.analysis.groups.end()) << path << ": " << f.id;
      const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, g->group.instances.size()));
      const std::string per = fmt::format("{:.3f} ms", static_cast<double>(f.time_ns / n) / 1e6);
      EXPECT_NE(f.title.find(per), std::string::npos)
          << path << ": " << f.id << " says " << f.title << ", header " << per;
    }
  }
}

// One severity for one share: every finding's severity is its share's (the
// only exception: FP32 GEMMs on a GPU without tensor cores, which are informational).
TEST(Wording, SeverityIsTheShares) {
  for (const std::string& path : test::real_trace_files()) {
    const Doctor d(path);
    for (const Finding& f : d.analysis.findings)
      EXPECT_EQ(f.severity, severity_for_share(f.share)) << path << ": " << f.id;
  }
}

}  // namespace
}  // namespace attnprof
