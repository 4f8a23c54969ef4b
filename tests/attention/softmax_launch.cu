// See softmax_launch.h.
#include "softmax_launch.h"

#include "attention/cuda/softmax.cuh"

namespace attnprof::attention::cuda::testing {

std::vector<float> softmax_on_device(const std::vector<float>& rows_in, std::int64_t rows, int cols) {
  const std::size_t bytes = rows_in.size() * sizeof(float);
  float* in = nullptr;
  float* out = nullptr;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&in, bytes));
  ATTNPROF_CUDA_CHECK(cudaMalloc(&out, bytes));
  std::vector<float> result(rows_in.size());
  ATTNPROF_CUDA_CHECK(cudaMemcpy(in, rows_in.data(), bytes, cudaMemcpyHostToDevice));
  launch_softmax(in, out, rows, cols, nullptr);
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  ATTNPROF_CUDA_CHECK(cudaMemcpy(result.data(), out, bytes, cudaMemcpyDeviceToHost));
  ATTNPROF_CUDA_CHECK(cudaFree(in));
  ATTNPROF_CUDA_CHECK(cudaFree(out));
  return result;
}

}  // namespace attnprof::attention::cuda::testing
