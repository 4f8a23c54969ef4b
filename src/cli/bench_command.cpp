// attnprof bench: runs, fp64-checks and times every attention implementation
// on one shape (the study's B=8 H=16 S=1024 D=64 bf16 causal by default) and
// prints the table and the ladder of causes. Exit 0; 2 for bad input; 1 when an
// implementation fails its fp64 check.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "bench/bench.h"
#include "bench/kernel_counter.h"
#include "cli/commands.h"
#include "cli/cuda_probe.h"
#include "common/input_error.h"

namespace attnprof::cli {

namespace {

struct BenchArgs {
  bench::BenchOptions options;
  std::vector<std::string> impls;
  std::string dtype = "bf16";
  std::string layout = "bhsd";
  std::string device = "auto";
  bool causal = true;
  bool check = true;
  bool list = false;
  std::string json_file;
  int batch = 0, heads = 0, kv_heads = 0, seq = 0, kv_seq = 0, head_dim = 0;
};

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
  cmd->add_option("--dtype", args->dtype, "bf16, fp16 or fp32")->default_val("bf16");
  cmd->add_flag("--causal,!--no-causal", args->causal, "Causal mask, top-left as PyTorch is_causal (default on)");
  cmd->add_flag("--bottom-right", args->options.bottom_right, "Causal diagonal at the bottom-right corner");
  cmd->add_option("--layout", args->layout, "Memory layout of q/k/v/out: bhsd or bshd")->default_val("bhsd");
  cmd->add_option("--device", args->device, "auto, cuda or cpu")->default_val("auto");
  cmd->add_flag("--json", args->options.json, "Print JSON instead of the table");
  cmd->add_option("--json-file", args->json_file, "Also write the JSON to FILE (the table still prints)");
  cmd->add_option("--trace", args->options.trace_dir, "Write a Kineto-compatible trace per implementation into DIR");
  auto* check =
      cmd->add_flag("--check,!--no-check", args->check,
                    "fp64 check of every head (default: on, on a sample of heads when the reference is slow)");
  cmd->add_option("--repeats", args->options.repeats, "Timed runs per implementation (default: ~0.3 s worth)");
  cmd->add_option("--seed", args->options.seed, "Random seed for the inputs (default: fresh each run)");
  cmd->add_flag("--list", args->list, "List the implementations of this machine's device (the registry) and exit");

  cmd->callback([args, &exit_code, batch, heads, kv_heads, seq, kv_seq, head_dim, check] {
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
          fmt::print("  {:<19} {}{}\n", impl.name, impl.about,
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
    if (args->layout == "bhsd")
      o.layout = attention::Layout::BHSD;
    else if (args->layout == "bshd")
      o.layout = attention::Layout::BSHD;
    else
      throw InputError(fmt::format("--layout '{}' is not bhsd or bshd", args->layout));
    if (args->device == "auto")
      o.device = bench::DeviceChoice::Automatic;
    else if (args->device == "cuda")
      o.device = bench::DeviceChoice::Cuda;
    else if (args->device == "cpu")
      o.device = bench::DeviceChoice::Cpu;
    else
      throw InputError(fmt::format("--device '{}' is not auto, cuda or cpu", args->device));
    if (check->count()) o.check = args->check;
    if (o.repeats < 0) throw InputError("--repeats must be positive");

    // No NVIDIA driver or GPU: said in those words, before any CUDA library is loaded.
    if (o.device != bench::DeviceChoice::Cpu) {
      const std::string problem = cuda_device_problem();
      if (!problem.empty() && o.device == bench::DeviceChoice::Cuda) throw InputError("--device cuda: " + problem);
      o.no_gpu = problem;
    }
    // The table prints as the run goes: the header at once, a row per implementation as it
    // finishes; on a CPU, where one can take minutes, each start is said on stderr too.
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
    const bench::BenchRun run = bench::run_bench(o, progress);
    if (!args->json_file.empty()) {
      std::ofstream file(args->json_file);
      file << bench::to_json(run);
      if (!file) throw InputError(fmt::format("--json-file {}: cannot write", args->json_file));
    }
    if (o.json) {
      fmt::print("{}", bench::to_json(run));
    } else {
      bench::print_footer(run, stdout);
    }
    exit_code = 0;
    for (const auto& row : run.rows)
      if (row.skipped.empty() && row.rel_error && !row.check_passed) exit_code = 1;
  });
}

}  // namespace attnprof::cli
