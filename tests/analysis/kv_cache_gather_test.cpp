// kv-cache-gather (analysis/kv_cache_gather.*, the rule in analysis/rules/kv_cache_gather.cpp) on every real
// program of tests/data: it fires where the program was built to gather its paged KV cache into dense K/V
// before the calls that read it, and nowhere else. What each program does comes from its facts.json (heads,
// head dim, requests, phases, the cache's lengths, the gathers: make_corpus.py) and from transformers 5.17's
// source: in continuous batching, "paged|sdpa" (sdpa_attention_paged_forward) calls PagedAttentionCache.update,
// which writes the forward's new K/V into the pool and, where the forward reads cached keys, gathers every
// request's tokens back with torch.index_select of the K pool and of the V pool, [tokens, Hkv, D], a layer
// at a time; a forward of fresh prompts alone (the prefill) reads nothing back. generate()'s caches are
// dense (grown by torch.cat, or static), flex_attention's paged decode reads its pool through the block mask:
// no gather.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>

#include "analysis/analysis.h"
#include "analysis/kv_cache_gather.h"
#include "real_programs.h"

namespace attnprof {
namespace {

using test::Doctor;
using test::doctor;
using test::element_bytes;
using test::every_program;
using test::program;
using Program = test::Facts;

// Whether the program gathers its paged cache, by construction, and whether its trace can tell it (the
// gathers' ops with record_shapes).
bool gathers(const Program& p) { return p.impl == "paged-sdpa" || p.impl == "paged-eager"; }
bool told(const Program& p) { return p.tracer == "torch.profiler" && p.record_shapes; }

class KvCacheGatherEveryProgram : public ::testing::TestWithParam<Program> {};

// The finding where the program gathers its cache and the trace can tell it, none elsewhere. Every gather as
// built: the facts' count (one for K, one for V, a layer and decode forward), the model's K/V heads and head
// dim, as many tokens as its call reads keys (every request's cache: the prompts and a token a request each
// forward), two a call, before each call that reads cached keys and none before a prefill. Its time the
// gathers' kernels and no other finding's; after the fix the gathers before decode calls are gone, those
// before mixed calls stay.
TEST_P(KvCacheGatherEveryProgram, FiresWhereThePagedCacheIsGathered) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const std::vector<KvCacheGather> all = find_kv_cache_gathers(*d.index, d.analysis.attention_calls);
  const Finding* f = d.find("kv-cache-gather");
  EXPECT_EQ(f != nullptr, gathers(p) && told(p));
  EXPECT_EQ(!all.empty(), gathers(p) && told(p));
  if (all.empty()) return;
  if (p.kv_gathers >= 0) {
    EXPECT_EQ(std::ssize(all), p.kv_gathers);
  }
  std::map<std::size_t, int> per_call;
  std::int64_t decode_ns = 0, ns = 0;
  for (const KvCacheGather& g : all) {
    const AttentionCall& call = d.analysis.attention_calls.calls[g.call];
    ++per_call[g.call];
    EXPECT_EQ(g.kv_heads, p.shape.kv_heads);
    EXPECT_EQ(g.head_dim, p.shape.head_dim);
    EXPECT_EQ(g.tokens, call.shape.kv_len);  // one packed sequence: batch 1
    if (p.decode_kv_first > 0) {
      EXPECT_GE(g.tokens, p.decode_kv_first);
      EXPECT_LE(g.tokens, p.decode_kv_last);
    }
    EXPECT_EQ(g.bytes, element_bytes(p) * static_cast<double>(g.tokens * p.shape.kv_heads * p.shape.head_dim));
    EXPECT_TRUE(call.phase == AttentionPhase::Decode || call.phase == AttentionPhase::Mixed);
    const std::int64_t d_ns = d.index->event(d.index->activities()[g.activity]).dur_ns;
    ns += d_ns;
    if (call.phase == AttentionPhase::Decode) decode_ns += d_ns;
  }
  for (const auto& [c, n] : per_call) EXPECT_EQ(n, 2) << c;  // K and V
  std::int64_t cached = 0, prefill = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    cached += reads_growing_cache(c.phase);
    prefill += c.phase == AttentionPhase::Prefill;
  }
  EXPECT_EQ(std::ssize(per_call), cached);  // every call that reads cached keys, no prefill
  if (p.decode_calls + p.mixed_calls > 0) {
    EXPECT_EQ(cached, p.decode_calls + p.mixed_calls);
  }
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->scope, Scope::Attention);
  EXPECT_EQ(f->time_ns, ns);
  EXPECT_EQ(f->after_ns, ns - decode_ns);
  EXPECT_EQ(std::ssize(f->activities), std::ssize(all));
  EXPECT_NE(f->fix.find("paged|flash_attention_2"), std::string::npos);
  EXPECT_NE(f->fix.find("block_table"), std::string::npos);
  test::expect_kernels_in_no_other_finding(d, *f);
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, KvCacheGatherEveryProgram, ::testing::ValuesIn(every_program()),
                         test::program_test_name);

// Eight requests in continuous batching (8 prompts, 1721 tokens): 15 decode forwards a step after the
// prefill, 2 layers, 2 steps; every decode call reads its gathered cache, 1729 to 1841 tokens; the prefill
// reads none back. The gathers' bytes: every cached token of every request, K and V, each forward; all go
// with the decode fast path.
TEST(KvCacheGather, ContinuousBatchingGathersBeforeEveryDecodeCall) {
  const Program& p = program("llama_paged-sdpa_bf16_infer_continuous");
  const Doctor d = doctor(p);
  const std::vector<KvCacheGather> all = find_kv_cache_gathers(*d.index, d.analysis.attention_calls);
  double bytes = 0;
  for (const KvCacheGather& g : all) bytes += g.bytes;
  // Two gathers a decode call at each length from the first to the last, a step of one token a request.
  double tokens = 0;
  for (std::int64_t kv = p.decode_kv_first; kv <= p.decode_kv_last; kv += p.decode_q_len)
    tokens += static_cast<double>(kv);
  EXPECT_EQ(bytes, 2.0 * static_cast<double>(p.steps * p.layers) * tokens * element_bytes(p) *
                       static_cast<double>(p.shape.kv_heads * p.shape.head_dim));
  const Finding* f = d.find("kv-cache-gather");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->after_ns, 0);
  EXPECT_NE(f->title.find(fmt::format("up to {} tokens x {} K/V heads x {}", p.decode_kv_last, p.shape.kv_heads,
                                      p.shape.head_dim)),
            std::string::npos)
      << f->title;
  const auto fix = std::find_if(d.analysis.fixes.begin(), d.analysis.fixes.end(),
                                [](const Fix& x) { return x.id == "kv-cache-gather"; });
  ASSERT_NE(fix, d.analysis.fixes.end());
  EXPECT_NEAR(static_cast<double>(fix->gpu_ns), static_cast<double>(f->time_ns) / static_cast<double>(p.steps),
              0.05 * static_cast<double>(f->time_ns) / static_cast<double>(p.steps));
}

// Every trace of tests/data and examples/traces that is not a program built to gather a paged cache, or
// whose trace cannot tell it (attnprof record: no ops): none.
TEST(KvCacheGather, NowhereElse) {
  const auto [gathering, traces] =
      test::expect_finding_only_in("kv-cache-gather", [](const Program& p) { return gathers(p) && told(p); });
  EXPECT_EQ(gathering, 4u);  // continuous, continuous_many, continuous_long, continuous_graph
  EXPECT_GT(traces, 100);
}

}  // namespace
}  // namespace attnprof
