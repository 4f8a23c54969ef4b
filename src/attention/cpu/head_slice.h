// Moving one (batch, head) slice between strided storage and dense float/double
// rows, and running work over all slices on std::threads. Every CPU
// implementation works one slice at a time on these dense copies.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "attention/params.h"

namespace attnprof::attention::cpu {

// rows x head_dim values of tensor `base` (strides s) at batch b, head h, as floats.
std::vector<float> load_slice(const void* base, const TensorStrides& s, DType dtype, int b, int h, int rows, int dim);
// rows x dim values from row first_row on, as doubles.
std::vector<double> load_slice_f64(const void* base, const TensorStrides& s, DType dtype, int b, int h, int first_row,
                                   int rows, int dim);
// Writes rows x dim floats into `base`, rounding to dtype.
void store_slice(void* base, const TensorStrides& s, DType dtype, int b, int h, int rows, int dim, const float* values);

// Runs task(i) for i in [0, count) on up to hardware_concurrency threads.
// The first exception thrown by a task is rethrown here.
void parallel_for(int count, const std::function<void(int)>& task);

// Calls fn(b, h, kv_head) for every (batch, q head) slice of p, in parallel.
void for_each_head(const AttentionParams& p, const std::function<void(int, int, int)>& fn);

// Row-major C[m,n] = A[m,k] * B[k,n] accumulated in T (B given as [k][n] so the
// inner loop runs over contiguous n and vectorises without fast-math).
template <typename T>
void matmul_rows(const T* a, const T* b, T* c, int m, int k, int n) {
  for (int i = 0; i < m; ++i) {
    T* crow = c + static_cast<std::int64_t>(i) * n;
    for (int j = 0; j < n; ++j) crow[j] = T(0);
    for (int kk = 0; kk < k; ++kk) {
      const T av = a[static_cast<std::int64_t>(i) * k + kk];
      const T* brow = b + static_cast<std::int64_t>(kk) * n;
      for (int j = 0; j < n; ++j) crow[j] += av * brow[j];
    }
  }
}

// [rows][cols] -> [cols][rows]
template <typename T>
std::vector<T> transpose(const std::vector<T>& x, int rows, int cols) {
  std::vector<T> t(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      t[static_cast<std::int64_t>(c) * rows + r] = x[static_cast<std::int64_t>(r) * cols + c];
  return t;
}

}  // namespace attnprof::attention::cpu
