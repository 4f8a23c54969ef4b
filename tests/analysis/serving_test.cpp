// Inference as served: generate() with a dynamic KV cache, one prefill forward over the prompt and a
// decode forward per further token (q_len 1 against the cache), eager attention against SDPA (cuDNN),
// Qwen2 with grouped-query attention (16 query heads, 4 K/V heads, D128, a 2048-token prompt), traced
// by torch.profiler and (SDPA) by `attnprof record` on an H200 (scripts/corpus/make_corpus.py --set
// serving; the Llama pair and the batch-32 pair of that set stay out of the repository for validation),
// and the SDPA program with a static cache, whose decode steps generate() runs compiled: CUDA graph
// replays (the trace holds one capture, in its second step, after the first step's 15 replays).
// tests/data/serving/grid: six programs of the decode grid (make_corpus.py --set decode, an H100): batch 64
// with GQA in fp16 and batch 1 with MQA over a 32k-token prompt (its eager prefill's scores over 2^31
// elements: PyTorch runs each elementwise op of them as several kernels), eager against SDPA; batch 16 with
// GQA and a static cache at batch 64 with MQA under attnprof record (no ops: the shapes from cuDNN's decode
// kernels); eager at batch 1 (bf16) and at batch 4 over an 8k-token prompt (fp16: its softmax a block a row)
// under attnprof record (the shapes from the softmax and the score-sized passes).
// Each folder's facts.json says how each was built: every expectation comes from it.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <map>
#include <string>

#include "analysis/analysis.h"
#include "analysis/attention_host.h"
#include "analysis/graph_captures.h"
#include "analysis/kernel_classifier.h"
#include "analysis/kernel_shapes.h"
#include "analysis/replay.h"
#include "analysis/trace_shapes.h"
#include "corpus_facts.h"
#include "report/html_report.h"
#include "report/replay_report.h"
#include "report/summary_text.h"
#include "test_doctor.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

using test::Doctor;
using Program = test::Facts;

std::vector<Program> programs() {
  std::vector<Program> all = test::corpus_facts("serving/facts.json");
  for (Program& p : test::corpus_facts("serving/grid/facts.json")) all.push_back(std::move(p));
  return all;
}
Doctor doctor(const Program& p) { return Doctor(test::data_file(p.folder + "/" + p.name + ".json.gz")); }

// The datasheets' peak memory bandwidth of the GPUs the programs ran on, TB/s.
double datasheet_tb_per_s(const std::string& gpu) {
  if (gpu.find("H200") != std::string::npos) return 4.8;
  if (gpu.find("H100") != std::string::npos && gpu.find("HBM3") != std::string::npos) return 3.35;
  ADD_FAILURE() << "no datasheet figure here for " << gpu;
  return 0;
}

const AttentionSummary* phase_of_group(const GroupStats& g, AttentionPhase phase) {
  for (const AttentionSummary& s : g.attention)
    if (s.phase == phase) return &s;
  return nullptr;
}

const AttentionSummary* phase_of(const Analysis& a, AttentionPhase phase) {
  for (const AttentionSummary& s : a.attention)
    if (s.phase == phase) return &s;
  return nullptr;
}

class Serving : public ::testing::TestWithParam<Program> {};

// Prefill and decode calls counted as built: layers x forwards of each phase; without CPU ops
// (attnprof record) from the kernels: a decode call combines split-KV partials, or runs the kernel of
// calls that do.
TEST_P(Serving, CallsPerPhaseAsBuilt) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  std::map<AttentionPhase, std::int64_t> calls;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) calls[c.phase] += 1;
  EXPECT_EQ(calls[AttentionPhase::Prefill], p.prefill_calls);
  EXPECT_EQ(calls[AttentionPhase::Decode], p.decode_calls);
  EXPECT_EQ(calls[AttentionPhase::None], 0);
}

// The bytes a decode call of the program moves as built (q, K, V and the output once, elem bytes each), at
// the middle of the KV lengths its cache had. With `repeated`, K and V at the query heads (a call that
// read repeat_kv's copies, as replayed).
double decode_call_bytes(const Program& p, double elem, bool repeated = false) {
  const double b = static_cast<double>(p.shape.batch), hq = static_cast<double>(p.shape.q_heads);
  // transformers' SDPA path repeats K and V to the query heads (repeat_kv) when it hands SDPA a mask, as
  // a static cache's decode forwards do (the unfilled positions are masked): those calls read hq heads.
  const double hkv = static_cast<double>(repeated || p.kv_cache == "static" ? p.shape.q_heads : p.shape.kv_heads);
  const double dim = static_cast<double>(p.shape.head_dim);
  const double kv = 0.5 * static_cast<double>(p.decode_kv_first + p.decode_kv_last);
  const double q = static_cast<double>(p.decode_q_len);
  return elem * dim * (2 * b * hq * q + 2 * b * hkv * kv);
}

