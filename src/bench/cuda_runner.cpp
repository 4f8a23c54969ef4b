// Timing the CUDA implementations properly: inputs generated fresh on the host
// (normal(0,1), never zeros) and copied once; per implementation a warm-up
// (cuBLAS heuristics, cached masks, cuDNN graph), an fp64 check on a poisoned
// output, one recorded call to count its kernels, then CUDA events around
// each timed call with the L2 flushed before it; median and spread. A call is
// a forward, or (--pass) a backward after one forward, or both.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/core.h>

#include "attention/cpu/backward_check.h"
#include "attention/cpu/check.h"
#include "attention/cuda/cublas_check.h"
#include "attention/cuda/device_inputs.h"
#include "attention/cuda/timer.h"
#include "attention/host_inputs.h"
#include "bench/bench.h"
#include "bench/cuda_backend.h"
#include "bench/kernel_counter.h"
#include "bench/timing_stats.h"
#include "common/input_error.h"

namespace attnprof::bench {

namespace {

using attention::cuda::DeviceBuffer;
using attention::cuda::DeviceInputs;

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
  const std::vector<double> ms = attention::cuda::time_calls(gemm, stream, {attention::cuda::TimingMode::Hot, 10, 1});
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  return flops / (timing_stats(ms).median * 1e-3) / 1e12;
}

// What every implementation of one run shares: the inputs on the device, the
// stream, the L2 flush buffer, the kernel counter.
struct Session {
  const Plan& plan;
  attention::HostInputs host;
  Stream stream;
  DeviceInputs dev;
  DeviceBuffer flush;
  std::unique_ptr<KernelCounter> counter;
  // --page-size: the same keys in a paged cache, and the params that read them from it.
  attention::HostKvCache host_cache;
  attention::cuda::DeviceKvCache dev_cache;
  attention::AttentionParams paged_params;
  const attention::AttentionParams& params_for(const Implementation& impl) const {
    return plan.page_size > 0 && impl.takes_paged_kv ? paged_params : dev.params;
  }
};

// A backward pass's tensors: dO (random, like the inputs) and the gradients, on the device and
// their host copies for the check.
struct GradBuffers {
  std::vector<std::uint8_t> host_d_out, host_dq, host_dk, host_dv;
  DeviceBuffer d_out, dq, dk, dv;
  attention::AttentionGrads grads;
};

GradBuffers make_grads(const Session& s) {
  GradBuffers g;
  g.host_d_out = attention::random_like_out(s.plan.shape, s.plan.seed ^ 0x9e3779b9u);
  g.host_dq.resize(s.host.q.size());
  g.host_dk.resize(s.host.k.size());
  g.host_dv.resize(s.host.v.size());
  g.d_out = DeviceBuffer(g.host_d_out.size());
  g.dq = DeviceBuffer(g.host_dq.size());
  g.dk = DeviceBuffer(g.host_dk.size());
  g.dv = DeviceBuffer(g.host_dv.size());
  ATTNPROF_CUDA_CHECK(cudaMemcpy(g.d_out.get(), g.host_d_out.data(), g.host_d_out.size(), cudaMemcpyHostToDevice));
  g.grads = {g.d_out.get(), g.dq.get(), g.dk.get(), g.dv.get()};
  return g;
}

// The fp64 check of one backward, its gradients poisoned first.
void check_backward(Session& s, GradBuffers& g, const std::function<void()>& backward, ImplResult& row) {
  for (DeviceBuffer* b : {&g.dq, &g.dk, &g.dv})
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(b->get(), 0xff, b->bytes(), s.stream.get()));
  backward();
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(g.host_dq.data(), g.dq.get(), g.host_dq.size(), cudaMemcpyDeviceToHost));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(g.host_dk.data(), g.dk.get(), g.host_dk.size(), cudaMemcpyDeviceToHost));
  ATTNPROF_CUDA_CHECK(cudaMemcpy(g.host_dv.data(), g.dv.get(), g.host_dv.size(), cudaMemcpyDeviceToHost));
  const auto r = attention::cpu::check_backward_against_reference(
      s.host.params, g.host_d_out.data(), g.host_dq.data(), g.host_dk.data(), g.host_dv.data(), s.plan.check_slices);
  row.rel_error = r.worst();
  row.slices_checked = r.groups_checked;
  row.slices_total = r.groups_total;
  row.check_passed = r.passed(attention::cpu::backward_tolerance(s.plan.shape.dtype));
}

