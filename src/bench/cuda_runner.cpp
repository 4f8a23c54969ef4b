// Timing the CUDA implementations properly: inputs generated fresh on the host
// (normal(0,1), never zeros) and copied once; per implementation a warm-up
// (cuBLAS heuristics, cached masks, cuDNN graph), an fp64 check on a poisoned
// output, one recorded forward to count its kernels, then CUDA events around
// each timed forward with the L2 flushed before it; median and spread.
#include <algorithm>
#include <cstdint>
#include <filesystem>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>

#include "attention/cpu/check.h"
#include "attention/cuda/cuda_check.h"
#include "attention/cuda/timer.h"
#include "attention/host_inputs.h"
#include "bench/bench.h"
#include "bench/cuda_backend.h"
#include "bench/kernel_counter.h"
#include "bench/timing_stats.h"
#include "common/input_error.h"

namespace attnprof::bench {

namespace {

// A cudaMalloc'd buffer, freed on scope exit (move-only).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) ATTNPROF_CUDA_CHECK(cudaMalloc(&ptr_, bytes));
  }
  ~DeviceBuffer() {
    if (ptr_) (void)cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { ATTNPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

double gib(double bytes) { return bytes / (1024.0 * 1024.0 * 1024.0); }

std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  ATTNPROF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// The bf16 GEMM rate of this card in this run: cuBLAS, fp32 accumulate, n^3, median of 10.
double measure_gemm_tflops(cudaStream_t stream, int n) {
  const std::size_t bytes = static_cast<std::size_t>(n) * n * 2;
  DeviceBuffer a(bytes), b(bytes), c(bytes);
  // Non-zero operands (zeros run faster): 0x3c00 bf16-halves are small positive numbers.
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(a.get(), 0x3c, bytes, stream));
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(b.get(), 0x3b, bytes, stream));
  cublasHandle_t h = nullptr;
  ATTNPROF_CUBLAS_CHECK(cublasCreate(&h));
  struct HandleGuard {
    cublasHandle_t h;
    ~HandleGuard() { (void)cublasDestroy(h); }
  } guard{h};
  ATTNPROF_CUBLAS_CHECK(cublasSetStream(h, stream));
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    ATTNPROF_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.get(), CUDA_R_16BF, n, b.get(),
                                       CUDA_R_16BF, n, &beta, c.get(), CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT));
  };
  for (int i = 0; i < 3; ++i) gemm();
  const std::vector<double> ms = attention::cuda::time_calls(gemm, stream, {attention::cuda::TimingMode::hot, 10, 1});
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  return flops / (timing_stats(ms).median * 1e-3) / 1e12;
}

struct DeviceInputs {
  DeviceBuffer q, k, v, out;
  attention::AttentionParams params;
};

}  // namespace

