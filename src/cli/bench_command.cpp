// attnprof bench: runs, fp64-checks and times every attention implementation
// on one shape (the study's B=8 H=16 S=1024 D=64 bf16 causal by default) and
// prints the table and the ladder of causes. Exit 0; 2 for bad input; 1 when an
// implementation fails its fp64 check.
#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include <fmt/core.h>

#include "analysis/replay.h"
#include "analysis/trace_shapes.h"
#include "bench/bench.h"
#include "bench/kernel_counter.h"
#include "bench/replay_runner.h"
#include "cli/commands.h"
#include "cli/cuda_probe.h"
#include "cli/trace_input.h"
#include "common/input_error.h"
#include "common/json.h"
#include "common/write_file.h"
#include "report/format.h"

namespace attnprof::cli {

namespace {

struct BenchArgs {
  bench::BenchOptions options;
  std::vector<std::string> impls;
  std::string dtype = "bf16";
  std::string layout = "bhsd";
  std::string pass = "forward";
  std::string device = "auto";
  bool causal = true;
  bool check = true;
  bool list = false;
  std::string json_file;
  std::string from_trace;
  std::string timing;  // "" : cold, hot with --from-trace
  int batch = 0, heads = 0, kv_heads = 0, seq = 0, kv_seq = 0, head_dim = 0;
};

// The value of an option that names one of `choices`, else the one-line error that lists them
// ("--pass 'x' is not forward, backward or both").
template <typename T>
T choice(std::string_view option, const std::string& value,
         std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::string names;
  std::size_t i = 0;
  for (const auto& [name, v] : choices) {
    if (name == value) return v;
    names += std::string(i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
    ++i;
  }
  throw InputError(fmt::format("{} '{}' is not {}", option, value, names));
}

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

// Runs the bench on one shape; the table (unless JSON was asked for) prints as it goes:
// the header at once, a row per implementation as it finishes; on a CPU, where one can
// take minutes, each start is said on stderr too.
bench::BenchRun run_one(const bench::BenchOptions& o) {
  bench::BenchProgress progress;
  if (!o.json) {
    progress.started = [](const bench::BenchRun& r) { bench::print_header(r, stdout); };
    progress.running = [](const bench::BenchRun& r, const std::string& impl) {
      // Only where the wait is long enough to wonder: ~5 runs at ~5 GFLOP/s over 3 s.
      if (!r.on_gpu && attention::attention_flops(r.shape) * 5 / 5e9 > 3)
        fmt::print(stderr, "  running {} ...\n", impl);
    };
    progress.finished = [](const bench::BenchRun& r, const bench::ImplResult& row) {
      bench::print_row(r, row, stdout);
    };
  }
  bench::BenchRun run = bench::run_bench(o, progress);
  if (!o.json) bench::print_footer(run, stdout);
  return run;
}

bool check_failed(const bench::BenchRun& run) {
  for (const auto& row : run.rows)
    if (row.skipped.empty() && row.rel_error && !row.check_passed) return true;
  return false;
}

void write_json_file(const std::string& path, const std::string& text) {
  try {
    write_file_atomically(path, text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--json-file {}", e.what()));
  }
}

// The command that benches one trace shape, for a machine with a GPU (the replay's, timing as asked).
std::string bench_command_for(const TraceShape& s, attention::DType dtype, const ReplayCausality& mask, bool hot) {
  const BenchShape b = bench_shape_of(s.shape);
  return replay_bench_command(b.shape, attention::dtype_name(dtype), mask, s.dropout, {}, hot, false, b.page_size);
}

// bench --from-trace: every distinct forward shape of the trace, biggest share of time first.
int bench_trace_shapes(const std::string& path, bench::BenchOptions o, const std::string& json_file,
                       std::optional<bool> causal_if_unknown) {
  const Trace trace = read_trace_input(path);
  const TraceIndex index(trace);
  const AttentionView view = find_attention(index);
  const TraceShapes found = trace_shapes(view, index);
  const std::string label = input_label(path);
  if (view.calls.empty()) throw InputError(fmt::format("{}: no attention calls found to replay", label));
  if (found.shapes.empty())
    throw InputError(
        fmt::format("{}: none of its {} forward attention calls has a shape in the trace (record it with "
                    "torch.profiler.profile(record_shapes=True), or give the shape to attnprof bench yourself)",
                    label, found.calls_without_shape + found.calls_batch_x_heads));
  const bool run_here = o.no_gpu.empty() || o.device == bench::DeviceChoice::Cpu;
  std::string json;
  JsonWriter j(json);
  j.begin_object();
  j.str("trace", label);
  j.num("calls_without_shape", found.calls_without_shape + found.calls_batch_x_heads);
  j.begin_array("shapes");
  int status = 0;
  for (std::size_t i = 0; i < found.shapes.size(); ++i) {
    const TraceShape& s = found.shapes[i];
    const BenchShape b = bench_shape_of(s.shape);
    bench::BenchOptions one = o;
    bench::set_shape(one, b);
    one.dtype = s.precision == Precision::FP16   ? attention::DType::FP16
                : s.precision == Precision::FP32 ? attention::DType::FP32
                                                 : attention::DType::BF16;
    const ReplayCausality mask = replay_causality(s, causal_if_unknown);
    one.causal = mask.causal;
    one.bottom_right = mask.bottom_right;
    one.dropout = static_cast<float>(s.dropout);
    const double per_call_ms = static_cast<double>(s.kernel_ns) / 1e6 / s.calls;
    const std::string what = fmt::format(
        "{}{}", replay_shape_text(b.shape, attention::dtype_name(one.dtype), mask, s.dropout),
        s.causal_known      ? ""
        : causal_if_unknown ? " (the trace does not say whether it is causal: as --causal/--no-causal said)"
        : mask.assumed      ? " (the trace does not say whether it is causal" + replay_mask_guess(s.shape) + ")"
                            : " (the trace does not say whether it is causal: taken as not; --causal to replay it so)");
    if (!o.json)
      fmt::print("Shape {} of {} in {}: {}: {} forward call{} ({}), {:.3f} ms per call in the trace; from {}\n", i + 1,
                 found.shapes.size(), label, what, s.calls, report::plural(double(s.calls)), s.implementations,
                 per_call_ms, s.shape.source() + b.note);
    j.begin_object();
    j.str("shape", what);
    j.num("calls", s.calls);
    j.str("implementations", s.implementations);
    j.real("traced_ms_per_call", per_call_ms, 4);
    j.str("source", s.shape.source() + b.note);
    j.str("command", bench_command_for(s, one.dtype, mask, one.hot));
    if (!run_here) {
      if (!o.json)
        fmt::print("  {}: run this on a machine with one:\n  {}\n\n", o.no_gpu,
                   bench_command_for(s, one.dtype, mask, one.hot));
      j.null("bench");
    } else {
      const bench::BenchRun run = run_one(one);
      if (!o.json) fmt::print("\n");
      if (check_failed(run)) status = 1;
      std::string doc = bench::to_json(run);
      while (!doc.empty() && (doc.back() == '\n' || doc.back() == ' ')) doc.pop_back();
      j.value("bench") += doc;
    }
    j.end_object();
  }
  j.end_array();
  j.end_object();
  json += '\n';
  if (found.calls_without_shape + found.calls_batch_x_heads > 0 && !o.json)
    fmt::print("({} forward calls had no shape in the trace and are not replayed)\n",
               found.calls_without_shape + found.calls_batch_x_heads);
  if (!json_file.empty()) write_json_file(json_file, json);
  if (o.json) fmt::print("{}", json);
  return status;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Run, check (fp64) and time the attention implementations on one shape, with the ladder of causes");
  cmd->add_option(
      "--impl", args->impls,
      "Implementations, comma-separated (default: all on the device but the on-request ones, e.g. reference, "
      "fused:<path>); --list shows them");
  auto* batch = cmd->add_option("--batch,-b", args->batch, "Batch size (GPU default 8)");
  auto* heads = cmd->add_option("--heads", args->heads, "Query heads (GPU default 16)");
  auto* kv_heads =
      cmd->add_option("--kv-heads", args->kv_heads, "Key/value heads, dividing --heads (GQA/MQA; default = heads)");
  auto* seq = cmd->add_option("--seq,-s", args->seq, "Query sequence length (GPU default 1024)");
  auto* kv_seq = cmd->add_option("--kv-seq", args->kv_seq, "Key/value sequence length (default = seq)");
  auto* head_dim = cmd->add_option("--head-dim,-d", args->head_dim, "Head dimension (default 64)");
  auto* dtype = cmd->add_option("--dtype", args->dtype, "bf16, fp16 or fp32")->default_val("bf16");
  auto* causal = cmd->add_flag("--causal,!--no-causal", args->causal,
                               "Causal mask, top-left as PyTorch is_causal (default on; with --from-trace, for "
                               "the shapes whose trace does not say)");
  cmd->add_flag("--bottom-right", args->options.bottom_right, "Causal diagonal at the bottom-right corner");
  cmd->add_option("--page-size", args->options.page_size,
                  "GPU: keys in a paged KV cache of pages of N tokens (shuffled, through a block table, as serving "
                  "engines hold them) for the implementations that read one (fused); the others read them dense");
  cmd->add_option("--dropout", args->options.dropout,
                  "Attention dropout probability, as in training (default 0): only the implementations that have it "
                  "run (math, eager, cudnn), unchecked (the outputs are random)");
  cmd->add_option("--pass", args->pass,
                  "What one timed call is: forward (the default), backward (after one forward, as autograd "
                  "runs it; the rows that have one: eager, eager-fp32-softmax, cudnn, fused) or both")
      ->default_val("forward");
  cmd->add_option("--layout", args->layout, "Memory layout of q/k/v/out: bhsd or bshd")->default_val("bhsd");
  cmd->add_option("--device", args->device, "auto, cuda or cpu")->default_val("auto");
  cmd->add_flag("--json", args->options.json, "Print JSON instead of the table");
  cmd->add_option("--json-file", args->json_file, "Also write the JSON to FILE (the table still prints)");
  cmd->add_option("--trace", args->options.trace_dir, "Write a Kineto-compatible trace per implementation into DIR");
  auto* check =
      cmd->add_flag("--check,!--no-check", args->check,
                    "fp64 check of every head (default: on, on a sample of heads when the reference is slow)");
  cmd->add_option("--repeats", args->options.repeats, "Timed runs per implementation (default: ~0.3 s worth)");
  cmd->add_flag("--interleave", args->options.interleave,
                "GPU: time the implementations in rounds, one sample of each per round, so clock or "
                "temperature drift falls on all alike (for comparing two kernels closely)");
  cmd->add_option("--seed", args->options.seed, "Random seed for the inputs (default: fresh each run)");
  cmd->add_option("--timing", args->timing,
                  "GPU timing: cold (one call a sample, the L2 flushed before it; the default) or hot (10 "
                  "back-to-back calls a sample, as inside a program; the default with --from-trace)");
  cmd->add_option("--from-trace", args->from_trace,
                  "Bench each distinct attention shape of this trace (forward calls; record_shapes gives them) "
                  "instead of one shape; without a GPU, print the commands to run where there is one");
  cmd->add_flag("--list", args->list, "List the implementations of this machine's device (the registry) and exit");

  cmd->callback([args, &exit_code, batch, heads, kv_heads, seq, kv_seq, head_dim, check, causal, dtype] {
    if (args->list) {
      // The registry rows: the CPU's always, the GPU's where a GPU and the CUDA plugin are.
      const std::string problem = cuda_device_problem();
      for (const bool gpu : {false, true}) {
        if (gpu && !problem.empty()) {
          fmt::print("cuda: none here ({})\n", problem);
          continue;
        }
        const auto rows = gpu ? bench::cuda_implementations() : bench::cpu_implementations();
        fmt::print("{}:\n", gpu ? "cuda" : "cpu");
        for (const auto& impl : rows)
          fmt::print("  {:<19} {}{}{}\n", impl.name, impl.about, impl.backward ? "; has a backward (--pass)" : "",
                     impl.unavailable.empty() ? std::string() : " (unavailable: " + impl.unavailable + ")");
      }
      exit_code = 0;
      return;
    }
    bench::BenchOptions o = args->options;
    o.impls = split_commas(args->impls);
    auto take = [](CLI::Option* opt, int value, std::optional<int>& dst) {
      if (opt->count()) dst = value;
    };
    take(batch, args->batch, o.batch);
    take(heads, args->heads, o.heads);
    take(kv_heads, args->kv_heads, o.kv_heads);
    take(seq, args->seq, o.seq);
    take(kv_seq, args->kv_seq, o.kv_seq);
    take(head_dim, args->head_dim, o.head_dim);
    o.dtype = attention::parse_dtype(args->dtype);
    o.causal = args->causal;
    if (o.bottom_right && !o.causal) throw InputError("--bottom-right needs --causal");
    if (o.page_size < 0) throw InputError(fmt::format("--page-size must be at least 1, got {}", o.page_size));
    o.layout = choice<attention::Layout>("--layout", args->layout,
                                         {{"bhsd", attention::Layout::BHSD}, {"bshd", attention::Layout::BSHD}});
    o.pass = choice<bench::Pass>(
        "--pass", args->pass,
        {{"forward", bench::Pass::Forward}, {"backward", bench::Pass::Backward}, {"both", bench::Pass::Both}});
    o.device = choice<bench::DeviceChoice>("--device", args->device,
                                           {{"auto", bench::DeviceChoice::Automatic},
                                            {"cuda", bench::DeviceChoice::Cuda},
                                            {"cpu", bench::DeviceChoice::Cpu}});
    if (check->count()) o.check = args->check;
    if (o.repeats < 0) throw InputError("--repeats must be positive");
    if (args->timing.empty())
      o.hot = !args->from_trace.empty();  // a trace's calls ran back to back: compare like with like
    else
      o.hot = choice<bool>("--timing", args->timing, {{"cold", false}, {"hot", true}});

    // No NVIDIA driver or GPU: said in those words, before any CUDA library is loaded.
    if (o.device != bench::DeviceChoice::Cpu) {
      const std::string problem = cuda_device_problem();
      if (!problem.empty() && o.device == bench::DeviceChoice::Cuda) throw InputError("--device cuda: " + problem);
      o.no_gpu = problem;
    }
    if (!args->from_trace.empty()) {
      for (CLI::Option* opt : {batch, heads, kv_heads, seq, kv_seq, head_dim, dtype})
        if (opt->count())
          throw InputError(fmt::format("--from-trace takes the shapes from the trace: leave out {}", opt->get_name()));
      exit_code = bench_trace_shapes(args->from_trace, o, args->json_file,
                                     causal->count() ? std::optional<bool>(args->causal) : std::nullopt);
      return;
    }
    const bench::BenchRun run = run_one(o);
    if (!args->json_file.empty()) write_json_file(args->json_file, bench::to_json(run));
    if (o.json) fmt::print("{}", bench::to_json(run));
    exit_code = check_failed(run) ? 1 : 0;
  });
}

}  // namespace attnprof::cli
