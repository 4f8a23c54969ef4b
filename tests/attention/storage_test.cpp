// bf16/fp16 conversions: exact on representable values, round-to-nearest-even
// on the rest, inf/NaN/subnormals handled.
#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {
namespace {

TEST(Storage, Bf16RoundTripsAndRoundsToEven) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(-3.5f)), -3.5f);
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), float_to_bf16(1.0f));  // tie goes to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  EXPECT_TRUE(std::isinf(bf16_to_float(float_to_bf16(INFINITY))));
}

TEST(Storage, Fp16RoundTripsAllFiniteValues) {
  for (std::uint32_t h = 0; h < 0x10000u; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = fp16_to_float(bits);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_fp16(f), bits) << std::hex << h;
  }
}

TEST(Storage, Fp16Rounds) {
  EXPECT_EQ(fp16_to_float(float_to_fp16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(fp16_to_float(float_to_fp16(65520.0f))));
  EXPECT_EQ(fp16_to_float(float_to_fp16(1.0f + 1.0f / 2048)), 1.0f);  // tie to even
  EXPECT_EQ(fp16_to_float(float_to_fp16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_float(float_to_fp16(std::ldexp(1.0f, -26))), 0.0f);
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(NAN))));
}

}  // namespace
}  // namespace attnprof::attention::cpu