// The fp64 check of one forward, its output poisoned first.
void check(Session& s, const std::function<void()>& forward, ImplResult& row) {
  attention::cuda::poison_outputs(s.dev, s.stream.get());
  forward();
  attention::cuda::download_outputs(s.dev, s.host, nullptr, s.stream.get());
  const auto result = attention::cpu::check_against_reference(s.host.params, s.host.out.data(), s.plan.check_slices);
  row.rel_error = result.rel_error;
  row.slices_checked = result.slices_checked;
  row.slices_total = result.slices_total;
  row.check_passed = result.rel_error < attention::cpu::tolerance(s.plan.shape.dtype);
}

// Recorded forwards: their kernels, their GPU time, and the trace --trace asked for. One
// forward, or with hot timing 10 back to back (kernel durations and the sum: medians over them).
void record_kernels(Session& s, const std::function<void()>& forward, const std::string& name, ImplResult& row,
                    BenchRun& run) {
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  s.counter->begin();
  std::string why;
  if (!s.counter->available(&why)) {
    run.kernel_count_source = "n/a: " + why;
    return;
  }
  const int calls = s.plan.hot ? 10 : 1;
  for (int i = 0; i < calls; ++i) forward();
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  const std::string trace_path =
      s.plan.trace_dir.empty() ? "" : (std::filesystem::path(s.plan.trace_dir) / (name + ".json")).string();
  KernelRecording rec = s.counter->end(trace_path);
  const std::size_t n = rec.kernel_names.size() / calls;
  if (calls > 1 && n > 0 && rec.kernel_names.size() == n * calls && rec.kernel_us.size() == rec.kernel_names.size()) {
    std::vector<double> per_kernel(n), sums(calls, 0.0);
    for (std::size_t k = 0; k < n; ++k) {
      std::vector<double> d(calls);
      for (int c = 0; c < calls; ++c) {
        d[c] = rec.kernel_us[c * n + k];
        sums[c] += d[c];
      }
      std::nth_element(d.begin(), d.begin() + calls / 2, d.end());
      per_kernel[k] = d[calls / 2];
    }
    std::nth_element(sums.begin(), sums.begin() + calls / 2, sums.end());
    rec.kernel_names.resize(n);
    rec.kernel_us = per_kernel;
    row.kernel_ms = sums[calls / 2] / 1e3;
  } else if (calls == 1) {
    double sum = 0;
    for (const double us : rec.kernel_us) sum += us;
    row.kernel_ms = sum / 1e3;
  } else {
    // The 10 forwards did not launch the same kernels (a library warming up, a different algorithm):
    // one more recorded forward gives its kernels; no kernel time per call is claimed.
    ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
    s.counter->begin();
    forward();
    ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
    rec = s.counter->end("");
  }
  row.kernels = static_cast<int>(rec.kernel_names.size());
  row.kernel_names = rec.kernel_names;
  row.kernel_us = rec.kernel_us;
  row.gemm_unit = gemm_unit(rec.kernel_names, s.plan.shape.dtype);
  run.kernel_count_source = "CUPTI recorder";
}

// The one timer's options: cold (one forward per sample, L2 flushed before it) or hot (10
// back-to-back forwards per sample, nothing flushed).
attention::cuda::TimingOptions timing_options(Session& s, int samples) {
  if (s.plan.hot) return {attention::cuda::TimingMode::Hot, samples, 10};
  return {attention::cuda::TimingMode::Cold, samples, 1, s.flush.get(), s.flush.bytes()};
}

std::vector<double> timed(Session& s, const std::function<void()>& forward, int samples) {
  return attention::cuda::time_calls(forward, s.stream.get(), timing_options(s, samples));
}

