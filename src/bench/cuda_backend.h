// The seam between `attnprof bench` and its CUDA half. The CUDA runner,
// implementations and CUPTI kernel counter live in a plugin,
// libattnprof_bench_cuda.so, loaded only when a GPU run is asked for, so
// `attnprof doctor` and `record` never load cuBLAS, cuDNN or CUPTI (hundreds of
// MB at start-up) and run where those libraries are not installed.
#pragma once

#include <string>
#include <vector>

#include "bench/bench.h"
#include "bench/kernel_counter.h"

namespace attnprof::bench {

struct CudaBackend {
  std::vector<Implementation> (*implementations)();
  std::string (*device_name)(std::string* why);
  void (*run)(const Plan& plan, BenchRun& run);
};

// The plugin's side of the seam (cuda_plugin.cpp hands these over); the core's
// cuda_implementations, cuda_device_name and run_on_cuda (cuda_loader.cpp) call
// them through the loaded CudaBackend.
namespace plugin {
std::vector<Implementation> implementations();
std::string device_name(std::string* why);
void run(const Plan& plan, BenchRun& run);
}  // namespace plugin

}  // namespace attnprof::bench

// Exported by the plugin (the only symbol it exports).
extern "C" const attnprof::bench::CudaBackend* attnprof_bench_cuda_backend();
