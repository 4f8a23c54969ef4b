// doctor's HTML report (see html_report.h; diff's page is html_diff.cpp). Everything is
// inline: CSS in a style element (html_page.h), timelines and bars as SVG, tooltips as SVG
// titles; no script.
#include "report/html_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "report/format.h"
#include "report/gpu_lanes.h"
#include "report/html_page.h"
#include "report/replay_report.h"
#include "report/summary_text.h"

namespace attnprof {
namespace {

constexpr std::size_t kMaxBars = 3000;  // per timeline: a few hundred KB at most

using html::esc;
using html::page;
using report::ms;
using report::percent;

// "1.234 ms" or "56.7 us": a duration as a person reads it.
std::string duration(double ns) {
  if (ns >= 1e6) return fmt::format("{:.3f} ms", ns / 1e6);
  if (ns >= 1e3) return fmt::format("{:.1f} us", ns / 1e3);
  return fmt::format("{:.0f} ns", ns);
}

// Tensor-core GEMMs green, CUDA-core (FP32 FFMA) GEMMs red and hatched; the rest by category.
std::string_view color(const KernelClass& c) {
  switch (c.category) {
    case KernelCategory::Gemm:
      return c.unit == MathUnit::CudaCore ? "#d62728" : "#2ca02c";
    case KernelCategory::FusedAttention:
      return "#1f77b4";
    case KernelCategory::Softmax:
      return "#9467bd";
    case KernelCategory::Elementwise:
      return "#ff7f0e";
    case KernelCategory::Reduction:
      return "#8c564b";
    case KernelCategory::CopyCast:
      return "#e377c2";
    case KernelCategory::FillMask:
      return "#bcbd22";
    case KernelCategory::Memcpy:
      return "#7f7f7f";
    case KernelCategory::Memset:
      return "#c7c7c7";
    default:
      return "#17becf";
  }
}

std::string unit_text(const KernelClass& c) {
  if (c.unit == MathUnit::TensorCore) return fmt::format("tensor cores, {}", to_string(c.precision));
  if (c.unit == MathUnit::CudaCore) return fmt::format("CUDA cores (FP32 FFMA), {}", to_string(c.precision));
  return std::string(to_string(c.category));
}

// One bar of a timeline.
struct Bar {
  std::int64_t ts, dur;
  std::size_t activity;
  std::int64_t stream;
  int lane = 0;
};

// Kernels as bars on the GPU time axis, a lane per stream (more where kernels
// overlap on one), with a row above marking the attention calls among them.
std::string timeline_svg(const Analysis& a, const TraceIndex& index, std::vector<std::size_t> activities,
                         std::string& note) {
  const auto& acts = index.activities();
  std::sort(activities.begin(), activities.end());  // activities are in GPU start order
  if (activities.size() > kMaxBars) {
    note = fmt::format("(the first {} of {} activities)", kMaxBars, activities.size());
    activities.resize(kMaxBars);
  }
  if (activities.empty()) return {};
  const GpuLanes lanes = assign_lanes(index, activities);
  std::vector<Bar> bars;
  std::int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (std::size_t k = 0; k < activities.size(); ++k) {
    const Event& e = index.event(acts[activities[k]]);
    bars.push_back({e.ts_ns, e.dur_ns, activities[k], lanes.places[k].stream, static_cast<int>(lanes.places[k].lane)});
    t0 = std::min(t0, e.ts_ns);
    t1 = std::max(t1, e.end_ns());
  }
  // Lane rows: streams in id order, each stream's lanes together.
  std::map<std::int64_t, int> first_row;
  std::vector<std::string> row_labels;
  for (const auto& [stream, count] : lanes.per_stream) {
    first_row[stream] = static_cast<int>(row_labels.size());
    for (std::size_t l = 0; l < count; ++l)
      row_labels.push_back(stream < 0 ? std::string("GPU")
                           : l == 0   ? fmt::format("stream {}", stream)
                                      : fmt::format("stream {} ({})", stream, l + 1));
  }
  constexpr double kLeft = 110, kWidth = 1080, kRow = 20, kTop = 34;
  const double span = static_cast<double>(std::max<std::int64_t>(t1 - t0, 1));
  const auto x = [&](std::int64_t t) { return kLeft + (kWidth - kLeft - 10) * static_cast<double>(t - t0) / span; };
  const double height = kTop + kRow * static_cast<double>(row_labels.size()) + 24;
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out,
                 "<svg class=\"timeline\" viewBox=\"0 0 {0} {1:.0f}\" style=\"width:100%;max-width:{0}px\" "
                 "role=\"img\" aria-label=\"GPU timeline\">\n",
                 kWidth, height);
  // Time axis: five ticks.
  for (int k = 0; k <= 4; ++k) {
    const double t = span * k / 4.0;
    const double px = kLeft + (kWidth - kLeft - 10) * k / 4.0;
    fmt::format_to(out,
                   "<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"#ddd\"/>"
                   "<text x=\"{0:.1f}\" y=\"{3:.0f}\" text-anchor=\"{5}\">{4}</text>\n",
                   px, kTop - 14, height - 20, height - 6, duration(t),
                   k == 0   ? "start"
                   : k == 4 ? "end"
                            : "middle");
  }
  // Attention calls: a band above the lanes.
  fmt::format_to(out, "<text x=\"4\" y=\"{:.0f}\">attention calls</text>\n", kTop - 18);
  std::map<std::int32_t, std::pair<std::int64_t, std::int64_t>> calls;  // call -> first start, last end
  for (const Bar& b : bars) {
    const std::int32_t c = a.attention_calls.call_of[b.activity];
    if (c == kNone) continue;
    auto [it, fresh] = calls.try_emplace(c, b.ts, b.ts + b.dur);
    if (!fresh) {
      it->second.first = std::min(it->second.first, b.ts);
      it->second.second = std::max(it->second.second, b.ts + b.dur);
    }
  }
  for (const auto& [c, range] : calls) {
    const AttentionCall& call = a.attention_calls.calls[static_cast<std::size_t>(c)];
    fmt::format_to(out,
                   "<rect class=\"attention-call\" x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"8\" "
                   "fill=\"#1f77b4\" fill-opacity=\"0.35\"><title>{} {}: {} kernels, {}</title></rect>\n",
                   x(range.first), kTop - 28, std::max(0.8, x(range.second) - x(range.first)), to_string(call.impl),
                   to_string(call.pass), call.kernels, duration(static_cast<double>(call.kernel_ns)));
  }
  for (std::size_t r = 0; r < row_labels.size(); ++r)
    fmt::format_to(out, "<text x=\"4\" y=\"{:.0f}\">{}</text>\n", kTop + kRow * static_cast<double>(r) + 13,
                   esc(row_labels[r]));
  for (const Bar& b : bars) {
    const GpuActivity& act = acts[b.activity];
    const int row = first_row[b.stream] + b.lane;
    const double y = kTop + kRow * row + 2;
    const double w = std::max(0.6, x(b.ts + b.dur) - x(b.ts));
    const bool cuda_core = act.cls.unit == MathUnit::CudaCore;
    fmt::format_to(out,
                   "<g class=\"kernel\"><rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>{}"
                   "<title>{}\n{} - {}, at +{}{}</title></g>\n",
                   x(b.ts), y, w, kRow - 4, color(act.cls),
                   cuda_core ? fmt::format("<rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{}\" "
                                           "fill=\"url(#hatch)\"/>",
                                           x(b.ts), y, w, kRow - 4)
                             : std::string(),
                   esc(index.name(act)), unit_text(act.cls), duration(static_cast<double>(b.dur)),
                   duration(static_cast<double>(b.ts - t0)),
                   a.attention_calls.in_attention(b.activity) ? " (attention)" : "");
  }
  s += "</svg>\n";
  return s;
}

std::string legend() {
  std::string s = "<p class=\"legend\">";
  const std::pair<std::string_view, std::string_view> items[] = {{"#2ca02c", "GEMM on tensor cores"},
                                                                 {"#d62728", "GEMM on CUDA cores (FP32 FFMA)"},
                                                                 {"#1f77b4", "fused attention"},
                                                                 {"#9467bd", "softmax"},
                                                                 {"#ff7f0e", "elementwise"},
                                                                 {"#8c564b", "reduction"},
                                                                 {"#e377c2", "copy / cast"},
                                                                 {"#bcbd22", "fill / mask"},
                                                                 {"#7f7f7f", "memcpy"},
                                                                 {"#17becf", "other"}};
  for (const auto& [c, what] : items)
    fmt::format_to(std::back_inserter(s), "<span><i style=\"background:{}\"></i>{}</span>", c, what);
  s += " <span class=\"muted\">Gaps between bars: the GPU idle. Hover a bar for its kernel.</span></p>\n";
  return s;
}

// Horizontal bars against the step: GPU busy, attention, each finding's cost.
std::string causes_svg(const Analysis& a, const GroupStats& g) {
  const double n = static_cast<double>(std::max<std::size_t>(1, g.group.instances.size()));
  struct Row {
    std::string label;
    double ns;
    std::string_view color;
  };
  std::vector<Row> rows{{"GPU busy", static_cast<double>(g.busy_ns) / n, "#555"},
                        {"attention", static_cast<double>(g.attention_ns) / n, "#1f77b4"}};
  for (const Finding& f : a.findings)
    if (f.group == g.group.name)
      rows.push_back({fmt::format("{} ({})", f.id, to_string(f.scope)), static_cast<double>(f.time_ns) / n,
                      f.severity == Severity::High     ? "#c0392b"
                      : f.severity == Severity::Medium ? "#e67e22"
                                                       : "#7f8c8d"});
  const double full = std::max(rows[0].ns, 1.0);
  constexpr double kLeft = 230, kWidth = 1080, kRow = 22;
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "<svg class=\"causes\" viewBox=\"0 0 {0} {1:.0f}\" style=\"width:100%;max-width:{0}px\">\n",
                 kWidth, kRow * static_cast<double>(rows.size()) + 6);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = kRow * static_cast<double>(i) + 3;
    const double w = std::max(1.0, (kWidth - kLeft - 160) * std::min(rows[i].ns / full, 1.0));
    fmt::format_to(
        out,
        "<text x=\"4\" y=\"{0:.0f}\">{1}</text><rect x=\"{2}\" y=\"{3:.0f}\" width=\"{4:.1f}\" height=\"15\" "
        "fill=\"{5}\"/><text x=\"{6:.1f}\" y=\"{0:.0f}\">{7} ({8})</text>\n",
        y + 12, esc(rows[i].label), kLeft, y, w, rows[i].color, kLeft + w + 6, duration(rows[i].ns),
        percent(rows[i].ns / full));
  }
  s += "</svg>\n";
  return s;
}

