// The one way attnprof times GPU work: CUDA events on the caller's stream, one
// number per sample, in two modes.
//   cold (attnprof bench): the L2 is overwritten before every sample and each
//     sample is one call, so a call never finds the last one's data in cache.
//   hot (the fused-kernel lab): calls back to back, `burst` per sample, so the
//     host's per-launch work (tensor-map encoding) overlaps the kernel before.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace attnprof::attention::cuda {

enum class TimingMode { Cold, Hot };

// A CUDA event, created and destroyed with its owner.
class CudaEvent {
 public:
  CudaEvent();
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

struct TimingOptions {
  TimingMode mode = TimingMode::Cold;
  int samples = 21;
  int burst = 10;         // hot: calls per sample
  void* flush = nullptr;  // cold: a device buffer at least twice the L2, overwritten before each sample
  std::size_t flush_bytes = 0;
};

// Milliseconds per call, one entry per sample. `call` enqueues the work on
// `stream`. Throws std::runtime_error (cuda_check.h) on a failed CUDA call.
std::vector<double> time_calls(const std::function<void()>& call, cudaStream_t stream, const TimingOptions& options);

// The same for several calls in rounds, one sample of each per round (options.samples rounds), all
// enqueued before one synchronize, so the calls see the same clocks and temperature: result[i][r]
// is call i's sample of round r. The order within a round turns each round (interleaved_call).
std::vector<std::vector<double>> time_calls_interleaved(const std::vector<std::function<void()>>& calls,
                                                        cudaStream_t stream, const TimingOptions& options);

}  // namespace attnprof::attention::cuda
