// ATTNPROF_CUDA_CHECK's twin for cuBLAS calls (see cuda_check.h).
#pragma once

#include <cublas_v2.h>

#include "attention/cuda/cuda_check.h"

namespace attnprof::attention::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace attnprof::attention::cuda

#define ATTNPROF_CUBLAS_CHECK(call)                                                             \
  do {                                                                                          \
    const cublasStatus_t attnprof_st_ = (call);                                                 \
    if (attnprof_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      ::attnprof::attention::cuda::throw_cublas_error(attnprof_st_, #call, __FILE__, __LINE__); \
  } while (0)
