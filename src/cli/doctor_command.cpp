// attnprof doctor TRACE: reads a PyTorch profiler (Kineto) trace and reports
// why attention is slow, with numbers, and what to change.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <optional>

#include <fmt/core.h>

#include "analysis/analysis.h"
#include "analysis/finding_gate.h"
#include "analysis/graph_captures.h"
#include "analysis/ranks.h"
#include "analysis/replay.h"
#include "analysis/rules/rule.h"
#include "bench/replay_runner.h"
#include "cli/commands.h"
#include "cli/cuda_probe.h"
#include "cli/trace_input.h"
#include "common/input_error.h"
#include "common/write_file.h"
#include "report/annotate.h"
#include "report/format.h"
#include "report/html_report.h"
#include "report/ranks_report.h"
#include "report/report.h"

namespace attnprof::cli {
namespace {

// What `doctor --help` says after the options: the finding ids and the columns.
std::string doctor_footer() {
  std::string out = "\nFindings (ids are stable; --json carries them, each with a scope: attention or model):\n";
  for (const RuleEntry& r : all_rules()) out += fmt::format("  {:<18} {}\n", r.id, r.summary);
  out +=
      "\nColumns of the region table: kernels, memcpy, memset = GPU activities per region instance;\n"
      "  GPU busy = time the GPU ran any of them; span = first start to last end; idle = span - busy;\n"
      "  tensor-core = share of GEMM and attention time on tensor cores.\n"
      "Attention table: implementation (fused, sdpa-math, unfused) and pass, calls and kernels per call,\n"
      "  their GPU time, the estimated time as one fused kernel per call, input precision, kernel / shape.\n"
      "Exit codes: 0 report printed; 1 --fail-on caught a finding (listed on stderr); 2 bad input or usage\n"
      "  (one line on stderr).\n"
      "Examples:\n"
      "  attnprof doctor trace.json.gz\n"
      "  attnprof doctor --region fwd trace.json          # fwd0, fwd1, ... as one group\n"
      "  gunzip -c trace.json.gz | attnprof doctor -      # from standard input\n"
      "  attnprof doctor --fail-on attention trace.json   # a CI gate: no attention finding allowed\n"
      "  attnprof doctor --replay trace.json.gz           # measure each shape's fix on this GPU\n"
      "  attnprof doctor traces/                          # the ranks of one job: a row each, the slowest,\n"
      "                                                   # ranks whose attention dispatch differs\n";
  return out;
}

// --shape B,H[/H_KV],S[/S_KV],D: one positive integer per size.
AttentionShape parse_shape(const std::string& text) {
  const auto bad = [&text](std::string_view why) {
    return InputError(
        fmt::format("--shape '{}': {} (expected B,H[/H_KV],S[/S_KV],D, e.g. 2,32/8,4096,128)", text, why));
  };
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = text.find(',', at);
    parts.push_back(text.substr(at, comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (parts.size() != 4) throw bad(fmt::format("{} fields, not 4", parts.size()));
  const auto number = [&bad](const std::string& field) -> std::int64_t {
    if (field.empty() || field.size() > 9 || field.find_first_not_of("0123456789") != std::string::npos)
      throw bad(fmt::format("'{}' is not a positive integer", field));
    const std::int64_t v = std::stoll(field);
    if (v <= 0) throw bad(fmt::format("'{}' is not a positive integer", field));
    return v;
  };
  const auto pair = [&](const std::string& field, std::int64_t& first, std::int64_t& second) {
    const std::size_t slash = field.find('/');
    first = number(field.substr(0, slash));
    second = slash == std::string::npos ? first : number(field.substr(slash + 1));
  };
  AttentionShape s;
  s.batch = number(parts[0]);
  pair(parts[1], s.q_heads, s.kv_heads);
  pair(parts[2], s.q_len, s.kv_len);
  s.head_dim = number(parts[3]);
  if (s.q_heads % s.kv_heads != 0)
    throw bad(fmt::format("{} kv heads do not divide {} query heads", s.kv_heads, s.q_heads));
  return s;
}

// The traces a doctor call names: a folder's (job_traces), or the paths as given.
std::vector<std::string> trace_paths(const std::vector<std::string>& given) {
  std::error_code ec;
  if (given.size() != 1 || given[0] == "-" || !std::filesystem::is_directory(given[0], ec)) return given;
  return job_traces(given[0]);
}

// doctor DIR / doctor TRACE...: one report across the ranks of a job. Returns the exit code.
int doctor_many(const std::vector<std::string>& paths, const std::string& region, bool json, bool markdown,
                const std::string& html, unsigned jobs, const std::optional<FindingGate>& gate) {
  for (const std::string& p : paths)
    if (p == "-") throw InputError("doctor: standard input ('-') is for one trace, not among many");
  const bool terminal = isatty(fileno(stderr)) != 0;
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](int done, int total, std::uint64_t bytes) {
    if (!terminal) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(stderr, "\rattnprof doctor: {}/{} traces read, {:.0f} MB/s ", done, total,
               s > 0 ? static_cast<double>(bytes) / 1e6 / s : 0.0);
    if (done == total) fmt::print(stderr, "\r{:60}\r", "");
  };
  std::vector<RankSummary> ranks =
      summarize_ranks(paths, RegionOptions{region}, jobs, progress, RankWorkers::Processes);
  const CrossRank cross = compare_ranks(ranks);
  if (!html.empty()) write_file_atomically(html, html_ranks_report(ranks, cross));
  const std::string report = json       ? json_ranks_report(ranks, cross)
                             : markdown ? markdown_ranks_report(ranks, cross)
                                        : text_ranks_report(ranks, cross);
  std::fwrite(report.data(), 1, report.size(), stdout);
  std::fflush(stdout);
  if (cross.bad > 0) {
    for (const RankSummary& r : ranks)
      if (!r.ok()) fmt::print(stderr, "attnprof: {}{}\n", r.error.starts_with(r.path) ? "" : r.path + ": ", r.error);
    return 2;
  }
  if (!gate) return 0;
  std::string list;
  int caught = 0;
  for (const RankSummary& r : ranks) {
    for (const Finding* f : caught_by(r.finding_list, *gate)) {
      list += fmt::format("{}rank {} {}", list.empty() ? "" : ", ", r.rank, f->id);
      ++caught;
    }
  }
  if (caught == 0) return 0;
  fmt::print(stderr, "attnprof: --fail-on: {} finding{}: {}\n", caught, report::plural(double(caught)), list);
  return 1;
}

}  // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::vector<std::string> traces;
    std::string region, html, annotate, capture_trace;
    std::vector<std::string> fail_on;
    std::string shape;
    bool json = false;
    bool brief = false;
    bool markdown = false;
    bool replay = false;
    bool causal = false;
    unsigned jobs = 0;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("doctor", "Diagnose attention in a PyTorch profiler / Kineto trace (.json or .json.gz)");
  cmd->add_option("trace", opts->traces,
                  "Trace file (Chrome-trace JSON, plain or gzip; - for standard input); several, or a folder of "
                  "them, for the ranks of one job")
      ->type_name("TRACE")
      ->required();
  cmd->add_option("--region", opts->region,
                  "Range to analyse: a record_function/NVTX name, its stem (fwd for fwd0..fwd2) or a glob; "
                  "default: profiler steps, else top-level annotations, else the whole trace");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->add_flag("--brief", opts->brief,
                "Print the first screen only: the step and what bounds it, the fixes with what each is worth, "
                "attention's share, the findings' ids");
  cmd->add_flag("--markdown", opts->markdown,
                "Print the report as Markdown, for a pull request or an issue (the step, the fixes, attention, "
                "the findings; with --replay its tables folded at the end)");
  cmd->add_option("-j,--jobs", opts->jobs, "Many traces: read this many at once (default: all cores)");
  cmd->add_option("--fail-on", opts->fail_on,
                  "Exit 1 when a finding matches: a finding id, a scope (attention, model), a severity (high, "
                  "medium, low, info: that or above) or any; comma-separated")
      ->delimiter(',');
  cmd->add_option("--html", opts->html,
                  "Also write the report as one self-contained HTML file (timelines, time by cause, findings; for "
                  "many ranks: the table and each rank's median step)");
  cmd->add_option("--annotate", opts->annotate,
                  "Also write a small Chrome trace of the analysed regions (3 instances of each) with a track of "
                  "findings linked to their kernels, for the Perfetto UI");
  cmd->add_option("--capture-trace", opts->capture_trace,
                  "A second trace that holds the capture of the CUDA graphs this one replays (a trace of the "
                  "warm-up, the first compiled calls): replays that ran alike with its replays take their calls' "
                  "shapes");
  cmd->add_flag("--replay", opts->replay,
                "Run each distinct attention shape of the trace on this machine's GPU (attnprof bench, hot): the "
                "traced implementation's stand-in beside cuDNN and the fused kernel, the measured saving per call "
                "and per step; without a GPU, the bench commands to run where there is one");
  auto* shape = cmd->add_option("--shape", opts->shape,
                                "With --replay: the shape of the calls whose trace does not say it, as "
                                "B,H[/H_KV],S[/S_KV],D (e.g. 2,32/8,4096,128)");
  auto* causal = cmd->add_flag("--causal,!--no-causal", opts->causal,
                               "With --replay: whether the calls whose trace does not say are causal (default: not)");
  cmd->footer(doctor_footer());
  cmd->callback([opts, &exit_code, shape, causal] {
    if (opts->json + opts->markdown + opts->brief > 1)
      throw InputError("--json, --markdown and --brief each print the report another way: give one");
    const std::vector<std::string> paths = trace_paths(opts->traces);
    if (paths.size() > 1) {
      for (const auto& [set, name] : {std::pair{!opts->annotate.empty(), "--annotate"},
                                      std::pair{!opts->capture_trace.empty(), "--capture-trace"},
                                      std::pair{opts->replay, "--replay"}, std::pair{opts->brief, "--brief"}})
        if (set)
          throw InputError(
              fmt::format("{} reads one trace; {} were given (run it on one rank's trace)", name, paths.size()));
      if (!opts->html.empty()) check_output("--html", opts->html, paths, true);
      std::optional<FindingGate> gate;
      if (!opts->fail_on.empty()) gate = parse_finding_gate(opts->fail_on);
      exit_code = doctor_many(paths, opts->region, opts->json, opts->markdown, opts->html, opts->jobs, gate);
      return;
    }
    const std::string& path = paths.front();
    if (!opts->html.empty()) check_output("--html", opts->html, opts->traces, true);
    if (!opts->annotate.empty()) check_output("--annotate", opts->annotate, opts->traces, false);
    if (!opts->html.empty() && opts->html == opts->annotate)
      throw InputError(fmt::format("--html and --annotate both name {}: give each its own file", opts->html));
    std::optional<FindingGate> gate;
    if (!opts->fail_on.empty()) gate = parse_finding_gate(opts->fail_on);
    if (opts->brief && opts->replay)
      throw InputError("--brief is the text report's first screen; --replay prints more");
    if (!opts->replay && (shape->count() || causal->count()))
      throw InputError(fmt::format("{} is for --replay", shape->count() ? "--shape" : "--causal/--no-causal"));
    ReplayRequest request;
    if (shape->count()) request.shape = parse_shape(opts->shape);
    if (causal->count()) request.causal = opts->causal;
    if (request.shape && request.causal) request.shape->causal = request.causal;
    // The second trace outlives the analysis: the captured shapes point into its strings.
    std::optional<Trace> capture_trace;
    std::optional<CapturedShapes> captured;
    if (!opts->capture_trace.empty()) {
      capture_trace.emplace(read_trace_input(opts->capture_trace));
      const TraceIndex other(*capture_trace);
      captured = captured_shapes(other, find_attention(other), input_label(opts->capture_trace));
    }
    const Trace trace = read_trace_input(path);
    const TraceIndex index(trace);
    const Analysis analysis =
        analyze(index, RegionOptions{opts->region}, input_label(path), captured ? &*captured : nullptr);
    std::optional<Replay> replay;
    if (opts->replay) {
      replay = plan_replay(analysis, index, request);
      bench::BenchOptions base;
      base.no_gpu = cuda_device_problem();
      bench::run_replay(*replay, base);
    }
    const Replay* replayed = replay ? &*replay : nullptr;
    // The files first: a path that cannot be written fails the run before anything is printed.
    if (!opts->html.empty()) write_file_atomically(opts->html, html_report(analysis, index, replayed));
    if (!opts->annotate.empty()) write_file_atomically(opts->annotate, annotated_trace(analysis, index));
    const std::string report = opts->json       ? json_report(analysis, replayed)
                               : opts->markdown ? markdown_report(analysis, replayed)
                               : opts->brief    ? text_brief(analysis)
                                                : text_report(analysis, replayed);
    std::fwrite(report.data(), 1, report.size(), stdout);
    exit_code = 0;
    if (gate && (!analysis.unsupported.empty() || analysis.gpu_kernels == 0)) {
      std::fflush(stdout);
      fmt::print(stderr, "attnprof: --fail-on: nothing checked: {}\n",
                 analysis.unsupported.empty() ? "the trace has no GPU kernels"
                                              : "the trace was not diagnosed: " + analysis.unsupported);
      exit_code = 1;
    } else if (gate) {
      const std::vector<const Finding*> caught = caught_by(analysis, *gate);
      if (!caught.empty()) {
        std::string list;
        for (const Finding* f : caught)
          list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", f->id, to_string(f->scope));
        std::fflush(stdout);
        fmt::print(stderr, "attnprof: --fail-on: {} finding{}: {}\n", caught.size(),
                   report::plural(double(caught.size())), list);
        exit_code = 1;
      }
    }
  });
}

}  // namespace attnprof::cli
