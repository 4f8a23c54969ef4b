// The harness's fp64 reference on cases with known answers.
#include "reference_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace attnprof::fused;

namespace {
Params small(int sq, int skv, bool causal) {
  Params p;
  p.batch = 1;
  p.heads = 2;
  p.kv_heads = 1;
  p.q_len = sq;
  p.kv_len = skv;
  p.head_dim = 64;
  p.causal = causal;
  set_dense_strides(p, Layout::bshd);
  return p;
}
}  // namespace

TEST(FusedReference, EqualKeysAverageTheValues) {
  Params p = small(3, 4, false);
  std::vector<float> q(2 * 3 * 64, 0.5f), k(4 * 64, 1.f), v(4 * 64);
  for (int j = 0; j < 4; ++j)
    for (int d = 0; d < 64; ++d) v[j * 64 + d] = float(j);
  std::vector<double> out, lse;
  reference_forward(p, q.data(), k.data(), v.data(), out, lse);
  for (double x : out) EXPECT_NEAR(x, 1.5, 1e-12);
  for (double l : lse) EXPECT_NEAR(l, 0.5 * 64 / 8.0 + std::log(4.0), 1e-12);
}

TEST(FusedReference, CausalTopLeftAndEmptyRows) {
  Params p = small(3, 4, true);
  std::vector<float> q(2 * 3 * 64, 0.f), k(4 * 64, 0.f), v(4 * 64);
  for (int j = 0; j < 4; ++j)
    for (int d = 0; d < 64; ++d) v[j * 64 + d] = float(j);
  std::vector<double> out, lse;
  reference_forward(p, q.data(), k.data(), v.data(), out, lse);
  // Row i averages keys 0..i (top-left), for both heads sharing one kv head.
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[(h * 3 + i) * 64], i / 2.0, 1e-12);
  Params empty = small(2, 0, true);
  reference_forward(empty, q.data(), k.data(), v.data(), out, lse);
  for (double x : out) EXPECT_EQ(x, 0.0);
  for (double l : lse) EXPECT_TRUE(std::isinf(l) && l < 0);
}
