// The attention view on real programs: Hugging Face transformers models with
// random weights (Llama, Mistral, GPT-2, BERT), eager / SDPA math / fused
// backends, bf16 / fp16 / fp32, inference and AdamW training, traced by
// torch.profiler (record_shapes, a wait-warmup-active schedule) and by
// `attnprof record` (no CPU ops). tests/data/corpus/facts.json says how each
// program was built (scripts/corpus/make_corpus.py --list); every expectation
// here comes from it, never from doctor's output.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <memory>

#include "analysis/analysis.h"
#include "analysis/kernel_shapes.h"
#include "analysis/replay.h"
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
  const TraceShapes found = trace_shapes(d.analysis.attention_calls, *d.index);
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
  // Hugging Face's Llama and Mistral eager attention call softmax(dtype=torch.float32); GPT-2's and
  // BERT's keep the input dtype. The replay's stand-in follows.
  if (facts.impl == "eager") {
    EXPECT_EQ(s.fp32_softmax, (facts.family == "llama" || facts.family == "mistral") && facts.dtype != "fp32");
  }
}

// Without record_shapes: what the kernels' names and launch grids say of each forward call, checked
// against how the program was built, on every trace (those with record_shapes too, by asking the
// kernels alone). FlashAttention and memory-efficient forwards give the whole shape (S to the kernel's
// block of rows); unfused and SDPA-math calls give batch x heads, S and S_kv, not the head dim;
// cuDNN's persistent forward kernel gives nothing.
TEST_P(Corpus, ShapeFromKernelsAgreesWithHowItWasBuilt) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  const AttentionShape& want = facts.shape;
  int inferred = 0, forward = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    if (c.pass != AttentionPass::Forward) continue;
    ++forward;
    const AttentionShape s = shape_from_kernels(c, *d.index);
    const bool should =
        c.impl != AttentionImpl::Fused || c.family == "FlashAttention" || c.family.starts_with("PyTorch mem-efficient");
    EXPECT_EQ(s.from == ShapeFrom::Kernels, should) << to_string(c.impl) << " " << c.family;
    if (s.from != ShapeFrom::Kernels) continue;
    ++inferred;
    SCOPED_TRACE(s.inferred);
    if (s.batch_x_heads) {
      EXPECT_EQ(s.batch, want.batch * want.q_heads);
      EXPECT_EQ(s.q_heads, 1);
    } else {
      EXPECT_EQ(s.batch, want.batch);
      EXPECT_EQ(s.q_heads, want.q_heads);
    }
    EXPECT_EQ(s.q_len, want.q_len);  // the corpus's lengths are whole blocks of every kernel's rows
    EXPECT_EQ(s.kv_len, want.kv_len);
    if (c.impl == AttentionImpl::Fused) {
      EXPECT_EQ(s.head_dim, want.head_dim);
    } else {
      EXPECT_EQ(s.head_dim, 0) << "not in an unfused call's kernels";
    }
    if (s.causal) {
      EXPECT_EQ(*s.causal, *want.causal);
    }
  }
  EXPECT_EQ(forward, facts.forward_calls);
  if (facts.expected_impl != "fused") {
    EXPECT_EQ(inferred, forward) << "every unfused and SDPA-math call has a softmax to size it";
  }
}

// The study's traces (PyTorch 2.11 on an H200; no record_shapes): built as B=4 H=16 S=2048 D=64 causal
// bf16. The kernels alone give that shape, but the head dim of the unfused ones.
TEST(ShapeFromKernels, TheStudysTraces) {
  for (const char* name : {"sdpa_flash.json", "sdpa_efficient.json", "manual.json", "sdpa_math.json"}) {
    SCOPED_TRACE(name);
    const Doctor d(test::example_trace(name));
    int checked = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      if (c.pass != AttentionPass::Forward) continue;
      const AttentionShape& s = c.shape;  // as the attention view filled it: from the kernels
      ASSERT_EQ(s.from, ShapeFrom::Kernels);
      SCOPED_TRACE(s.inferred);
      EXPECT_EQ(s.batch_x_heads ? s.batch : s.batch * s.q_heads, 4 * 16);
      EXPECT_EQ(s.q_len, 2048);
      EXPECT_EQ(s.kv_len, 2048);
      if (c.impl == AttentionImpl::Fused) {
        EXPECT_EQ(s.batch, 4);
        EXPECT_EQ(s.head_dim, 64);
      } else {
        EXPECT_TRUE(s.batch_x_heads);
        EXPECT_EQ(s.head_dim, 0);
      }
      if (c.family == "FlashAttention") {
        ASSERT_TRUE(s.causal.has_value());
        EXPECT_TRUE(*s.causal);  // flash_fwd_kernel's Is_causal
      }
      ++checked;
    }
    EXPECT_EQ(checked, 3) << "three forwards in each (fwd0..fwd2)";
  }
}

