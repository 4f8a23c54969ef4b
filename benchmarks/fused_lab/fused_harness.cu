// Check-and-time harness for the fused attention forward (see fused_harness.h).
#include "fused_harness.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

#include "attention/cuda/cuda_check.h"
#include "attention/cuda/device_inputs.h"
#include "attention/cuda/timer.h"
#include "attention/host_inputs.h"
#include "attention_fn.h"
#include "timed_launch.h"

namespace attnprof::fused {
namespace {

// The calls of `call` on ws's scratch: each poisons the outputs, then runs the forward; on the legacy default
// stream, or on a stream of its own (directly or through a graph captured there).
void run_calls(const attention::AttentionParams& params, const attention::cuda::DeviceInputs& dev,
               const attention::cuda::DeviceBuffer& ws, Path path, const LaunchOverrides& o, const CallForm& call) {
  struct Owned {  // released on every way out, a throw from the call included
    cudaStream_t stream = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    ~Owned() {
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      if (stream && cudaStreamIsCapturing(stream, &capturing) == cudaSuccess &&
          capturing != cudaStreamCaptureStatusNone) {
        cudaGraph_t partial = nullptr;
        if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial) cudaGraphDestroy(partial);
      }
      if (exec) cudaGraphExecDestroy(exec);
      if (graph) cudaGraphDestroy(graph);
      if (stream) cudaStreamDestroy(stream);
    }
  } own;
  if (call.own_stream || call.graph) ATTNPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&own.stream, cudaStreamNonBlocking));
  const attention::ExecContext ctx{own.stream, ws.get(), ws.bytes()};
  if (call.graph) {
    ATTNPROF_CUDA_CHECK(cudaStreamBeginCapture(own.stream, cudaStreamCaptureModeGlobal));
    attention::cuda::poison_outputs(dev, own.stream);
    attention_forward_on(params, ctx, path, o);
    ATTNPROF_CUDA_CHECK(cudaStreamEndCapture(own.stream, &own.graph));
    ATTNPROF_CUDA_CHECK(cudaGraphInstantiate(&own.exec, own.graph, 0));
    for (int i = 0; i < call.calls; ++i) ATTNPROF_CUDA_CHECK(cudaGraphLaunch(own.exec, own.stream));
  } else {
    for (int i = 0; i < call.calls; ++i) {
      attention::cuda::poison_outputs(dev, own.stream);
      attention_forward_on(params, ctx, path, o);
    }
  }
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(own.stream));
}

// Every failure (a refused call, a CUDA error) throws; check_case and time_case
// turn it into the result's error line.
CaseCheck run_check(const attention::AttentionParams& shape, Path path, unsigned seed, const LaunchOverrides& o,
                    KvForm form, const CallForm& call) {
  attention::HostInputs in = attention::make_host_inputs(shape, seed);
  const attention::cuda::DeviceInputs dev = attention::cuda::upload(in, attention::cuda::WithLse::Yes);
  const bool cached = form.page_size > 0 || form.ragged;
  const std::vector<int> lens =
      form.ragged ? attention::ragged_lengths(shape.batch, shape.kv_len) : std::vector<int>(shape.batch, shape.kv_len);
  attention::HostKvCache host_cache;
  attention::cuda::DeviceKvCache dev_cache;
  attention::AttentionParams params = dev.params;
  if (cached) {
    host_cache = attention::make_kv_cache(in, form.page_size, lens, seed);
    dev_cache = attention::cuda::upload(host_cache);
    params = attention::cuda::with_kv_cache(params, host_cache, dev_cache);
  }
  const attention::cuda::DeviceBuffer ws(attention_workspace(params, o));  // the split tail's scratch
  run_calls(params, dev, ws, path, o, call);
  std::vector<float> lse(std::size_t(shape.batch) * shape.q_heads * shape.q_len);
  attention::cuda::download_outputs(dev, in, lse.data(), nullptr);
  CaseCheck c;
  if (!cached) {
    c.result = attention::cpu::check_against_reference(in.params, in.out.data(), 0, lse.data());
    return c;
  }
  // Sequence by sequence: the reference over that sequence's keys of the dense inputs.
  const std::size_t e = attention::dtype_bytes(shape.dtype);
  for (int b = 0; b < shape.batch; ++b) {
    attention::AttentionParams pb = in.params;
    pb.batch = 1;
    pb.kv_len = lens[b];
    pb.q = in.q.data() + b * pb.q_strides.batch * e;
    pb.k = in.k.data() + b * pb.k_strides.batch * e;
    pb.v = in.v.data() + b * pb.v_strides.batch * e;
    const attention::cpu::CheckResult r = attention::cpu::check_against_reference(
        pb, in.out.data() + b * pb.out_strides.batch * e, 0, lse.data() + std::size_t(b) * shape.q_heads * shape.q_len);
    c.result.rel_error = std::max(c.result.rel_error, r.rel_error);
    c.result.slices_checked += r.slices_checked;
    c.result.slices_total += r.slices_total;
    c.result.unwritten += r.unwritten;
    c.result.max_lse_err = std::max(c.result.max_lse_err, r.max_lse_err);
    c.result.lse_inf_ok = c.result.lse_inf_ok && r.lse_inf_ok;
  }
  return c;
}

