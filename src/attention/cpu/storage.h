// bf16 and fp16 storage on the CPU: bit-exact round-to-nearest-even conversions
// to and from float, so CPU implementations round where the GPU ones do.
#pragma once

#include <cstdint>
#include <cstring>

#include "attention/params.h"

namespace attnprof::attention::cpu {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // NaN
  const std::uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

inline float bf16_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow to inf
  if (abs < 0x38800000u) {                        // subnormal or zero in fp16: add a magic number to round
    const float magic = bits_float(0x3f000000u);  // 0.5: puts the fp16 subnormal lsb at bit 0
    const float r = bits_float(abs) + magic;
    return static_cast<std::uint16_t>(sign | (float_bits(r) - float_bits(magic)));
  }
  const std::uint32_t mant_odd = (abs >> 13) & 1u;
  const std::uint32_t biased = abs + 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
  return static_cast<std::uint16_t>(sign | (biased >> 13));
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float value = static_cast<float>(mant) * bits_float(0x33800000u);
    return bits_float(float_bits(value) | sign);
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// The float nearest to f that `dtype` can hold (what a store and reload gives).
inline float round_to(DType dtype, float f) {
  switch (dtype) {
    case DType::BF16:
      return bf16_to_float(float_to_bf16(f));
    case DType::FP16:
      return fp16_to_float(float_to_fp16(f));
    case DType::FP32:
      return f;
  }
  return f;
}

inline float load_element(const void* base, DType dtype, std::int64_t index) {
  switch (dtype) {
    case DType::BF16:
      return bf16_to_float(static_cast<const std::uint16_t*>(base)[index]);
    case DType::FP16:
      return fp16_to_float(static_cast<const std::uint16_t*>(base)[index]);
    case DType::FP32:
      return static_cast<const float*>(base)[index];
  }
  return 0.0f;
}

inline void store_element(void* base, DType dtype, std::int64_t index, float value) {
  switch (dtype) {
    case DType::BF16:
      static_cast<std::uint16_t*>(base)[index] = float_to_bf16(value);
      break;
    case DType::FP16:
      static_cast<std::uint16_t*>(base)[index] = float_to_fp16(value);
      break;
    case DType::FP32:
      static_cast<float*>(base)[index] = value;
      break;
  }
}

}  // namespace attnprof::attention::cpu
