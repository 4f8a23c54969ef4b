// The throwing halves of the check macros.
#include "attention/cuda/cuda_check.h"

#include <fmt/core.h>

namespace attnprof::attention::cuda {

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a sticky launch error so the next call can report its own
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, cudaGetErrorString(err), file, line);
  if (err == cudaErrorMemoryAllocation) throw DeviceOutOfMemory(msg);
  throw std::runtime_error(msg);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, cublasGetStatusString(status), file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw DeviceOutOfMemory(msg);
  throw std::runtime_error(msg);
}

}  // namespace attnprof::attention::cuda