// What doctor --replay would run for each program (no GPU needed to plan it): the bench implementation
// standing in for what the program ran, beside the fused ones, on the program's shape.
TEST_P(Corpus, ReplayPlanStandsInForWhatRan) {
  const Facts& facts = GetParam();
  const Doctor d(test::data_file("corpus/" + facts.name + ".json.gz"));
  const Replay r = plan_replay(d.analysis, *d.index, {});
  // The replay covers the report's forward calls (those of the analysed regions), no more.
  int reported = 0, replayed = 0;
  for (const AttentionSummary& a : d.analysis.attention)
    if (a.pass == AttentionPass::Forward) reported += a.calls;
  for (const ReplayShape& s : r.shapes) replayed += s.traced.calls;
  EXPECT_EQ(replayed, reported);
  ASSERT_EQ(r.shapes.size(), 1u);
  const ReplayShape& s = r.shapes[0];
  EXPECT_EQ(s.traced.calls, facts.forward_calls);
  EXPECT_EQ(s.dtype, facts.dtype);
  EXPECT_EQ(r.steps, facts.tracer == "torch.profiler" ? facts.steps : 1) << "profiler steps, else the whole trace";
  std::string want_own;
  if (facts.impl == "eager")  // Llama's and Mistral's eager softmax runs in fp32 (softmax(dtype=float32))
    want_own = (facts.family == "llama" || facts.family == "mistral") && facts.dtype != "fp32" ? "eager-fp32-softmax"
                                                                                               : "eager";
  else if (facts.expected_impl == "sdpa-math")
    want_own = "math";
  // Attention dropout in training: GPT-2's attn_pdrop and BERT's attention_probs_dropout_prob are 0.1,
  // Llama's and Mistral's attention_dropout 0; none in inference.
  const bool drops = facts.mode == "training" && (facts.family == "gpt2" || facts.family == "bert");
  EXPECT_EQ(s.dropout, drops ? 0.1 : 0.0);
  // The rows of a shape to replay: the stand-in first, the fused ones beside it (16-bit).
  const auto check_rows = [&](const ReplayShape& shape) {
    ASSERT_FALSE(shape.rows.empty());
    if (!want_own.empty()) {
      EXPECT_TRUE(shape.rows[0].own);
      EXPECT_EQ(shape.rows[0].impl, want_own);
    }
    std::vector<std::string> alternatives;
    for (const ReplayRow& row : shape.rows)
      if (!row.own) alternatives.push_back(row.impl);
    EXPECT_TRUE(std::find(alternatives.begin(), alternatives.end(), "fused") != alternatives.end());
    for (const ReplayRow& row : shape.rows) {
      if (!row.own) {
        EXPECT_EQ(row.dtype, facts.dtype == "fp32" ? "bf16" : facts.dtype) << row.impl;
      }
    }
  };
  if (facts.tracer != "torch.profiler" && facts.expected_impl != "fused") {
    EXPECT_TRUE(s.rows.empty()) << "not replayed without a head dim: nothing to run";
    // No record_shapes, no head dim in the kernels: asked for, with what the kernels did say.
    EXPECT_NE(s.problem.find("--shape"), std::string::npos) << s.problem;
    EXPECT_NE(
        s.problem.find(fmt::format("B x H x S = {}", facts.shape.batch * facts.shape.q_heads * facts.shape.q_len)),
        std::string::npos)
        << s.problem;
    // Given, it is replayed with it.
    ReplayRequest ask;
    ask.shape = facts.shape;
    const Replay given = plan_replay(d.analysis, *d.index, ask);
    ASSERT_EQ(given.shapes.size(), 1u);
    EXPECT_TRUE(given.shapes[0].problem.empty());
    EXPECT_EQ(given.shapes[0].traced.shape.head_dim, facts.shape.head_dim);
    EXPECT_NE(given.shapes[0].command.find(fmt::format("--head-dim {}", facts.shape.head_dim)), std::string::npos);
    check_rows(given.shapes[0]);
    return;
  }
  if (facts.tracer != "torch.profiler") {  // cuDNN's persistent forward kernel says nothing of its shape
    EXPECT_NE(s.problem.find("--shape"), std::string::npos) << s.problem;
    return;
  }
  check_rows(s);
  EXPECT_TRUE(s.problem.empty()) << s.problem;
  EXPECT_EQ(s.traced.shape.batch, facts.shape.batch);
  EXPECT_EQ(s.traced.shape.q_len, facts.shape.q_len);
  EXPECT_EQ(s.traced.shape.head_dim, facts.shape.head_dim);
  EXPECT_NE(s.command.find(fmt::format("--batch {} --heads {}", facts.shape.batch, facts.shape.q_heads)),
            std::string::npos)
      << s.command;
}

