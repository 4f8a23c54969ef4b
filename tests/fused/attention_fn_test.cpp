// The AttentionFn adapter refuses what the kernel does not support before any
// CUDA call, so these run without a GPU.
#include "attention_fn.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/input_error.h"

using namespace attnprof;

namespace {
attention::AttentionParams params(attention::DType dt, int d) {
  attention::AttentionParams p = attention::make_params(1, 4, 2, 100, 120, d, true, dt);
  alignas(16) static char fake[64];
  p.q = p.k = p.v = fake;
  p.out = fake;
  return p;
}
}  // namespace

TEST(FusedAttentionFn, RefusesFp32) {
  EXPECT_THROW(fused::attention_forward(params(attention::DType::FP32, 64), {}), InputError);
}

TEST(FusedAttentionFn, RefusesNegativeScale) {
  attention::AttentionParams p = params(attention::DType::BF16, 64);
  p.scale = -0.125f;
  std::vector<float> lse(1 * 4 * 100);
  p.lse = lse.data();
  try {
    fused::attention_forward(p, {});
    FAIL() << "a negative scale was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("positive scale"), std::string::npos) << e.what();
  }
}

TEST(FusedAttentionFn, RefusesHeadDim96) {
  attention::AttentionParams p = params(attention::DType::BF16, 96);
  std::vector<float> lse(1 * 4 * 100);
  p.lse = lse.data();
  EXPECT_THROW(fused::attention_forward(p, {}), InputError);
}

TEST(FusedAttentionFn, AsksForLseScratchOnlyWithoutLse) {
  attention::AttentionParams p = params(attention::DType::BF16, 64);
  // 100 rows are one tile per head: no split tail asks for more.
  EXPECT_EQ(fused::attention_workspace(p), 1u * 4 * 100 * sizeof(float));
  EXPECT_THROW(fused::attention_forward(p, {}), InputError) << "no workspace given";
  float lse[4];
  p.lse = lse;
  EXPECT_EQ(fused::attention_workspace(p), 0u);
}
