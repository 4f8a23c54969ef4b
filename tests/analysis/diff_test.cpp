// attnprof diff on real traces. The study's traces (H200, three fwd ranges
// each): SDPA math (20 kernels a forward, FP32 upcast), hand-written attention
// (5 kernels), SDPA flash (one FlashAttention kernel). The corpus pairs: the
// same Hugging Face program with eager attention and with an SDPA backend
// (tests/data/corpus/facts.json says how each was built). Expectations come
// from how the programs were built, never from the tool's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "analysis/diff.h"
#include "corpus_facts.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

Analysis analyse(const std::string& path) {
  const Trace trace = read_trace_file(path, ReadOptions{.detail = ReadDetail::Analysis});
  const TraceIndex index(trace);
  return analyze(index, {}, path);
}

const AttentionChange* pass_of(const TraceDiff& d, AttentionPass pass) {
  for (const AttentionChange& c : d.attention)
    if (c.pass == pass) return &c;
  return nullptr;
}

const FindingChange* finding(const TraceDiff& d, std::string_view id, Scope scope) {
  for (const FindingChange& f : d.findings)
    if (f.id == id && f.scope == scope) return &f;
  return nullptr;
}

const CategoryChange* category(const TraceDiff& d, KernelCategory c) {
  for (const CategoryChange& x : d.categories)
    if (x.category == c) return &x;
  return nullptr;
}

TEST(Diff, SdpaMathToFlashIsTheFix) {
  const TraceDiff d =
      diff_analyses(analyse(test::example_trace("sdpa_math.json")), analyse(test::example_trace("sdpa_flash.json")));
  // Both programs ran three forwards, each in its own fwd range.
  EXPECT_EQ(d.before.steps, 3);
  EXPECT_EQ(d.after.steps, 3);
  EXPECT_EQ(d.before.step, "fwd");
  ASSERT_EQ(d.attention.size(), 1u);  // forward only
  const AttentionChange& fwd = d.attention[0];
  EXPECT_EQ(fwd.pass, AttentionPass::Forward);
  EXPECT_EQ(fwd.before.implementation, "sdpa-math");
  EXPECT_EQ(fwd.after.implementation, "fused (FlashAttention)");
  EXPECT_DOUBLE_EQ(fwd.before.calls_per_step, 1.0);
  EXPECT_DOUBLE_EQ(fwd.after.calls_per_step, 1.0);
  EXPECT_DOUBLE_EQ(fwd.before.kernels_per_call, 20.0);
  EXPECT_DOUBLE_EQ(fwd.after.kernels_per_call, 1.0);
  EXPECT_LT(d.after.attention_ms_per_step * 5, d.before.attention_ms_per_step);  // the study: 10-50x
  // Every cause the study named is fixed; nothing new.
  for (const char* id : {"unfused-attention", "fp32-upcast", "mask-rebuilt", "safe-softmax"}) {
    const FindingChange* f = finding(d, id, Scope::Attention);
    ASSERT_NE(f, nullptr) << id;
    EXPECT_EQ(f->status, FindingStatus::Fixed) << id;
    EXPECT_GT(f->before_ms, 0) << id;
    EXPECT_LT(f->after_ms, 0) << id;
  }
  for (const FindingChange& f : d.findings) EXPECT_NE(f.status, FindingStatus::New) << f.id;
  // Kernel categories: the GEMMs and softmax go, one fused-attention kernel comes.
  const CategoryChange* fused = category(d, KernelCategory::FusedAttention);
  ASSERT_NE(fused, nullptr);
  EXPECT_DOUBLE_EQ(fused->before_kernels, 0.0);
  EXPECT_DOUBLE_EQ(fused->after_kernels, 1.0);
  const CategoryChange* gemm = category(d, KernelCategory::Gemm);
  ASSERT_NE(gemm, nullptr);
  EXPECT_DOUBLE_EQ(gemm->before_kernels, 2.0);  // QK^T and PV
  EXPECT_DOUBLE_EQ(gemm->after_kernels, 0.0);
  EXPECT_FALSE(regression_gate(d, kDefaultRegressionPct).regression);
  EXPECT_FALSE(regression_gate(d, 0).regression);
}