// A bf16 replay row as the bench would fill it: its forward and backward times, or why it did not run.
ReplayRow replay_row(const char* impl, bool own, std::optional<double> ms, std::optional<double> backward_ms = {},
                     const char* why_not = "") {
  ReplayRow x;
  x.impl = impl;
  x.dtype = "bf16";
  x.own = own;
  x.ms = ms;
  x.backward_ms = backward_ms;
  x.why_not = why_not;
  return x;
}

// Savings and the verdict on the traced time, from the rows' times.
// The project's own kernels in a training step: a Llama (4 layers) trained on attnprof.attention through
// attnprof.register_transformers, two profiled steps (scripts/gpu/hf_training_check.py; tests/data/own/
// facts.json). A forward is one kernel; a backward is three (dO.O, the main kernel, dQ's conversion), one call.
TEST(OwnKernels, TrainingStepCallsAsBuilt) {
  simdjson::dom::parser parser;
  for (simdjson::dom::element f : parser.load(test::data_file("own/facts.json")).get_array()) {
    const std::string name{std::string_view(f["name"])};
    SCOPED_TRACE(name);
    const simdjson::dom::element e = f["expected"];
    const Doctor d(test::data_file("own/" + name + ".json.gz"));
    std::int64_t forward = 0, backward = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      EXPECT_EQ(c.impl, AttentionImpl::Fused);
      EXPECT_EQ(c.family, "attnprof fused");
      const bool fwd = c.pass == AttentionPass::Forward;
      (fwd ? forward : backward) += 1;
      EXPECT_EQ(c.kernels, std::int64_t(e[fwd ? "forward_kernels_per_call" : "backward_kernels_per_call"]));
    }
    EXPECT_EQ(forward, std::int64_t(e["forward_calls"]));
    EXPECT_EQ(backward, std::int64_t(e["backward_calls"]));
    // Fused attention throughout: nothing blames it.
    for (const Finding& x : d.analysis.findings) EXPECT_NE(x.scope, Scope::Attention) << x.id;
  }
}

// How a shape whose causality the trace does not say is replayed (replay_causality): a mask added to the
// scores inside a call is a decoder's causal mask, top-left on a square call; over a cache (fewer queries
// than keys) its queries are the last positions, so bottom-right, and a single query sees every key
// (unmasked). What the trace says, or --causal/--no-causal, wins.
TEST(Replay, CausalityOfAnAddedMask) {
  TraceShape s;
  s.shape.q_len = 512;
  s.shape.kv_len = 512;
  s.mask_in_call = true;
  ReplayCausality m = replay_causality(s, {});
  EXPECT_TRUE(m.causal && m.assumed);
  EXPECT_FALSE(m.bottom_right);
  s.shape.q_len = 4;  // speculative decoding's queries after 2048 cached keys
  s.shape.kv_len = 2052;
  m = replay_causality(s, {});
  EXPECT_TRUE(m.causal && m.bottom_right && m.assumed);
  EXPECT_NE(replay_mask_guess(s.shape).find("bottom-right"), std::string::npos);
  s.shape.q_len = 1;
  m = replay_causality(s, {});
  EXPECT_FALSE(m.causal);
  EXPECT_TRUE(m.assumed);
  EXPECT_NE(replay_mask_guess(s.shape).find("unmasked"), std::string::npos);
  m = replay_causality(s, true);  // asked: top-left, as PyTorch's is_causal
  EXPECT_TRUE(m.causal);
  EXPECT_FALSE(m.bottom_right || m.assumed);
  s.causal_known = true;  // the trace says (an attention op's is_causal)
  s.causal = true;
  m = replay_causality(s, false);
  EXPECT_TRUE(m.causal);
  EXPECT_FALSE(m.bottom_right || m.assumed);
  s.mask_in_call = false;
  s.causal_known = false;
  EXPECT_FALSE(replay_causality(s, {}).causal);
  ReplayCausality br{true, true, true};
  EXPECT_NE(replay_bench_command(s.shape, "bf16", br, 0).find(" --bottom-right"), std::string::npos);
  EXPECT_NE(replay_bench_command(s.shape, "bf16", {}, 0).find(" --no-causal"), std::string::npos);
}

