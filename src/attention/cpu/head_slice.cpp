// Slice gather/scatter and the thread pool loop for the CPU implementations.
#include "attention/cpu/head_slice.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "attention/cpu/storage.h"

namespace attnprof::attention::cpu {

namespace {
std::int64_t offset(const TensorStrides& s, int b, int h, int row) { return b * s.batch + h * s.head + row * s.row; }

template <typename T>
std::vector<T> load_rows(const void* base, const TensorStrides& s, DType dtype, int b, int h, int first_row, int rows,
                         int dim) {
  std::vector<T> out(static_cast<std::size_t>(rows) * dim);
  for (int r = 0; r < rows; ++r) {
    const std::int64_t o = offset(s, b, h, first_row + r);
    for (int d = 0; d < dim; ++d) out[static_cast<std::size_t>(r) * dim + d] = load_element(base, dtype, o + d);
  }
  return out;
}
}  // namespace

std::vector<float> load_slice(const void* base, const TensorStrides& s, DType dtype, int b, int h, int rows, int dim) {
  return load_rows<float>(base, s, dtype, b, h, 0, rows, dim);
}

std::vector<double> load_slice_f64(const void* base, const TensorStrides& s, DType dtype, int b, int h, int first_row,
                                   int rows, int dim) {
  return load_rows<double>(base, s, dtype, b, h, first_row, rows, dim);
}

void store_slice(void* base, const TensorStrides& s, DType dtype, int b, int h, int rows, int dim,
                 const float* values) {
  for (int r = 0; r < rows; ++r) {
    const std::int64_t o = offset(s, b, h, r);
    for (int d = 0; d < dim; ++d) store_element(base, dtype, o + d, values[static_cast<std::size_t>(r) * dim + d]);
  }
}

void parallel_for(int count, const std::function<void(int)>& task) {
  const int threads = std::max(1, std::min<int>(count, static_cast<int>(std::thread::hardware_concurrency())));
  std::atomic<int> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (int i = next++; i < count; i = next++) {
      try {
        task(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

void for_each_head(const AttentionParams& p, const std::function<void(int, int, int)>& fn) {
  const int group = p.q_heads / p.kv_heads;
  parallel_for(p.batch * p.q_heads, [&](int i) {
    const int b = i / p.q_heads, h = i % p.q_heads;
    fn(b, h, h / group);
  });
}

}  // namespace attnprof::attention::cpu
