// The plugin's entry point: hands the CUDA runner and implementations to the
// bench core that loaded it (see cuda_backend.h).
#include "bench/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const attnprof::bench::CudaBackend* attnprof_bench_cuda_backend() {
  static const attnprof::bench::CudaBackend backend{
      &attnprof::bench::plugin::implementations,
      &attnprof::bench::plugin::device_name,
      &attnprof::bench::plugin::run,
  };
  return &backend;
}
