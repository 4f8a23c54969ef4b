// The interleaved timer's order within a round (interleave_order.h): every call is timed once per
// round, first in 1/n of the rounds, and two calls alternate.
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "attention/cuda/interleave_order.h"

namespace attnprof::attention::cuda {
namespace {

TEST(InterleaveOrder, EveryCallOncePerRoundAndFirstEquallyOften) {
  for (std::size_t n = 1; n <= 6; ++n) {
    std::vector<int> first(n, 0);
    for (std::size_t r = 0; r < 12 * n; ++r) {
      std::vector<int> seen(n, 0);
      for (std::size_t k = 0; k < n; ++k) ++seen[interleaved_call(r, k, n)];
      for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(seen[i], 1) << "n=" << n << " round " << r;
      ++first[interleaved_call(r, 0, n)];
    }
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(first[i], 12) << "n=" << n << " call " << i;
  }
}

TEST(InterleaveOrder, TwoCallsAlternate) {
  // Issue 13's grid times fused and cuDNN: A B, B A, A B, ...
  EXPECT_EQ(interleaved_call(0, 0, 2), 0u);
  EXPECT_EQ(interleaved_call(0, 1, 2), 1u);
  EXPECT_EQ(interleaved_call(1, 0, 2), 1u);
  EXPECT_EQ(interleaved_call(1, 1, 2), 0u);
  EXPECT_EQ(interleaved_call(2, 0, 2), 0u);
}

}  // namespace
}  // namespace attnprof::attention::cuda
