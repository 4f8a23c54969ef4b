// Text, Markdown and JSON forms of a TraceDiff. Numbers are per step.
#include "report/diff_report.h"

#include <cmath>
#include <iterator>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/json.h"
#include "report/format.h"

namespace attnprof {
namespace {

using report::change;
using report::fit;  // the text form cuts titles; --json and --markdown carry them whole

std::string ms_or_dash(double v) { return v < 0 ? "-" : fmt::format("{:.3f}", v); }

std::string count(double v) {
  return std::fabs(v - std::round(v)) < 0.05 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v);
}

std::string category_note(const CategoryChange& c) {
  if (c.before_kernels == 0 && c.after_kernels > 0) return "added";
  if (c.before_kernels > 0 && c.after_kernels == 0) return "removed";
  return "";
}

// "'fwd'", or "the whole trace": a step's name in a sentence.
std::string step_words(const std::string& step) { return step == "whole trace" ? "the whole trace" : "'" + step + "'"; }

std::string steps_line(const TraceDiff& d) {
  return fmt::format("{} x {} -> {} x {}", d.before.steps, step_words(d.before.step), d.after.steps,
                     step_words(d.after.step));
}

// What a reader must know before trusting the numbers: a trace not diagnosed, steps that differ.
}  // namespace

std::vector<std::string> diff_caveats(const TraceDiff& d) {
  std::vector<std::string> out;
  for (const TraceSide* s : {&d.before, &d.after}) {
    if (!s->unsupported.empty())
      out.push_back(fmt::format("{} was not diagnosed: {}", s->label, s->unsupported));
    else if (s->gpu_kernels == 0)
      out.push_back(fmt::format("{} has no GPU kernels", s->label));
  }
  if (!d.steps_comparable)
    out.push_back(
        fmt::format("the steps differ ({} -> {}): per-step numbers compare unlike things; attention per "
                    "call: {:.3f} -> {:.3f} ms",
                    step_words(d.before.step), step_words(d.after.step), d.before.attention_ms_per_call,
                    d.after.attention_ms_per_call));
  return out;
}

namespace {

using report::md;

std::string verdict_line(const DiffGate& g) {
  if (!g.verdict.regression)
    return fmt::format(
        "Gate (regression:{:g}, on {}): pass: {} did not grow by more than {:g}%, and no new attention "
        "finding",
        g.max_growth_pct, to_string(g.verdict.metric),
        g.verdict.metric == GateMetric::StepTime ? "the median step" : "attention time", g.max_growth_pct);
  std::string s =
      fmt::format("Gate (regression:{:g}, on {}): REGRESSION", g.max_growth_pct, to_string(g.verdict.metric));
  for (const std::string& r : g.verdict.reasons) fmt::format_to(std::back_inserter(s), "\n  {}", r);
  return s;
}

// "9.690 -> 9.350 ms (-3.5%), cpu-bound -> cpu-bound", or "" when a trace cannot tell.
std::string step_change(const TraceDiff& d) {
  if (d.before.step_span_ms <= 0 || d.after.step_span_ms <= 0) return "";
  return fmt::format("{:.3f} -> {:.3f} ms ({}), {}-bound -> {}-bound", d.before.step_span_ms, d.after.step_span_ms,
                     change(d.before.step_span_ms, d.after.step_span_ms), d.before.step_bound, d.after.step_bound);
}

}  // namespace

