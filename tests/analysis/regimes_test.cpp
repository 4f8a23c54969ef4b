// The attention view on real programs that are more than one plain forward:
// torch.compile (Inductor schedules the V projection inside the attention
// chain), flex_attention (an Inductor template kernel; its backward adds a
// reduction under an op of its own), autocast (the SDPA op sees FP32 tensors,
// its backend bf16 ones), and SDPA calls that PyTorch sent to its math backend
// for a reason the op's inputs show (Falcon's single K/V head without
// enable_gqa, whose backward sums the K/V gradients over the heads; T5's
// relative-position bias, a permuted view, as attn_mask). Hugging Face transformers models with random weights, traced
// by torch.profiler on an H200 (scripts/corpus/make_corpus.py --set wild, the programs of that set kept here; the rest
// of it stays out of the repository for validation). tests/data/regimes/facts.json says how each was built; every
// expectation comes from it.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "corpus_facts.h"
#include "test_doctor.h"
#include "test_paths.h"

namespace attnprof {
namespace {

using test::Doctor;

using Program = test::Facts;

std::vector<Program> programs() { return test::corpus_facts("regimes/facts.json"); }

const AttentionSummary* summary(const Doctor& d, AttentionImpl impl, AttentionPass pass = AttentionPass::Forward) {
  for (const AttentionSummary& s : d.analysis.attention)
    if (s.impl == impl && s.pass == pass) return &s;
  return nullptr;
}

class Regimes : public ::testing::TestWithParam<Program> {};

TEST_P(Regimes, CallsImplementationsAndPrecisionAsBuilt) {
  const Program& p = GetParam();
  const Doctor d(test::data_file("regimes/" + p.name + ".json.gz"));
  std::map<std::pair<std::string, std::string>, std::int64_t> found;
  for (const AttentionSummary& s : d.analysis.attention) {
    found[{std::string(to_string(s.impl)), std::string(to_string(s.pass))}] += s.calls;
    // autocast: the program's dtype is what autocast ran attention in, not the weights' FP32; a CUDA
    // graph's replay: 16-bit, as its kernel names say, with no op to say which
    EXPECT_NE(std::find(p.precisions.begin(), p.precisions.end(), to_string(s.precision)), p.precisions.end())
        << to_string(s.precision) << ": " << to_string(s.impl) << " " << to_string(s.pass);
  }
  EXPECT_EQ(found, p.calls);
}

TEST_P(Regimes, ShapeOfTheCallsAsBuilt) {
  const Program& p = GetParam();
  const Doctor d(test::data_file("regimes/" + p.name + ".json.gz"));
  for (const AttentionSummary& s : d.analysis.attention) {
    SCOPED_TRACE(fmt::format("{} {}", to_string(s.impl), to_string(s.pass)));
    if (p.kind == "cudagraph") continue;  // a graph replay has no ops, so no record_shapes
    ASSERT_TRUE(s.shape.any());
    EXPECT_EQ(s.shape.head_dim, p.shape.head_dim);
    if (s.shape.from == ShapeFrom::QkBmm) {  // Inductor's bmm on [B*H, S, D]; eager GQA repeats K and V first
      EXPECT_EQ(s.shape.batch, p.shape.batch * p.shape.q_heads);
    } else {
      EXPECT_EQ(s.shape.batch, p.shape.batch);
      EXPECT_EQ(s.shape.q_heads, p.shape.q_heads);
      EXPECT_EQ(s.shape.kv_heads, p.shape.kv_heads);
    }
    if (s.phase == AttentionPhase::Decode) {  // generate()'s decode forwards: one token against the cache
      EXPECT_EQ(s.shape.q_len, 1);
      EXPECT_EQ(s.shape.kv_len, p.shape.kv_len + 1);                   // the first decode call's (the summary's shape)
    } else if (p.decoder_len > 0 && s.impl == AttentionImpl::Fused) {  // T5's fused calls: cross-attention
      EXPECT_EQ(s.shape.q_len, p.decoder_len);
      EXPECT_EQ(s.shape.kv_len, p.shape.q_len);
    } else if (p.decoder_len == 0) {
      EXPECT_EQ(s.shape.q_len, p.shape.q_len);
      EXPECT_EQ(s.shape.kv_len, p.shape.kv_len);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, Regimes, ::testing::ValuesIn(programs()),
                         [](const ::testing::TestParamInfo<Program>& param) { return param.param.name; });

Program named(const std::string& name) {
  for (Program& p : programs())
    if (p.name == name) return p;
  ADD_FAILURE() << name << " is not in tests/data/regimes/facts.json";
  return {};
}

// Inductor ran the V projection (aten::mm) between the softmax and P V: the call
// is found across it, and that GEMM is not counted as attention's.
TEST(RegimesCompile, ChainAcrossAScheduledProjectionLeavesTheProjectionOut) {
  const Program p = named("llama_eager_bf16_infer_compile");
  const Doctor d(test::data_file("regimes/" + p.name + ".json.gz"));
  const AttentionSummary* s = summary(d, AttentionImpl::Unfused);
  ASSERT_NE(s, nullptr);
  int gemms = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls)
    for (std::size_t i : c.activities) {
      const GpuActivity& a = d.index->activities()[i];
      if (a.cls.category != KernelCategory::Gemm) continue;
      ++gemms;
      std::string_view op;  // the innermost CPU op that launched it
      for (std::int32_t r = a.range; r != kNone && op.empty();
           r = d.index->ranges()[static_cast<std::size_t>(r)].parent)
        if (d.index->ranges()[static_cast<std::size_t>(r)].kind == EventKind::CpuOp)
          op = d.index->name(d.index->ranges()[static_cast<std::size_t>(r)]);
      EXPECT_EQ(op, "aten::bmm");
    }
  EXPECT_EQ(gemms, 2 * s->calls);  // QK^T and P V per call, over the whole trace's calls
}

// Every kernel of flex_attention (forward, backward, the backward's dO.O
// reduction and the decoding steps' split-KV combine, each under an op of its
// own) is inside an attention call; the calls per pass are the facts' (above).
TEST(RegimesFlex, EveryFlexKernelIsInACall) {
  for (const std::string name : {"llama_flex_attention_bf16_infer", "llama_flex_attention_bf16_train",
                                 "llama_flex_attention_bf16_infer_generate"}) {
    SCOPED_TRACE(name);
    const Doctor d(test::data_file("regimes/" + name + ".json.gz"));
    int flex = 0;
    for (std::size_t i = 0; i < d.index->activities().size(); ++i) {
      if (d.index->name(d.index->activities()[i]).find("flex_attention") == std::string_view::npos) continue;
      ++flex;
      EXPECT_TRUE(d.analysis.attention_calls.in_attention(i)) << d.index->name(d.index->activities()[i]);
    }
    EXPECT_GT(flex, 0);
  }
}

// A CUDA graph's replay (torch.compile mode="reduce-overhead"): every kernel is
// launched by one cudaGraphLaunch under the compiled region's op, which is not
// theirs. Eager attention's GEMMs are taken on kernel evidence alone, and
// Inductor's copies named after the cuDNN attention op they feed are no calls.
TEST(RegimesCudaGraph, ReplayedKernelsAreJudgedWithoutTheOpAroundTheLaunch) {
  for (const std::string name : {"llama_sdpa_bf16_infer_cudagraph", "llama_eager_bf16_infer_cudagraph"}) {
    SCOPED_TRACE(name);
    const Program p = named(name);
    const Doctor d(test::data_file("regimes/" + name + ".json.gz"));
    for (const AttentionCall& c : d.analysis.attention_calls.calls)
      for (std::size_t i : c.activities)
        EXPECT_FALSE(d.index->name(d.index->activities()[i]).starts_with("triton_poi_"))
            << d.index->name(d.index->activities()[i]);
    const AttentionSummary* s = summary(d, p.impl == "eager" ? AttentionImpl::Unfused : AttentionImpl::Fused);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->calls, p.calls.begin()->second);
  }
}

// The causes of a math fallback, from the SDPA op's record_shapes inputs.
TEST(RegimesMathCause, FalconsSingleKvHeadWithoutEnableGqa) {
  const Program p = named("falcon_sdpa_bf16_infer");
  const Doctor d(test::data_file("regimes/" + p.name + ".json.gz"));
  const AttentionSummary* s = summary(d, AttentionImpl::SdpaMath);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->math_causes.size(), 1u);
  const std::string want =
      fmt::format("k and v have {} head against q's {} and enable_gqa is False", p.shape.kv_heads, p.shape.q_heads);
  EXPECT_NE(s->math_causes[0].first.find(want), std::string::npos) << s->math_causes[0].first;
  EXPECT_EQ(s->math_causes[0].second, s->calls);
  const Finding* f = d.find("unfused-attention", Scope::Attention);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->fix.find("enable_gqa=True"), std::string::npos) << f->fix;
}