// What a decode call must move: q and the output once, K and V once per K/V head (the eager program's
// QK^T sees them repeated; the repeat's reshape says how many there are), over the KV lengths the
// cache had: within 5% of the construction's mean.
TEST_P(Serving, DecodeBytesAsTheShapeImplies) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const AttentionSummary* s = phase_of(d.analysis, AttentionPhase::Decode);
  ASSERT_NE(s, nullptr);
  // No CPU ops (attnprof record): the kernels give no key length, so nothing to count the bytes from.
  if (p.tracer != "torch.profiler") {
    EXPECT_EQ(s->bytes, 0);
    EXPECT_LT(s->bandwidth_share(), 0);
    return;
  }
  const double expected = decode_call_bytes(p, p.dtype == "fp32" ? 4 : 2);
  EXPECT_NEAR(s->bytes_per_call(), expected, 0.05 * expected);
  EXPECT_EQ(s->peak_tb_per_s, datasheet_tb_per_s(p.gpu));  // the trace's GPU
  EXPECT_GT(s->bandwidth_share(), 0);
  EXPECT_LT(s->bandwidth_share(), 1);
}

// The forwards a step's decode calls make and the tokens they generate, where their shapes say them: a
// growing cache (dynamic, paged) under torch.profiler with record_shapes, one forward a token a sequence
// (continuous batching packs a token a request into one forward of batch 1: decode_q_len tokens), every
// layer's call a forward; as built: decode calls / layers / steps forwards a step. A static cache's calls
// all read its whole length, and record has no shapes: not told.
void expect_tokens_as_built(const Program& p, const Doctor& d) {
  const GroupStats& g = d.analysis.groups.at(static_cast<std::size_t>(d.analysis.step_group));
  const AttentionSummary* s = phase_of_group(g, AttentionPhase::Decode);
  ASSERT_NE(s, nullptr);
  const double steps = static_cast<double>(g.group.instances.size());
  if (p.tracer != "torch.profiler" || !p.record_shapes || p.kv_cache == "static") {
    EXPECT_EQ(s->tokens, 0);
    return;
  }
  ASSERT_EQ(static_cast<double>(p.steps), steps);
  const std::int64_t forwards = p.decode_calls / p.layers;  // over the steps
  EXPECT_EQ(s->decode_forwards, forwards);
  EXPECT_EQ(s->tokens, forwards * p.shape.batch * p.decode_q_len);
}

TEST_P(Serving, DecodeTokensAsBuilt) { expect_tokens_as_built(GetParam(), doctor(GetParam())); }

TEST(ContinuousBatching, DecodeTokensAsBuilt) {
  int told = 0;
  for (const Program& p : test::corpus_facts("serving/continuous/facts.json")) {
    if (p.decode_calls == 0) continue;  // 32 requests a forward: mixed, not decode
    SCOPED_TRACE(p.name);
    const Doctor d(test::data_file("serving/continuous/" + p.name + ".json.gz"));
    expect_tokens_as_built(p, d);
    told += p.tracer == "torch.profiler";
  }
  EXPECT_EQ(told, 2);  // continuous and continuous_long
}

// What --replay runs: the decode calls one shape (their KV length grows a token a step), at the median
// of the KV lengths the cache had, beside the prefill's; with record_shapes only (the others say no shape).
TEST_P(Serving, ReplayTakesTheDecodeCallsAsOneShape) {
  const Program& p = GetParam();
  if (p.tracer != "torch.profiler") return;
  const Doctor d = doctor(p);
  const TraceShapes shapes = trace_shapes(d.analysis.attention_calls, *d.index);
  ASSERT_EQ(shapes.shapes.size(), 2u);
  const TraceShape* decode = nullptr;
  const TraceShape* prefill = nullptr;
  for (const TraceShape& x : shapes.shapes) (x.decode ? decode : prefill) = &x;
  ASSERT_NE(decode, nullptr);
  ASSERT_NE(prefill, nullptr);
  if (p.kv_cache == "static") {  // the replays of a graph captured before the trace have no shape
    EXPECT_GT(decode->calls, 0);
    EXPECT_LT(decode->calls, p.decode_calls);
  } else {
    EXPECT_EQ(decode->calls, p.decode_calls);
  }
  EXPECT_EQ(decode->shape.q_len, 1);
  EXPECT_EQ(decode->kv_len_min, p.decode_kv_first);
  EXPECT_EQ(decode->kv_len_max, p.decode_kv_last);
  EXPECT_EQ(decode->shape.kv_len, (p.decode_kv_first + p.decode_kv_last) / 2);  // every length equally often
  EXPECT_EQ(prefill->calls, p.prefill_calls);
  EXPECT_EQ(prefill->shape.q_len, p.shape.q_len);
  EXPECT_EQ(prefill->shape.kv_len, p.shape.kv_len);
}

