// attnprof diff BEFORE AFTER: what changed between two traces of one program
// (before and after a fix), per step; with --fail-on, a CI gate.
#include <charconv>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/core.h>

#include "analysis/analysis.h"
#include "analysis/diff.h"
#include "analysis/ranks_diff.h"
#include "cli/commands.h"
#include "cli/trace_input.h"
#include "common/input_error.h"
#include "common/suggest.h"
#include "common/write_file.h"
#include "report/diff_report.h"
#include "report/html_report.h"
#include "report/ranks_diff_report.h"

namespace attnprof::cli {
namespace {

// "regression[:PCT]", "step-regression[:PCT]" or "attention-regression[:PCT]".
DiffGate parse_fail_on(const std::string& v) {
  for (const auto& [prefix, metric] : {std::pair{std::string("regression"), GateMetric::Auto},
                                       std::pair{std::string("step-regression"), GateMetric::StepTime},
                                       std::pair{std::string("attention-regression"), GateMetric::AttentionTime}}) {
    if (v == prefix) return DiffGate{kDefaultRegressionPct, metric, {}};
    if (v.rfind(prefix + ":", 0) != 0) continue;
    const std::string pct = v.substr(prefix.size() + 1);
    double x = -1;
    const auto [end, ec] = std::from_chars(pct.data(), pct.data() + pct.size(), x);
    if (ec == std::errc() && end == pct.data() + pct.size() && x >= 0 && x < 1e6) return DiffGate{x, metric, {}};
    break;
  }
  throw InputError(
      fmt::format("--fail-on {}: expected 'regression', 'step-regression' or 'attention-regression', each with an "
                  "optional ':PCT' (PCT a number >= 0, the growth per step allowed, default {:g}){}",
                  v, kDefaultRegressionPct,
                  did_you_mean(v.substr(0, v.find(':')), {"regression", "step-regression", "attention-regression"})));
}

bool is_folder(const std::string& path) {
  std::error_code ec;
  return path != "-" && std::filesystem::is_directory(path, ec);
}

// diff DIR_A DIR_B: two runs of one job, rank by rank, from each rank's summary (read in parallel, one
// trace per worker at a time). Returns the exit code.
int diff_folders(const std::string& a, const std::string& b, const std::string& region, bool json, bool markdown,
                 std::optional<DiffGate> gate) {
  std::vector<RankSummary> before =
      summarize_ranks(job_traces(a), RegionOptions{region}, 0, {}, RankWorkers::Processes);
  std::vector<RankSummary> after = summarize_ranks(job_traces(b), RegionOptions{region}, 0, {}, RankWorkers::Processes);
  for (const auto* run : {&before, &after})
    if (run->empty()) throw InputError(fmt::format("diff: {}: no traces in this folder", run == &before ? a : b));
  const RanksDiff d = diff_ranks(before, after);
  if (gate) gate->verdict = ranks_regression_gate(d, gate->max_growth_pct, gate->metric);
  const std::string report = json       ? json_ranks_diff(d, gate)
                             : markdown ? markdown_ranks_diff(d, gate)
                                        : text_ranks_diff(d, gate);
  std::fwrite(report.data(), 1, report.size(), stdout);
  std::fflush(stdout);
  bool bad = false;
  for (const auto* run : {&before, &after})
    for (const RankSummary& r : *run)
      if (!r.ok()) {
        fmt::print(stderr, "attnprof: {}{}\n", r.error.starts_with(r.path) ? "" : r.path + ": ", r.error);
        bad = true;
      }
  if (bad) return 2;
  return gate && gate->verdict.regression ? 1 : 0;
}

Analysis analyse(const std::string& path, const std::string& region) {
  const Trace trace = read_trace_input(path);
  const TraceIndex index(trace);
  return analyze(index, RegionOptions{region}, input_label(path));
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string before, after, region, fail_on, html;
    bool json = false, markdown = false;
  };
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "diff", "Compare two traces of one program (before and after a change): attention, findings, kernels per step");
  cmd->add_option("before", opts->before,
                  "The trace before the change (.json, .json.gz; - for standard input), or a folder of one job's "
                  "rank traces (the other a folder too: the two runs compared rank by rank)")
      ->required();
  cmd->add_option("after", opts->after, "The trace after the change")->required();
  cmd->add_option("--region", opts->region, "Range to analyse in both (as doctor --region)");
  auto* json = cmd->add_flag("--json", opts->json, "Print the comparison as JSON");
  cmd->add_flag("--markdown", opts->markdown, "Print it as Markdown (a pull-request comment)")->excludes(json);
  cmd->add_option("--html", opts->html, "Also write the comparison as one self-contained HTML file");
  cmd->add_option("--fail-on", opts->fail_on,
                  fmt::format("regression[:PCT]: exit 1 when the median step grew by more than PCT% (default "
                              "{:g}%, above run-to-run noise of one GPU; attention time per step where a trace has "
                              "no steps with a CPU side) or a new attention finding appeared; step-regression[:PCT] "
                              "and attention-regression[:PCT] gate on the one named",
                              kDefaultRegressionPct));
  cmd->footer(
      "\nSteps are the instances of the analysed regions (profiler steps, record_function ranges; the whole\n"
      "trace when there are none), so traces of different lengths compare.\n"
      "Exit codes: 0 compared (and the gate passed); 1 the --fail-on gate found a regression;\n"
      "2 bad input or usage (one line on stderr).\n"
      "Examples:\n"
      "  attnprof diff before.json.gz after.json.gz\n"
      "  attnprof diff --markdown --fail-on regression:5 main.json.gz pr.json.gz > comment.md\n"
      "  attnprof diff --fail-on regression run1/ run2/   # two runs of a job: each rank, the slowest rank's step\n");
  cmd->callback([opts, &exit_code] {
    if (opts->before == "-" && opts->after == "-")
      throw InputError("diff: only one of the two traces can come from standard input");
    if (is_folder(opts->before) || is_folder(opts->after)) {
      if (!is_folder(opts->before) || !is_folder(opts->after))
        throw InputError(
            fmt::format("diff: {} is a folder and {} is not: give two traces, or two folders of rank "
                        "traces (two runs of one job)",
                        is_folder(opts->before) ? opts->before : opts->after,
                        is_folder(opts->before) ? opts->after : opts->before));
      if (!opts->html.empty())
        throw InputError("--html compares two traces; for two folders of rank traces use --markdown or --json");
      std::optional<DiffGate> gate;
      if (!opts->fail_on.empty()) gate = parse_fail_on(opts->fail_on);
      exit_code = diff_folders(opts->before, opts->after, opts->region, opts->json, opts->markdown, gate);
      return;
    }
    if (!opts->html.empty()) check_output("--html", opts->html, {opts->before, opts->after}, true);
    std::optional<DiffGate> gate;
    if (!opts->fail_on.empty()) gate = parse_fail_on(opts->fail_on);
    // The two traces are read and analysed at once, one per thread.
    Analysis before;
    std::exception_ptr before_error;
    std::thread reader([&] {
      try {
        before = analyse(opts->before, opts->region);
      } catch (...) {
        before_error = std::current_exception();
      }
    });
    std::optional<Analysis> after;
    std::exception_ptr after_error;
    try {
      after = analyse(opts->after, opts->region);
    } catch (...) {
      after_error = std::current_exception();
    }
    reader.join();
    if (before_error) std::rethrow_exception(before_error);
    if (after_error) std::rethrow_exception(after_error);
    const TraceDiff d = diff_analyses(before, *after);
    if (gate) gate->verdict = regression_gate(d, gate->max_growth_pct, gate->metric);
    if (!opts->html.empty()) write_file_atomically(opts->html, html_diff(d, gate));
    const std::string report = opts->json       ? json_diff(d, gate)
                               : opts->markdown ? markdown_diff(d, gate)
                                                : text_diff(d, gate);
    std::fwrite(report.data(), 1, report.size(), stdout);
    exit_code = gate && gate->verdict.regression ? 1 : 0;
  });
}

}  // namespace attnprof::cli