TimeResult run_time(const attention::AttentionParams& shape, Path path, int warmup, int iters, const LaunchOverrides& o,
                    bool cold) {
  // Random data, not zeros: zeros run faster than real data and hide unwritten outputs.
  const attention::HostInputs in = attention::make_host_inputs(shape, 1234);
  const attention::cuda::DeviceInputs dev = attention::cuda::upload(in, attention::cuda::WithLse::Yes);
  attention::cuda::poison_outputs(dev, nullptr);
  const attention::cuda::DeviceBuffer ws(attention_workspace(dev.params, o));
  const auto call = [&] {
    attention_forward_on(dev.params, attention::ExecContext{nullptr, ws.get(), ws.bytes()}, path, o);
  };
  for (int i = 0; i < warmup; ++i) call();
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  // The hot mode of the one timer: bursts of back-to-back launches, so the host's per-launch
  // work (tensor-map encoding) overlaps the previous kernel instead of sitting in the timing.
  attention::cuda::TimingOptions timing{attention::cuda::TimingMode::Hot, iters, 10};
  attention::cuda::DeviceBuffer flush;
  if (cold) {
    flush = attention::cuda::l2_flush_buffer();
    timing = {attention::cuda::TimingMode::Cold, iters, 1, flush.get(), flush.bytes()};
  }
  std::vector<double> times = attention::cuda::time_calls(call, nullptr, timing);
  std::sort(times.begin(), times.end());
  TimeResult r;
  r.median_ms = times[times.size() / 2];
  r.tflops = attention::attention_flops(shape) / (r.median_ms * 1e-3) / 1e12;
  return r;
}

TileTimesResult run_tiles(const attention::AttentionParams& shape, int warmup, Path path, const LaunchOverrides& o) {
  const attention::HostInputs in = attention::make_host_inputs(shape, 1234);
  const attention::cuda::DeviceInputs dev = attention::cuda::upload(in, attention::cuda::WithLse::Yes);
  const TimerLayout layout = timer_layout(shape.batch, shape.q_heads, shape.q_len, shape.head_dim, path);
  std::vector<std::uint64_t> words(layout.words());
  const attention::cuda::DeviceBuffer timers(words.size() * sizeof(std::uint64_t));
  for (int i = 0; i < warmup; ++i) attention_forward_on(dev.params, attention::ExecContext{}, path, o);
  ATTNPROF_CUDA_CHECK(cudaMemset(timers.get(), 0, timers.bytes()));
  attention_forward_timed(dev.params, attention::ExecContext{}, static_cast<std::uint64_t*>(timers.get()), path, o);
  ATTNPROF_CUDA_CHECK(cudaDeviceSynchronize());
  ATTNPROF_CUDA_CHECK(cudaMemcpy(words.data(), timers.get(), timers.bytes(), cudaMemcpyDeviceToHost));
  // The clock from the records: all their cycles over all their nanoseconds (the global timer's
  // coarse ticks average out over the grid).
  double cycles = 0, ns = 0;
  for (std::size_t i = 0; i < words.size(); i += kTimerSlots) {
    cycles += double(words[i + kClockEnd] - words[i + kClockEntry]);
    ns += double(words[i + kGlobalEnd] - words[i + kGlobalStart]);
  }
  if (!(cycles > 0 && ns > 0)) throw std::runtime_error("the timed kernel wrote no timers");
  TileTimesResult r;
  r.clock_ghz = cycles / ns;
  r.times = summarize_timers(words, layout, r.clock_ghz);
  return r;
}

