// The terminal report: per-region table, top kernels, findings ranked by time.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include <fmt/format.h>

#include "analysis/rules/rule.h"
#include "report/format.h"
#include "report/replay_report.h"
#include "report/report.h"
#include "report/summary_text.h"

namespace attnprof {
namespace {

// A count per instance: "3" when whole, else one decimal ("0.7").
std::string count_text(int count, std::size_t instances) {
  if (instances <= 1 || count % static_cast<int>(instances) == 0)
    return fmt::format("{}", count / static_cast<int>(std::max<std::size_t>(1, instances)));
  return fmt::format("{:.1f}", static_cast<double>(count) / static_cast<double>(instances));
}

using report::append_wrapped;
using report::fit;
using report::ms;
using report::percent;

constexpr std::size_t kWidth = 100;  // the report fits a 100-column terminal

// A kernel name as the tables show it: no return type, parameters or the
// namespaces every ATen kernel repeats.
std::string display_name(std::string_view name) {
  std::string n = short_kernel_name(name);
  for (std::string_view noise : {"at::native::", "(anonymous namespace)::"})
    for (auto at = n.find(noise); at != std::string::npos; at = n.find(noise, at)) n.erase(at, noise.size());
  return n;
}

// "tensor-core bf16" as "TC bf16": the unit column's short form (legend under the table).
std::string unit_precision(const KernelClass& c) {
  std::string_view unit;
  switch (c.unit) {
    case MathUnit::TensorCore:
      unit = "TC";
      break;
    case MathUnit::CudaCore:
      unit = "CUDA";
      break;
    case MathUnit::Unknown:
      unit = "?";
      break;
    case MathUnit::None:
      return "-";
  }
  if (c.precision == Precision::Unknown) return std::string(unit);
  return fmt::format("{} {}", unit, to_string(c.precision));
}

void regions_section(std::string& out, const GroupStats& g) {
  auto o = std::back_inserter(out);
  out += '\n';
  append_wrapped(out,
                 fmt::format("Region '{}': {} instance{} ({})", g.group.name, g.group.instances.size(),
                             report::plural(double(g.group.instances.size())), g.group.source),
                 0);
  fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", "region", "kernels", "memcpy", "memset",
                 "GPU busy ms", "span ms", "idle ms", "tensor-core");
  constexpr std::size_t kShown = 12;
  for (std::size_t i = 0; i < g.instances.size(); ++i) {
    if (i == kShown) {
      fmt::format_to(o, "  ... {} more\n", g.instances.size() - kShown);
      break;
    }
    const InstanceStats& s = g.instances[i];
    const double tc = s.matmul_ns > 0 ? static_cast<double>(s.tensor_core_ns) / static_cast<double>(s.matmul_ns) : -1;
    std::string name = g.group.instances[i].name;
    if (name.size() > 24) name = name.substr(0, 21) + "...";
    fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", name, s.kernels, s.memcpys, s.memsets,
                   ms(s.busy_ns), ms(s.span_ns), ms(s.idle_ns), percent(tc));
  }
  if (g.instances.size() > 1) {
    const auto n = static_cast<double>(g.instances.size());
    // A count per instance: exact when every instance has the same, else the mean.
    auto per_instance = [&](int InstanceStats::* count) {
      int lo = g.instances.front().*count, hi = lo;
      double sum = 0;
      for (const auto& s : g.instances) {
        lo = std::min(lo, s.*count);
        hi = std::max(hi, s.*count);
        sum += s.*count;
      }
      return lo == hi ? fmt::format("{}", lo) : fmt::format("{:.1f}", sum / n);
    };
    std::int64_t span = 0, idle = 0;
    for (const auto& s : g.instances) {
      span += s.span_ns;
      idle += s.idle_ns;
    }
    fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", fit("per " + g.group.name, 24),
                   per_instance(&InstanceStats::kernels), per_instance(&InstanceStats::memcpys),
                   per_instance(&InstanceStats::memsets),
                   ms(static_cast<std::int64_t>(static_cast<double>(g.busy_ns) / n)),
                   ms(static_cast<std::int64_t>(static_cast<double>(span) / n)),
                   ms(static_cast<std::int64_t>(static_cast<double>(idle) / n)), percent(g.tensor_core_share));
  }
}

// The one line a user reads first: how much of the step is attention, what
// ran it, and what it would take fused; then (table) a row per implementation and pass.
void attention_headline(std::string& out, const GroupStats& g, bool table = true) {
  auto o = std::back_inserter(out);
  append_wrapped(out, report::attention_sentence(g), 2);
  if (g.attention.empty() || !table) return;
  fmt::format_to(o, "  {:<9} {:<8} {:>5} {:>7} {:>8} {:>8} {:<9} {}\n", "attention", "pass", "calls", "kernels", "ms",
                 "fused ms", "precision", "kernel / shape");
  for (const report::AttentionRow& r : report::attention_rows(g))
    fmt::format_to(o, "  {:<9} {:<8} {:>5} {:>7} {:>8} {:>8} {:<9} {}\n", r.impl, r.pass, r.calls, r.kernels_per_call,
                   r.ms, r.fused_ms, r.precision, fit(r.what.empty() ? "-" : r.what, kWidth - 63));
  for (const std::string& line : report::attention_notes(g)) append_wrapped(out, line, 2);
}