// --replay on a decode shape says what a call moves and what bandwidth each row's time makes of it: the
// bytes as built (in the row's dtype: an fp32 program's fused rows run bf16; eager's shape replayed with K
// and V at the query heads, as its calls read them after repeat_kv), the prefill's rows none; after
// the bench (its times taken here as the traced time, on the trace's GPU) TB/s and the share of that GPU's
// datasheet peak.
TEST_P(Serving, ReplayedDecodeRowsSayTheirBandwidth) {
  const Program& p = GetParam();
  if (p.tracer != "torch.profiler") GTEST_SKIP() << "no shapes to replay without CPU ops (attnprof record)";
  const Doctor d = doctor(p);
  Replay r = plan_replay(d.analysis, *d.index, {});
  int decode_shapes = 0;
  for (ReplayShape& s : r.shapes) {
    if (!s.problem.empty()) continue;  // graph replays captured before the trace: no shape to run
    ASSERT_FALSE(s.rows.empty());
    if (!s.traced.decode) {
      for (const ReplayRow& row : s.rows) EXPECT_EQ(row.bytes, 0) << row.impl;
      continue;
    }
    ++decode_shapes;
    for (ReplayRow& row : s.rows) {
      const double expected = decode_call_bytes(p, row.dtype == "fp32" ? 4 : 2, p.impl == "eager");
      EXPECT_NEAR(row.bytes, expected, 0.05 * expected) << row.impl;
      row.ms = s.traced_ms;
    }
  }
  EXPECT_EQ(decode_shapes, 1);
  r.device = p.gpu;
  finish_replay(r);
  EXPECT_EQ(r.peak_tb_per_s, datasheet_tb_per_s(p.gpu));
  for (const ReplayShape& s : r.shapes)
    for (const ReplayRow& row : s.rows) {
      EXPECT_EQ(row.tb_per_s.has_value(), s.traced.decode);
      if (!row.tb_per_s) continue;
      EXPECT_NEAR(*row.tb_per_s, row.bytes / (s.traced_ms * 1e-3) / 1e12, 1e-9);
      ASSERT_TRUE(row.bandwidth_share);
      EXPECT_NEAR(*row.bandwidth_share, *row.tb_per_s / datasheet_tb_per_s(p.gpu), 1e-9);
      EXPECT_GT(*row.bandwidth_share, 0);
      EXPECT_LT(*row.bandwidth_share, 1);  // the traced kernels moved those bytes at under the peak
    }
  std::string text;
  report::replay_text(text, r);
  EXPECT_NE(text.find("TB/s (of peak)"), std::string::npos);
  EXPECT_NE(text.find("memory-bound (reads a KV cache)"), std::string::npos);
  const std::string html = html_report(d.analysis, *d.index, &r);
  EXPECT_NE(html.find("Memory-bound (reads a KV cache)"), std::string::npos);
  EXPECT_NE(html.find("% of peak)"), std::string::npos);
}

// What --replay runs for a generate() program's calls: the decode calls' one query sees every cached key (a
// decoder's mask over its cache puts the queries last), so their shape is replayed unmasked, eager's too
// (its calls add the mask to their scores, which the trace does not show; SDPA's pass none); the prompt's
// prefill causal, top-left (square, as built). A decode replayed with a top-left mask would read a key a
// call (the H100 run of 2026-12-07 timed cuDNN at 3 us and 5.1 TB/s on eager's 16.8 MB decode shape).
TEST_P(Serving, ReplayedDecodeReadsTheWholeCache) {
  const Program& p = GetParam();
  if (p.tracer != "torch.profiler") GTEST_SKIP() << "no shapes to replay without CPU ops (attnprof record)";
  const Doctor d = doctor(p);
  const Replay r = plan_replay(d.analysis, *d.index, {});
  int decode = 0, prefill = 0;
  for (const ReplayShape& s : r.shapes) {
    if (!s.problem.empty()) continue;
    if (s.traced.decode) {
      ++decode;
      EXPECT_FALSE(s.causal) << s.shape_text;
      EXPECT_NE(s.command.find("--no-causal"), std::string::npos) << s.command;
      if (s.traced.mask_in_call && !s.traced.causal_known) {
        EXPECT_NE(s.source.find("replayed unmasked"), std::string::npos) << s.source;
      }
    } else {
      ++prefill;
      EXPECT_EQ(s.bench.shape.q_len, s.bench.shape.kv_len);
      EXPECT_TRUE(s.causal) << s.shape_text;
      EXPECT_FALSE(s.bottom_right);
      EXPECT_EQ(s.command.find("--no-causal"), std::string::npos) << s.command;
    }
  }
  EXPECT_EQ(decode, 1);
  EXPECT_EQ(prefill, 1);
  // The fused estimate of an eager decode call (its mask added to the scores, causality unknown) says it
  // counts the whole cache, as the replay reads it; the eager prefill's mask was compared as causal.
  if (p.impl == "eager") {
    const AttentionSummary* dec = phase_of(d.analysis, AttentionPhase::Decode);
    ASSERT_NE(dec, nullptr);
    EXPECT_NE(dec->estimate_source.find("a mask over the cache: every key read"), std::string::npos)
        << dec->estimate_source;
    const AttentionSummary* pre = phase_of(d.analysis, AttentionPhase::Prefill);
    ASSERT_NE(pre, nullptr);
    EXPECT_NE(pre->estimate_source.find(" causal;"), std::string::npos) << pre->estimate_source;
  }
}