attention::AttentionParams bottom_right(attention::AttentionParams p) {
  p.causal_align = attention::CausalAlign::BottomRight;
  return p;
}

// run() as a result: what it returns, or a Result whose error is what it threw.
template <typename Result, typename Run>
Result or_error(const Run& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    Result r;
    r.error = e.what();
    return r;
  }
}

}  // namespace

TileTimesResult time_tiles(const attention::AttentionParams& shape, int warmup, Path path, const LaunchOverrides& o) {
  return or_error<TileTimesResult>([&] { return run_tiles(shape, warmup, path, o); });
}

// Small cases for compute-sanitizer runs (memcheck, racecheck): partial tiles,
// several kv tiles, GQA, causal (both alignments), both dtypes and head dims.
std::vector<attention::AttentionParams> small_cases() {
  std::vector<attention::AttentionParams> cs;
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      cs.push_back(
          attention::make_params(1, 2, 1, 17, 300, d, causal, attention::DType::BF16, attention::Layout::BHSD));
      cs.push_back(
          attention::make_params(1, 2, 2, 200, 200, d, causal, attention::DType::FP16, attention::Layout::BSHD));
      if (causal)  // whole tiles of rows that see no key
        cs.push_back(bottom_right(
            attention::make_params(1, 2, 1, 300, 40, d, true, attention::DType::BF16, attention::Layout::BHSD)));
    }
  return cs;
}

std::vector<attention::AttentionParams> check_cases() {
  std::vector<attention::AttentionParams> cs;
  for (attention::DType dt : {attention::DType::BF16, attention::DType::FP16})
    for (int d : {64, 128})
      for (bool causal : {false, true}) {
        for (int s : {1, 17, 1000, 2049})
          cs.push_back(attention::make_params(1, 2, 2, s, s, d, causal, dt, attention::Layout::BHSD));
        cs.push_back(
            attention::make_params(2, 4, 2, 300, 700, d, causal, dt, attention::Layout::BSHD));  // GQA, Sq < Skv
        attention::AttentionParams custom = attention::make_params(
            1, 4, 1, 777, 129, d, causal, dt, attention::Layout::BHSD);  // MQA, Sq > Skv, custom scale
        custom.scale = 0.3f;
        cs.push_back(custom);
        cs.push_back(
            attention::make_params(2, 3, 3, 128, 256, d, causal, dt, attention::Layout::BSHD));  // tile multiples
        // GQA with an even number of query tiles per head (two CTAs of a cluster could share its K/V: lost
        // version 30, a37a080) and a last key block of 60 keys (a half-block box of it lies past kv_len).
        cs.push_back(attention::make_params(2, 4, 2, 500, 700, d, causal, dt, attention::Layout::BSHD));
        cs.push_back(
            attention::make_params(1, 2, 2, 5, 0, d, causal, dt, attention::Layout::BHSD));  // no keys: zeros, lse -inf
        if (!causal) continue;
        // Bottom-right causal (query i sees keys j <= i + kv_len - q_len): chunked prefill and
        // KV-cache append (Sq < Skv), GQA; Sq > Skv, whose first Sq - Skv rows (five whole tiles)
        // see no key; a single appended query row; at D=64 one long enough for three consumers.
        cs.push_back(bottom_right(attention::make_params(1, 2, 2, 257, 2049, d, true, dt, attention::Layout::BHSD)));
        cs.push_back(bottom_right(attention::make_params(2, 4, 2, 300, 700, d, true, dt, attention::Layout::BSHD)));
        cs.push_back(bottom_right(attention::make_params(1, 4, 1, 777, 129, d, true, dt, attention::Layout::BHSD)));
        cs.push_back(bottom_right(attention::make_params(2, 4, 1, 1, 1000, d, true, dt, attention::Layout::BSHD)));
        if (d == 64)  // from 2048 rows D=64 runs three consumer warpgroups (BM 192), each masking its own rows
          cs.push_back(bottom_right(attention::make_params(1, 2, 1, 2100, 4000, d, true, dt, attention::Layout::BHSD)));
      }
  return cs;
}