void plugin::run(const Plan& plan, BenchRun& run) {
  attention::HostInputs host = attention::make_host_inputs(plan.shape, plan.seed);
  const std::size_t input_bytes = host.q.size() + host.k.size() + host.v.size() + host.out.size();
  if (static_cast<double>(input_bytes) > 0.9 * static_cast<double>(free_device_bytes()))
    throw InputError(
        fmt::format("shape needs {:.1f} GiB of device memory for q, k, v and out; "
                    "{:.1f} GiB are free",
                    gib(static_cast<double>(input_bytes)), gib(static_cast<double>(free_device_bytes()))));
  Stream stream;
  DeviceInputs dev{DeviceBuffer(host.q.size()), DeviceBuffer(host.k.size()), DeviceBuffer(host.v.size()),
                   DeviceBuffer(host.out.size()), plan.shape};
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.q.get(), host.q.data(), host.q.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.k.get(), host.k.data(), host.k.size(), cudaMemcpyHostToDevice));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(dev.v.get(), host.v.data(), host.v.size(), cudaMemcpyHostToDevice));
  dev.params.q = dev.q.get();
  dev.params.k = dev.k.get();
  dev.params.v = dev.v.get();
  dev.params.out = dev.out.get();
  dev.params.lse = nullptr;

  // Flushing twice the L2 before each timed run keeps one run's inputs from
  // being the next run's cache hits.
  int device = 0, l2 = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  DeviceBuffer flush(std::max<std::size_t>(2u * static_cast<std::size_t>(l2), 64u << 20));

  const int gemm_n = free_device_bytes() > (std::size_t{1} << 30) ? 8192 : 2048;
  run.gemm_tflops = measure_gemm_tflops(stream.get(), gemm_n);
  run.gemm_rate_shape = fmt::format("bf16 {0}x{0}x{0} cuBLAS GEMM", gemm_n);

  auto counter = make_kernel_counter();
  const double flops = attention::attention_flops(plan.shape);
  if (!plan.trace_dir.empty()) std::filesystem::create_directories(plan.trace_dir);

  const BenchProgress& progress = *plan.progress;
  if (progress.started) progress.started(run);
  const auto finished = [&](ImplResult row) {
    run.rows.push_back(std::move(row));
    if (progress.finished) progress.finished(run, run.rows.back());
  };
  for (std::size_t i = 0; i < plan.impls.size(); ++i) {
    const Implementation& impl = plan.impls[i];
    ImplResult row = start_row(impl);
    if (!impl.unavailable.empty() || !impl.run) {
      row.skipped = impl.unavailable;
      finished(std::move(row));
      continue;
    }
    if (progress.running) progress.running(run, impl.name);
    try {
      const std::size_t ws_bytes = impl.workspace ? impl.workspace(dev.params) : 0;
      if (static_cast<double>(ws_bytes) > 0.9 * static_cast<double>(free_device_bytes()))
        throw attention::cuda::DeviceOutOfMemory(
            fmt::format("{} needs {:.1f} GiB of scratch for this shape; {:.1f} GiB are free", impl.name,
                        gib(static_cast<double>(ws_bytes)), gib(static_cast<double>(free_device_bytes()))));
      DeviceBuffer workspace(ws_bytes);
      const attention::ExecContext ctx{stream.get(), workspace.get(), ws_bytes};
      auto forward = [&] { impl.run(dev.params, ctx); };

      forward();  // warm-up: handles, heuristics, cached masks, cuDNN graphs
      forward();
      ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream.get()));

      if (plan.check_slices > 0) {
        ATTNPROF_CUDA_CHECK(cudaMemsetAsync(dev.out.get(), 0xff, dev.out.bytes(), stream.get()));  // NaN
        forward();
        ATTNPROF_CUDA_CHECK(
            cudaMemcpyAsync(host.out.data(), dev.out.get(), host.out.size(), cudaMemcpyDeviceToHost, stream.get()));
        ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
        const auto check = attention::cpu::check_against_reference(host.params, host.out.data(), plan.check_slices);
        row.rel_error = check.rel_error;
        row.slices_checked = check.slices_checked;
        row.slices_total = check.slices_total;
        row.check_passed = check.rel_error < attention::cpu::tolerance(plan.shape.dtype);
      }

      // One recorded forward: its kernels, and the trace --trace asked for.
      ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
      counter->begin();
      std::string why;
      if (counter->available(&why)) {
        forward();
        ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
        const std::string trace_path =
            plan.trace_dir.empty() ? "" : (std::filesystem::path(plan.trace_dir) / (impl.name + ".json")).string();
        const KernelRecording rec = counter->end(trace_path);
        row.kernels = static_cast<int>(rec.kernel_names.size());
        row.kernel_names = rec.kernel_names;
        row.kernel_us = rec.kernel_us;
        row.gemm_unit = gemm_unit(rec.kernel_names);
        run.kernel_count_source = "CUPTI recorder";
      } else {
        run.kernel_count_source = "n/a: " + why;
      }

      // Timing: one forward per sample, L2 flushed before it (the cold mode of the one timer).
      const auto cold = [&](int samples) {
        return attention::cuda::time_calls(forward, stream.get(),
                                           {attention::cuda::TimingMode::cold, samples, 1, flush.get(), flush.bytes()});
      };
      const double probe = cold(1).front();
      const int reps =
          plan.repeats > 0 ? plan.repeats : std::clamp(static_cast<int>(300.0 / std::max(probe, 1e-3)), 10, 200);
      const std::vector<double> ms = cold(reps);
      const TimingStats st = timing_stats(ms);
      row.median_ms = st.median;
      row.p10_ms = st.p10;
      row.p90_ms = st.p90;
      row.runs = reps;
      row.tflops = flops / (st.median * 1e-3) / 1e12;
      if (run.gemm_tflops) row.pct_of_gemm = 100.0 * row.tflops / *run.gemm_tflops;
      row.bytes_model = impl.bytes ? impl.bytes(plan.shape) : 0.0;
    } catch (const attention::cuda::DeviceOutOfMemory& e) {
      if (plan.explicitly_asked[i]) throw InputError(fmt::format("{}: out of device memory: {}", impl.name, e.what()));
      row.skipped = fmt::format("out of device memory: {}", e.what());
    } catch (const InputError& e) {
      if (plan.explicitly_asked[i]) throw;
      row.skipped = e.what();
    }
    finished(std::move(row));
  }
}

}  // namespace attnprof::bench