// The first screen: what bounds the step, and what each fix is worth in it.
void step_section(std::string& out, const Analysis& a, std::size_t max_fixes = SIZE_MAX) {
  const std::string step = report::step_sentence(a);
  if (step.empty()) return;
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  out += '\n';
  append_wrapped(out, "Step: " + step, 0);
  if (const std::string idle = report::idle_sentence(a); !idle.empty()) append_wrapped(out, "idle: " + idle, 2);
  for (const std::string& u : g.steps.unknowns) append_wrapped(out, fmt::format("({})", u), 2);
  if (a.fixes.empty()) return;
  append_wrapped(
      out,
      fmt::format("Fixes, by step time saved per {} (step ms, then GPU ms; ranges where the trace cannot tell)",
                  report::step_unit(a)),
      0);
  for (std::size_t i = 0; i < a.fixes.size(); ++i) {
    if (i == max_fixes) {
      append_wrapped(out, fmt::format("({} more fix{})", a.fixes.size() - i, a.fixes.size() - i == 1 ? "" : "es"), 2);
      break;
    }
    const Fix& f = a.fixes[i];
    append_wrapped(out,
                   fmt::format("{}. step {}, GPU {} ms: {} [{}]", i + 1, report::fix_step_text(f),
                               report::signed_ms(f.gpu_ns), f.title, report::fix_findings(f)),
                   2);
  }
}

// The trace and its GPU; false when there is nothing to diagnose (said).
bool header(std::string& out, const Analysis& a) {
  auto o = std::back_inserter(out);
  fmt::format_to(o, "attnprof doctor: {}\n", a.label);
  if (!a.unsupported.empty())
    fmt::format_to(o, "GPU: {}\n", a.device.name);  // not CUDA: its "compute capability" is no sm_ number
  else if (!a.device.name.empty())
    fmt::format_to(o, "GPU: {} (sm_{}{}, {} SMs)\n", a.device.name, a.device.compute_major, a.device.compute_minor,
                   a.device.num_sms);
  else
    out += "GPU: not recorded in the trace\n";
  if (!a.unsupported.empty()) {
    out += '\n';
    append_wrapped(out, fmt::format("Not diagnosed: {}.", a.unsupported), 0);
    return false;
  }
  if (a.gpu_kernels == 0) {
    out += '\n';
    append_wrapped(out,
                   "No GPU kernels in this trace: it was recorded without CUDA activity. Record one with "
                   "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]), or run the "
                   "program under `attnprof record -o trace.json.gz -- CMD`.",
                   0);
    return false;
  }
  return true;
}

