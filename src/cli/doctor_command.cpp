// attnprof doctor TRACE: reads a PyTorch profiler (Kineto) trace and reports
// why attention is slow, with numbers, and what to change.
#include <cstdio>

#include <fmt/core.h>

#include "analysis/analysis.h"
#include "cli/commands.h"
#include "report/report.h"
#include "trace/trace_reader.h"

namespace attnprof::cli {

void add_doctor_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string trace;
    std::string region;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("doctor", "Diagnose attention in a PyTorch profiler / Kineto trace (.json or .json.gz)");
  cmd->add_option("trace", opts->trace, "Trace file (Chrome-trace JSON, plain or gzip)")->required();
  cmd->add_option("--region", opts->region,
                  "Range to analyse: a record_function/NVTX name, its stem (fwd for fwd0..fwd2) or a glob; "
                  "default: profiler steps, else top-level annotations, else the whole trace");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->callback([opts, &exit_code] {
    const Trace trace = read_trace_file(opts->trace, ReadOptions{.detail = ReadDetail::Analysis});
    const TraceIndex index(trace);
    const Analysis analysis = analyze(trace, index, RegionOptions{opts->region}, opts->trace);
    const std::string report = opts->json ? json_report(analysis) : text_report(analysis);
    std::fwrite(report.data(), 1, report.size(), stdout);
    exit_code = 0;
  });
}

}  // namespace attnprof::cli
