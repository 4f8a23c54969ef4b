// The throwing half of ATTNPROF_CUBLAS_CHECK.
#include "attention/cuda/cublas_check.h"

#include <fmt/core.h>

namespace attnprof::attention::cuda {

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  const std::string msg = fmt::format("{} failed: {} ({}:{})", call, cublasGetStatusString(status), file, line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw DeviceOutOfMemory(msg);
  throw std::runtime_error(msg);
}

}  // namespace attnprof::attention::cuda