std::string text_body(const Analysis& a) {
  std::string out;
  auto o = std::back_inserter(out);
  if (!header(out, a)) return out;
  step_section(out, a);
  std::int64_t busy = 0;
  for (const GroupStats& g : a.groups) {
    regions_section(out, g);
    attention_headline(out, g);
    busy += g.busy_ns;
  }
  if (a.unassigned_activities > 0)
    fmt::format_to(o, "  ({} GPU activities ran outside these regions and are not analysed)\n",
                   a.unassigned_activities);
  if (a.launchless_activities > 0)
    fmt::format_to(o, "  ({} GPU activities were launched before the trace's window and are left out)\n",
                   a.launchless_activities);
  if (a.setup_copies.count > 0)
    append_wrapped(
        out,
        fmt::format("(set-up apart: {} host-to-device copies, {:.1f} MB, {} ms: weights and inputs being "
                    "loaded)",
                    a.setup_copies.count, static_cast<double>(a.setup_copies.bytes) / 1e6, ms(a.setup_copies.ns)),
        2);

  if (!a.kernels.empty()) {
    // One region group: per instance, the report's unit; several: totals, said so.
    const std::size_t per = a.groups.size() == 1 ? std::max<std::size_t>(1, a.groups[0].group.instances.size()) : 1;
    const bool per_step = a.groups.size() == 1;
    out += per_step ? fmt::format(
                          "\nKernels per {}, by GPU time (unit: TC tensor cores, CUDA FP32 FFMA on CUDA "
                          "cores)\n",
                          a.groups[0].group.name)
                    : "\nKernels in these regions, totals over their instances, by GPU time (unit: TC tensor cores, "
                      "CUDA FP32 FFMA on CUDA cores)\n";
    fmt::format_to(o, "  {:>6} {:>9} {:>5}  {:<13} {:<14} {}\n", "count", per_step ? "ms" : "total ms", "share", "op",
                   "unit", "kernel");
    constexpr std::size_t kShown = 15;
    constexpr std::size_t kName = kWidth - 55;
    std::vector<std::string> shown;
    for (std::size_t i = 0; i < a.kernels.size() && i < kShown; ++i) {
      const KernelSummary& k = a.kernels[i];
      std::string name = fit(display_name(k.name), kName);
      // Two kernels whose names differ only past the cut: numbered, so they do not read as one.
      const auto same = static_cast<std::size_t>(std::count(shown.begin(), shown.end(), name));
      shown.push_back(name);
      if (same > 0) name = fit(name, kName - 4) + fmt::format(" #{}", same + 1);
      const std::string_view what =
          k.cls.op == KernelOp::None || k.cls.op == KernelOp::Other ? to_string(k.cls.category) : to_string(k.cls.op);
      fmt::format_to(o, "  {:>6} {:>9} {:>5}  {:<13} {:<14} {}\n", count_text(k.count, per),
                     ms(k.total_ns / static_cast<std::int64_t>(per)),
                     percent(busy > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(busy) : -1), what,
                     unit_precision(k.cls), name);
    }
    if (a.kernels.size() > kShown)
      fmt::format_to(o, "  ... {} more kernel names (--json lists all, with full names)\n", a.kernels.size() - kShown);
  }

  if (a.findings.empty()) {
    out += "\nNo findings: nothing here looks slower than it needs to be.\n";
    return out;
  }
  out += "\nFindings, by GPU time they cost\n";
  const std::vector<int> parents = report::finding_parents(a);
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    const std::size_t n = report::finding_instances(a, f);
    const std::string where = report::finding_where(a, f);
    out += '\n';
    append_wrapped(
        out,
        fmt::format("{}. [{}] {} ({}): {} ms {}{} ({} of its {}; seen in {} of {})", i + 1, to_string(f.severity), f.id,
                    to_string(f.scope), ms(f.time_ns / static_cast<std::int64_t>(n)), where,
                    parents[i] >= 0 ? fmt::format(", part of {} (#{})",
                                                  a.findings[static_cast<std::size_t>(parents[i])].id, parents[i] + 1)
                                    : std::string(),
                    percent(f.share), f.wall ? "wall time" : "GPU time", f.instances, n),
        2);
    append_wrapped(out, f.title, 5);
    if (!f.detail.empty()) append_wrapped(out, f.detail, 5);
    if (!f.evidence.empty()) {
      // In the finding's unit: kernels and their time per instance of its region.
      out += n == 1 ? "     evidence:\n" : fmt::format("     evidence, {}:\n", where);
      for (std::size_t e = 0; e < f.evidence.size() && e < 8; ++e) {
        const Evidence& ev = f.evidence[e];
        if (ev.total_ns > 0)
          fmt::format_to(o, "       {:>5}x {:>8} ms  {}\n", count_text(ev.count, n),
                         ms(ev.total_ns / static_cast<std::int64_t>(n)), fit(display_name(ev.what), kWidth - 27));
        else
          fmt::format_to(o, "       {}\n", fit(ev.what, kWidth - 7));
      }
    }
    if (!f.fix.empty()) {
      out += "     fix:\n";
      append_wrapped(out, f.fix, 7);
    }
    if (f.after_ns >= 0)
      fmt::format_to(
          o, "     after the fix: ~{} ms {} for this work (from {} ms)\n",
          ms(f.after_ns / static_cast<std::int64_t>(n)), where,
          ms((f.id == "unfused-attention" ? f.time_ns + f.after_ns : f.time_ns) / static_cast<std::int64_t>(n)));
  }
  return out;
}

}  // namespace

std::string text_report(const Analysis& a, const Replay* replay) {
  std::string out = text_body(a);
  if (replay) report::replay_text(out, *replay);
  return out;
}

std::string text_brief(const Analysis& a) {
  std::string out;
  if (!header(out, a)) return out;
  step_section(out, a, 5);
  if (const GroupStats* lead = report::lead_group(a); lead != nullptr) {
    out += '\n';
    attention_headline(out, *lead, false);
  }
  // The findings' ids, each once (a rule fires per region group and per pass), with its count.
  std::vector<std::pair<std::string, int>> ids;
  for (const Finding& f : a.findings) {
    auto it = std::find_if(ids.begin(), ids.end(), [&](const auto& x) { return x.first == f.id; });
    if (it == ids.end())
      ids.emplace_back(f.id, 1);
    else
      ++it->second;
  }
  std::string list;
  for (const auto& [id, n] : ids)
    list += fmt::format("{}{}{}", list.empty() ? "" : ", ", id, n > 1 ? fmt::format(" ({}x)", n) : "");
  out += '\n';
  append_wrapped(out,
                 a.findings.empty() ? std::string("No findings.")
                                    : fmt::format("{} finding{}: {}. Details without --brief.", a.findings.size(),
                                                  report::plural(double(a.findings.size())), list),
                 0);
  return out;
}

}  // namespace attnprof