void attention_table(std::string& s, const GroupStats& g) {
  auto out = std::back_inserter(s);
  s += "<table class=\"attention\"><tr><th>implementation</th><th>pass</th><th class=\"n\">calls</th>"
       "<th class=\"n\">kernels / call</th><th class=\"n\">ms</th><th class=\"n\">fused ms (est.)</th>"
       "<th>precision</th><th>kernel / shape</th></tr>\n";
  for (const report::AttentionRow& r : report::attention_rows(g))  // the text report's rows (a phase for a pass)
    fmt::format_to(out,
                   "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
                   "class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>\n",
                   r.impl, r.pass, r.calls, r.kernels_per_call, r.ms, r.fused_ms, r.precision,
                   esc(r.what.empty() ? "-" : r.what));
  s += "</table>\n";
  for (const std::string& line : report::attention_notes(g)) fmt::format_to(out, "<p>{}</p>\n", esc(line));
}

// The finding's element id: id, pass (unfused-attention has one per pass) and scope; a
// further one of the same in another region group gets a number.
std::string finding_anchor(const Finding& f, std::map<std::string, int>& seen) {
  std::string anchor = fmt::format("finding-{}{}{}-{}", f.id, f.pass ? "-" : "",
                                   f.pass ? to_string(*f.pass) : std::string_view(), to_string(f.scope));
  const int n = ++seen[anchor];
  if (n > 1) anchor += fmt::format("-{}", n);
  return anchor;
}