std::string text_diff(const TraceDiff& d, const std::optional<DiffGate>& gate) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "attnprof diff: {} -> {}\n", d.before.label, d.after.label);
  for (const std::string& c : diff_caveats(d)) fmt::format_to(out, "Note: {}\n", c);
  fmt::format_to(out, "Steps: {} (numbers below are per step)\n", steps_line(d));
  if (const std::string sc = step_change(d); !sc.empty()) fmt::format_to(out, "Median step: {}\n", sc);
  fmt::format_to(out, "Attention: {} -> {} ms ({}); GPU busy: {} -> {} ms ({})\n",
                 ms_or_dash(d.before.attention_ms_per_step), ms_or_dash(d.after.attention_ms_per_step),
                 change(d.before.attention_ms_per_step, d.after.attention_ms_per_step),
                 ms_or_dash(d.before.busy_ms_per_step), ms_or_dash(d.after.busy_ms_per_step),
                 change(d.before.busy_ms_per_step, d.after.busy_ms_per_step));

  fmt::format_to(out, "\nAttention calls\n");
  if (d.attention.empty())
    fmt::format_to(out, "  none in either trace\n");
  else
    fmt::format_to(out, "  {:<9} {:<7} {:<32} {:>10} {:>12} {:>9} {:>9}\n", "pass", "trace", "implementation",
                   "calls/step", "kernels/call", "ms/call", "ms/step");
  for (const AttentionChange& c : d.attention) {
    bool first = true;
    for (const auto& [which, side] : {std::pair{"before", &c.before}, std::pair{"after", &c.after}}) {
      const std::string pass = first ? std::string(to_string(c.pass)) : "";
      first = false;
      if (!side->present) {
        fmt::format_to(out, "  {:<9} {:<7} {}\n", pass, which, "(none)");
        continue;
      }
      fmt::format_to(out, "  {:<9} {:<7} {:<32} {:>10} {:>12.1f} {:>9.3f} {:>9.3f}\n", pass, which,
                     side->implementation, count(side->calls_per_step), side->kernels_per_call, side->ms_per_call,
                     side->ms_per_step);
    }
  }

  fmt::format_to(out, "\nFindings (ms per step)\n");
  if (d.findings.empty()) fmt::format_to(out, "  none in either trace\n");
  for (const FindingChange& f : d.findings)
    fmt::format_to(out, "  {:<9} {:<18} {:<9} {:>8} -> {:<8} {}\n", to_string(f.status), f.id, to_string(f.scope),
                   ms_or_dash(f.before_ms), ms_or_dash(f.after_ms), fit(f.title, 40));

  fmt::format_to(out, "\nKernels by category (per step)\n");
  fmt::format_to(out, "  {:<16} {:^20} {:^23}\n", "category", "kernels", "ms");
  for (const CategoryChange& c : d.categories)
    fmt::format_to(out, "  {:<16} {:>8} -> {:<8} {:>9.3f} -> {:<9.3f} {}\n", to_string(c.category),
                   count(c.before_kernels), count(c.after_kernels), c.before_ms, c.after_ms, category_note(c));

  fmt::format_to(out, "\nRegions (per instance)\n");
  fmt::format_to(out, "  {:<24} {:^22} {:^20} {:^20}\n", "region", "instances", "kernels", "busy ms");
  for (const RegionChange& r : d.regions)
    fmt::format_to(out, "  {:<24} {:>9} -> {:<9} {:>8} -> {:<8} {:>8.3f} -> {:<8.3f}\n", r.name, r.before_instances,
                   r.after_instances, count(r.before_kernels), count(r.after_kernels), r.before_busy_ms,
                   r.after_busy_ms);
  if (gate) fmt::format_to(out, "\n{}\n", verdict_line(*gate));
  return o;
}

std::string markdown_diff(const TraceDiff& d, const std::optional<DiffGate>& gate) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "### attnprof diff: {} → {}\n\n", md(d.before.label), md(d.after.label));
  if (gate)
    fmt::format_to(
        out, "**{}**\n\n",
        gate->verdict.regression ? "Regression" : fmt::format("No regression (gate {:g}%)", gate->max_growth_pct));
  if (gate && gate->verdict.regression) {
    for (const std::string& r : gate->verdict.reasons) fmt::format_to(out, "- {}\n", md(r));
    fmt::format_to(out, "\n");
  }
  for (const std::string& c : diff_caveats(d)) fmt::format_to(out, "> Note: {}\n\n", md(c));
  if (const std::string sc = step_change(d); !sc.empty()) fmt::format_to(out, "Median step: **{}**.\n\n", md(sc));
  fmt::format_to(
      out, "Steps: {}. Per step: attention **{} → {} ms** ({}), GPU busy {} → {} ms ({}).\n\n", md(steps_line(d)),
      ms_or_dash(d.before.attention_ms_per_step), ms_or_dash(d.after.attention_ms_per_step),
      change(d.before.attention_ms_per_step, d.after.attention_ms_per_step), ms_or_dash(d.before.busy_ms_per_step),
      ms_or_dash(d.after.busy_ms_per_step), change(d.before.busy_ms_per_step, d.after.busy_ms_per_step));
  if (!d.attention.empty()) {
    fmt::format_to(out, "| pass | before | after | kernels/call | ms/call |\n| --- | --- | --- | --- | --- |\n");
    for (const AttentionChange& c : d.attention) {
      const auto impl = [](const AttentionSide& s) { return s.present ? md(s.implementation) : std::string("(none)"); };
      fmt::format_to(out, "| {} | {} | {} | {} → {} | {} → {} |\n", to_string(c.pass), impl(c.before), impl(c.after),
                     c.before.present ? fmt::format("{:.1f}", c.before.kernels_per_call) : "-",
                     c.after.present ? fmt::format("{:.1f}", c.after.kernels_per_call) : "-",
                     c.before.present ? fmt::format("{:.3f}", c.before.ms_per_call) : "-",
                     c.after.present ? fmt::format("{:.3f}", c.after.ms_per_call) : "-");
    }
    fmt::format_to(out, "\n");
  }
  if (!d.findings.empty()) {
    fmt::format_to(out, "| finding | status | ms/step before → after | |\n| --- | --- | --- | --- |\n");
    for (const FindingChange& f : d.findings)
      fmt::format_to(out, "| `{}` ({}) | {} | {} → {} | {} |\n", f.id, to_string(f.scope), to_string(f.status),
                     ms_or_dash(f.before_ms), ms_or_dash(f.after_ms), md(f.title));
    fmt::format_to(out, "\n");
  }
  std::string added, removed;
  for (const CategoryChange& c : d.categories) {
    const std::string note = category_note(c);
    if (note == "added") added += (added.empty() ? "" : ", ") + std::string(to_string(c.category));
    if (note == "removed") removed += (removed.empty() ? "" : ", ") + std::string(to_string(c.category));
  }
  if (!added.empty() || !removed.empty())
    fmt::format_to(out, "Kernel categories added: {}; removed: {}.\n", added.empty() ? "none" : added,
                   removed.empty() ? "none" : removed);
  return o;
}