TEST(Replay, SavingsAndAgreementFromTheTimes) {
  Replay r;
  ReplayShape s;
  s.traced_ms = 0.100;
  s.calls_per_step = 4;
  s.rows = {replay_row("math", true, 0.110), replay_row("cudnn", false, 0.010),
            replay_row("fused", false, {}, {}, "out of memory")};
  r.shapes = {s};
  s.traced_ms = 0.080;  // the replay 37% slower than the trace: does not carry over
  r.shapes.push_back(s);
  s.rows[0].ms.reset();  // no stand-in ran: savings against the traced time
  s.rows[0].why_not = "refused";
  r.shapes.push_back(s);
  finish_replay(r);
  EXPECT_NEAR(*r.shapes[0].own_vs_traced, 1.10, 1e-9);
  EXPECT_NE(r.shapes[0].carries_over.find("within 15%"), std::string::npos) << r.shapes[0].carries_over;
  EXPECT_NEAR(*r.shapes[0].rows[1].saving_ms, 0.100, 1e-9);
  EXPECT_NEAR(*r.shapes[0].rows[1].saving_step_ms, 0.400, 1e-9);
  EXPECT_FALSE(r.shapes[0].rows[2].saving_ms.has_value());
  EXPECT_NE(r.shapes[1].carries_over.find("+38%"), std::string::npos) << r.shapes[1].carries_over;
  EXPECT_FALSE(r.shapes[2].own_vs_traced.has_value());
  EXPECT_NEAR(*r.shapes[2].rows[1].saving_ms, 0.070, 1e-9);
}

// A training shape's step saving covers the forward and the backward, each against its own
// stand-in (or the traced time without one); a row without a backward has no step saving.
TEST(Replay, TrainingSavingsCoverBothPasses) {
  Replay r;
  ReplayShape s;
  s.traced_ms = 0.100;
  s.calls_per_step = 4;
  s.backward_calls = 8;
  s.traced_backward_ms = 0.250;
  s.backward_calls_per_step = 4;
  s.rows = {replay_row("eager", true, 0.110, 0.200), replay_row("cudnn", false, 0.010, 0.050),
            replay_row("fused", false, 0.008)};
  r.shapes = {s};
  s.rows[0].backward_ms.reset();  // no backward stand-in: the cuDNN backward against the traced time
  r.shapes.push_back(s);
  finish_replay(r);
  const ReplayRow& cudnn = r.shapes[0].rows[1];
  EXPECT_NEAR(*cudnn.saving_ms, 0.100, 1e-9);
  EXPECT_NEAR(*cudnn.backward_saving_ms, 0.150, 1e-9);
  EXPECT_NEAR(*cudnn.saving_step_ms, 4 * 0.100 + 4 * 0.150, 1e-9);
  EXPECT_NEAR(*r.shapes[0].own_backward_vs_traced, 0.8, 1e-9);
  EXPECT_NE(r.shapes[0].backward_carries_over.find("-20%"), std::string::npos) << r.shapes[0].backward_carries_over;
  EXPECT_NEAR(*r.shapes[0].rows[2].saving_ms, 0.102, 1e-9);
  EXPECT_FALSE(r.shapes[0].rows[2].saving_step_ms.has_value()) << "no backward: no training-step saving";
  EXPECT_NEAR(*r.shapes[1].rows[1].backward_saving_ms, 0.200, 1e-9);
  EXPECT_FALSE(r.shapes[1].own_backward_vs_traced.has_value());
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
      // Eager attention expands the kv heads (repeat_kv) before its matmul: the repeat's reshape says
      // how many there were; without a repeat (as many kv heads as query heads) nothing says it.
      EXPECT_EQ(s.shape.kv_heads, facts.shape.kv_heads < facts.shape.q_heads ? facts.shape.kv_heads : 0)
          << "the repeat's, or unknown; never a guess";
      // Its causal mask is not in its ops; the program's comparison of query and key positions before it is
      // (transformers builds the mask from kv_idx <= q_idx): a decoder's calls causal, an encoder's never.
      if (*facts.shape.causal) {
        ASSERT_TRUE(s.shape.causal.has_value());
        EXPECT_TRUE(*s.shape.causal);
        EXPECT_NE(s.shape.source().find("compared query and key positions"), std::string::npos);
      } else {
        EXPECT_FALSE(s.shape.causal.value_or(false));
      }
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