// CUDA graph replays: a static cache's decode forwards replay the graph generate()'s compiled step
// captured, every decode call one. The replays after the capture the trace holds take the shape of
// its ops: q_len 1 against the whole cache, as built; those before it (a graph captured before the
// trace began) stay without one, never another's. No other program replays a graph.
TEST_P(Serving, GraphReplayedDecodeCallsTakeTheirShapeFromTheCapture) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const bool compiled = p.kv_cache == "static";
  EXPECT_EQ(d.index->graph_replays().captures, compiled && p.tracer == "torch.profiler" ? 1 : 0);
  // attnprof record traces the whole program, the first decode forward too, which CUDA graph trees
  // (torch.compile mode="reduce-overhead") run once without a graph before they capture it: its layers'
  // calls replay nothing.
  const int warmup = compiled && p.tracer != "torch.profiler" ? static_cast<int>(p.layers) : 0;
  int replayed = 0, shaped = 0, unreplayed = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    replayed += c.graph_replay;
    if (compiled && c.phase == AttentionPhase::Decode && !c.graph_replay) {
      ++unreplayed;
      continue;
    }
    EXPECT_EQ(c.graph_replay, compiled && c.phase == AttentionPhase::Decode) << p.name;
    if (!c.graph_replay) continue;
    if (!c.shape.at_capture) {
      EXPECT_FALSE(c.shape.known());
      continue;
    }
    ++shaped;
    ASSERT_TRUE(c.shape.known());
    EXPECT_NE(c.shape.source().find("capture"), std::string::npos);
    EXPECT_EQ(c.shape.batch, p.shape.batch);
    EXPECT_EQ(c.shape.q_heads, p.shape.q_heads);
    EXPECT_EQ(c.shape.q_len, 1);
    EXPECT_EQ(c.shape.kv_len, p.decode_kv_first);
    EXPECT_EQ(c.shape.head_dim, p.shape.head_dim);
  }
  EXPECT_EQ(unreplayed, warmup);
  EXPECT_EQ(replayed, compiled ? p.decode_calls - warmup : 0);
  if (compiled && p.tracer == "torch.profiler") {
    EXPECT_GT(shaped, 0);
    EXPECT_LT(shaped, replayed);  // the first step's replays precede the capture
    // --replay: the calls left without a shape are those replays, and it says so.
    const TraceShapes shapes = trace_shapes(d.analysis.attention_calls, *d.index);
    EXPECT_EQ(shapes.calls_without_shape, replayed - shaped);
    EXPECT_EQ(shapes.unshaped.graph_calls, shapes.unshaped.calls);
  }
}

// Without ops (attnprof record), a decode call's shape from cuDNN's decode kernel: batch, K/V heads as SDPA
// read them (repeated to the query heads where transformers hands it a mask, as a static cache's forwards
// do) and head dim, as built; the query heads from the split's combine where the keys were split (cuDNN's
// choice, not the program's: unknown otherwise), no key length. CUDA graph replays alike.
TEST_P(Serving, DecodeShapeFromCudnnsDecodeKernel) {
  const Program& p = GetParam();
  if (p.tracer == "torch.profiler" || p.impl == "eager") return;
  const Doctor d = doctor(p);
  int decode = 0, with_heads = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    if (c.phase != AttentionPhase::Decode) continue;
    ++decode;
    ASSERT_EQ(c.shape.from, ShapeFrom::Kernels) << p.name;
    EXPECT_EQ(c.shape.batch, p.shape.batch);
    EXPECT_EQ(c.shape.kv_heads, p.kv_cache == "static" ? p.shape.q_heads : p.shape.kv_heads);
    EXPECT_EQ(c.shape.head_dim, p.shape.head_dim);
    EXPECT_EQ(c.shape.q_len, 1);
    EXPECT_EQ(c.shape.kv_len, 0);
    EXPECT_FALSE(c.shape.known());             // no key length: no bytes, no estimate from it
    EXPECT_FALSE(c.shape.causal.has_value());  // not in the kernels
    if (c.shape.q_heads != 0) {
      EXPECT_EQ(c.shape.q_heads, p.shape.q_heads);
      ++with_heads;
    }
  }
  EXPECT_EQ(decode, p.decode_calls);
  std::printf("%s: %d of %d decode calls with their query heads (a split's combine)\n", p.name.c_str(), with_heads,
              decode);
}

// Without ops (attnprof record), an eager decode call's shape from its kernels: the softmax's rows are no
// whole number of key-length rows, so not self-attention; batch x heads from the prefill's (the trace's
// largest calls), one query against the cache, its key length from the mask's score-sized pass (up to a
// block's rounding above the cache's length), no head dim; the prefill's as built.
TEST_P(Serving, EagerDecodeShapeFromTheSoftmax) {
  const Program& p = GetParam();
  if (p.tracer == "torch.profiler" || p.impl != "eager") return;
  const Doctor d = doctor(p);
  int decode = 0, prefill = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    SCOPED_TRACE(c.shape.inferred);
    ASSERT_EQ(c.shape.from, ShapeFrom::Kernels) << p.name;
    EXPECT_TRUE(c.shape.batch_x_heads);
    EXPECT_EQ(c.shape.batch, p.shape.batch * p.shape.q_heads);
    EXPECT_EQ(c.shape.head_dim, 0);
    if (c.phase == AttentionPhase::Prefill) {
      ++prefill;
      EXPECT_EQ(c.shape.q_len, p.shape.q_len);
      EXPECT_EQ(c.shape.kv_len, p.shape.kv_len);
      continue;
    }
    ++decode;
    EXPECT_EQ(c.shape.q_len, 1);
    EXPECT_GE(c.shape.kv_len, p.decode_kv_first);
    EXPECT_LE(c.shape.kv_len, p.decode_kv_last + 512 / (p.shape.batch * p.shape.q_heads));
  }
  EXPECT_EQ(prefill, p.prefill_calls);
  EXPECT_EQ(decode, p.decode_calls);
}

