// kv-repeat (analysis/kv_repeat.*, the rule in analysis/rules/kv_repeat.cpp) on every real program of
// tests/data: it fires where the program was built to copy K and V to every query head before
// attention, and nowhere else. What each program does comes from its facts.json (how it was built:
// heads, layers, forwards, cache) and from transformers 5.17's source: eager_attention_forward always
// calls repeat_kv; sdpa_attention_forward calls it where it passes SDPA a mask (use_gqa_in_sdpa), as a
// static cache's decode forwards do (the prefill's mask is dropped: is_causal on an empty cache), and
// passes enable_gqa=True otherwise; the paged SDPA of continuous batching always calls it;
// flex_attention passes enable_gqa=True (query heads a power of two). repeat_kv of one K/V head makes
// no copy: the expanded dim merges with a dim of 1, so the reshape is a view.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "analysis/analysis.h"
#include "analysis/kv_repeat.h"
#include "real_programs.h"

namespace attnprof {
namespace {

using test::Doctor;
using test::doctor;
using test::element_bytes;
using test::every_program;
using test::program;
using Program = test::Facts;

// Whether the program copies K and V to every query head before its calls, by construction.
bool copies_kv(const Program& p) {
  if (p.shape.kv_heads <= 1 || p.shape.kv_heads >= p.shape.q_heads) return false;  // no GQA, or one K/V head
  if (p.impl == "eager" || p.impl == "paged-sdpa" || p.impl == "paged-eager") return true;
  return p.impl == "sdpa" && (p.kv_cache == "static" || p.kind == "padded");
}
// Whether its trace can tell them: the copies' ops with record_shapes, not CUDA graph replays whose
// capture precedes the trace (Inductor's cudagraph kind: every traced forward replays).
bool told(const Program& p) { return p.tracer == "torch.profiler" && p.record_shapes && p.kind != "cudagraph"; }

// Each fed call, with its copies.
std::map<std::size_t, std::vector<const KvRepeat*>> by_call(const std::vector<KvRepeat>& repeats) {
  std::map<std::size_t, std::vector<const KvRepeat*>> out;
  for (const KvRepeat& k : repeats) out[k.call].push_back(&k);
  return out;
}

class KvRepeatEveryProgram : public ::testing::TestWithParam<Program> {};

// The finding where the program repeats K and V and the trace can tell it, none elsewhere (the twins that
// read K and V once: SDPA with enable_gqa, flex_attention, FlashAttention, one K/V head, MHA). Every copy
// as built: the program's batch, K/V heads, repeat and head dim, two a call (K and V), each as long as the
// K/V its call reads. None of its kernels in another finding: not hidden-copy's (DtoD memcpys), not
// unfused-attention's (the calls' own kernels), nor any other.
TEST_P(KvRepeatEveryProgram, FiresWhereTheProgramCopiesKAndV) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const std::vector<KvRepeat> repeats = find_kv_repeats(*d.index, d.analysis.attention_calls);
  const Finding* f = d.find("kv-repeat");
  EXPECT_EQ(f != nullptr, copies_kv(p) && told(p));
  EXPECT_EQ(!repeats.empty(), copies_kv(p) && told(p));
  for (const auto& [c, copies] : by_call(repeats)) {
    const AttentionCall& call = d.analysis.attention_calls.calls[c];
    EXPECT_EQ(call.pass, AttentionPass::Forward);
    EXPECT_EQ(copies.size(), 2u);  // K and V
    for (const KvRepeat* k : copies) {
      EXPECT_EQ(k->batch, p.shape.batch);
      EXPECT_EQ(k->kv_heads, p.shape.kv_heads);
      EXPECT_EQ(k->n_rep, p.shape.q_heads / p.shape.kv_heads);
      EXPECT_EQ(k->head_dim, p.shape.head_dim);
      EXPECT_EQ(k->kv_len, call.shape.kv_len);
      EXPECT_EQ(k->bytes,
                element_bytes(p) * static_cast<double>(p.shape.batch * p.shape.q_heads * k->kv_len * p.shape.head_dim));
    }
  }
  if (f == nullptr) return;
  EXPECT_EQ(f->scope, Scope::Attention);
  EXPECT_EQ(f->after_ns, 0);
  std::int64_t ns = 0;
  for (std::size_t a : f->activities) ns += d.index->event(d.index->activities()[a]).dur_ns;
  EXPECT_EQ(f->time_ns, ns);
  test::expect_kernels_in_no_other_finding(d, *f);
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, KvRepeatEveryProgram, ::testing::ValuesIn(every_program()),
                         test::program_test_name);

// Eager attention repeats K and V before every call: two copies a call, layers x forwards calls; each
// copy B x Hq x S x D elements, S the prompt at the prefill and the cache's length at each decode step
// (one decode call a layer at each length from the first to the last). Its time is the copies'; the
// fused-attention fix takes them with the calls (no second count), and says so.
TEST(KvRepeat, EagerCopiesBeforeEveryCall) {
  int programs = 0;
  for (const Program& p : every_program()) {
    if (p.impl != "eager" || !copies_kv(p) || !told(p)) continue;
    ++programs;
    SCOPED_TRACE(p.name);
    const Doctor d = doctor(p);
    const std::vector<KvRepeat> repeats = find_kv_repeats(*d.index, d.analysis.attention_calls);
    EXPECT_EQ(std::ssize(by_call(repeats)), p.forward_calls);
    EXPECT_EQ(std::ssize(repeats), 2 * p.forward_calls);
    double bytes = 0;
    int in_calls = 0;
    for (const KvRepeat& k : repeats) {
      bytes += k.bytes;
      in_calls += k.in_call;
    }
    const double head = element_bytes(p) * static_cast<double>(p.shape.batch * p.shape.q_heads * p.shape.head_dim);
    double lengths = static_cast<double>(p.forward_calls * p.shape.kv_len);  // a plain forward, or training's
    if (p.decode_calls > 0)
      lengths = static_cast<double>(p.prefill_calls * p.shape.kv_len) +
                static_cast<double>(p.prefill_calls) * 0.5 * static_cast<double>(p.decode_kv_first + p.decode_kv_last) *
                    static_cast<double>(p.decode_kv_last - p.decode_kv_first + 1);
    EXPECT_EQ(bytes, 2 * head * lengths);
    const Finding* f = d.find("kv-repeat");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(std::ssize(f->activities), std::ssize(repeats) - in_calls);
    // torch.compile moves V's copy into the chain (between the softmax and P V): the call holds it.
    EXPECT_EQ(in_calls, p.kind == "compile" ? p.forward_calls : 0);
    EXPECT_NE(f->fix.find("attn_implementation=\"sdpa\""), std::string::npos);
    const auto fused = std::find_if(d.analysis.fixes.begin(), d.analysis.fixes.end(),
                                    [](const Fix& x) { return x.id == "fused-attention"; });
    ASSERT_NE(fused, d.analysis.fixes.end());
    EXPECT_NE(std::find(fused->findings.begin(), fused->findings.end(), "kv-repeat"), fused->findings.end());
    for (const Fix& x : d.analysis.fixes) EXPECT_NE(x.id, "kv-repeat");
  }
  EXPECT_GE(programs, 10);
}

// The static cache's SDPA (tests/data/serving, generate() with cache_implementation="static", its decode
// step compiled and replayed as a CUDA graph): every decode forward hands SDPA a mask, so transformers
// repeats K and V, and Inductor fuses repeat_kv into one kernel a tensor; the prefill passes none (is_causal
// on an empty cache) and SDPA reads K/V once per KV head. The decode replays after the capture the trace
// holds are told from its ops: two copies a call, each of the whole cache (its length the decode calls'
// KV length, as built), the call's K/V as SDPA saw them; those before it are not, and the finding counts
// the kernels they ran alike (two a call) without their time.
TEST(KvRepeat, StaticCacheSdpaRepeatsAtEveryDecodeStep) {
  const Program& p = program("qwen2_sdpa_bf16_infer_generate_static");
  const Doctor d = doctor(p);
  const std::vector<KvRepeat> repeats = find_kv_repeats(*d.index, d.analysis.attention_calls);
  const auto fed = by_call(repeats);
  int decode = 0, shaped = 0, prefill = 0;
  for (std::size_t c = 0; c < d.analysis.attention_calls.calls.size(); ++c) {
    const AttentionCall& call = d.analysis.attention_calls.calls[c];
    if (call.phase == AttentionPhase::Prefill) {
      ++prefill;
      EXPECT_FALSE(fed.contains(c));
      EXPECT_EQ(call.shape.kv_heads, p.shape.kv_heads);  // enable_gqa: K and V read once per KV head
      continue;
    }
    ASSERT_EQ(call.phase, AttentionPhase::Decode);
    ++decode;
    EXPECT_EQ(fed.contains(c), call.shape.at_capture);
    if (!call.shape.at_capture) continue;
    ++shaped;
    EXPECT_EQ(call.shape.kv_heads, p.shape.q_heads);  // SDPA read K and V repeated
    for (const KvRepeat* k : fed.at(c)) {
      EXPECT_TRUE(d.index->graph_replayed(k->activity));
      EXPECT_EQ(k->kv_len, p.decode_kv_first);  // the whole static cache
    }
  }
  EXPECT_EQ(prefill, p.prefill_calls);
  EXPECT_EQ(decode, p.decode_calls);
  EXPECT_GT(shaped, 0);
  EXPECT_LT(shaped, decode);
  EXPECT_EQ(std::ssize(repeats), 2 * shaped);
  const Finding* f = d.find("kv-repeat");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(std::ssize(f->activities), 2 * shaped);
  EXPECT_NE(f->detail.find(std::to_string(2 * (decode - shaped)) + " more kernels"), std::string::npos) << f->detail;
  EXPECT_NE(f->fix.find("flash_attention_2"), std::string::npos);
  EXPECT_NE(f->fix.find("use_gqa_in_sdpa"), std::string::npos);
  // No unfused calls to take the copies with: the fix of its own.
  EXPECT_NE(
      std::find_if(d.analysis.fixes.begin(), d.analysis.fixes.end(), [](const Fix& x) { return x.id == "kv-repeat"; }),
      d.analysis.fixes.end());
}

// The twins that read K and V once: transformers' SDPA with the default dynamic cache passes no mask, so
// SDPA gets K and V with their own heads and enable_gqa=True, prefill and decode alike; a training step
// through SDPA the same.
TEST(KvRepeat, NoneWhereSdpaReadsKvOncePerHead) {
  for (const char* name : {"qwen2_sdpa_bf16_infer_generate", "llama_sdpa_fp16_infer_generate_b64_s1024_h32kv8_d64",
                           "mistral_sdpa_bf16_train", "llama_sdpa-flash_bf16_train"}) {
    SCOPED_TRACE(name);
    const Program& p = program(name);
    const Doctor d = doctor(p);
    int forward = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      if (c.pass != AttentionPass::Forward) continue;
      ++forward;
      EXPECT_EQ(c.shape.kv_heads, p.shape.kv_heads);
    }
    EXPECT_EQ(forward, p.forward_calls);
    EXPECT_TRUE(find_kv_repeats(*d.index, d.analysis.attention_calls).empty());
    EXPECT_EQ(d.find("kv-repeat"), nullptr);
  }
}

}  // namespace
}  // namespace attnprof