TEST(Diff, ManualToSdpaMathIsARegression) {
  const TraceDiff d =
      diff_analyses(analyse(test::example_trace("manual.json")), analyse(test::example_trace("sdpa_math.json")));
  const AttentionChange* fwd = pass_of(d, AttentionPass::Forward);
  ASSERT_NE(fwd, nullptr);
  EXPECT_EQ(fwd->before.implementation, "unfused");
  EXPECT_EQ(fwd->after.implementation, "sdpa-math");
  EXPECT_DOUBLE_EQ(fwd->before.kernels_per_call, 5.0);
  EXPECT_DOUBLE_EQ(fwd->after.kernels_per_call, 20.0);
  // The study: SDPA math 2.2-3.7x slower than hand-written bf16 attention.
  EXPECT_GT(d.after.attention_ms_per_step, 2 * d.before.attention_ms_per_step);
  const FindingChange* upcast = finding(d, "fp32-upcast", Scope::Attention);
  ASSERT_NE(upcast, nullptr);
  EXPECT_EQ(upcast->status, FindingStatus::New);
  // Both traces have 'fwd' ranges with their launch calls: the default gate is on the median step's span.
  const GateVerdict v = regression_gate(d, kDefaultRegressionPct);
  EXPECT_TRUE(v.regression);
  EXPECT_EQ(v.metric, GateMetric::StepTime);
  ASSERT_FALSE(v.reasons.empty());
  EXPECT_NE(v.reasons[0].find("the median step grew"), std::string::npos) << v.reasons[0];
  EXPECT_GT(d.after.step_span_ms, d.before.step_span_ms);
  // On attention time when asked.
  const GateVerdict on_attention = regression_gate(d, kDefaultRegressionPct, GateMetric::AttentionTime);
  EXPECT_TRUE(on_attention.regression);
  ASSERT_FALSE(on_attention.reasons.empty());
  EXPECT_NE(on_attention.reasons[0].find("attention time per step grew"), std::string::npos) << on_attention.reasons[0];
  // A gate wide enough for the time still fails on the new attention finding.
  const GateVerdict wide = regression_gate(d, 1000);
  EXPECT_TRUE(wide.regression);
  EXPECT_TRUE(std::any_of(wide.reasons.begin(), wide.reasons.end(),
                          [](const std::string& r) { return r.find("new attention finding fp32-upcast") == 0; }));
}

TEST(Diff, ATraceAgainstItselfChangesNothing) {
  const Analysis a = analyse(test::example_trace("sdpa_math.json"));
  const TraceDiff d = diff_analyses(a, a);
  for (const FindingChange& f : d.findings) {
    EXPECT_EQ(f.status, FindingStatus::Remaining) << f.id;
    EXPECT_DOUBLE_EQ(f.before_ms, f.after_ms) << f.id;
  }
  for (const CategoryChange& c : d.categories) EXPECT_DOUBLE_EQ(c.before_ms, c.after_ms);
  EXPECT_FALSE(regression_gate(d, 0).regression);
}