std::vector<attention::AttentionParams> decode_cases() {
  using attention::DType;
  using attention::Layout;
  using attention::make_params;
  std::vector<attention::AttentionParams> cs;
  for (DType dt : {DType::BF16, DType::FP16})
    for (int d : {64, 128}) {
      cs.push_back(make_params(3, 32, 8, 1, 1000, d, false, dt, Layout::BHSD));  // GQA 4, one query
      cs.push_back(make_params(2, 8, 8, 1, 4097, d, false, dt, Layout::BSHD));   // MHA, odd length
      cs.push_back(make_params(1, 16, 1, 1, 300, d, false, dt, Layout::BHSD));   // MQA, 16 heads a KV head
      cs.push_back(make_params(1, 2, 1, 1, 1, d, false, dt, Layout::BHSD));      // one key
      cs.push_back(make_params(2, 4, 2, 1, 0, d, false, dt, Layout::BHSD));      // no keys: zeros, lse -inf
      // Speculative decode and appends: bottom-right causal, q_len 2-16, groups 1-8 (16-64 rows a KV head).
      cs.push_back(bottom_right(make_params(2, 16, 2, 4, 4097, d, true, dt, Layout::BSHD)));
      cs.push_back(bottom_right(make_params(1, 8, 1, 8, 777, d, true, dt, Layout::BHSD)));
      cs.push_back(bottom_right(make_params(2, 4, 4, 16, 300, d, true, dt, Layout::BSHD)));
      cs.push_back(bottom_right(make_params(1, 8, 2, 3, 65, d, true, dt, Layout::BHSD)));
      // Top-left causal with q_len 3 (PyTorch's is_causal=True): row i sees keys 0..i only.
      cs.push_back(make_params(2, 4, 2, 3, 65, d, true, dt, Layout::BHSD));
      // More rows than one CTA holds (16 x 16 = 256: four row chunks), forced only.
      cs.push_back(bottom_right(make_params(1, 16, 1, 16, 2049, d, true, dt, Layout::BHSD)));
    }
  // Long keys: splits of many blocks each, one KV head's splits merged.
  cs.push_back(make_params(1, 8, 2, 1, 131072, 128, false, attention::DType::BF16, attention::Layout::BHSD));
  cs.push_back(bottom_right(make_params(2, 8, 1, 2, 32768, 64, true, attention::DType::FP16, attention::Layout::BSHD)));
  return cs;
}

std::vector<attention::AttentionParams> small_decode_cases() {
  using attention::DType;
  using attention::Layout;
  using attention::make_params;
  return {
      make_params(1, 8, 2, 1, 1000, 128, false, DType::BF16, Layout::BHSD),  // 2 units split 8 ways
      make_params(1, 8, 2, 1, 2300, 128, false, DType::BF16,
                  Layout::BHSD),                                                          // 2 units split 18 ways
      bottom_right(make_params(2, 4, 4, 4, 300, 64, true, DType::FP16, Layout::BSHD)),    // q_len 4, MHA
      bottom_right(make_params(1, 16, 1, 3, 200, 128, true, DType::BF16, Layout::BHSD)),  // 48 rows: 4 tiles
      bottom_right(make_params(1, 16, 1, 16, 130, 64, true, DType::BF16, Layout::BHSD)),  // 256 rows: 4 chunks
      make_params(2, 4, 2, 1, 0, 64, false, DType::BF16, Layout::BHSD),                   // no keys
  };
}

CaseCheck check_case(const attention::AttentionParams& shape, Path path, unsigned seed, const LaunchOverrides& o,
                     KvForm form, CallForm call) {
  return or_error<CaseCheck>([&] { return run_check(shape, path, seed, o, form, call); });
}

TimeResult time_case(const attention::AttentionParams& shape, Path path, int warmup, int iters,
                     const LaunchOverrides& o, bool cold) {
  return or_error<TimeResult>([&] { return run_time(shape, path, warmup, iters, o, cold); });
}

bool have_device() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

}  // namespace attnprof::fused