void finding_article(std::string& s, const Analysis& a, const Finding& f, const std::string& anchor) {
  const auto group =
      std::find_if(a.groups.begin(), a.groups.end(), [&](const GroupStats& g) { return g.group.name == f.group; });
  const std::size_t n = group == a.groups.end() ? 1 : std::max<std::size_t>(1, group->group.instances.size());
  auto out = std::back_inserter(s);
  fmt::format_to(out,
                 "<article class=\"finding\" id=\"{9}\"><h3><span class=\"sev sev-{2}\">{2}</span>"
                 "<code>{0}</code> ({1}): {3} ms per {4} ({5} of its {10}, in {6} of {7})</h3>\n<p>{8}</p>\n",
                 esc(f.id), to_string(f.scope), to_string(f.severity), ms(f.time_ns / static_cast<std::int64_t>(n)),
                 esc(f.group), percent(f.share), f.instances, n, esc(f.title), anchor,
                 f.wall ? "wall time" : "GPU time");
  if (!f.detail.empty()) fmt::format_to(out, "<p>{}</p>\n", esc(f.detail));
  if (!f.evidence.empty()) {
    s += "<table class=\"evidence\"><tr><th class=\"n\">count</th><th class=\"n\">ms</th><th>evidence</th></tr>\n";
    for (const Evidence& e : f.evidence)
      fmt::format_to(out, "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td><code>{}</code></td></tr>\n",
                     e.count > 0 ? std::to_string(e.count) : "", e.total_ns > 0 ? ms(e.total_ns) : "", esc(e.what));
    s += "</table>\n";
  }
  if (!f.fix.empty()) fmt::format_to(out, "<p><b>Fix</b></p><pre class=\"fix\"><code>{}</code></pre>\n", esc(f.fix));
  if (f.after_ns >= 0)
    fmt::format_to(out, "<p>After the fix: ~{} ms per {} for this work.</p>\n",
                   ms(f.after_ns / static_cast<std::int64_t>(n)), esc(f.group));
  s += "</article>\n";
}

