// unsplit-decode (analysis/unsplit_decode.*, the rule in analysis/rules/unsplit_decode.cpp) on every real
// program of tests/data: it fires where the program was built so that its decode calls run a kernel of a few
// CTAs that does not split the keys, and nowhere else. What each program does comes from its facts.json (how
// it was built: heads, requests, phases, the cache's lengths; make_corpus.py) and from the sources it ran
// (transformers 5.17, PyTorch 2.11):
//   - continuous batching with "paged|sdpa" (sdpa_attention_paged_forward) hands SDPA a decode forward's
//     tokens, one a request, as one sequence [1, Hq, n, D] against every request's gathered and repeated
//     cache [1, Hq, S, D] under a mask. SDPA's kernel for it, cuDNN's sm90 flash forward, tiles the queries
//     (128 rows a tile, a CTA a tile and head: docs/working-here.md), so n <= 16 queries make one tile a
//     head, Hq CTAs on the H100's 132 SMs, and nothing splits the keys.
//   - generate() through SDPA hands it q of one token: cuDNN's decode kernel splits the keys and merges them
//     in a kernel of its own (its lean reduction), or, at batch 64, its CTAs fill the GPU; flex_attention's
//     decoding splits them too (its reductions); eager attention runs no fused kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analysis/analysis.h"
#include "analysis/unsplit_decode.h"
#include "real_programs.h"

namespace attnprof {
namespace {

using test::Doctor;
using test::doctor;
using test::element_bytes;
using test::every_program;
using test::program;
using Program = test::Facts;

constexpr std::int64_t kH100Sms = 132;             // an H100 SXM (80GB HBM3)
constexpr double kH100BytesPerNs = 3.35e12 / 1e9;  // its datasheet's 3.35 TB/s
constexpr std::int64_t kCudnnTileRows = 128;       // cuDNN's sm90 flash forward: a CTA a 128-row query tile and head

// Whether the program's decode calls run unsplit on a few CTAs, by construction: paged SDPA's packed decode
// forwards (one query a request) where the trace tells them decode (up to 16 packed queries with shapes;
// without them, by their kernels and the keys gathered for them: facts' phases say which).
bool unsplit(const Program& p) { return p.impl == "paged-sdpa" && p.decode_calls > 0; }
bool shapes(const Program& p) { return p.tracer == "torch.profiler" && p.record_shapes; }

// The decode calls a generate() or serving program was built with: its facts' phases, else (the regimes
// set's generate(), made before its facts said phases) one prefill forward a step and a decode forward for
// every other, a call a layer each.
std::int64_t decode_calls(const Program& p) {
  if (p.decode_calls > 0 || p.kind != "generate") return p.decode_calls;
  return p.layers * (p.forwards - p.steps);
}

const Fix* fix_of(const Doctor& d, std::string_view id) {
  for (const Fix& f : d.analysis.fixes)
    if (f.id == id) return &f;
  return nullptr;
}

class UnsplitDecodeEveryProgram : public ::testing::TestWithParam<Program> {};

// The finding where the program decodes on a few unsplit CTAs, none elsewhere. Each of its decode calls as
// built: one a layer and decode forward, Hq CTAs (one query tile a head) on 132 SMs. With shapes: the bytes
// its shape implies (q and the output over the packed queries, K and V repeated to the query heads over the
// cache's length at that step: the prompts' tokens and one more a request each forward), read under a
// quarter of the H100's bandwidth, and a split kernel modelled at no less than those bytes at that
// bandwidth and at most half the call's time. Its time the calls' kernels and no other finding's.
TEST_P(UnsplitDecodeEveryProgram, FiresWhereDecodeCallsRunUnsplitOnAFewCtas) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const std::vector<UnsplitDecode> calls =
      find_unsplit_decodes(*d.index, d.analysis.attention_calls, d.analysis.device);
  const Finding* f = d.find("unsplit-decode");
  EXPECT_EQ(f != nullptr, unsplit(p));
  if (!unsplit(p)) {
    EXPECT_TRUE(calls.empty());
    return;
  }
  ASSERT_NE(d.analysis.device.name.find("H100"), std::string::npos);
  EXPECT_EQ(std::ssize(calls), p.decode_calls);
  std::map<std::int64_t, int> lengths;  // the decode calls' KV lengths, each as often as built
  double split_ns = 0, kernel_ns = 0;
  for (const UnsplitDecode& u : calls) {
    const AttentionCall& call = d.analysis.attention_calls.calls[u.call];
    EXPECT_EQ(call.phase, AttentionPhase::Decode);
    EXPECT_FALSE(call.combines_splits);
    EXPECT_EQ(u.ctas, p.shape.q_heads * ((p.decode_q_len + kCudnnTileRows - 1) / kCudnnTileRows));
    EXPECT_EQ(u.sms, kH100Sms);
    kernel_ns += static_cast<double>(u.kernel_ns);
    if (!shapes(p)) {
      EXPECT_EQ(u.bytes, 0);
      EXPECT_EQ(u.share, -1);
      EXPECT_EQ(u.split_ns, -1);
      continue;
    }
    const std::int64_t kv = call.shape.kv_len;
    ++lengths[kv];
    const double bytes =
        element_bytes(p) * static_cast<double>(p.shape.head_dim) *
        (2.0 * static_cast<double>(p.shape.q_heads * p.decode_q_len) + 2.0 * static_cast<double>(p.shape.q_heads * kv));
    EXPECT_DOUBLE_EQ(u.bytes, bytes);
    EXPECT_NEAR(u.share, bytes / static_cast<double>(u.kernel_ns) / kH100BytesPerNs, 1e-9);
    EXPECT_LT(u.share, 0.25);
    EXPECT_GE(static_cast<double>(u.split_ns), bytes / kH100BytesPerNs);
    EXPECT_LE(u.split_ns * 2, u.kernel_ns);
    split_ns += static_cast<double>(u.split_ns);
  }
  if (shapes(p)) {
    // One decode forward a token after the prefill, each reading the cache one token a request longer.
    std::map<std::int64_t, int> built;
    for (std::int64_t kv = p.decode_kv_first; kv <= p.decode_kv_last; kv += p.decode_q_len)
      built[kv] = static_cast<int>(p.steps * p.layers);
    EXPECT_EQ(lengths, built);
  }
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->scope, Scope::Attention);
  std::int64_t ns = 0;
  for (std::size_t a : f->activities) ns += d.index->event(d.index->activities()[a]).dur_ns;
  EXPECT_EQ(f->time_ns, ns);
  EXPECT_EQ(static_cast<double>(f->time_ns), kernel_ns);
  EXPECT_NE(f->title.find(fmt::format("of {} CTAs on {} SMs", p.shape.q_heads, kH100Sms)), std::string::npos)
      << f->title;
  EXPECT_NE(f->fix.find("paged|flash_attention_2"), std::string::npos);
  EXPECT_NE(f->fix.find("flash_attn_with_kvcache"), std::string::npos);
  EXPECT_NE(f->fix.find("attnprof.attention("), std::string::npos);
  // attention-host names the same calls for their CPU time (wall), not their kernels'.
  test::expect_kernels_in_no_other_finding(d, *f, "attention-host");
  const Fix* fix = fix_of(d, "unsplit-decode");
  if (!shapes(p)) {
    // Without shapes no saving is told, and no fix is priced.
    EXPECT_EQ(f->after_ns, -1);
    EXPECT_EQ(fix, nullptr);
    EXPECT_NE(f->detail.find("no saving is counted"), std::string::npos);
    return;
  }
  EXPECT_EQ(static_cast<double>(f->after_ns), split_ns);
  ASSERT_NE(fix, nullptr);
  // The step model's GPU saving: the calls' time less the split kernels', per step.
  const double saved = (static_cast<double>(f->time_ns) - split_ns) / static_cast<double>(p.steps);
  EXPECT_NEAR(static_cast<double>(fix->gpu_ns), saved, 0.05 * saved);
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, UnsplitDecodeEveryProgram, ::testing::ValuesIn(every_program()),
                         test::program_test_name);

