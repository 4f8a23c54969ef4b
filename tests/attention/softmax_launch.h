// Runs the bench's softmax kernels (src/attention/cuda/softmax.cuh) on host rows,
// for tests: fp32 in, fp32 out, one launch.
#pragma once

#include <cstdint>
#include <vector>

namespace attnprof::attention::cuda::testing {

std::vector<float> softmax_on_device(const std::vector<float>& rows_in, std::int64_t rows, int cols);

}  // namespace attnprof::attention::cuda::testing
