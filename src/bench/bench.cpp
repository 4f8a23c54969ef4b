// Device choice, default shapes, the implementation list and the check budget;
// the runners do the timing.
#include "bench/bench.h"

#include <algorithm>
#include <chrono>
#include <random>

#include <fmt/core.h>
#include <fmt/ranges.h>

#include "common/input_error.h"

namespace attnprof::bench {

namespace {

// The fp64 reference's cost per (batch, head) slice, and how much of it a
// default check may spend (a few seconds on 2 cores).
constexpr double kCheckBudgetFlops = 4e9;

attention::AttentionParams shape_for(const BenchOptions& o, bool gpu, std::string& note) {
  const bool any_size_given = o.batch || o.heads || o.seq || o.kv_seq || o.head_dim;
  const int batch = o.batch.value_or(gpu ? 8 : 1);
  const int heads = o.heads.value_or(gpu ? 16 : 8);
  const int seq = o.seq.value_or(gpu ? 1024 : 512);
  const int kv_seq = o.kv_seq.value_or(seq);
  const int head_dim = o.head_dim.value_or(64);
  const int kv_heads = o.kv_heads.value_or(heads);
  if (!gpu && !any_size_given)
    note = fmt::format(
        "cpu: no size given, so B={} H={} S={} D={} instead of the GPU default "
        "B=8 H=16 S=1024 D=64 (which takes minutes on a CPU)",
        batch, heads, seq, head_dim);
  auto p = attention::make_params(batch, heads, kv_heads, seq, kv_seq, head_dim, o.causal, o.dtype, o.layout);
  p.causal_align = o.bottom_right ? attention::CausalAlign::BottomRight : attention::CausalAlign::TopLeft;
  p.dropout = o.dropout;
  attention::validate(p);
  if (p.kv_len < 1) throw InputError(fmt::format("kv seq must be at least 1, got {}", p.kv_len));
  if (static_cast<double>(batch) * heads * seq * kv_seq > 4e10)
    throw InputError(
        fmt::format("shape B={} H={} S={} S_kv={} has more than 4e10 scores; "
                    "not a size attnprof bench runs",
                    batch, heads, seq, kv_seq));
  return p;
}

std::string names(const std::vector<Implementation>& impls) {
  std::string s;
  for (const auto& i : impls) s += (s.empty() ? "" : ", ") + i.name;
  return s;
}

// An implementation of the GPU registry: on a CPU run it is listed as skipped
// (the README's `--impl math,manual,cudnn,fused` works anywhere). Asks the CUDA
// plugin, loaded only for this question; a build without it knows no GPU names.
bool gpu_only(const std::string& name) {
  const auto gpu = cuda_implementations();
  return std::any_of(gpu.begin(), gpu.end(), [&](const Implementation& i) { return i.name == name; });
}

}  // namespace

std::string cpu_time_warning(const attention::AttentionParams& p, std::size_t impls) {
  // Each implementation runs about five times (check, warm-up, at least three timed) at
  // ~5 GFLOP/s on one of these cores (measured: 7-13 GFLOP/s for math/manual/flash at B1 H8 S512 D64).
  const double seconds = attention::attention_flops(p) * 5.0 * static_cast<double>(impls) / 5e9;
  if (seconds <= 60) return {};
  return fmt::format(
      "warning: this shape takes about {:.0f} minutes on this CPU; a smaller --seq or --batch is "
      "quicker",
      seconds / 60);
}

ImplResult start_row(const Implementation& impl) {
  ImplResult row;
  row.name = impl.name;
  row.gemm_unit = "n/a";
  row.ladder_from = impl.ladder_from;
  row.ladder_cause = impl.ladder_cause;
  return row;
}

BenchRun run_bench(const BenchOptions& o, const BenchProgress& progress) {
  BenchRun run;
  std::string why_no_gpu = o.no_gpu;
  const std::string gpu_name = o.no_gpu.empty() ? cuda_device_name(&why_no_gpu) : std::string();
  bool gpu = false;
  switch (o.device) {
    case DeviceChoice::Cuda:
      if (gpu_name.empty()) throw InputError("--device cuda: " + why_no_gpu);
      gpu = true;
      break;
    case DeviceChoice::Cpu:
      gpu = false;
      break;
    case DeviceChoice::Automatic:
      gpu = !gpu_name.empty();
      break;
  }
  if (!gpu && o.device == DeviceChoice::Automatic) run.note = why_no_gpu + ": running the CPU implementations";
  std::string shape_note;
  Plan plan;
  plan.shape = shape_for(o, gpu, shape_note);
  if (!shape_note.empty()) run.note += (run.note.empty() ? "" : "; ") + shape_note;

  const auto all = gpu ? cuda_implementations() : cpu_implementations();
  if (o.impls.empty()) {
    for (const auto& impl : all)
      if (!impl.on_request) plan.impls.push_back(impl);
    plan.explicitly_asked.assign(plan.impls.size(), false);
  } else {
    for (const auto& name : o.impls) {
      auto it = std::find_if(all.begin(), all.end(), [&](const auto& i) { return i.name == name; });
      if (it == all.end() && !gpu && gpu_only(name)) {
        Implementation missing;
        missing.name = name;
        missing.on_gpu = true;
        missing.unavailable = "needs an NVIDIA GPU, and there is none here";
        plan.impls.push_back(missing);
        plan.explicitly_asked.push_back(false);
        continue;
      }
      if (it == all.end())
        throw InputError(
            fmt::format("--impl {}: no such implementation on {} (have: {})", name, gpu ? "cuda" : "cpu", names(all)));
      if (!it->unavailable.empty()) throw InputError(fmt::format("--impl {}: {}", name, it->unavailable));
      plan.impls.push_back(*it);
      plan.explicitly_asked.push_back(true);
    }
  }

  // Dropout: rows that cannot apply it do not run; the outputs are random, so nothing is checked.
  if (plan.shape.dropout > 0.0f) {
    for (auto& impl : plan.impls)
      if (!impl.takes_dropout && impl.unavailable.empty())
        impl.unavailable = fmt::format("no attention dropout in {}", impl.name);
    run.note += std::string(run.note.empty() ? "" : "; ") +
                fmt::format("dropout {:g}: outputs are random, not checked against fp64", plan.shape.dropout);
  }
  // A paged cache: the rows that read one read it, the others the same keys dense (for comparison).
  plan.page_size = o.page_size;
  if (o.page_size > 0) {
    if (!gpu) throw InputError("--page-size: the paged cache is read on a GPU only");
    if (o.pass != Pass::Forward) throw InputError("--page-size: the paged cache is for the forward (decode)");
    run.page_size = o.page_size;
    for (const auto& impl : plan.impls)
      if (impl.takes_paged_kv) run.paged_rows.push_back(impl.name);
    run.note += std::string(run.note.empty() ? "" : "; ") +
                fmt::format("keys in pages of {} tokens for {}; the others read them dense", o.page_size,
                            run.paged_rows.empty() ? std::string("none of the rows")
                                                   : fmt::format("{}", fmt::join(run.paged_rows, ", ")));
  }
  // A backward pass: the rows that have one; the check is per (batch, kv head) group, every
  // query head of it (its dK and dV need them all), at about 3x a forward slice's cost.
  plan.pass = o.pass;
  run.pass = o.pass;
  const bool backward = o.pass != Pass::Forward;
  if (backward && !gpu)
    throw InputError(fmt::format("--pass {}: the CPU implementations have no backward; it runs on a GPU{}",
                                 pass_name(o.pass), why_no_gpu.empty() ? "" : " (" + why_no_gpu + ")"));
  if (backward)
    for (auto& impl : plan.impls)
      if (impl.backward == nullptr && impl.unavailable.empty())
        impl.unavailable = fmt::format("no backward in {}", impl.name);
  const int group = plan.shape.q_heads / plan.shape.kv_heads;
  const double slice_flops =
      4.0 * plan.shape.q_len * plan.shape.kv_len * plan.shape.head_dim * (backward ? 3.0 * group : 1.0);
  const int slices = plan.shape.batch * (backward ? plan.shape.kv_heads : plan.shape.q_heads);
  if (o.check.value_or(true) && plan.shape.dropout == 0.0f) {
    if (o.check.has_value()) {
      plan.check_slices = slices;  // asked for: check everything
    } else {
      plan.check_slices = std::clamp(static_cast<int>(kCheckBudgetFlops / slice_flops), 1, slices);
      plan.check_slices = std::min(plan.check_slices, 16);
    }
  }
  plan.repeats = o.repeats;
  plan.trace_dir = o.trace_dir;
  plan.hot = o.hot;
  run.timing = !gpu ? "cpu wall clock" : o.hot ? "hot" : "cold";
  if (o.interleave && !gpu)
    throw InputError("bench: --interleave times GPU implementations; this run is on the CPU" +
                     (why_no_gpu.empty() ? std::string() : " (" + why_no_gpu + ")"));
  plan.interleave = o.interleave;
  run.interleaved = o.interleave;
  plan.seed =
      o.seed
          ? o.seed
          : static_cast<unsigned>(std::random_device{}() ^
                                  static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  run.seed = plan.seed;
  run.shape = plan.shape;
  run.on_gpu = gpu;
  if (!gpu && !o.trace_dir.empty())
    run.note += std::string(run.note.empty() ? "" : "; ") +
                "--trace: the CPU implementations launch no kernels, no trace written";
  if (!gpu) {
    std::size_t runnable = 0;
    for (const auto& impl : plan.impls) runnable += impl.unavailable.empty();
    if (const std::string warning = cpu_time_warning(plan.shape, runnable); !warning.empty())
      run.note += (run.note.empty() ? "" : "; ") + warning;
  }
  plan.progress = &progress;
  if (gpu) {
    run.device = gpu_name;
    run_on_cuda(plan, run);
  } else {
    run_on_cpu(plan, run);
  }
  return run;
}

}  // namespace attnprof::bench