// Without record_shapes, an unfused prefill's shape from its kernels (the softmax's launch and the score-sized
// passes), where scores of 2^31 elements or more make PyTorch run the softmax and each pass as several pieces:
// batch x heads and the lengths as built (the grid's batch-64 eager program), or none where no pass sizes a
// block-per-row softmax (the 32k-token one: its passes are vectorized kernels); never other sizes.
TEST(ShapeFromKernels, ScoresInPiecesOfAPass) {
  int sized = 0;
  for (const Program& p : programs()) {
    if (p.impl != "eager" || p.shape.batch * p.shape.q_heads * p.shape.q_len * p.shape.kv_len < (std::int64_t{1} << 31))
      continue;
    SCOPED_TRACE(p.name);
    const Doctor d = doctor(p);
    int prefill = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      if (c.phase != AttentionPhase::Prefill) continue;
      ++prefill;
      const AttentionShape s = shape_from_kernels(c, *d.index);
      SCOPED_TRACE(s.inferred);
      if (s.from != ShapeFrom::Kernels) continue;
      ++sized;
      EXPECT_NE(s.inferred.find("pieces"), std::string::npos);
      EXPECT_EQ(s.batch, p.shape.batch * p.shape.q_heads);  // batch x heads, not separable
      EXPECT_EQ(s.q_len, p.shape.q_len);
      EXPECT_EQ(s.kv_len, p.shape.kv_len);
    }
    EXPECT_EQ(prefill, p.prefill_calls);
  }
  EXPECT_GT(sized, 0);
}

// The dynamic cache's torch.cat of K and V per layer and decode forward: one copy each (the prefill's
// cat into an empty cache is none), where the decode calls' KV length says they are the cache; without
// record_shapes (attnprof record) nothing says what a cat holds: no finding; a static cache has none.
TEST_P(Serving, KvCacheCatPerDecodeForward) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const Finding* f = d.find("kv-cache-cat");
  if (p.tracer != "torch.profiler" || p.kv_cache == "static") {  // the static cache: written in place
    EXPECT_EQ(f, nullptr);
    return;
  }
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(std::ssize(f->activities), 2 * p.decode_calls);  // K and V
  EXPECT_LT(f->after_ns, f->time_ns);
  EXPECT_NE(f->fix.find("cache_implementation=\"static\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(RealPrograms, Serving, ::testing::ValuesIn(programs()),
                         [](const ::testing::TestParamInfo<Program>& param) { return param.param.name; });

// flex_attention's paged attention (make_corpus.py --set serving, kind flex_paged; an H100): a decode loop,
// one token a sequence, layers calls a token, against one K/V pool of pages the block mask maps each
// sequence's keys to; traced by torch.profiler and by attnprof record. tests/data/serving/paged/facts.json
// says how each was built.
TEST(PagedServing, FlexPagedDecodeAsBuilt) {
  simdjson::dom::parser parser;
  const simdjson::dom::element all = parser.load(test::data_file("serving/paged/facts.json"));
  int programs = 0;
  for (const Program& p : test::corpus_facts("serving/paged/facts.json")) {
    if (p.kind != "flex_paged") continue;
    ++programs;
    SCOPED_TRACE(p.name);
    simdjson::dom::element e;
    for (simdjson::dom::element f : all.get_array())
      if (std::string_view(f["name"]) == p.name) e = f["expected"];
    const Doctor d(test::data_file("serving/paged/" + p.name + ".json.gz"));
    std::map<AttentionPhase, std::int64_t> calls;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) calls[c.phase] += 1;
    EXPECT_EQ(calls[AttentionPhase::Prefill], p.prefill_calls);
    EXPECT_EQ(calls[AttentionPhase::Decode], p.decode_calls);
    EXPECT_EQ(calls[AttentionPhase::None], 0);
    const AttentionSummary* s = phase_of(d.analysis, AttentionPhase::Decode);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->impl, AttentionImpl::Fused);
    if (p.tracer != "torch.profiler") {  // no ops: neither the shape nor the block mask
      EXPECT_EQ(s->bytes, 0);
      continue;
    }
    // Every call: the decode batch's queries over one K/V pool, paged in blocks of the page size.
    const std::int64_t pool = std::int64_t(e["kv_pool_tokens"]), page = std::int64_t(e["page_size"]);
    EXPECT_EQ(s->paged_calls, p.decode_calls);
    EXPECT_EQ(s->page_size, page);
    EXPECT_EQ(s->shape.batch, std::int64_t(e["decode_batch"]));
    EXPECT_EQ(s->shape.q_len, std::int64_t(e["decode_q_len"]));
    EXPECT_EQ(s->shape.kv_batch, 1);
    EXPECT_EQ(s->shape.kv_len, pool);
    // At most: q and the output once, the pool whole once (not once a sequence).
    const double elem = bytes_per_element(Precision::BF16), dim = static_cast<double>(p.shape.head_dim);
    const double most = elem * dim *
                        (2.0 * static_cast<double>(p.shape.batch * p.shape.q_heads) +
                         2.0 * static_cast<double>(p.shape.kv_heads * pool));
    EXPECT_DOUBLE_EQ(s->bytes_per_call(), most);
    // doctor --replay benches each sequence with its own keys (the shape as built), paged as built.
    const Replay r = plan_replay(d.analysis, *d.index, {});
    ASSERT_EQ(r.shapes.size(), 1u);
    EXPECT_EQ(r.shapes[0].bench.shape.batch, std::int64_t(e["decode_batch"]));
    EXPECT_EQ(r.shapes[0].bench.shape.kv_len, p.shape.kv_len);
    EXPECT_EQ(r.shapes[0].bench.page_size, page);
    EXPECT_NE(r.shapes[0].command.find(fmt::format("--kv-seq {} ", p.shape.kv_len)), std::string::npos);
    EXPECT_NE(r.shapes[0].command.find(fmt::format("--page-size {} ", page)), std::string::npos);
  }
  EXPECT_EQ(programs, 2);
}

