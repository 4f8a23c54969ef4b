// attnprof doctor TRACE: reads a PyTorch profiler (Kineto) trace and reports
// why attention is slow, with numbers, and what to change.
#include <cstdio>
#include <optional>

#include <fmt/core.h>

#include "analysis/analysis.h"
#include "analysis/finding_gate.h"
#include "analysis/rules/rule.h"
#include "cli/commands.h"
#include "cli/trace_input.h"
#include "common/input_error.h"
#include "common/write_file.h"
#include "report/annotate.h"
#include "report/html_report.h"
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
      "  attnprof doctor --fail-on attention trace.json   # a CI gate: no attention finding allowed\n";
  return out;
}

}  // namespace

void add_doctor_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::vector<std::string> traces;
    std::string region, html, annotate;
    std::vector<std::string> fail_on;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd =
      app.add_subcommand("doctor", "Diagnose attention in a PyTorch profiler / Kineto trace (.json or .json.gz)");
  cmd->add_option("trace", opts->traces, "Trace file (Chrome-trace JSON, plain or gzip; - for standard input)")
      ->required();
  cmd->add_option("--region", opts->region,
                  "Range to analyse: a record_function/NVTX name, its stem (fwd for fwd0..fwd2) or a glob; "
                  "default: profiler steps, else top-level annotations, else the whole trace");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->add_option("--fail-on", opts->fail_on,
                  "Exit 1 when a finding matches: a finding id, a scope (attention, model), a severity (high, "
                  "medium, low, info: that or above) or any; comma-separated")
      ->delimiter(',');
  cmd->add_option("--html", opts->html,
                  "Also write the report as one self-contained HTML file (timelines, time by cause, findings)");
  cmd->add_option("--annotate", opts->annotate,
                  "Also write a small Chrome trace of the analysed regions (3 instances of each) with a track of "
                  "findings linked to their kernels, for the Perfetto UI");
  cmd->footer(doctor_footer());
  cmd->callback([opts, &exit_code] {
    if (opts->traces.size() != 1) {
      std::string names;
      for (const auto& t : opts->traces) names += (names.empty() ? "" : ", ") + t;
      throw InputError(
          fmt::format("doctor reads one trace, {} were given ({}): run it once per trace", opts->traces.size(), names));
    }
    const std::string& path = opts->traces.front();
    std::optional<FindingGate> gate;
    if (!opts->fail_on.empty()) gate = parse_finding_gate(opts->fail_on);
    const Trace trace = read_trace_input(path);
    const TraceIndex index(trace);
    const Analysis analysis = analyze(trace, index, RegionOptions{opts->region}, input_label(path));
    // The files first: a path that cannot be written fails the run before anything is printed.
    if (!opts->html.empty()) write_file_atomically(opts->html, html_report(analysis, index));
    if (!opts->annotate.empty()) write_file_atomically(opts->annotate, annotated_trace(analysis, index));
    const std::string report = opts->json ? json_report(analysis) : text_report(analysis);
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
        fmt::print(stderr, "attnprof: --fail-on: {} finding{}: {}\n", caught.size(), caught.size() == 1 ? "" : "s",
                   list);
        exit_code = 1;
      }
    }
  });
}

}  // namespace attnprof::cli