// doctor --replay's measured savings: one table per shape.
void replay_section(std::string& s, const Replay& r) {
  auto out = std::back_inserter(s);
  s += "<section id=\"replay\"><h2>Replay: measured on this machine</h2>\n";
  if (!r.no_gpu.empty())
    fmt::format_to(out, "<p>Not run: {}. Each shape's <code>attnprof bench</code> command runs it on a GPU.</p>\n",
                   esc(r.no_gpu));
  else
    fmt::format_to(out,
                   "<p class=\"muted\">GPU: {}; hot timing (back-to-back calls); saving = the stand-in's time "
                   "(or the traced time without one) minus the row's.</p>\n",
                   esc(r.device));
  for (const ReplayShape& sh : r.shapes) {
    fmt::format_to(out, "<h3>{}</h3>\n<p>{} forward call{} ({}), {:.3f} ms per call in the trace.", esc(sh.shape_text),
                   sh.traced.calls, report::plural(double(sh.traced.calls)), esc(sh.traced.implementations),
                   sh.traced_ms);
    if (sh.backward_calls > 0)
      fmt::format_to(out, " {} backward call{}, {:.3f} ms per call; saving/step covers both passes.", sh.backward_calls,
                     report::plural(double(sh.backward_calls)), sh.traced_backward_ms);
    if (!sh.problem.empty()) {
      fmt::format_to(out, " Not replayed: {}.</p>\n", esc(sh.problem));
      continue;
    }
    fmt::format_to(out, " Shape from {}.</p>\n", esc(sh.source));
    const std::string moved = report::replay_bytes_per_dtype(sh);  // a shape that reads a KV cache
    if (!moved.empty() && sh.backward_calls == 0)
      fmt::format_to(
          out,
          "<p>Memory-bound (reads a KV cache): {} a call (q, K, V and the output once); the note gives "
          "each row's bandwidth{}.</p>\n",
          esc(moved),
          r.peak_tb_per_s > 0 ? fmt::format(" and its share of the GPU's {:g} TB/s", r.peak_tb_per_s) : std::string());
    s += "<table><tr><th>implementation</th><th>dtype</th><th class=\"n\">ms/call</th><th class=\"n\">bwd "
         "ms/call</th><th class=\"n\">saving/call</th><th class=\"n\">saving/step</th><th>note</th></tr>\n";
    const auto num = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : std::string(); };
    fmt::format_to(out,
                   "<tr><td>traced</td><td>{}</td><td class=\"n\">{:.3f}</td><td class=\"n\">{}</td><td></td><td>"
                   "</td><td>{}</td></tr>\n",
                   esc(sh.dtype), sh.traced_ms,
                   sh.backward_calls > 0 ? fmt::format("{:.3f}", sh.traced_backward_ms) : std::string(),
                   esc(sh.traced.implementations));
    for (const ReplayRow& row : sh.rows) {
      std::optional<double> saving = row.saving_ms;  // per call: forward, and backward where measured
      if (saving && row.backward_saving_ms) *saving += *row.backward_saving_ms;
      std::string note = row.why_not + (row.why_not.empty() || row.backward_why_not.empty() ? "" : "; ") +
                         (row.backward_why_not.empty() ? std::string() : "backward: " + row.backward_why_not);
      if (row.tb_per_s)
        note += fmt::format(
            "{}{:.2f} TB/s{}", note.empty() ? "" : "; ", *row.tb_per_s,
            row.bandwidth_share ? fmt::format(" ({:.0f}% of peak)", 100 * *row.bandwidth_share) : std::string());
      fmt::format_to(out,
                     "<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
                     "class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                     esc(row.impl), row.own ? " (stand-in)" : "", esc(row.dtype), num(row.ms), num(row.backward_ms),
                     num(saving), num(row.saving_step_ms), esc(note));
    }
    s += "</table>\n";
    if (!sh.carries_over.empty()) fmt::format_to(out, "<p>{}.</p>\n", esc(sh.carries_over));
    if (!sh.backward_carries_over.empty()) fmt::format_to(out, "<p>{}.</p>\n", esc(sh.backward_carries_over));
    fmt::format_to(out, "<p><b>Fix:</b> {}</p>\n", esc(sh.fix));
    if (!r.no_gpu.empty()) fmt::format_to(out, "<pre>{}</pre>\n", esc(sh.command));
  }
  s += "</section>\n";
}