// transformers' continuous batching (make_corpus.py --set serving, kinds continuous, continuous_wide,
// continuous_many and continuous_long; an H100): 8, 16 or 32 requests packed into one sequence (8 with
// prompts of 7348 tokens in all for continuous_long), one prefill forward over their
// prompts, then a decode forward a token (q_len 8-32, one query a request, against the paged cache gathered
// for SDPA; with 32 a packed forward whose shape cannot tell decode tokens from a prompt's chunk: mixed), on a
// worker thread that generate_batch starts anew for each call, traced by torch.profiler (the profiler files
// the second call's launches under the first worker's thread id) and by attnprof record. Its prefill passes the causal
// mask, not is_causal. tests/data/serving/continuous/facts.json says how each was built.
TEST(ContinuousBatching, PhasesAsBuilt) {
  simdjson::dom::parser parser;
  const simdjson::dom::element all = parser.load(test::data_file("serving/continuous/facts.json"));
  int programs = 0;
  for (const Program& p : test::corpus_facts("serving/continuous/facts.json")) {
    ++programs;
    SCOPED_TRACE(p.name);
    std::int64_t decode_q_len = 0;
    for (simdjson::dom::element f : all.get_array())
      if (std::string_view(f["name"]) == p.name) decode_q_len = std::int64_t(f["expected"]["decode_q_len"]);
    const Doctor d(test::data_file("serving/continuous/" + p.name + ".json.gz"));
    std::map<AttentionPhase, std::int64_t> calls;
    std::int64_t forward = 0;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      EXPECT_EQ(c.impl, AttentionImpl::Fused);
      forward += c.pass == AttentionPass::Forward;
      calls[c.phase] += 1;
    }
    EXPECT_EQ(forward, p.forward_calls);
    const std::vector<SlowHostCall> slow = slow_host_calls(*d.index, d.analysis.attention_calls);
    const Finding* host = nullptr;
    for (const Finding& f : d.analysis.findings)
      if (f.id == "attention-host") host = &f;
    if (p.tracer != "torch.profiler") {
      EXPECT_TRUE(slow.empty());  // no ops: no host time of a call to tell
      // No shapes, no split-KV combine, one cuDNN kernel for both phases: a decode forward's call launches
      // its one query tile a head (8, 16 or 32 packed queries) and reads every request's cache in it, as long
      // as the prefill's call (one wave of CTAs: prompts of 1539-1721 tokens over 8 heads) takes over all its
      // prompts' tiles.
      // Past one wave (continuous_long: 7348 prompt tokens, 58 tiles a head over 8 heads, the kernel
      // persistent on 132 CTAs) a tile's time is unknown; the decode call's one wave of 8 CTAs (at most 384
      // rows each, a row a thread) still holds fewer rows than the paged pool's tokens gathered for it (7356
      // and more).
      EXPECT_EQ(calls[AttentionPhase::Prefill], p.prefill_calls);
      EXPECT_EQ(calls[AttentionPhase::Decode], p.decode_calls);
      continue;
    }
    // Every forward meets a KV length (and mask) it has not seen: PyTorch's cuDNN attention builds a plan
    // for its first layer's call, the other layers' reuse it. The step waits for them on the CPU.
    EXPECT_EQ(static_cast<std::int64_t>(slow.size()), p.forwards);
    for (const SlowHostCall& s : slow) EXPECT_EQ(d.analysis.attention_calls.calls[s.call].family, "cuDNN");
    ASSERT_NE(host, nullptr);
    EXPECT_TRUE(host->wall);
    // The idle-GPU finding of the same steps points at it (its CPU time sat largely in these ops).
    for (const Finding& f : d.analysis.findings) {
      if (f.id == "gpu-idle") {
        EXPECT_NE(f.detail.find("attention-host"), std::string::npos);
      }
    }
    const Fix* fix = nullptr;
    for (const Fix& f : d.analysis.fixes)
      if (f.id == "attention-host") fix = &f;
    ASSERT_NE(fix, nullptr);
    EXPECT_GT(fix->step_ns, 0);
    EXPECT_LT(fix->step_ns,
              d.analysis.groups[static_cast<std::size_t>(d.analysis.step_group)].steps.median_step()->span_ns);
    EXPECT_EQ(calls[AttentionPhase::Prefill], p.prefill_calls);
    EXPECT_EQ(calls[AttentionPhase::Decode], p.decode_calls);
    EXPECT_EQ(calls[AttentionPhase::Mixed], p.mixed_calls);  // 32 requests: more queries than a decode's 16
    // The report says what a mixed row is, and what its calls move, beside the row.
    const std::vector<std::string> notes =
        report::attention_notes(d.analysis.groups[static_cast<std::size_t>(d.analysis.step_group)]);
    int explained = 0, moved = 0;
    for (const std::string& n : notes) {
      explained += n.starts_with("fused mixed: packed forwards");
      moved += n.starts_with("fused mixed: ") && n.find(" MB a call") != std::string::npos;
    }
    EXPECT_EQ(explained, p.mixed_calls > 0 ? 1 : 0);
    EXPECT_EQ(moved, p.mixed_calls > 0 ? 1 : 0);
    EXPECT_EQ(calls[AttentionPhase::None], 0);
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      if (c.phase != AttentionPhase::Decode && c.phase != AttentionPhase::Mixed) continue;
      EXPECT_EQ(c.shape.q_len, decode_q_len);  // a query for each packed request
      EXPECT_GE(c.shape.kv_len, p.decode_kv_first);
      EXPECT_LE(c.shape.kv_len, p.decode_kv_last);
    }
    // doctor --replay: two shapes, the packed prefill's and the cached forwards' (their keys growing by a
    // token a request each forward, replayed once at the median).
    const Replay r = plan_replay(d.analysis, *d.index, {});
    ASSERT_EQ(r.shapes.size(), 2u);
    int cached = 0;
    for (const auto& s : r.shapes) {
      if (s.bench.shape.q_len != decode_q_len) continue;
      ++cached;
      EXPECT_GE(s.bench.shape.kv_len, p.decode_kv_first);
      EXPECT_LE(s.bench.shape.kv_len, p.decode_kv_last);
    }
    EXPECT_EQ(cached, 1);
  }
  EXPECT_EQ(programs, 7);
}