TEST(RegimesMathCause, T5sPermutedPositionBiasAsMask) {
  const Program p = named("t5_sdpa_bf16_infer");
  const Doctor d(test::data_file("regimes/" + p.name + ".json.gz"));
  const AttentionSummary* s = summary(d, AttentionImpl::SdpaMath);
  ASSERT_NE(s, nullptr);
  // compute_bias permutes [q, k, heads] to [heads, q, k]: the last dim's stride is the head count.
  const std::string want = fmt::format("attn_mask is not contiguous in its last dim (stride {})", p.shape.q_heads);
  ASSERT_EQ(s->math_causes.size(), 1u);
  EXPECT_NE(s->math_causes[0].first.find(want), std::string::npos) << s->math_causes[0].first;
  const Finding* f = d.find("unfused-attention", Scope::Attention);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->fix.find("attn_mask.contiguous()"), std::string::npos) << f->fix;
}

// An explicit sdpa_kernel(SDPBackend.MATH) leaves nothing in the inputs to blame.
TEST(RegimesMathCause, ForcedMathBlamesTheBackendSwitch) {
  const Doctor d(test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz"));
  const AttentionSummary* s = summary(d, AttentionImpl::SdpaMath);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->math_causes.size(), 1u);
  EXPECT_NE(s->math_causes[0].first.find("sdpa_kernel(SDPBackend.MATH)"), std::string::npos);
}

}  // namespace
}  // namespace attnprof