// The step on the wall clock and what each fix is worth in it: the page's first lines.
void step_summary(std::string& s, const Analysis& a) {
  if (a.step_group < 0) return;
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  const StepTime* st = g.steps.median_step();
  if (st == nullptr || st->span_ns <= 0) return;
  auto out = std::back_inserter(s);
  std::string split;
  for (int c = 0; c < kIdleCauses; ++c)
    if (const std::int64_t v = st->idle[static_cast<std::size_t>(c)]; v > 0 && v * 50 >= st->idle_ns)
      split += fmt::format("{}{} {} ms", split.empty() ? "" : ", ", to_string(static_cast<IdleCause>(c)), ms(v));
  fmt::format_to(out,
                 "<p class=\"headline\">Step: <b>{} ms</b> per {} (median of {}), GPU busy {} ms ({}), idle {} ms"
                 "{}: <b>{}-bound</b>.</p>\n",
                 ms(st->span_ns), esc(g.group.name), g.group.instances.size(), ms(st->busy_ns),
                 percent(static_cast<double>(st->busy_ns) / static_cast<double>(st->span_ns)), ms(st->idle_ns),
                 split.empty() ? "" : fmt::format(" ({})", esc(split)), to_string(st->bound));
  for (const std::string& u : g.steps.unknowns) fmt::format_to(out, "<p class=\"muted\">{}</p>\n", esc(u));
  if (a.fixes.empty()) return;
  s += "<table><tr><th>#</th><th>fix</th><th>step ms saved</th><th>GPU ms saved</th><th>resolves</th>"
       "<th>basis</th></tr>\n";
  for (std::size_t i = 0; i < a.fixes.size(); ++i) {
    const Fix& f = a.fixes[i];
    std::string ids;
    for (const std::string& id : f.findings) ids += (ids.empty() ? "" : ", ") + id;
    const std::string step = f.id == "gpu-idle" ? "up to " + ms(f.step_ns)
                             : f.step_low_ns != f.step_high_ns
                                 ? fmt::format("{} ({}&ndash;{})", ms(f.step_ns), ms(f.step_low_ns), ms(f.step_high_ns))
                                 : ms(f.step_ns);
    fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"muted\">{}</td></tr>\n",
                   i + 1, esc(f.title), step, ms(f.gpu_ns), esc(ids), esc(f.basis));
  }
  s += "</table>\n";
}

}  // namespace