// Continuous batching with the manager's CUDA graphs (use_cuda_graph=True; tests/data/serving/graphs,
// H100): each generate_batch step captures graphs and replays the last capture's (the trace holds
// every capture before its replays, the second step's filed under the first step's worker thread).
// Every replayed call takes the shape of its op at the capture, as built where the manager does not
// pad: one packed sequence (batch 1), the model's query heads and head dim, K/V at the model's heads
// or repeated to the query heads (transformers' paged SDPA hands SDPA a mask); the manager pads the
// queries and the gathered keys to the sizes it captured, at least the requests' tokens.
TEST(GraphReplays, ContinuousBatchingReplaysTakeTheirCaptureShapes) {
  const std::vector<Program> all = test::corpus_facts("serving/graphs/facts.json");
  ASSERT_EQ(all.size(), 1u);
  const Program& p = all.front();
  const Doctor d(test::data_file("serving/graphs/" + p.name + ".json.gz"));
  EXPECT_GT(d.index->graph_replays().captures, 0);
  EXPECT_GT(d.index->graph_replays().replays, 0);
  EXPECT_EQ(d.index->graph_replays().matched, d.index->graph_replays().replays);
  const std::int64_t requests = 8;  // make_corpus.py's CB_PROMPTS
  int replayed = 0;
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    if (!c.graph_replay) continue;
    ++replayed;
    ASSERT_TRUE(c.shape.known());
    EXPECT_TRUE(c.shape.at_capture);
    EXPECT_EQ(c.impl, AttentionImpl::Fused);
    EXPECT_EQ(c.shape.batch, p.shape.batch);
    EXPECT_EQ(c.shape.q_heads, p.shape.q_heads);
    EXPECT_TRUE(c.shape.kv_heads == p.shape.kv_heads || c.shape.kv_heads == p.shape.q_heads);
    EXPECT_EQ(c.shape.head_dim, p.shape.head_dim);
    EXPECT_GE(c.shape.q_len, requests);
    EXPECT_GE(c.shape.kv_len, c.shape.q_len);
  }
  // Padded, no forward's shape is its requests': each is a packed forward of more query rows than a decode
  // has against more keys, phase mixed (its decode tokens and prompts not told apart), none a decode or a
  // prefill.
  for (const AttentionCall& c : d.analysis.attention_calls.calls) {
    EXPECT_EQ(c.phase, AttentionPhase::Mixed);
  }
  // A graph holds every layer's forward: the replayed calls come in layers.
  EXPECT_GT(replayed, 0);
  EXPECT_EQ(replayed % p.layers, 0);
}

