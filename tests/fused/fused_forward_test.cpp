// Every fused forward path against the fp64 reference on the harness's correctness suite
// (check_cases: odd lengths, GQA/MQA, both layouts, no keys, bottom-right causal), on grids capped
// so each CTA walks several tiles too.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/params.h"
#include "fused_attention.h"
#include "fused_harness.h"

using namespace attnprof::fused;

namespace {

using attnprof::attention::AttentionParams;

void check_all(const std::vector<AttentionParams>& cases, Path path, const LaunchOverrides& overrides = {},
               KvForm form = {}, CallForm call = {}) {
  unsigned seed = 100;
  for (const AttentionParams& c : cases) {
    const std::string name = attnprof::attention::describe(c) +
                             (form.page_size ? " paged " + std::to_string(form.page_size) : "") +
                             (form.ragged ? " ragged" : "");
    const CaseCheck r = check_case(c, path, seed++, overrides, form, call);
    EXPECT_TRUE(r.error.empty()) << name << ": " << r.error;
    EXPECT_EQ(r.result.unwritten, 0) << name;
    EXPECT_TRUE(r.result.lse_inf_ok) << name;
    EXPECT_LT(r.result.rel_error, 1e-2) << name;
    EXPECT_LT(r.result.max_lse_err, 1e-2) << name;
  }
}

void run_all(Path path, const LaunchOverrides& overrides = {}) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (path != Path::Portable && path != Path::Decode && resolve_path(Path::Automatic) != Path::Hopper)
    GTEST_SKIP() << "not an sm_90 device";
  check_all(check_cases(), path, overrides);
}

// The persistent grids capped at 3 CTAs: every CTA walks many tiles of the case list, so the K/V
// ring, the two Q buffers' empty/full barriers, the output store's reads waited for a tile later and
// the output staging carry over from tile to tile (uncapped, the cases have fewer tiles than an H200
// has SMs).
LaunchOverrides capped(LaunchOverrides o = {}) {
  o.persistent_ctas = 3;
  return o;
}

}  // namespace

TEST(FusedForward, PortablePathMatchesReference) { run_all(Path::Portable); }
TEST(FusedForward, HopperPathMatchesReference) { run_all(Path::Hopper); }
// One CTA per tile: the case list's lengths 1, 17, 300, 777, 2049 and 2100 leave the last tile's
// second warpgroup without a row before q_len (it leaves at once); from 2048 rows D=64 runs three
// consumer warpgroups.
TEST(FusedForward, OneTilePathMatchesReference) { run_all(Path::OneTile); }
// The persistent grid: the wide rows (3 stages at D=64; 160-key blocks, output staged in the tile's Q
// buffer, at D=128 from 8192 keys), the 128-key rows, and causal D=128's halved diagonal.
TEST(FusedForward, PersistentPathMatchesReference) { run_all(Path::Persistent); }
TEST(FusedForward, PersistentWalksManyTilesPerCta) { run_all(Path::Persistent, capped()); }
// Kept zeros: the keyless tiles in runs (the bottom-right cases with q_len > kv_len) keep their zeros
// in the staging rows from one to the next, and the next tile with keys overwrites them.
TEST(FusedForward, KeepZerosPathMatchesReference) { run_all(Path::KeepZeros); }
TEST(FusedForward, KeepZerosWalksManyTilesPerCta) { run_all(Path::KeepZeros, capped()); }
// The dynamic scheduler: the causal cases draw their tiles; the others run the persistent grid. Three
// CTAs draw every tile of a call from the counter, in sections of one (batch, head) (the smallest
// sections) and of the rule's size (one section for the small cases).
TEST(FusedForward, DynamicPathMatchesReference) { run_all(Path::Dynamic); }
TEST(FusedForward, DynamicDrawsManyTilesPerCtaInRuleSections) { run_all(Path::Dynamic, capped()); }
TEST(FusedForward, DynamicDrawsManyTilesPerCtaInOneHeadSections) {
  LaunchOverrides o = capped();
  o.section_heads = 1;
  run_all(Path::Dynamic, o);
}
// The split tail splitting every tail it can (D=128 full attention), in ranges down to one key block:
// the case list's small calls then split too. Uncapped, an item of 8 key blocks goes to 8 CTAs (the one
// holding its first block combines the other seven's partials); capped at 3 CTAs, the static rounds run
// first and the tail's ranges cross item boundaries (a CTA's partial piece, then its next item's first).
TEST(FusedForward, SplitTailSplitsEveryTail) {
  LaunchOverrides o;
  o.split_tail_min_units = 1;
  run_all(Path::SplitTail, o);
}
TEST(FusedForward, SplitTailSplitsEveryTailAfterStaticRounds) {
  LaunchOverrides o = capped();
  o.split_tail_min_units = 1;
  run_all(Path::SplitTail, o);
}

