// attnprof._core: the CUDA-free engine behind the Python API. A Doctor reads
// and analyses one trace (the GIL released while it does) and hands back the
// reports doctor prints; diff compares two; the gate is doctor --fail-on's.
// Bad input raises attnprof.InputError (a ValueError) with the CLI's message.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>

#include "analysis/analysis.h"
#include "analysis/diff.h"
#include "analysis/finding_gate.h"
#include "analysis/graph_captures.h"
#include "analysis/kernel_classifier.h"
#include "analysis/ranks.h"
#include "analysis/ranks_diff.h"
#include "common/input_error.h"
#include "report/annotate.h"
#include "report/diff_report.h"
#include "report/html_report.h"
#include "report/ranks_diff_report.h"
#include "report/ranks_report.h"
#include "report/report.h"
#include "trace/trace_reader.h"

namespace nb = nanobind;
using namespace attnprof;

namespace {

// One analysed trace; the index points into the trace, so both live on the heap.
struct Doctor {
  std::unique_ptr<Trace> trace;
  std::unique_ptr<TraceIndex> index;
  Analysis analysis;

  // The trace holding the CUDA graphs' captures (`doctor --capture-trace`) and the shapes read from it,
  // when given: the analysis points into both, so they live as long as the report.
  std::unique_ptr<Trace> capture_trace;
  std::unique_ptr<CapturedShapes> captured;

  Doctor(const std::string& path, const std::string& region, const std::string& label,
         const std::string& capture_path) {
    nb::gil_scoped_release quiet;
    if (!capture_path.empty()) {
      capture_trace =
          std::make_unique<Trace>(read_trace_file(capture_path, ReadOptions{.detail = ReadDetail::Analysis}));
      const TraceIndex other(*capture_trace);
      captured = std::make_unique<CapturedShapes>(captured_shapes(other, find_attention(other), capture_path));
    }
    trace = std::make_unique<Trace>(read_trace_file(path, ReadOptions{.detail = ReadDetail::Analysis}));
    index = std::make_unique<TraceIndex>(*trace);
    analysis = analyze(*index, RegionOptions{region}, label.empty() ? path : label, captured.get());
  }

  // The findings `fail_on` catches, as indices into the report's findings.
  std::vector<std::size_t> caught(const std::vector<std::string>& fail_on) const {
    std::vector<std::size_t> out;
    for (const Finding* f : caught_by(analysis, parse_finding_gate(fail_on)))
      out.push_back(static_cast<std::size_t>(f - analysis.findings.data()));
    return out;
  }
};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "attnprof's C++ engine (doctor, diff, the CI gates); use the attnprof package, not this module";
  nb::exception<InputError>(m, "InputError", PyExc_ValueError);
  m.attr("__version__") = ATTNPROF_VERSION;  // the VERSION file, through CMake
  m.attr("json_schema_version") = kJsonSchemaVersion;
  m.attr("diff_json_schema_version") = kDiffJsonSchemaVersion;
  m.attr("default_regression_pct") = kDefaultRegressionPct;
  std::vector<std::string> categories;  // the kernel table's categories, in the enum's order
  for (int c = 0; c <= static_cast<int>(KernelCategory::Other); ++c)
    categories.emplace_back(to_string(static_cast<KernelCategory>(c)));
  m.attr("kernel_categories") = categories;

  nb::class_<Doctor>(m, "Doctor")
      .def(nb::init<const std::string&, const std::string&, const std::string&, const std::string&>(), nb::arg("path"),
           nb::arg("region") = "", nb::arg("label") = "", nb::arg("capture_trace") = "")
      .def("json", [](const Doctor& d) { return json_report(d.analysis); })
      .def("text", [](const Doctor& d) { return text_report(d.analysis); })
      .def("brief", [](const Doctor& d) { return text_brief(d.analysis); })
      .def("markdown", [](const Doctor& d) { return markdown_report(d.analysis); })
      .def("html", [](const Doctor& d) { return html_report(d.analysis, *d.index); })
      .def("annotated_trace", [](const Doctor& d) { return annotated_trace(d.analysis, *d.index); })
      .def("caught", &Doctor::caught, nb::arg("fail_on"));

