// The attention view on real programs: Hugging Face transformers models with
// random weights (Llama, Mistral, GPT-2, BERT), eager / SDPA math / fused
// backends, bf16 / fp16 / fp32, inference and AdamW training, traced by
// torch.profiler (record_shapes, a wait-warmup-active schedule) and by
// `attnprof record` (no CPU ops). tests/data/corpus/facts.json says how each
// program was built (scripts/corpus/make_corpus.py --list); every expectation
// here comes from it, never from doctor's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "analysis/analysis.h"
#include "analysis/trace_shapes.h"
#include "corpus_facts.h"
#include "test_doctor.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

using test::corpus_facts;
using test::Facts;

using test::Doctor;

class Corpus : public ::testing::TestWithParam<Facts> {};

TEST_P(Corpus, EveryAttentionCallFoundAndNamed) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  std::int64_t forward = 0, backward = 0;
  for (const AttentionSummary& s : d.analysis.attention) {
    SCOPED_TRACE(std::string(to_string(s.impl)) + " " + std::string(to_string(s.pass)));
    EXPECT_EQ(to_string(s.impl), facts.expected_impl);
    (s.pass == AttentionPass::Forward ? forward : backward) += s.calls;
    EXPECT_EQ(to_string(s.precision), facts.dtype);
  }
  // Calls per pass = layers x forwards in the traced window: 2 profiler steps
  // under torch.profiler's schedule, every step under attnprof record.
  EXPECT_EQ(forward, facts.forward_calls);
  EXPECT_EQ(backward, facts.backward_calls);
}

TEST_P(Corpus, RegionsAreTheProgramsSteps) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  ASSERT_EQ(d.analysis.groups.size(), 1u);
  const GroupStats& g = d.analysis.groups[0];
  if (facts.tracer == "torch.profiler") {
    EXPECT_EQ(g.group.name, "ProfilerStep");
    EXPECT_EQ(g.group.instances.size(), static_cast<std::size_t>(facts.forwards));
    // Each step runs the same program: the same kernels in each.
    EXPECT_EQ(g.min_kernels, g.max_kernels);
  } else {
    // No steps, no annotations: the whole program, its weights' upload apart.
    EXPECT_EQ(g.group.name, "whole trace");
    EXPECT_GT(d.analysis.setup_copies.count, 0);
    EXPECT_GT(d.analysis.setup_copies.bytes, 1'000'000);  // 2 layers of 512-wide weights and the embeddings
  }
}

TEST_P(Corpus, FindingsBlameAttentionOnlyWhereItIsSlow) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  const bool fused = facts.expected_impl == "fused";
  for (const Finding& f : d.analysis.findings) {
    SCOPED_TRACE(f.id + ": " + f.title);
    if (fused) {
      EXPECT_EQ(f.scope, Scope::Model) << "attention is fused here";
    }
    EXPECT_NE(f.id, "kernel-count");
  }
  const Finding* unfused = d.find("unfused-attention", Scope::Attention);
  if (fused) {
    EXPECT_EQ(unfused, nullptr);
  } else {
    ASSERT_NE(unfused, nullptr);
    EXPECT_GT(unfused->time_ns, 0);
    EXPECT_GE(unfused->after_ns, 0);
  }
  // SDPA math's upcast is attention's; casts of eager fp32 programs are no round trip at all.
  if (facts.expected_impl == "sdpa-math") {
    EXPECT_NE(d.find("fp32-upcast", Scope::Attention), nullptr);
  }
  if (facts.dtype == "fp32") {
    EXPECT_EQ(d.find("fp32-upcast", Scope::Attention), nullptr);
  }
  // Llama and Mistral in 16 bits cast to FP32 in RMSNorm and the rotary embedding: the model's casts,
  // reported as such, never as attention's.
  if ((facts.family == "llama" || facts.family == "mistral") && facts.dtype != "fp32") {
    EXPECT_NE(d.find("fp32-upcast", Scope::Model), nullptr);
  }
}

// bench --from-trace: one shape per program (every forward call of a program has it), with all its calls.
TEST_P(Corpus, ShapesToReplay) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  const TraceShapes found = trace_shapes(d.analysis.attention_calls);
  if (facts.tracer != "torch.profiler") {
    EXPECT_TRUE(found.shapes.empty()) << "no CPU ops, no shapes";
    EXPECT_EQ(found.calls_without_shape, facts.forward_calls);
    return;
  }
  ASSERT_EQ(found.shapes.size(), 1u);
  const TraceShape& s = found.shapes[0];
  EXPECT_EQ(s.calls, facts.forward_calls);
  EXPECT_EQ(found.calls_without_shape, 0);
  EXPECT_EQ(s.shape.batch, facts.shape.batch);
  EXPECT_EQ(s.shape.q_heads, facts.shape.q_heads);
  EXPECT_EQ(s.shape.q_len, facts.shape.q_len);
  EXPECT_EQ(s.shape.kv_len, facts.shape.kv_len);
  EXPECT_EQ(s.shape.head_dim, facts.shape.head_dim);
  EXPECT_EQ(to_string(s.precision), facts.dtype);
  // Eager attention repeats K and V to every query head before its matmuls: replayed as that
  // (multi-head); SDPA ops see the real kv heads (GQA).
  EXPECT_EQ(s.shape.kv_heads, facts.impl == "sdpa" ? facts.shape.kv_heads : facts.shape.q_heads);
  if (s.causal_known) {
    EXPECT_EQ(s.causal, *facts.shape.causal);
  }
  if (facts.impl == "sdpa") {
    EXPECT_TRUE(s.causal_known);  // the op's is_causal
  }
}

TEST_P(Corpus, ShapesComeFromRecordShapes) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  for (const AttentionSummary& s : d.analysis.attention) {
    SCOPED_TRACE(std::string(to_string(s.impl)) + " " + std::string(to_string(s.pass)));
    if (facts.tracer != "torch.profiler") {
      EXPECT_FALSE(s.shape.known()) << "no CPU ops, no shapes";
      continue;
    }
    const bool from_sdpa_op = facts.impl == "sdpa";
    // A backward chain is autograd's matmuls, whose shapes are not read; a fused backward op's are.
    if (s.pass == AttentionPass::Backward && s.impl != AttentionImpl::Fused) continue;
    ASSERT_TRUE(s.shape.known());
    EXPECT_TRUE(s.one_shape);
    EXPECT_EQ(s.shape.batch, facts.shape.batch);
    EXPECT_EQ(s.shape.q_heads, facts.shape.q_heads);
    EXPECT_EQ(s.shape.q_len, facts.shape.q_len);
    EXPECT_EQ(s.shape.kv_len, facts.shape.kv_len);
    EXPECT_EQ(s.shape.head_dim, facts.shape.head_dim);
    if (!from_sdpa_op) {
      // Eager attention expands the kv heads (repeat_kv) before its matmul: the trace cannot say them.
      EXPECT_EQ(s.shape.kv_heads, 0) << "unknown, not a guess";
    } else {
      // The SDPA op sees the real kv heads (GQA).
      EXPECT_EQ(s.shape.kv_heads, facts.shape.kv_heads);
      ASSERT_TRUE(s.shape.causal.has_value());
      EXPECT_EQ(*s.shape.causal, *facts.shape.causal);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, Corpus, ::testing::ValuesIn(corpus_facts()),
                         [](const ::testing::TestParamInfo<Facts>& p) {
                           std::string n = p.param.name;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace attnprof
