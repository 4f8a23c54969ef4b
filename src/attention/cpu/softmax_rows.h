// Row softmax over dense float rows, result rounded to the storage type; a row of
// all -inf gives zeros (what _safe_softmax returns, and what our kernels do).
#pragma once

#include <cmath>
#include <cstdint>

#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

inline void softmax_rows(float* x, int rows, int cols, DType dtype) {
  for (int i = 0; i < rows; ++i) {
    float* row = x + static_cast<std::int64_t>(i) * cols;
    float max = -INFINITY;
    for (int j = 0; j < cols; ++j) max = std::fmax(max, row[j]);
    if (max == -INFINITY) {
      for (int j = 0; j < cols; ++j) row[j] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (int j = 0; j < cols; ++j) sum += (row[j] = std::exp(row[j] - max));
    const float inv = 1.0f / sum;
    for (int j = 0; j < cols; ++j) row[j] = round_to(dtype, row[j] * inv);
  }
}

}  // namespace attnprof::attention::cpu
