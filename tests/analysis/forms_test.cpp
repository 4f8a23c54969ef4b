// Attention whose scores are more than softmax(QK^T / sqrt(d)) V, and a module that keeps attention
// off the fused kernels: Gemma 2's soft-capped logits (tanh(s / cap) * cap), GPT-OSS's sink logit per
// row (a learned column concatenated to the scores before the softmax), Bloom's ALiBi (a bias through
// baddbmm's input), T5's learned per-head position bias (added before the softmax), torch.nn.MultiheadAttention
// called with need_weights=True (its default: it returns the head-averaged weights, so it runs its own
// math path), each in both passes, beside the program that runs it fused (flex_attention;
// need_weights=False). Hugging Face transformers models with random weights and a plain PyTorch encoder,
// traced on an H200 by torch.profiler (one with with_stack) and `attnprof record`
// (scripts/corpus/make_corpus.py --set forms); tests/data/forms/facts.json says how each was built and
// every expectation comes from it.
#include <gtest/gtest.h>

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

std::vector<Program> programs() { return test::corpus_facts("forms/facts.json"); }

Doctor doctor(const Program& p) { return Doctor(test::data_file("forms/" + p.name + ".json.gz")); }

// What the fix of a form without soft-capping or sinks must say.
std::string expected_fix(const Program& p) {
  if (p.form == "alibi") return "alibi_slopes";
  if (p.form == "bias") return "attn_mask";
  return "need_weights=False";
}

class Forms : public ::testing::TestWithParam<Program> {};

TEST_P(Forms, CallsAsBuilt) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  std::map<std::pair<std::string, std::string>, std::int64_t> found;
  for (const AttentionSummary& s : d.analysis.attention)
    found[{std::string(to_string(s.impl)), std::string(to_string(s.pass))}] += s.calls;
  EXPECT_EQ(found, p.calls);
}

// Each unfused call, forward and backward, carries its program's form and no other; fused calls none.
TEST_P(Forms, EveryUnfusedCallHasItsForm) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  int unfused = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    const bool fused = c.impl == AttentionImpl::Fused;
    unfused += !fused;
    SCOPED_TRACE(std::string(to_string(c.impl)) + " " + std::string(to_string(c.pass)));
    EXPECT_EQ(c.softcap, !fused && p.form == "softcap");
    EXPECT_EQ(c.sinks, !fused && p.form == "sinks");
    EXPECT_EQ(c.mha_module, !fused && p.form == "weights");
    EXPECT_EQ(c.alibi, !fused && p.form == "alibi");
    EXPECT_EQ(c.position_bias, !fused && p.form == "bias");
  }
  EXPECT_EQ(unfused, p.expected_impl == "unfused" ? p.forward_calls + p.backward_calls : 0);
}

// The fix fits the form: not SDPA where SDPA cannot compute the scores, need_weights=False for the module;
// the plan's fix names the same way. The fused twins have nothing to fix.
TEST_P(Forms, FixFitsTheForm) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  int findings = 0;
  for (const Finding& f : d.analysis.findings) {
    if (f.id != "unfused-attention") continue;
    ++findings;
    if (p.form == "softcap" || p.form == "sinks") {
      EXPECT_NE(f.fix.find("flex_attention"), std::string::npos) << f.fix;
      EXPECT_EQ(f.fix.find("attn_implementation=\"sdpa\""), std::string::npos) << f.fix;
      EXPECT_NE(f.fix.find(p.form == "softcap" ? "soft-capped" : "sink logit"), std::string::npos) << f.fix;
    } else {
      EXPECT_NE(f.fix.find(expected_fix(p)), std::string::npos) << f.fix;
    }
  }
  EXPECT_EQ(findings, p.expected_impl == "unfused" ? (p.backward_calls > 0 ? 2 : 1) : 0);
  for (const Fix& x : d.analysis.fixes) {
    if (x.id != "fused-attention") continue;
    EXPECT_NE(x.title.find(p.form == "softcap" || p.form == "sinks" ? "flex_attention" : expected_fix(p)),
              std::string::npos)
        << x.title;
  }
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, Forms, ::testing::ValuesIn(programs()),
                         [](const ::testing::TestParamInfo<Program>& param) { return param.param.name; });

// The control: no call of the corpus (Llama, Mistral, GPT-2, BERT; eager and SDPA) shows a form.
TEST(FormsControl, PlainAttentionHasNone) {
  int calls = 0;
  for (const Program& p : test::corpus_facts()) {
    const Doctor d(test::data_file("corpus/" + p.name + ".json.gz"));
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      ++calls;
      EXPECT_FALSE(c.softcap || c.sinks || c.mha_module) << p.name;
    }
  }
  EXPECT_GT(calls, 100);
}

}  // namespace
}  // namespace attnprof