// The decode kernel on every case, the prefill ones too (their rows in chunks of 64, e.g. 2049 x 2 rows
// in 65 chunks), and on the short-query cases; the default path on those too.
TEST(FusedForward, DecodePathMatchesReference) { run_all(Path::Decode); }
// On an sm_90 device the decode kernel's K/V arrive by TMA; the cp.async copies (other GPUs, and pages TMA
// cannot box) are checked there by the override.
TEST(FusedForward, DecodeCasesMatchReference) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  LaunchOverrides cp_async;
  cp_async.decode_cp_async = true;
  check_all(decode_cases(), Path::Decode);
  check_all(decode_cases(), Path::Automatic);
  check_all(decode_cases(), Path::Decode, cp_async);
}
// A serving engine's cache: pages of 16, 64, 256 and 7 tokens in shuffled order, NaN in every slot no
// sequence owns; sequences of their own lengths (one of 1 key, one empty), dense and paged. Pages of 16
// make a TMA box a page (four or eight a key block), of 256 a box a block, of 7 cp.async copies.
TEST(FusedForward, DecodeReadsPagedAndRaggedCaches) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (KvForm f : {KvForm{16, false}, KvForm{256, false}, KvForm{7, false}, KvForm{0, true}, KvForm{64, true}})
    check_all(decode_cases(), Path::Automatic, {}, f);
  LaunchOverrides cp_async;
  cp_async.decode_cp_async = true;
  check_all(decode_cases(), Path::Automatic, cp_async, KvForm{16, true});
  // Paged prefill (chunked prefill into a paged cache) runs on the decode kernel too.
  std::vector<AttentionParams> prefill;
  for (const AttentionParams& c : check_cases())
    if (c.q_len <= 1000 && c.kv_len > 0) prefill.push_back(c);
  check_all(prefill, Path::Automatic, {}, KvForm{64, true});
}

// Three calls in a row each way the library's per-stream counters (stream_counters.h) are reached: on a
// stream of its own (its first call makes the stream's counters, the next two need them back at 0), on the
// default stream, and replayed from a CUDA graph (a capture zeroes the workspace's by a memset in the graph
// instead). The outputs are poisoned before each call: a call that counted from a stale counter merges early
// or never (decode) or skips tiles (the dynamic scheduler), and leaves poison.
namespace {
const CallForm kCallForms[] = {{3, true, false}, {3, false, false}, {3, false, true}};
const char* form_name(const CallForm& c) { return c.graph ? "graph replays" : c.own_stream ? "own stream" : "default"; }
}  // namespace

// The decode kernel's split counters, which the CTA that merges a unit's splits sets back to 0. The small
// cases split 8 and 18 ways; dense and paged.
TEST(FusedForward, DecodeSplitCountersServeEveryCall) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  for (const CallForm& call : kCallForms) {
    SCOPED_TRACE(form_name(call));
    check_all(small_decode_cases(), Path::Decode, {}, {}, call);
    check_all(small_decode_cases(), Path::Decode, {}, KvForm{16, true}, call);
  }
}

// The dynamic scheduler's draw and finish counters, which its last CTA to finish sets back to 0 (3 CTAs
// drawing every tile of the small cases), and the split tail's flags, which the final pieces lower once read
// (every tail split, in ranges down to one key block, after static rounds of 3 CTAs and uncapped).
TEST(FusedForward, DynamicAndSplitTailCountersServeEveryCall) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (resolve_path(Path::Automatic) != Path::Hopper) GTEST_SKIP() << "not an sm_90 device";
  LaunchOverrides every_tail;
  every_tail.split_tail_min_units = 1;
  for (const CallForm& call : kCallForms) {
    SCOPED_TRACE(form_name(call));
    check_all(small_cases(), Path::Dynamic, capped(), {}, call);
    check_all(small_cases(), Path::SplitTail, every_tail, {}, call);
    check_all(small_cases(), Path::SplitTail, capped(every_tail), {}, call);
  }
}

// Which copies the decode kernel takes: TMA on an sm_90 device for dense K/V (both layouts) and the pages
// serving engines use, even with a page pool far larger than the table names; cp.async for 7-token pages
// and under the override.
TEST(FusedForward, DecodeCopiesByTmaOnSm90) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (resolve_path(Path::Automatic) != Path::Hopper) GTEST_SKIP() << "not an sm_90 device";
  void* buffer = nullptr;
  ASSERT_EQ(cudaMalloc(&buffer, 1 << 20), cudaSuccess);
  for (int d : {64, 128}) {
    Params p;
    p.q = p.k = p.v = p.out = buffer;
    p.batch = 4;
    p.heads = 32;
    p.kv_heads = 8;
    p.q_len = 1;
    p.kv_len = 4097;
    p.head_dim = d;
    p.k_seq_stride = p.v_seq_stride = d;  // BHSD
    p.k_head_stride = p.v_head_stride = int64_t(p.kv_len) * d;
    p.k_batch_stride = p.v_batch_stride = p.k_head_stride * p.kv_heads;
    EXPECT_TRUE(decode_uses_tma(p)) << d;
    p.k_seq_stride = p.v_seq_stride = int64_t(p.kv_heads) * d;  // BSHD
    p.k_head_stride = p.v_head_stride = d;
    EXPECT_TRUE(decode_uses_tma(p)) << d;
    LaunchOverrides cp_async;
    cp_async.decode_cp_async = true;
    EXPECT_FALSE(decode_uses_tma(p, cp_async)) << d;
    p.block_table = static_cast<const int*>(buffer);
    p.block_table_stride = 300;
    for (int page : {16, 32, 64, 256}) {  // a pool of [pages, page, kv_heads, d]
      p.page_size = page;
      p.k_batch_stride = p.v_batch_stride = int64_t(page) * p.kv_heads * d;
      EXPECT_TRUE(decode_uses_tma(p)) << d << " " << page;
    }
    p.page_size = 7;
    p.k_batch_stride = p.v_batch_stride = int64_t(7) * p.kv_heads * d;
    EXPECT_FALSE(decode_uses_tma(p)) << d;
  }
  cudaFree(buffer);
}

TEST(FusedForward, RejectsUnsupportedHeadDim) {
  Params p;
  p.head_dim = 96;
  EXPECT_STRNE(unsupported(p), "");
}