std::string json_diff(const TraceDiff& d, const std::optional<DiffGate>& gate) {
  std::string o;
  JsonWriter j(o);
  j.begin_object();
  j.num("schema_version", kDiffJsonSchemaVersion);
  for (const auto& [key, s] : {std::pair{"before", &d.before}, std::pair{"after", &d.after}}) {
    j.begin_object(key);
    j.str("trace", s->label);
    j.str("step", s->step);
    j.num("steps", s->steps);
    j.real("busy_ms_per_step", s->busy_ms_per_step, 4);
    j.real("attention_ms_per_step", s->attention_ms_per_step, 4);
    if (s->step_span_ms > 0) {
      j.real("step_span_ms", s->step_span_ms, 4);
      j.real("step_busy_ms", s->step_busy_ms, 4);
      j.str("step_bound", s->step_bound);
    } else {
      j.null("step_span_ms");
      j.null("step_busy_ms");
      j.null("step_bound");
    }
    j.str_or_null("unsupported", s->unsupported);
    j.end_object();
  }
  j.begin_array("attention");
  for (const AttentionChange& c : d.attention) {
    j.begin_object();
    j.str("pass", to_string(c.pass));
    for (const auto& [key, s] : {std::pair{"before", &c.before}, std::pair{"after", &c.after}}) {
      if (!s->present) {
        j.null(key);
        continue;
      }
      j.begin_object(key);
      j.str("implementation", s->implementation);
      j.real("calls_per_step", s->calls_per_step, 2);
      j.real("kernels_per_call", s->kernels_per_call, 2);
      j.real("ms_per_call", s->ms_per_call, 4);
      j.real("ms_per_step", s->ms_per_step, 4);
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
  j.begin_array("findings");
  for (const FindingChange& f : d.findings) {
    j.begin_object();
    j.str("id", f.id);
    j.str("scope", to_string(f.scope));
    j.str("status", to_string(f.status));
    for (const auto& [key, v] :
         {std::pair{"before_ms_per_step", f.before_ms}, std::pair{"after_ms_per_step", f.after_ms}})
      if (v < 0)
        j.null(key);
      else
        j.real(key, v, 4);
    j.str("title", f.title);
    j.end_object();
  }
  j.end_array();
  j.begin_array("kernel_categories");
  for (const CategoryChange& c : d.categories) {
    j.begin_object();
    j.str("category", to_string(c.category));
    j.real("kernels_before", c.before_kernels, 2);
    j.real("kernels_after", c.after_kernels, 2);
    j.real("ms_before", c.before_ms, 4);
    j.real("ms_after", c.after_ms, 4);
    j.end_object();
  }
  j.end_array();
  j.begin_array("regions");
  for (const RegionChange& r : d.regions) {
    j.begin_object();
    j.str("name", r.name);
    j.num("instances_before", r.before_instances);
    j.num("instances_after", r.after_instances);
    j.real("kernels_before", r.before_kernels, 2);
    j.real("kernels_after", r.after_kernels, 2);
    j.real("busy_ms_before", r.before_busy_ms, 4);
    j.real("busy_ms_after", r.after_busy_ms, 4);
    j.end_object();
  }
  j.end_array();
  gate_json(j, gate);
  j.end_object();
  o += '\n';
  return o;
}

void gate_json(JsonWriter& j, const std::optional<DiffGate>& gate) {
  if (!gate) {
    j.null("gate");
    return;
  }
  j.begin_object("gate");
  j.real("max_growth_pct", gate->max_growth_pct, 2);
  j.str("metric", to_string(gate->verdict.metric));
  j.boolean("regression", gate->verdict.regression);
  j.begin_array("reasons");
  for (const std::string& r : gate->verdict.reasons) j.str({}, r);
  j.end_array();
  j.end_object();
}

}  // namespace attnprof