  // The gate of a diff, as attnprof diff --fail-on reads it.
  const auto diff_gate = [](std::optional<double> pct, const std::string& gate_on) -> std::optional<DiffGate> {
    GateMetric metric = GateMetric::Auto;
    if (gate_on == "step")
      metric = GateMetric::StepTime;
    else if (gate_on == "attention")
      metric = GateMetric::AttentionTime;
    else if (gate_on != "auto")
      throw InputError("diff: gate_on must be auto, step or attention, not '" + gate_on + "'");
    if (!pct) return std::nullopt;
    return DiffGate{*pct, metric, {}};
  };
  m.def(
      "diff",
      [diff_gate](const Doctor& before, const Doctor& after, std::optional<double> regression_pct,
                  const std::string& form, const std::string& gate_on) {
        const TraceDiff d = diff_analyses(before.analysis, after.analysis);
        std::optional<DiffGate> gate = diff_gate(regression_pct, gate_on);
        if (gate) gate->verdict = regression_gate(d, gate->max_growth_pct, gate->metric);
        if (form == "json") return json_diff(d, gate);
        if (form == "markdown") return markdown_diff(d, gate);
        if (form == "html") return html_diff(d, gate);
        if (form == "text") return text_diff(d, gate);
        throw InputError("diff: form must be text, json, markdown or html, not '" + form + "'");
      },
      nb::arg("before"), nb::arg("after"), nb::arg("regression_pct") = nb::none(), nb::arg("form") = "json",
      nb::arg("gate_on") = "auto");

  // The ranks of one job (attnprof.doctor_many): each trace reduced to a summary where it is read,
  // the summaries (JSON text, picklable) compared here.
  m.def(
      "rank_summary",
      [](const std::string& path, const std::string& region) {
        nb::gil_scoped_release quiet;
        return rank_summary_json(summarize_trace(path, RegionOptions{region}));
      },
      nb::arg("path"), nb::arg("region") = "");
  m.def(
      "rank_summary_of_bytes",
      [](nb::bytes data, const std::string& label, const std::string& region) {
        const std::string_view bytes(data.c_str(), data.size());
        nb::gil_scoped_release quiet;
        return rank_summary_json(summarize_trace_bytes(bytes, label, RegionOptions{region}));
      },
      nb::arg("data"), nb::arg("label"), nb::arg("region") = "");
  m.def("job_traces", &job_traces, nb::arg("folder"));
  m.def(
      "ranks_report",
      [](const std::vector<std::string>& summaries, const std::string& form) {
        std::vector<RankSummary> ranks;
        for (const std::string& s : summaries) ranks.push_back(rank_summary_from_json(s));
        const CrossRank cross = compare_ranks(ranks);
        if (form == "json") return json_ranks_report(ranks, cross);
        if (form == "text") return text_ranks_report(ranks, cross);
        if (form == "markdown") return markdown_ranks_report(ranks, cross);
        throw InputError("ranks_report: form must be json, text or markdown, not '" + form + "'");
      },
      nb::arg("summaries"), nb::arg("form") = "json");
  m.def(
      "ranks_diff",
      [diff_gate](const std::vector<std::string>& before, const std::vector<std::string>& after,
                  std::optional<double> regression_pct, const std::string& form, const std::string& gate_on) {
        std::vector<RankSummary> a, b;
        for (const std::string& s : before) a.push_back(rank_summary_from_json(s));
        for (const std::string& s : after) b.push_back(rank_summary_from_json(s));
        const RanksDiff d = diff_ranks(a, b);
        std::optional<DiffGate> gate = diff_gate(regression_pct, gate_on);
        if (gate) gate->verdict = ranks_regression_gate(d, gate->max_growth_pct, gate->metric);
        if (form == "json") return json_ranks_diff(d, gate);
        if (form == "text") return text_ranks_diff(d, gate);
        if (form == "markdown") return markdown_ranks_diff(d, gate);
        throw InputError("ranks_diff: form must be json, text or markdown, not '" + form + "'");
      },
      nb::arg("before"), nb::arg("after"), nb::arg("regression_pct") = nb::none(), nb::arg("form") = "json",
      nb::arg("gate_on") = "auto");
}