TEST(Diff, StepsThatDifferAreComparedPerCall) {
  // The same Llama SDPA-math program traced by torch.profiler (2 profiler steps of one forward each)
  // and by attnprof record (3 forwards, no steps: the whole trace is one step).
  const TraceDiff d = diff_analyses(analyse(test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz")),
                                    analyse(test::data_file("corpus/llama_sdpa-math_bf16_infer_record.json.gz")));
  EXPECT_FALSE(d.steps_comparable);
  EXPECT_EQ(d.before.step, "ProfilerStep");
  EXPECT_EQ(d.after.step, "whole trace");
  // Per call the two runs of one program agree within run-to-run noise; per step they would not.
  EXPECT_NEAR(d.after.attention_ms_per_call / d.before.attention_ms_per_call, 1.0, 0.10);
  EXPECT_FALSE(regression_gate(d, kDefaultRegressionPct).regression);
}

TEST(Diff, ATraceNotDiagnosedFailsTheGate) {
  const TraceDiff d = diff_analyses(analyse(test::data_file("corpus/llama_sdpa_bf16_infer.json.gz")),
                                    analyse(test::data_file("amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz")));
  const GateVerdict v = regression_gate(d, 1e6);
  EXPECT_TRUE(v.regression);
  ASSERT_EQ(v.reasons.size(), 1u);
  EXPECT_EQ(v.reasons[0].rfind("cannot compare: ", 0), 0u) << v.reasons[0];
  const TraceDiff cpu =
      diff_analyses(analyse(test::data_file("corpus/llama_sdpa_bf16_infer.json.gz")),
                    analyse(test::data_file("cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")));
  EXPECT_TRUE(regression_gate(cpu, 1e6).regression);
}

// The corpus: the same model (family, training or not, tracer) with eager attention and with an SDPA backend
// (some pairs also change the dtype, as a real fix might).
using Program = test::Facts;
struct Pair {
  Program before, after;
};
void PrintTo(const Pair& p, std::ostream* os) { *os << p.before.name << " -> " << p.after.name; }

std::vector<Pair> corpus_pairs() {
  const std::vector<Program> programs = test::corpus_facts();
  std::vector<Pair> pairs;
  for (const Program& eager : programs)
    for (const Program& other : programs)
      if (eager.expected_impl == "unfused" && other.expected_impl != "unfused" && eager.family == other.family &&
          eager.mode == other.mode && eager.tracer == other.tracer)
        pairs.push_back({eager, other});
  return pairs;
}

class CorpusDiff : public ::testing::TestWithParam<Pair> {};

TEST_P(CorpusDiff, NamesTheChangeOfImplementation) {
  const Pair& p = GetParam();
  const Analysis a = analyse(test::data_file("corpus/" + p.before.name + ".json.gz"));
  const Analysis b = analyse(test::data_file("corpus/" + p.after.name + ".json.gz"));
  for (const auto& [d, from, to] :
       {std::tuple{diff_analyses(a, b), &p.before, &p.after}, std::tuple{diff_analyses(b, a), &p.after, &p.before}}) {
    const AttentionChange* fwd = pass_of(d, AttentionPass::Forward);
    ASSERT_NE(fwd, nullptr);
    EXPECT_EQ(fwd->before.implementation.rfind(from->expected_impl, 0), 0u) << fwd->before.implementation;
    EXPECT_EQ(fwd->after.implementation.rfind(to->expected_impl, 0), 0u) << fwd->after.implementation;
    // Per step: torch.profiler traces have one profiler step per forward; attnprof record traces
    // have no steps and are compared as one whole program.
    const double from_steps = from->tracer == "torch.profiler" ? static_cast<double>(from->steps) : 1.0;
    const double to_steps = to->tracer == "torch.profiler" ? static_cast<double>(to->steps) : 1.0;
    EXPECT_DOUBLE_EQ(fwd->before.calls_per_step, static_cast<double>(from->forward_calls) / from_steps);
    EXPECT_DOUBLE_EQ(fwd->after.calls_per_step, static_cast<double>(to->forward_calls) / to_steps);
    const AttentionChange* bwd = pass_of(d, AttentionPass::Backward);
    EXPECT_EQ(bwd != nullptr, from->backward_calls > 0 || to->backward_calls > 0);
    // Eager attention is diagnosed as unfused; going to a fused backend fixes that, going back brings it.
    const FindingChange* unfused = finding(d, "unfused-attention", Scope::Attention);
    ASSERT_NE(unfused, nullptr);
    if (to->expected_impl == "fused") {
      EXPECT_EQ(unfused->status, from->expected_impl == "unfused" ? FindingStatus::Fixed : FindingStatus::New);
    }
    if (from->expected_impl == "fused") {
      EXPECT_EQ(unfused->status, FindingStatus::New);
      EXPECT_TRUE(regression_gate(d, 1e6).regression);  // a new attention finding, whatever the time
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, CorpusDiff, ::testing::ValuesIn(corpus_pairs()),
                         [](const ::testing::TestParamInfo<Pair>& param) {
                           std::string n = param.param.before.name + "_to_" + param.param.after.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(CorpusDiff, ThereArePairsOfEveryKind) {
  // Built from facts.json: eager against sdpa, sdpa-math, cuDNN and flash, inference and training,
  // torch.profiler and attnprof record.
  const auto pairs = corpus_pairs();
  EXPECT_GE(pairs.size(), 6u);
  const auto has = [&](auto pred) { return std::any_of(pairs.begin(), pairs.end(), pred); };
  EXPECT_TRUE(has([](const Pair& p) { return p.after.expected_impl == "sdpa-math"; }));
  EXPECT_TRUE(has([](const Pair& p) { return p.after.expected_impl == "fused" && p.after.mode == "training"; }));
  EXPECT_TRUE(has([](const Pair& p) { return p.before.tracer == "attnprof record"; }));
  for (const char* family : {"llama", "gpt2", "bert"})
    EXPECT_TRUE(has([&](const Pair& p) { return p.before.family == family; })) << family;
}

}  // namespace
}  // namespace attnprof