// Samples for ~0.3 s of a forward that took `probe_ms` (10..200), or --repeats.
int sample_count(const Session& s, double probe_ms) {
  const int per_sample = s.plan.hot ? 10 : 1;
  return s.plan.repeats > 0 ? s.plan.repeats
                            : std::clamp(static_cast<int>(300.0 / std::max(probe_ms * per_sample, 1e-3)), 10, 200);
}

void fill_timing(const Session& s, const std::vector<double>& samples, ImplResult& row, const BenchRun& run) {
  const TimingStats st = timing_stats(samples);
  row.median_ms = st.median;
  row.p10_ms = st.p10;
  row.p90_ms = st.p90;
  row.runs = static_cast<int>(samples.size());
  row.tflops = pass_flops(s.plan.shape, s.plan.pass) / (st.median * 1e-3) / 1e12;
  if (run.gemm_tflops) row.pct_of_gemm = 100.0 * row.tflops / *run.gemm_tflops;
}

// An implementation warmed up, checked and recorded, with the scratch it uses; `call` is what
// is timed (its forward, its backward, or both).
struct Prepared {
  DeviceBuffer workspace;
  std::function<void()> call;
};

Prepared prepare(Session& s, GradBuffers* grads, const Implementation& impl, ImplResult& row, BenchRun& run) {
  const attention::AttentionParams& params = s.params_for(impl);
  const std::size_t ws_bytes = std::max(impl.workspace ? impl.workspace(params) : 0,
                                        grads && impl.backward_workspace ? impl.backward_workspace(params) : 0);
  if (static_cast<double>(ws_bytes) > 0.9 * static_cast<double>(free_device_bytes()))
    throw attention::cuda::DeviceOutOfMemory(
        fmt::format("{} needs {:.1f} GiB of scratch for this shape; {:.1f} GiB are free", impl.name,
                    gib(static_cast<double>(ws_bytes)), gib(static_cast<double>(free_device_bytes()))));
  Prepared p{DeviceBuffer(ws_bytes), {}};
  const attention::ExecContext ctx{s.stream.get(), p.workspace.get(), ws_bytes};
  const std::function<void()> forward = [&impl, &params, ctx] { impl.run(params, ctx); };
  forward();  // warm-up: handles, heuristics, cached masks, cuDNN graphs
  forward();
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
  if (grads == nullptr) {
    if (s.plan.check_slices > 0) check(s, forward, row);
    p.call = forward;
  } else {  // the forward above left what the backward reads (out, lse, saved weights)
    const attention::AttentionGrads g = grads->grads;
    const std::function<void()> backward = [&impl, &params, g, ctx] { impl.backward(params, g, ctx); };
    backward();
    backward();
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
    if (s.plan.check_slices > 0) check_backward(s, *grads, backward, row);
    p.call = s.plan.pass == Pass::Backward ? backward : std::function<void()>([forward, backward] {
      forward();
      backward();
    });
  }
  record_kernels(s, p.call, impl.name, row, run);
  row.bytes_model = impl.bytes ? impl.bytes(s.plan.shape) : 0.0;
  return p;
}

// Warm-up, check, kernels, timing of one implementation.
void measure(Session& s, GradBuffers* grads, const Implementation& impl, ImplResult& row, BenchRun& run) {
  const Prepared p = prepare(s, grads, impl, row, run);
  fill_timing(s, timed(s, p.call, sample_count(s, timed(s, p.call, 1).front())), row, run);
}

// --interleave: the prepared implementations timed in rounds, one sample of each per round, so
// a drift of the clocks or the temperature falls on all of them alike. The round count comes
// from the slowest one.
void time_interleaved(Session& s, const std::vector<Prepared>& ps, const std::vector<ImplResult*>& rows,
                      const BenchRun& run) {
  if (ps.empty()) return;
  double slowest = 0;
  for (const Prepared& p : ps) slowest = std::max(slowest, timed(s, p.call, 1).front());
  std::vector<std::function<void()>> forwards;
  for (const Prepared& p : ps) forwards.push_back(p.call);
  const auto samples =
      attention::cuda::time_calls_interleaved(forwards, s.stream.get(), timing_options(s, sample_count(s, slowest)));
  for (std::size_t i = 0; i < ps.size(); ++i) fill_timing(s, samples[i], *rows[i], run);
}

}  // namespace

