// Both fused forward paths against the fp64 reference: bf16/fp16, D 64/128, causal
// and not, odd and differing lengths, GQA/MQA, BHSD/BSHD, custom scale, no keys.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention/params.h"
#include "fused_attention.h"
#include "fused_harness.h"

using namespace attnprof::fused;

namespace {

using attnprof::attention::AttentionParams;
using attnprof::attention::DType;
using attnprof::attention::Layout;
using attnprof::attention::make_params;

std::vector<AttentionParams> cases() {
  std::vector<AttentionParams> cs;
  for (DType dt : {DType::BF16, DType::FP16})
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        for (int s : {1, 17, 1000, 2049}) cs.push_back(make_params(1, 2, 2, s, s, d, causal, dt, Layout::BHSD));
        cs.push_back(make_params(2, 4, 2, 300, 700, d, causal, dt, Layout::BSHD));
        AttentionParams custom = make_params(1, 4, 1, 777, 129, d, causal, dt, Layout::BHSD);
        custom.scale = 0.3f;
        cs.push_back(custom);
        cs.push_back(make_params(1, 2, 2, 5, 0, d, causal, dt, Layout::BHSD));
      }
  return cs;
}

void run_all(Path path) {
  if (!have_device()) GTEST_SKIP() << "no CUDA device";
  if (path != Path::Portable && resolve_path(Path::Automatic) != Path::Hopper) GTEST_SKIP() << "not an sm_90 device";
  unsigned seed = 100;
  for (const AttentionParams& c : cases()) {
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
TEST(FusedForward, HopperM192PathMatchesReference) { run_all(Path::HopperM192); }

TEST(FusedForward, RejectsUnsupportedHeadDim) {
  Params p;
  p.head_dim = 96;
  EXPECT_STRNE(unsupported(p), "");
}