// doctor --capture-trace: the static-cache Qwen2 trace (serving/facts.json) cut at its second step's
// start (tests/data/serving/graphs/README.md): the first part replays a graph captured before it and
// holds no capture; the second holds the capture and its replays. With the second as the capture
// trace, every decode call of the first takes its shape (as built: q_len 1 against the whole static
// cache, batch 1, the query heads and head dim), said so with that trace's name; alone, none.
TEST(GraphReplays, SecondTraceHoldsTheCapture) {
  Program p;
  for (const Program& x : programs())
    if (x.kv_cache == "static" && x.folder == "serving" && x.tracer == "torch.profiler") p = x;
  ASSERT_EQ(p.kv_cache, "static");
  const std::string replays = test::data_file("serving/graphs/qwen2_static_step2_replays.json.gz");
  const std::string capture = test::data_file("serving/graphs/qwen2_static_step3_capture.json.gz");
  const Doctor alone(replays);
  EXPECT_EQ(alone.index->graph_replays().captures, 0);
  for (const AttentionCall& c : alone.analysis.attention_calls.calls) {
    if (c.graph_replay) {
      EXPECT_FALSE(c.shape.known());
    }
  }
  const Trace other_trace = read_trace_file(capture);
  const TraceIndex other(other_trace);
  const CapturedShapes captured = captured_shapes(other, find_attention(other), capture);
  EXPECT_FALSE(captured.graphs.empty());
  const Trace trace = read_trace_file(replays);
  const TraceIndex index(trace);
  const AttentionView view = find_attention(index, &captured);
  int decode = 0;
  for (const AttentionCall& c : view.calls) {
    if (c.phase != AttentionPhase::Decode) continue;
    ++decode;
    ASSERT_TRUE(c.graph_replay);
    ASSERT_TRUE(c.shape.known());
    EXPECT_TRUE(c.shape.at_capture);
    EXPECT_EQ(c.shape.capture_trace, capture);
    EXPECT_NE(c.shape.source().find(capture), std::string::npos);
    EXPECT_EQ(c.shape.batch, p.shape.batch);
    EXPECT_EQ(c.shape.q_heads, p.shape.q_heads);
    EXPECT_EQ(c.shape.q_len, 1);
    EXPECT_EQ(c.shape.kv_len, p.decode_kv_first);
    EXPECT_EQ(c.shape.head_dim, p.shape.head_dim);
  }
  EXPECT_EQ(decode, p.decode_calls / p.steps);  // the first of its two steps
}

// generate() on SDPA's cuDNN backend without a mask (q_len 1 against a growing cache): the calls' host
// time stays flat, so no call is slow on the host and no attention-host finding.
TEST(ContinuousBatching, PlainGenerateHasNoSlowHostCalls) {
  const Doctor d(test::data_file("serving/qwen2_sdpa_bf16_infer_generate.json.gz"));
  EXPECT_TRUE(slow_host_calls(*d.index, d.analysis.attention_calls).empty());
  for (const Finding& f : d.analysis.findings) EXPECT_NE(f.id, "attention-host");
}

// The eager programs' decode calls as fused kernels: within 25% of what their SDPA twins' fused decode
// calls measured (a split-KV kernel and its combine each at batch 1, 64 splits over the 32k-token cache;
// at batch 64 one kernel, bytes-bound: the GPU's bandwidth, an H100's 3.35 TB/s there, not an H200's).
TEST(ServingEstimate, DecodeFusedEstimateAgainstTheFusedTwin) {
  int pairs = 0;
  for (const Program& p : programs()) {
    if (p.impl != "eager" || p.tracer != "torch.profiler") continue;
    std::string twin = p.name;
    twin.replace(twin.find("_eager_"), 7, "_sdpa_");
    const Doctor eager(test::data_file(p.folder + "/" + p.name + ".json.gz"));
    const Doctor sdpa(test::data_file(p.folder + "/" + twin + ".json.gz"));
    const AttentionSummary* e = phase_of(eager.analysis, AttentionPhase::Decode);
    const AttentionSummary* f = phase_of(sdpa.analysis, AttentionPhase::Decode);
    ASSERT_TRUE(e != nullptr && f != nullptr) << p.name;
    ASSERT_EQ(e->impl, AttentionImpl::Unfused);
    ASSERT_EQ(f->impl, AttentionImpl::Fused);
    const double estimate = static_cast<double>(e->fused_ns) / e->calls;
    const double measured = static_cast<double>(f->kernel_ns) / f->calls;
    EXPECT_NEAR(estimate, measured, 0.25 * measured) << p.name;
    std::printf("%s: decode estimate %.1f us, its twin %.1f us\n", p.name.c_str(), estimate / 1e3, measured / 1e3);
    ++pairs;
  }
  EXPECT_EQ(pairs, 3);
}

// The control: no call of the corpus (single forwards and training steps) has a phase, and no
// program of it a KV cache.
TEST(ServingControl, PlainForwardsAndTrainingHaveNoPhase) {
  int calls = 0;
  for (const Program& p : test::corpus_facts()) {
    const Doctor d(test::data_file("corpus/" + p.name + ".json.gz"));
    EXPECT_EQ(d.find("kv-cache-cat"), nullptr) << p.name;
    for (const AttentionCall& c : d.analysis.attention_calls.calls) {
      ++calls;
      EXPECT_EQ(c.phase, AttentionPhase::None) << p.name;
    }
  }
  EXPECT_GT(calls, 100);
}

}  // namespace
}  // namespace attnprof
