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

// The backward's preprocess reads dO 16 bytes a lane and the kernels write dQ, dK and dV with out's, q's,
// k's and v's strides: a gradient buffer off a 16-byte boundary is refused before any CUDA call.
TEST(FusedAttentionFn, BackwardRefusesGradientsOffSixteenBytes) {
  attention::AttentionParams p = params(attention::DType::BF16, 64);
  std::vector<float> lse(1 * 4 * 100);
  p.lse = lse.data();
  alignas(16) static char grads[64];
  const auto refusal = [&](const attention::AttentionGrads& g) {
    try {
      fused::attention_backward(p, g, {});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(taken)");
  };
  for (int which = 0; which < 4; ++which) {
    char* at[4] = {grads, grads, grads, grads};  // d_out, dq, dk, dv
    at[which] = grads + 8;
    const attention::AttentionGrads g{at[0], at[1], at[2], at[3]};
    EXPECT_NE(refusal(g).find("16-byte aligned"), std::string::npos) << "gradient " << which << ": " << refusal(g);
  }
  // Aligned, the call passes that check and stops at the next: no workspace was given.
  EXPECT_NE(refusal({grads, grads, grads, grads}).find("workspace"), std::string::npos)
      << refusal({grads, grads, grads, grads});
}
