// The throwing half of ATTNPROF_CUDA_CHECK.
#include "attention/cuda/cuda_check.h"

#include <fmt/core.h>

namespace attnprof::attention::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a sticky launch error so the next call can report its own
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, cudaGetErrorString(err), file, line);
  if (err == cudaErrorMemoryAllocation) throw DeviceOutOfMemory(msg);
  throw std::runtime_error(msg);
}

}  // namespace attnprof::attention::cuda