// generate() through SDPA: each decode call's keys are split and merged by cuDNN's lean reduction, one a
// call (batch 1 and 16, dynamic and static caches, traced either way), and flex_attention's decoding
// combines its splits with reductions of its own: none is unsplit.
TEST(UnsplitDecode, NoneWhereDecodeSplitsTheKeys) {
  for (const char* name :
       {"qwen2_sdpa_bf16_infer_generate", "qwen2_sdpa_bf16_infer_generate_record",
        "qwen2_sdpa_bf16_infer_generate_static", "llama_sdpa_bf16_infer_generate_b1_s32768_h4kv1_d128",
        "llama_sdpa_bf16_infer_generate_b16_s4096_h16kv4_d128_record", "llama_flex_attention_bf16_infer_generate",
        "llama_flex_paged_bf16_infer_flex_paged", "llama_flex_paged_bf16_infer_flex_paged_record"}) {
    SCOPED_TRACE(name);
    const Program& p = program(name);
    const Doctor d = doctor(p);
    std::int64_t decode = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      if (c.phase != AttentionPhase::Decode) continue;
      ++decode;
      EXPECT_TRUE(c.combines_splits);
    }
    EXPECT_EQ(decode, decode_calls(p));
    EXPECT_TRUE(find_unsplit_decodes(*d.index, d.analysis.attention_calls, d.analysis.device).empty());
    EXPECT_EQ(d.find("unsplit-decode"), nullptr);
  }
}

// generate() at batch 64 through SDPA: cuDNN's decode kernel does not split the keys, but it launches a CTA
// a sequence and K/V head at least (64 x 8), four times the SMs: the GPU is full.
TEST(UnsplitDecode, NoneWhereTheCtasFillTheGpu) {
  const Program& p = program("llama_sdpa_fp16_infer_generate_b64_s1024_h32kv8_d64");
  const Doctor d = doctor(p);
  std::int64_t decode = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    if (c.phase != AttentionPhase::Decode) continue;
    ++decode;
    EXPECT_FALSE(c.combines_splits);
    ASSERT_TRUE(c.main_kernel);
    const GpuArgs* g = d.trace.args(d.index->event(d.index->activities()[*c.main_kernel]));
    ASSERT_NE(g, nullptr);
    EXPECT_GE(std::int64_t{g->grid[0]} * g->grid[1] * g->grid[2], p.shape.batch * p.shape.kv_heads);
  }
  EXPECT_EQ(decode, p.decode_calls);
  EXPECT_EQ(d.find("unsplit-decode"), nullptr);
}

// Every trace of tests/data and examples/traces that is not a program built to decode unsplit (the HTA
// traces, the study's examples, the ranks, the own kernel's training): none.
TEST(UnsplitDecode, NowhereElse) {
  const auto [unsplit_traces, traces] = test::expect_finding_only_in("unsplit-decode", unsplit);
  EXPECT_EQ(unsplit_traces, 6u);  // continuous, continuous_long and the four record twins
  EXPECT_GT(traces, 100);
}

}  // namespace
}  // namespace attnprof
