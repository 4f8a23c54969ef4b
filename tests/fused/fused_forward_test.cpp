// Every fused forward path against the fp64 reference on the harness's
// correctness suite (check_cases: odd lengths, GQA/MQA, both layouts, no keys).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/params.h"
#include "fused_attention.h"
#include "fused_harness.h"

using namespace attnprof::fused;

namespace {

using attnprof::attention::AttentionParams;

void run_all(Path path) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (path != Path::Portable && resolve_path(Path::Automatic) != Path::Hopper) GTEST_SKIP() << "not an sm_90 device";
  unsigned seed = 100;
  for (const AttentionParams& c : check_cases()) {
    const std::string name = attnprof::attention::describe(c);
    const CaseCheck r = check_case(c, path, seed++);
    EXPECT_TRUE(r.error.empty()) << name << ": " << r.error;
    EXPECT_EQ(r.result.unwritten, 0) << name;
    EXPECT_TRUE(r.result.lse_inf_ok) << name;
    EXPECT_LT(r.result.rel_error, 1e-2) << name;
    EXPECT_LT(r.result.max_lse_err, 1e-2) << name;
  }
}

}  // namespace

TEST(FusedForward, PortablePathMatchesReference) { run_all(Path::Portable); }
TEST(FusedForward, HopperPathMatchesReference) { run_all(Path::Hopper); }
TEST(FusedForward, HopperOverlapPathMatchesReference) { run_all(Path::HopperOverlap); }
TEST(FusedForward, HopperV2PathMatchesReference) { run_all(Path::HopperV2); }
TEST(FusedForward, HopperV5PathMatchesReference) { run_all(Path::HopperV5); }
TEST(FusedForward, HopperV6PathMatchesReference) { run_all(Path::HopperV6); }
TEST(FusedForward, HopperV7PathMatchesReference) { run_all(Path::HopperV7); }
TEST(FusedForward, HopperV8PathMatchesReference) { run_all(Path::HopperV8); }
TEST(FusedForward, HopperV9PathMatchesReference) { run_all(Path::HopperV9); }
TEST(FusedForward, HopperV10PathMatchesReference) { run_all(Path::HopperV10); }
TEST(FusedForward, HopperV11PathMatchesReference) { run_all(Path::HopperV11); }
TEST(FusedForward, HopperV13PathMatchesReference) { run_all(Path::HopperV13); }
TEST(FusedForward, HopperV18PathMatchesReference) { run_all(Path::HopperV18); }
TEST(FusedForward, HopperV26PathMatchesReference) { run_all(Path::HopperV26); }
// Version 27: the case list's lengths 1, 17, 300, 777, 2049 and 2100 leave the last tile's second
// warpgroup without a row before q_len.
TEST(FusedForward, HopperV27PathMatchesReference) { run_all(Path::HopperV27); }
// Version 29 (dynamic causal scheduler): the causal cases draw their tiles; the others run version 18.
TEST(FusedForward, HopperV29PathMatchesReference) { run_all(Path::HopperV29); }
TEST(FusedForward, HopperM192PathMatchesReference) { run_all(Path::HopperM192); }
// The persistent grid capped at 3 CTAs: every CTA walks many tiles of the case list, so the K/V
// ring, Q's empty/full barriers (version 8: its two Q buffers, and the output store's reads waited
// for a tile later) and the output staging carry over from tile to tile (uncapped, the cases have
// fewer tiles than an H200 has SMs).
namespace {
void run_all_capped(Path path) {
  struct Cap {
    Cap() { set_persistent_grid_limit(3); }
    ~Cap() { set_persistent_grid_limit(0); }
  } cap;
  run_all(path);
}
}  // namespace
TEST(FusedForward, HopperV7WalksManyTilesPerCta) { run_all_capped(Path::HopperV7); }
TEST(FusedForward, HopperV8WalksManyTilesPerCta) { run_all_capped(Path::HopperV8); }
// Version 10's two consumer warpgroups take turns at one staging buffer, tile after tile.
TEST(FusedForward, HopperV10WalksManyTilesPerCta) { run_all_capped(Path::HopperV10); }
// Version 11 stages each output in its tile's Q buffer, which the producer refills two tiles on.
TEST(FusedForward, HopperV11WalksManyTilesPerCta) { run_all_capped(Path::HopperV11); }
TEST(FusedForward, HopperV13WalksManyTilesPerCta) { run_all_capped(Path::HopperV13); }
// Version 18's halved last blocks (causal diagonals, short last blocks) and swapped rows, tile after tile.
TEST(FusedForward, HopperV18WalksManyTilesPerCta) { run_all_capped(Path::HopperV18); }
// Version 26's keyless tiles in runs (the bottom-right cases with q_len > kv_len): the zeros stay in
// the staging rows from one to the next, and the next tile with keys overwrites them.
TEST(FusedForward, HopperV26WalksManyTilesPerCta) { run_all_capped(Path::HopperV26); }
// Version 29's three CTAs draw every tile of a call from the counter, in sections of one (batch, head)
// (the smallest sections) and of the rule's size (one section for the small cases).
TEST(FusedForward, HopperV29DrawsManyTilesPerCta) {
  struct OneHead {
    OneHead() { set_dynamic_section_heads(1); }
    ~OneHead() { set_dynamic_section_heads(0); }
  } one;
  run_all_capped(Path::HopperV29);
}
TEST(FusedForward, HopperV29DrawsManyTilesPerCtaInRuleSections) { run_all_capped(Path::HopperV29); }

// Version 13 splitting every tail it can, in ranges down to one key block: the case list's small
// full-attention calls then split too. Uncapped, an item of 8 key blocks goes to 8 CTAs (the one
// holding its first block combines the other seven's partials); capped at 3 CTAs, the static rounds run first and the
// tail's ranges cross item boundaries (a CTA's partial piece, then its next item's first piece).
namespace {
struct ForceSplit {
  ForceSplit() { set_split_tail_min_units(1); }
  ~ForceSplit() { set_split_tail_min_units(0); }
};
}  // namespace
TEST(FusedForward, HopperV13SplitsEveryTail) {
  ForceSplit force;
  run_all(Path::HopperV13);
}
TEST(FusedForward, HopperV13SplitsEveryTailAfterStaticRounds) {
  ForceSplit force;
  run_all_capped(Path::HopperV13);
}

TEST(FusedForward, RejectsUnsupportedHeadDim) {
  Params p;
  p.head_dim = 96;
  EXPECT_STRNE(unsupported(p), "");
}
