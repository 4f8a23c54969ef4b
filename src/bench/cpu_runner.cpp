// Timing the CPU implementations: wall clock around each forward, a warm-up,
// then enough runs for ~0.3 s (3..50), median and spread.
#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/core.h>

#include "attention/cpu/check.h"
#include "attention/host_inputs.h"
#include "bench/bench.h"
#include "bench/timing_stats.h"

namespace attnprof::bench {

void run_on_cpu(const Plan& plan, BenchRun& run) {
  run.device = fmt::format("cpu ({} threads)", std::max(1u, std::thread::hardware_concurrency()));
  run.kernel_count_source = "n/a on the CPU";
  attention::HostInputs in = attention::make_host_inputs(plan.shape, plan.seed);
  const double flops = attention::attention_flops(plan.shape);
  const BenchProgress& progress = *plan.progress;
  if (progress.started) progress.started(run);
  const auto finished = [&](ImplResult row) {
    run.rows.push_back(std::move(row));
    if (progress.finished) progress.finished(run, run.rows.back());
  };
  for (const Implementation& impl : plan.impls) {
    ImplResult row = start_row(impl);
    if (!impl.unavailable.empty() || !impl.run) {
      row.skipped = impl.unavailable;
      finished(std::move(row));
      continue;
    }
    if (progress.running) progress.running(run, impl.name);
    std::vector<std::uint8_t> workspace(impl.workspace ? impl.workspace(in.params) : 0);
    const attention::ExecContext ctx{nullptr, workspace.data(), workspace.size()};
    if (plan.check_slices > 0) {
      attention::poison(in.out);
      impl.run(in.params, ctx);
      const auto check = attention::cpu::check_against_reference(in.params, in.out.data(), plan.check_slices);
      row.rel_error = check.rel_error;
      row.slices_checked = check.slices_checked;
      row.slices_total = check.slices_total;
      row.check_passed = check.rel_error < attention::cpu::tolerance(plan.shape.dtype);
    }
    auto time_once = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      impl.run(in.params, ctx);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    const double first = time_once();  // warm-up (and the size of one run)
    const int reps =
        plan.repeats > 0 ? plan.repeats : std::clamp(static_cast<int>(300.0 / std::max(first, 1e-3)), 3, 50);
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(time_once());
    const TimingStats st = timing_stats(ms);
    row.median_ms = st.median;
    row.p10_ms = st.p10;
    row.p90_ms = st.p90;
    row.runs = reps;
    row.tflops = flops / (st.median * 1e-3) / 1e12;
    row.bytes_model = impl.bytes ? impl.bytes(plan.shape) : 0.0;
    finished(std::move(row));
  }
}

}  // namespace attnprof::bench
