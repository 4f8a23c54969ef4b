// Check-and-time harness for the fused attention forward (see fused_harness.h).
#include "fused_harness.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

#include "attention/cuda/timer.h"
#include "attention/host_inputs.h"
#include "attention_fn.h"

namespace attnprof::fused {
namespace {

#define HARNESS_CHECK(call)                                                           \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) return std::string(#call) + ": " + cudaGetErrorString(e_); \
  } while (0)

// One device buffer, freed on destruction.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() { cudaFree(ptr); }
  std::string alloc(std::size_t bytes) {
    HARNESS_CHECK(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 16)));
    return "";
  }
};

// The inputs on the device and the params pointing at them; out and lse poisoned (NaN).
struct DeviceCall {
  DeviceBuffer q, k, v, out, lse;
  attention::AttentionParams params;
  std::string upload(const attention::HostInputs& in) {
    const auto& p = in.params;
    const std::size_t rows = std::size_t(p.batch) * p.q_heads * p.q_len;
    std::string err;
    for (auto [buf, bytes] : {std::pair{&q, in.q.size()}, std::pair{&k, in.k.size()}, std::pair{&v, in.v.size()},
                              std::pair{&out, in.out.size()}, std::pair{&lse, rows * sizeof(float)}})
      if (!(err = buf->alloc(bytes)).empty()) return err;
    HARNESS_CHECK(cudaMemcpy(q.ptr, in.q.data(), in.q.size(), cudaMemcpyHostToDevice));
    HARNESS_CHECK(cudaMemcpy(k.ptr, in.k.data(), in.k.size(), cudaMemcpyHostToDevice));
    HARNESS_CHECK(cudaMemcpy(v.ptr, in.v.data(), in.v.size(), cudaMemcpyHostToDevice));
    HARNESS_CHECK(cudaMemset(out.ptr, 0xFF, in.out.size()));
    HARNESS_CHECK(cudaMemset(lse.ptr, 0xFF, rows * sizeof(float)));
    params = p;
    params.q = q.ptr;
    params.k = k.ptr;
    params.v = v.ptr;
    params.out = out.ptr;
    params.lse = static_cast<float*>(lse.ptr);
    return "";
  }
};

std::string launch(const attention::AttentionParams& p, Path path) {
  try {
    attention_forward_on(p, attention::ExecContext{}, path);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string run_check(const attention::AttentionParams& shape, Path path, unsigned seed, CaseCheck& c) {
  attention::HostInputs in = attention::make_host_inputs(shape, seed);
  DeviceCall dev;
  std::string err = dev.upload(in);
  if (!err.empty()) return err;
  if (!(err = launch(dev.params, path)).empty()) return err;
  HARNESS_CHECK(cudaDeviceSynchronize());
  std::vector<float> lse(std::size_t(shape.batch) * shape.q_heads * shape.q_len);
  HARNESS_CHECK(cudaMemcpy(in.out.data(), dev.out.ptr, in.out.size(), cudaMemcpyDeviceToHost));
  HARNESS_CHECK(cudaMemcpy(lse.data(), dev.lse.ptr, lse.size() * sizeof(float), cudaMemcpyDeviceToHost));
  c.result = attention::cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
  return "";
}

std::string run_time(const attention::AttentionParams& shape, Path path, int warmup, int iters, TimeResult& r) {
  // Random data, not zeros: zeros run faster than real data and hide unwritten outputs.
  const attention::HostInputs in = attention::make_host_inputs(shape, 1234);
  DeviceCall dev;
  std::string err = dev.upload(in);
  if (!err.empty()) return err;
  for (int i = 0; i < warmup; ++i)
    if (!(err = launch(dev.params, path)).empty()) return err;
  HARNESS_CHECK(cudaDeviceSynchronize());
  // The hot mode of the one timer: bursts of back-to-back launches, so the host's per-launch
  // work (tensor-map encoding) overlaps the previous kernel instead of sitting in the timing.
  std::vector<double> times;
  try {
    times = attention::cuda::time_calls(
        [&] {
          const std::string e = launch(dev.params, path);
          if (!e.empty()) throw std::runtime_error(e);
        },
        nullptr, {attention::cuda::TimingMode::hot, iters, 10});
  } catch (const std::exception& e) {
    return e.what();
  }
  std::sort(times.begin(), times.end());
  r.median_ms = times[times.size() / 2];
  r.tflops = attention::attention_flops(shape) / (r.median_ms * 1e-3) / 1e12;
  return "";
}

}  // namespace

CaseCheck check_case(const attention::AttentionParams& shape, Path path, unsigned seed) {
  CaseCheck c;
  c.error = run_check(shape, path, seed, c);
  return c;
}

TimeResult time_case(const attention::AttentionParams& shape, Path path, int warmup, int iters) {
  TimeResult r;
  r.error = run_time(shape, path, warmup, iters, r);
  return r;
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace attnprof::fused