void plugin::run(const Plan& plan, BenchRun& run) {
  attention::HostInputs host = attention::make_host_inputs(plan.shape, plan.seed);
  const std::size_t input_bytes = host.q.size() + host.k.size() + host.v.size() + host.out.size();
  if (static_cast<double>(input_bytes) > 0.9 * static_cast<double>(free_device_bytes()))
    throw InputError(
        fmt::format("shape needs {:.1f} GiB of device memory for q, k, v and out; "
                    "{:.1f} GiB are free",
                    gib(static_cast<double>(input_bytes)), gib(static_cast<double>(free_device_bytes()))));
  // A backward reads the forward's lse (cuDNN's softmax stats): every row's forward gets one.
  const bool backward = plan.pass != Pass::Forward;
  DeviceInputs dev =
      attention::cuda::upload(host, backward ? attention::cuda::WithLse::Yes : attention::cuda::WithLse::No);
  Session s{plan,
            std::move(host),
            Stream(),
            std::move(dev),
            attention::cuda::l2_flush_buffer(),
            make_kernel_counter(),
            {},
            {},
            {}};
  if (plan.page_size > 0) {
    s.host_cache = attention::make_kv_cache(
        s.host, plan.page_size, std::vector<int>(std::size_t(plan.shape.batch), plan.shape.kv_len), plan.seed);
    s.dev_cache = attention::cuda::upload(s.host_cache);
    s.paged_params = attention::cuda::with_kv_cache(s.dev.params, s.host_cache, s.dev_cache);
  }
  std::optional<GradBuffers> grads;
  if (backward) grads = make_grads(s);

  const int gemm_n = free_device_bytes() > (std::size_t{1} << 30) ? 8192 : 2048;
  run.gemm_tflops = measure_gemm_tflops(s.stream.get(), gemm_n);
  run.gemm_rate_shape = fmt::format("bf16 {0}x{0}x{0} cuBLAS GEMM", gemm_n);
  if (!plan.trace_dir.empty()) std::filesystem::create_directories(plan.trace_dir);

  const BenchProgress& progress = *plan.progress;
  if (progress.started) progress.started(run);
  run.rows.reserve(run.rows.size() + plan.impls.size());  // pointers to rows stay valid below
  std::vector<Prepared> prepared;
  std::vector<ImplResult*> prepared_rows;
  for (std::size_t i = 0; i < plan.impls.size(); ++i) {
    const Implementation& impl = plan.impls[i];
    ImplResult row = start_row(impl);
    if (!impl.unavailable.empty() || !impl.run) {
      row.skipped = impl.unavailable;
    } else {
      if (progress.running) progress.running(run, impl.name);
      try {
        GradBuffers* g = grads ? &*grads : nullptr;
        if (plan.interleave)
          prepared.push_back(prepare(s, g, impl, row, run));
        else
          measure(s, g, impl, row, run);
      } catch (const attention::cuda::DeviceOutOfMemory& e) {
        if (plan.explicitly_asked[i])
          throw InputError(fmt::format("{}: out of device memory: {}", impl.name, e.what()));
        row.skipped = fmt::format("out of device memory: {}", e.what());
      } catch (const InputError& e) {
        if (plan.explicitly_asked[i]) throw;
        row.skipped = e.what();
      }
    }
    run.rows.push_back(std::move(row));
    if (plan.interleave) {
      if (prepared.size() > prepared_rows.size()) prepared_rows.push_back(&run.rows.back());
    } else if (progress.finished) {
      progress.finished(run, run.rows.back());
    }
  }
  if (!plan.interleave) return;
  time_interleaved(s, prepared, prepared_rows, run);
  if (progress.finished)
    for (const ImplResult& row : run.rows) progress.finished(run, row);
}

}  // namespace attnprof::bench
