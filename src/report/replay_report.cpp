#include "report/replay_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "report/format.h"

namespace attnprof::report {
namespace {

std::string opt_ms(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string("-"); }

}  // namespace

std::string replay_bytes_per_dtype(const ReplayShape& shape) {
  std::vector<std::string> dtypes;
  std::string out;
  for (const ReplayRow& x : shape.rows) {
    if (x.bytes <= 0 || std::find(dtypes.begin(), dtypes.end(), x.dtype) != dtypes.end()) continue;
    dtypes.push_back(x.dtype);
    out += fmt::format("{}{:.2f} MB in {}", out.empty() ? "" : ", ", x.bytes / 1e6, x.dtype);
  }
  return out;
}

void replay_text(std::string& out, const Replay& r) {
  auto o = std::back_inserter(out);
  out += '\n';
  append_wrapped(out,
                 "Replay: the trace's attention shapes measured on this machine (attnprof bench; ms = GPU kernel "
                 "time per call, the median of 10 back-to-back calls, as the trace counts it)",
                 0);
  if (!r.no_gpu.empty())
    append_wrapped(out, fmt::format("Not run: {}. The commands below run the same on a machine with a GPU.", r.no_gpu),
                   2);
  else if (!r.device.empty())
    fmt::format_to(o, "  GPU: {}\n", r.device);
  if (!r.region.empty())
    fmt::format_to(o, "  Calls of region '{}' ({} instance{}; per step = per instance)\n", r.region, r.steps,
                   plural(r.steps));
  if (r.shapes.empty()) out += "  No forward attention calls to replay.\n";
  for (std::size_t i = 0; i < r.shapes.size(); ++i) {
    const ReplayShape& s = r.shapes[i];
    const bool training = s.backward_calls > 0;
    if (training)
      fmt::format_to(o,
                     "\n  Shape {} of {}: {}: {} forward call{} ({}) and {} backward, {:.3f} ms per forward and {:.3f} "
                     "ms per backward in the trace\n",
                     i + 1, r.shapes.size(), s.shape_text, s.traced.calls, plural(double(s.traced.calls)),
                     s.traced.implementations, s.backward_calls, s.traced_ms, s.traced_backward_ms);
    else
      fmt::format_to(o, "\n  Shape {} of {}: {}: {} forward call{} ({}), {:.3f} ms per call in the trace\n", i + 1,
                     r.shapes.size(), s.shape_text, s.traced.calls, plural(double(s.traced.calls)),
                     s.traced.implementations, s.traced_ms);
    if (!s.problem.empty()) {
      append_wrapped(out, "Not replayed: " + s.problem + ".", 4);
      continue;
    }
    append_wrapped(out, "shape from " + s.source, 4);
    if (!s.own_note.empty()) append_wrapped(out, "stand-in for the traced calls: " + s.own_note, 4);
    if (training && !s.own_backward_note.empty())
      append_wrapped(out, "stand-in for their backward: " + s.own_backward_note, 4);
    const bool per_step = s.calls_per_step > 0;
    // A shape that reads a KV cache (decode, or packed forwards over it): the bytes a call moves in each
    // row's dtype, and the bandwidth each row's time makes of them.
    const std::string moved = replay_bytes_per_dtype(s);
    const bool reads_cache = !moved.empty();
    if (reads_cache && !training)
      append_wrapped(
          out,
          fmt::format("memory-bound (reads a KV cache): {} a call (q, K, V and the output once){}", moved,
                      r.peak_tb_per_s > 0 ? fmt::format("; the GPU's peak {:g} TB/s", r.peak_tb_per_s) : std::string()),
          4);
    const auto bandwidth = [](const ReplayRow& x) {
      if (!x.tb_per_s) return std::string();
      return x.bandwidth_share ? fmt::format("  {:.2f} ({:.0f}%)", *x.tb_per_s, 100 * *x.bandwidth_share)
                               : fmt::format("  {:.2f}", *x.tb_per_s);
    };
    const auto signed_ms = [](const std::optional<double>& v) {
      return v ? fmt::format("{:+.3f}", -*v) : std::string();
    };
    if (training) {
      // saving/call: one forward and its backward.
      fmt::format_to(o, "    {:<26} {:<5} {:>9} {:>9} {:>12} {:>13}\n", "implementation", "dtype", "fwd ms", "bwd ms",
                     "saving/call", per_step ? "saving/step" : "");
      fmt::format_to(o, "    {:<26} {:<5} {:>9.3f} {:>9.3f}\n", "traced", s.dtype, s.traced_ms, s.traced_backward_ms);
    } else {
      fmt::format_to(o, "    {:<26} {:<5} {:>9} {:>12} {:>13}{}\n", "implementation", "dtype", "ms/call", "saving/call",
                     per_step ? "saving/step" : "", reads_cache ? "  TB/s (of peak)" : "");
      fmt::format_to(o, "    {:<26} {:<5} {:>9.3f}\n", "traced", s.dtype, s.traced_ms);
    }
    for (const ReplayRow& row : s.rows) {
      const std::string name = row.own ? row.impl + " (own)" : row.impl;
      if (!row.why_not.empty()) {
        fmt::format_to(o, "    {:<26} {:<5} {:>9}\n", name, row.dtype, "-");
        append_wrapped(out, "not run: " + row.why_not, 6);
        continue;
      }
      if (!training) {
        fmt::format_to(o, "    {:<26} {:<5} {:>9} {:>12} {:>13}{}\n", name, row.dtype, opt_ms(row.ms),
                       signed_ms(row.saving_ms), signed_ms(row.saving_step_ms), bandwidth(row));
        continue;
      }
      std::optional<double> both;
      if (row.saving_ms && row.backward_saving_ms) both = *row.saving_ms + *row.backward_saving_ms;
      fmt::format_to(o, "    {:<26} {:<5} {:>9} {:>9} {:>12} {:>13}\n", name, row.dtype, opt_ms(row.ms),
                     opt_ms(row.backward_ms), signed_ms(both), signed_ms(row.saving_step_ms));
      if (!row.backward_why_not.empty()) append_wrapped(out, "backward not run: " + row.backward_why_not, 6);
    }
    if (!s.carries_over.empty()) append_wrapped(out, s.carries_over + ".", 4);
    if (!s.backward_carries_over.empty()) append_wrapped(out, s.backward_carries_over + ".", 4);
    append_wrapped(out, "fix: " + s.fix, 4);
    if (!r.no_gpu.empty())
      for (std::size_t at = 0; at < s.command.size();) {
        const std::size_t nl = s.command.find('\n', at);
        fmt::format_to(o, "    {}\n", s.command.substr(at, nl - at));
        at = nl == std::string::npos ? s.command.size() : nl + 1;
      }
  }
  if (r.calls_without_shape > 0)
    fmt::format_to(o, "  ({} forward calls had no shape in the trace and are not replayed)\n", r.calls_without_shape);
  if (r.backward_unpaired > 0)
    fmt::format_to(o, "  ({} backward call{} had no forward before {} in the region and {} not replayed)\n",
                   r.backward_unpaired, plural(r.backward_unpaired), r.backward_unpaired == 1 ? "it" : "them",
                   r.backward_unpaired == 1 ? "is" : "are");
  if (r.no_gpu.empty() && !r.shapes.empty())
    append_wrapped(out,
                   "(saving = the stand-in's time, or the traced time without one, minus the row's; negative is "
                   "slower. Per step: times the calls per profiler step; for a training trace, forward and backward "
                   "together, and only where both were measured.)",
                   2);
}

void replay_json(JsonWriter& j, const Replay& r) {
  j.begin_object("replay");
  j.str_or_null("device", r.device);
  if (r.peak_tb_per_s > 0)
    j.real("peak_tb_per_s", r.peak_tb_per_s, 3);
  else
    j.null("peak_tb_per_s");
  j.str_or_null("not_run", r.no_gpu);
  j.str("timing", r.timing);
  j.str("region", r.region);
  j.num("steps", r.steps);
  j.num("calls_without_shape", r.calls_without_shape);
  j.num("backward_unpaired", r.backward_unpaired);
  j.real("agreement", kReplayAgreement, 2);
  j.begin_array("shapes");
  for (const ReplayShape& s : r.shapes) {
    j.begin_object();
    j.str("shape", s.shape_text);
    if (s.problem.empty()) {
      j.num("batch", s.traced.shape.batch);
      j.num("q_heads", s.traced.shape.q_heads);
      j.num("kv_heads", s.traced.shape.kv_heads);
      j.num("q_len", s.traced.shape.q_len);
      j.num("kv_len", s.traced.shape.kv_len);
      j.num("head_dim", s.traced.shape.head_dim);
      j.boolean("causal", s.causal);
      j.boolean("bottom_right", s.bottom_right);
      j.real("dropout", s.dropout, 3);
    }
    j.str("dtype", s.dtype);
    j.str("source", s.source);
    j.num("calls", s.traced.calls);
    j.str("implementations", s.traced.implementations);
    j.real("traced_ms_per_call", s.traced_ms, 4);
    j.real("calls_per_step", s.calls_per_step, 3);
    j.num("backward_calls", s.backward_calls);
    j.real("traced_backward_ms_per_call", s.traced_backward_ms, 4);
    j.real("backward_calls_per_step", s.backward_calls_per_step, 3);
    j.str("backward_stand_in", s.own_backward_note);
    j.real_or_null("own_backward_vs_traced", s.own_backward_vs_traced, 4);
    j.str("backward_carries_over", s.backward_carries_over);
    j.str_or_null("problem", s.problem);
    j.str("stand_in", s.own_note);
    j.real_or_null("own_vs_traced", s.own_vs_traced, 4);
    j.str("carries_over", s.carries_over);
    j.str("fix", s.fix);
    j.str("command", s.command);
    j.begin_array("rows");
    for (const ReplayRow& row : s.rows) {
      j.begin_object();
      j.str("implementation", row.impl);
      j.str("dtype", row.dtype);
      j.boolean("own", row.own);
      j.real_or_null("ms_per_call", row.ms, 4);
      j.real_or_null("wall_ms_per_call", row.wall_ms, 4);
      j.real_or_null("saving_ms_per_call", row.saving_ms, 4);
      j.real_or_null("backward_ms_per_call", row.backward_ms, 4);
      j.real_or_null("backward_saving_ms_per_call", row.backward_saving_ms, 4);
      j.real_or_null("saving_ms_per_step", row.saving_step_ms, 4);
      if (row.bytes > 0)
        j.real("bytes_per_call", row.bytes, 0);
      else
        j.null("bytes_per_call");
      j.real_or_null("tb_per_s", row.tb_per_s, 3);
      j.real_or_null("bandwidth_share", row.bandwidth_share, 4);
      j.str_or_null("not_run", row.why_not);
      j.str_or_null("backward_not_run", row.backward_why_not);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

}  // namespace attnprof::report
