// The bench's softmax kernels on rows that matter beyond random data: a row of
// -inf gives zeros (as _safe_softmax), NaN and +inf give NaN (as ATen's softmax;
// they must not be hidden as zeros), ordinary rows match a double-precision
// softmax. Widths cover the warp kernel (up to 2048 columns) and the block kernel
// with and without its shared-memory copy of the row.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention/cuda/cuda_attention.h"
#include "softmax_launch.h"

namespace attnprof::attention::cuda {
namespace {

class SoftmaxKernel : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    std::string why;
    if (!device_available(&why)) GTEST_SKIP() << why;
  }
};

TEST_P(SoftmaxKernel, SpecialRowsAndOrdinaryRows) {
  const int cols = GetParam();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  constexpr int kRows = 5;
  std::vector<float> in(static_cast<std::size_t>(kRows) * cols);
  for (int c = 0; c < cols; ++c) {
    const float x = std::sin(0.37f * static_cast<float>(c)) * 4.0f;
    in[0 * cols + c] = -inf;                     // fully masked
    in[1 * cols + c] = c == cols / 2 ? nan : x;  // one NaN
    in[2 * cols + c] = c == 0 ? inf : x;         // one +inf
    in[3 * cols + c] = x;                        // ordinary
    in[4 * cols + c] = c % 2 ? -inf : x;         // half masked
  }
  const std::vector<float> out = testing::softmax_on_device(in, kRows, cols);
  for (int c = 0; c < cols; ++c) {
    EXPECT_EQ(out[0 * cols + c], 0.0f) << "masked row, col " << c;
    EXPECT_TRUE(std::isnan(out[1 * cols + c])) << "NaN row, col " << c;
    EXPECT_TRUE(std::isnan(out[2 * cols + c])) << "+inf row, col " << c;
  }
  for (int r : {3, 4}) {
    double m = -INFINITY, sum = 0.0;
    for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(in[r * cols + c]));
    for (int c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(in[r * cols + c]) - m);
    for (int c = 0; c < cols; ++c) {
      const double want = std::exp(static_cast<double>(in[r * cols + c]) - m) / sum;
      EXPECT_NEAR(out[r * cols + c], want, 1e-6 + 1e-5 * want) << "row " << r << ", col " << c;
    }
  }
}

// 1, 3, 33: the warp kernel below a warp's width and not a power of two; 2048:
// its widest; 3000: the block kernel with 16-byte vectors and the row in shared
// memory; 12001 (47 KB of fp32): the block kernel reading global memory, scalar.
INSTANTIATE_TEST_SUITE_P(Widths, SoftmaxKernel, ::testing::Values(1, 3, 33, 2048, 3000, 12001));

}  // namespace
}  // namespace attnprof::attention::cuda