std::string html_report(const Analysis& a, const TraceIndex& index, const Replay* replay) {
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "<header><h1>attnprof doctor</h1><p class=\"muted\">{}<br>GPU: {}</p></header>\n", esc(a.label),
                 a.device.name.empty() ? std::string("not recorded in the trace")
                                       : fmt::format("{} (sm_{}{}, {} SMs)", esc(a.device.name), a.device.compute_major,
                                                     a.device.compute_minor, a.device.num_sms));
  if (!a.unsupported.empty()) {
    fmt::format_to(out, "<p class=\"headline\">Not diagnosed: {}.</p>\n", esc(a.unsupported));
    return page("attnprof doctor: " + a.label, s);
  }
  if (a.gpu_kernels == 0) {
    s += "<p class=\"headline\">No GPU kernels in this trace: record one with torch.profiler (CPU and CUDA "
         "activities) or under <code>attnprof record</code>.</p>\n";
    return page("attnprof doctor: " + a.label, s);
  }

  s += "<section id=\"summary\"><h2>Summary</h2>\n";
  step_summary(s, a);
  for (const GroupStats& g : a.groups) {
    const double n = static_cast<double>(std::max<std::size_t>(1, g.group.instances.size()));
    int calls = 0;
    std::int64_t fused = 0;
    bool estimated = false;
    for (const AttentionSummary& x : g.attention) {
      calls += x.calls;
      fused += x.fused_ns >= 0 ? x.fused_ns : x.kernel_ns;
      estimated |= x.fused_ns >= 0;
    }
    fmt::format_to(out,
                   "<p class=\"headline\">Region <b>'{}'</b>, {} instance{} ({}): {:.1f} kernels and {} ms of GPU "
                   "work per instance. Attention: <b>{} ms ({})</b> in {:g} call{} per instance{}.</p>\n",
                   esc(g.group.name), g.group.instances.size(), report::plural(double(g.group.instances.size())),
                   esc(g.group.source), g.kernels_per_instance,
                   ms(static_cast<std::int64_t>(static_cast<double>(g.busy_ns) / n)),
                   ms(static_cast<std::int64_t>(static_cast<double>(g.attention_ns) / n)),
                   percent(g.busy_ns > 0 ? static_cast<double>(g.attention_ns) / static_cast<double>(g.busy_ns) : -1),
                   calls / n, calls / n == 1.0 ? "" : "s",
                   estimated ? fmt::format("; as fused kernels ~{} ms (estimated)",
                                           ms(static_cast<std::int64_t>(static_cast<double>(fused) / n)))
                             : "");
  }
  fmt::format_to(
      out, "<p>{} finding{}{}</p>\n</section>\n", a.findings.size(), report::plural(double(a.findings.size())),
      a.findings.empty() ? ": nothing here looks slower than it needs to be." : ", below by the time they cost.");

  s += "<section id=\"attention\"><h2>Attention</h2>\n";
  for (const GroupStats& g : a.groups) {
    fmt::format_to(out, "<h3>Per '{}'</h3>\n", esc(g.group.name));
    if (g.attention.empty())
      s += "<p>No attention found (no fused attention kernel, no matmul-softmax-matmul chain).</p>\n";
    else
      attention_table(s, g);
  }
  s += "</section>\n";

  // The hatch the timelines draw CUDA-core GEMMs with, defined once for the page.
  s += "<section id=\"timeline\"><h2>Timeline</h2>\n<svg width=\"0\" height=\"0\" style=\"position:absolute\" "
       "aria-hidden=\"true\"><defs><pattern id=\"hatch\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"4\" fill=\"#fff\" fill-opacity=\"0.55\"/>"
       "</pattern></defs></svg>\n" +
       legend();
  for (const GroupStats& g : a.groups) {
    if (g.group.instances.empty()) continue;
    const RegionInstance& inst = g.group.instances[median_instance(g)];
    std::string note;
    const std::string svg = timeline_svg(a, index, inst.activities, note);
    fmt::format_to(out, "<h3>One '{}': {} (the median by GPU busy time) {}</h3>\n{}", esc(g.group.name), esc(inst.name),
                   note, svg.empty() ? "<p>No GPU work in it.</p>\n" : svg);
    // One attention call of that instance, alone on its own time axis.
    for (const std::size_t i : inst.activities) {
      const std::int32_t c = a.attention_calls.call_of[i];
      if (c == kNone) continue;
      const AttentionCall& call = a.attention_calls.calls[static_cast<std::size_t>(c)];
      if (call.activities.size() == inst.activities.size()) {
        s += "<p class=\"muted\">This instance is one attention call: the timeline above is that call.</p>\n";
        break;
      }
      std::string call_note;
      const std::string call_svg = timeline_svg(a, index, call.activities, call_note);
      fmt::format_to(out, "<h3>One attention call in it: {} {}, {} kernels, {} {}</h3>\n{}", to_string(call.impl),
                     to_string(call.pass), call.kernels, duration(static_cast<double>(call.kernel_ns)), call_note,
                     call_svg);
      break;
    }
  }
  s += "</section>\n";

  s += "<section id=\"causes\"><h2>Time by cause</h2>\n<p class=\"muted\">Per instance, against its GPU busy "
       "time. Findings can overlap (one kernel can have two causes), so they need not add up.</p>\n";
  for (const GroupStats& g : a.groups) fmt::format_to(out, "<h3>'{}'</h3>\n{}", esc(g.group.name), causes_svg(a, g));
  s += "</section>\n";

  s += "<section id=\"findings\"><h2>Findings</h2>\n";
  if (a.findings.empty()) s += "<p>No findings: nothing here looks slower than it needs to be.</p>\n";
  std::map<std::string, int> anchors;
  for (const Finding& f : a.findings) finding_article(s, a, f, finding_anchor(f, anchors));
  s += "</section>\n";
  if (replay) replay_section(s, *replay);

  s += "<section id=\"kernels\"><h2>Kernels</h2>\n<table><tr><th class=\"n\">count</th><th class=\"n\">total "
       "ms</th><th>unit</th><th>kernel</th></tr>\n";
  for (std::size_t i = 0; i < a.kernels.size() && i < 30; ++i) {
    const KernelSummary& k = a.kernels[i];
    fmt::format_to(out, "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td><code>{}</code></td></tr>\n",
                   k.count, ms(k.total_ns), esc(unit_text(k.cls)), esc(k.name));
  }
  s += "</table>\n";
  if (a.kernels.size() > 30)
    fmt::format_to(out, "<p class=\"muted\">... {} more (--json lists all)</p>\n", a.kernels.size() - 30);
  s += "</section>\n";
  return page("attnprof doctor: " + a.label, s);
}

}  // namespace attnprof
