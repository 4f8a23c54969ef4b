// The wgmma wrappers (wgmma_ops.cuh) one at a time on one warpgroup against a CPU product, their operands
// TMA-loaded in the kernels' 128B-swizzled layout: WgmmaSS (both K-major), WgmmaSS_TT (both MN-major, the
// backward's dQ, A from either chunk of a 128-column tile as at D=64), WgmmaRS (A in registers, B
// MN-major) and WgmmaRS_K (A into registers by ldmatrix_a_sw128 from its TMA tile, B K-major), bf16 and
// fp16, K 64 and 128. A descriptor mistake shows here, not as a wrong gradient.
// The operands are multiples of 1/8 in [-2, 2]: every product and sum is exact in fp32, so D must match
// exactly. Skips without an sm_90 device. Label: gpu.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wgmma_cases.h"

namespace attnprof::fused::testing {
namespace {

// The 16-bit pattern of x (exact in both types: a multiple of 1/8 in [-2, 2]).
std::uint16_t to_bits(float x, bool bf16) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, 4);
  if (bf16) return static_cast<std::uint16_t>(u >> 16);  // exact: the low 16 bits are zero
  if (x == 0.f) return 0;
  const std::uint32_t sign = (u >> 31) << 15;
  const int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;  // normal in fp16 for |x| >= 1/8
  return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exp) << 10) | ((u >> 13) & 0x3ff));
}

struct Operand {
  std::vector<float> value;
  std::vector<std::uint16_t> bits;
};

Operand random_operand(int rows, int cols, bool bf16, std::mt19937& rng) {
  std::uniform_int_distribution<int> eighths(-16, 16);
  Operand o;
  for (int i = 0; i < rows * cols; ++i) {
    const float x = static_cast<float>(eighths(rng)) / 8.f;
    o.value.push_back(x);
    o.bits.push_back(to_bits(x, bf16));
  }
  return o;
}

std::string describe(const WgmmaCase& c) {
  const char* form = c.form == WgmmaForm::SS      ? "SS"
                     : c.form == WgmmaForm::SS_TT ? "SS_TT"
                     : c.form == WgmmaForm::RS    ? "RS"
                                                  : "RS_K";
  return std::string(form) + (c.bf16 ? " bf16" : " fp16") + " K" + std::to_string(c.k) + " N" + std::to_string(c.n) +
         " A " + std::to_string(c.a_cols) + "/" + std::to_string(c.a_chunk) + " B " + std::to_string(c.b_cols) + "/" +
         std::to_string(c.b_chunk);
}

void check(const WgmmaCase& c) {
  std::mt19937 rng(7 + c.k + c.n + 3 * c.a_chunk + 5 * c.b_chunk + static_cast<int>(c.form) * 11 + c.bf16);
  const bool ss = c.form == WgmmaForm::SS || c.form == WgmmaForm::RS_K, tt = c.form == WgmmaForm::SS_TT;
  const Operand a = tt ? random_operand(c.k, c.a_cols, c.bf16, rng) : random_operand(64, c.k, c.bf16, rng);
  const Operand b = ss ? random_operand(c.n, c.k, c.bf16, rng) : random_operand(c.k, c.b_cols, c.bf16, rng);
  std::vector<float> d;
  const std::string err = run_wgmma_case(c, a.bits, b.bits, d);
  ASSERT_TRUE(err.empty()) << describe(c) << ": " << err;
  int wrong = 0;
  for (int m = 0; m < 64; ++m)
    for (int n = 0; n < c.n; ++n) {
      double want = 0;
      for (int k = 0; k < c.k; ++k) {
        const float x = tt ? a.value[k * c.a_cols + 64 * c.a_chunk + m] : a.value[m * c.k + k];
        const float y = ss ? b.value[n * c.k + k] : b.value[k * c.b_cols + 64 * c.b_chunk + n];
        want += double(x) * double(y);
      }
      const float got = d[m * c.n + n];
      if (got != static_cast<float>(want) && wrong++ < 5)
        ADD_FAILURE() << describe(c) << ": D[" << m << "][" << n << "] = " << got << ", want " << want;
    }
  EXPECT_EQ(wrong, 0) << describe(c) << ": elements that differ";
}

WgmmaCase make_case(WgmmaForm form, bool bf16, int k, int n, int a_cols = 64, int a_chunk = 0, int b_cols = 64,
                    int b_chunk = 0) {
  WgmmaCase c;
  c.form = form;
  c.bf16 = bf16;
  c.k = k;
  c.n = n;
  c.a_cols = a_cols;
  c.a_chunk = a_chunk;
  c.b_cols = b_cols;
  c.b_chunk = b_chunk;
  return c;
}

class WgmmaOps : public ::testing::TestWithParam<bool> {  // bf16, else fp16
 protected:
  void SetUp() override {
    std::string why;
    if (!wgmma_device(why)) GTEST_SKIP() << why;
  }
};

TEST_P(WgmmaOps, SsBothKMajor) {
  for (int k : {64, 128})
    for (int n : {64, 128}) check(make_case(WgmmaForm::SS, GetParam(), k, n));
}

// dQ = dS K: A is dS^T stored [keys][queries] (64 queries at D=128; at D=64 128 of them, each
// warpgroup's 64 a chunk), B is K stored [keys][D] (each warpgroup's 64 columns a chunk at D=128).
TEST_P(WgmmaOps, SsTtBothMnMajor) {
  for (int k : {64, 128})
    for (int a_cols : {64, 128})
      for (int a_chunk = 0; a_chunk < a_cols / 64; ++a_chunk)
        for (int b_cols : {64, 128})
          for (int b_chunk = 0; b_chunk < b_cols / 64; ++b_chunk)
            check(make_case(WgmmaForm::SS_TT, GetParam(), k, 64, a_cols, a_chunk, b_cols, b_chunk));
}

// dV += P^T dO and dK += dS^T Q: B is dO or Q stored [queries][D], N = D (64, or 128 over two chunks).
TEST_P(WgmmaOps, RsRegistersAndMnMajorB) {
  for (int k : {64, 128}) {
    check(make_case(WgmmaForm::RS, GetParam(), k, 64, 64, 0, 64, 0));
    check(make_case(WgmmaForm::RS, GetParam(), k, 64, 64, 0, 128, 1));
    check(make_case(WgmmaForm::RS, GetParam(), k, 128, 64, 0, 128, 0));
  }
}

// S^T = K Q^T and dP^T = V dO^T at D=64 with K and V in registers: A [64 keys][D] loaded by TMA and taken
// into fragments as bwd_sm90.cu takes them, B = Q or dO stored [queries][D]; K = 128 reads A's second chunk.
TEST_P(WgmmaOps, RsKRegistersFromTheSwizzleAndKMajorB) {
  for (int k : {64, 128}) check(make_case(WgmmaForm::RS_K, GetParam(), k, 64));
}

INSTANTIATE_TEST_SUITE_P(Types, WgmmaOps, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "bf16" : "fp16"; });

}  // namespace
}  // namespace attnprof::fused::testing
