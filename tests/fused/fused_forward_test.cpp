// Both fused forward paths against the fp64 reference: bf16/fp16, D 64/128, causal
// and not, odd and differing lengths, GQA/MQA, BHSD/BSHD, custom scale, no keys.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fused_attention.h"
#include "fused_harness.h"

using namespace attnprof::fused;

namespace {

std::vector<Case> cases() {
  std::vector<Case> cs;
  for (Dtype dt : {Dtype::bf16, Dtype::fp16})
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        for (int s : {1, 17, 1000, 2049}) cs.push_back({1, 2, 2, s, s, d, causal, dt, Layout::bhsd, 0.f});
        cs.push_back({2, 4, 2, 300, 700, d, causal, dt, Layout::bshd, 0.f});
        cs.push_back({1, 4, 1, 777, 129, d, causal, dt, Layout::bhsd, 0.3f});
        cs.push_back({1, 2, 2, 5, 0, d, causal, dt, Layout::bhsd, 0.f});
      }
  return cs;
}

void run_all(Path path) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (path != Path::portable && resolve_path(Path::automatic) != Path::hopper) GTEST_SKIP() << "not an sm_90 device";
  unsigned seed = 100;
  for (const Case& c : cases()) {
    const CheckResult r = check_case(c, path, seed++);
    EXPECT_TRUE(r.error.empty()) << c.name() << ": " << r.error;
    EXPECT_EQ(r.unwritten, 0) << c.name();
    EXPECT_TRUE(r.lse_inf_ok) << c.name();
    EXPECT_LT(r.rel_err, 1e-2) << c.name();
    EXPECT_LT(r.max_lse_err, 1e-2) << c.name();
  }
}

}  // namespace

TEST(FusedForward, PortablePathMatchesReference) { run_all(Path::portable); }
TEST(FusedForward, HopperPathMatchesReference) { run_all(Path::hopper); }
TEST(FusedForward, HopperOverlapPathMatchesReference) { run_all(Path::hopper_overlap); }
TEST(FusedForward, HopperM192PathMatchesReference) { run_all(Path::hopper_m192); }

TEST(FusedForward, RejectsUnsupportedHeadDim) {
  Params p;
  p.head_dim = 96;
  EXPECT_STRNE(validate(p), "");
}
