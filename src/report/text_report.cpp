// The terminal report: per-region table, top kernels, findings ranked by time.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "analysis/rules/rule.h"
#include "report/report.h"

namespace attnprof {
namespace {

std::string ms(std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }

std::string percent(double share) {
  if (share < 0) return "-";
  return fmt::format("{:.0f}%", 100.0 * share);
}

// Wraps `text` at `width` columns, every line indented by `indent`.
void append_wrapped(std::string& out, std::string_view text, std::size_t indent, std::size_t width = 100) {
  std::size_t col = 0;
  const std::string pad(indent, ' ');
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    if (col == 0) {
      out += pad;
      col = indent;
    } else if (col + 1 + word.size() > width) {
      out += '\n';
      out += pad;
      col = indent;
    } else {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  out += '\n';
}

void regions_section(std::string& out, const GroupStats& g) {
  auto o = std::back_inserter(out);
  fmt::format_to(o, "\nRegion '{}': {} instance{} ({})\n", g.group.name, g.group.instances.size(),
                 g.group.instances.size() == 1 ? "" : "s", g.group.source);
  fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", "region", "kernels", "memcpy",
                 "memset", "GPU busy ms", "span ms", "idle ms", "tensor-core");
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
    fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", name, s.kernels, s.memcpys,
                   s.memsets, ms(s.busy_ns), ms(s.span_ns), ms(s.idle_ns), percent(tc));
  }
  if (g.instances.size() > 1) {
    const auto n = static_cast<double>(g.instances.size());
    // A count per instance: exact when every instance has the same, else the mean.
    auto per_instance = [&](int InstanceStats::*count) {
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
    fmt::format_to(o, "  {:<24} {:>7} {:>6} {:>6} {:>11} {:>10} {:>10} {:>12}\n", "per " + g.group.name,
                   per_instance(&InstanceStats::kernels), per_instance(&InstanceStats::memcpys),
                   per_instance(&InstanceStats::memsets), ms(static_cast<std::int64_t>(static_cast<double>(g.busy_ns) / n)),
                   ms(static_cast<std::int64_t>(static_cast<double>(span) / n)),
                   ms(static_cast<std::int64_t>(static_cast<double>(idle) / n)), percent(g.tensor_core_share));
  }
}

std::string per_group(const GroupStats& g) {
  return g.group.instances.size() <= 1 ? fmt::format("in '{}'", g.group.name) : fmt::format("per {}", g.group.name);
}

// The one line a user reads first: how much of the step is attention, what
// ran it, and what it would take fused.
void attention_headline(std::string& out, const GroupStats& g) {
  auto o = std::back_inserter(out);
  const auto n = static_cast<double>(std::max<std::size_t>(1, g.group.instances.size()));
  const auto per = [&](std::int64_t ns) { return ms(static_cast<std::int64_t>(static_cast<double>(ns) / n)); };
  if (g.attention.empty()) {
    fmt::format_to(o, "  Attention {}: none found (no fused attention kernel, no matmul-softmax-matmul chain)\n",
                   per_group(g));
    return;
  }
  int calls = 0;
  std::int64_t fused = 0;
  bool estimated = false;
  std::string impls;
  for (const AttentionSummary& s : g.attention) {
    calls += s.calls;
    fused += s.fused_ns >= 0 ? s.fused_ns : s.kernel_ns;
    estimated |= s.fused_ns >= 0;
    impls += fmt::format("{}{} {}", impls.empty() ? "" : ", ", to_string(s.impl), to_string(s.pass));
  }
  fmt::format_to(o, "  Attention {}: {} ms ({} of GPU time) in {:g} calls ({})", per_group(g), per(g.attention_ns),
                 percent(g.busy_ns > 0 ? static_cast<double>(g.attention_ns) / static_cast<double>(g.busy_ns) : -1),
                 calls / n, impls);
  if (estimated) fmt::format_to(o, "; fused: ~{} ms (estimated)", per(fused));
  out += '\n';
  fmt::format_to(o, "  {:<10} {:<9} {:>6} {:>8} {:>10} {:>10} {:<9} {}\n", "attention", "pass", "calls", "kernels",
                 "ms", "fused ms", "precision", "kernel / shape");
  for (const AttentionSummary& s : g.attention) {
    std::string what = s.kernel;
    if (s.shape.known())
      what += fmt::format("{}B{} H{}/{} S{}x{} D{}{}{}", what.empty() ? "" : ", ", s.shape.batch, s.shape.q_heads,
                          s.shape.kv_heads, s.shape.q_len, s.shape.kv_len, s.shape.head_dim,
                          s.shape.causal.value_or(false) ? " causal" : "", s.one_shape ? "" : " (and others)");
    fmt::format_to(o, "  {:<10} {:<9} {:>6} {:>8.1f} {:>10} {:>10} {:<9} {}\n", to_string(s.impl), to_string(s.pass),
                   fmt::format("{:g}", s.calls / n), static_cast<double>(s.kernels) / std::max(1, s.calls),
                   per(s.kernel_ns), s.fused_ns >= 0 ? per(s.fused_ns) : std::string("-"), to_string(s.precision),
                   what);
  }
}

}  // namespace

std::string text_report(const Analysis& a) {
  std::string out;
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
    fmt::format_to(o, "\nNot diagnosed: {}.\n", a.unsupported);
    return out;
  }
  if (a.gpu_kernels == 0) {
    out += "\nNo GPU kernels in this trace: it was recorded without CUDA activity. Record one with "
           "torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]), or run the program "
           "under `attnprof record -o trace.json.gz -- CMD`.\n";
    return out;
  }

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
    fmt::format_to(o, "  (set-up apart: {} host-to-device copies, {:.1f} MB, {} ms: weights and inputs being loaded)\n",
                   a.setup_copies.count, static_cast<double>(a.setup_copies.bytes) / 1e6, ms(a.setup_copies.ns));

  if (!a.kernels.empty()) {
    out += "\nKernels in these regions, by GPU time\n";
    fmt::format_to(o, "  {:>6} {:>10} {:>6}  {:<15} {:<13} {:<11} {:<9} {}\n", "count", "total ms", "share",
                   "category", "op", "unit", "precision", "kernel");
    constexpr std::size_t kShown = 15;
    for (std::size_t i = 0; i < a.kernels.size() && i < kShown; ++i) {
      const KernelSummary& k = a.kernels[i];
      std::string name = short_kernel_name(k.name);
      if (name.size() > 70) name = name.substr(0, 67) + "...";
      fmt::format_to(o, "  {:>6} {:>10} {:>6}  {:<15} {:<13} {:<11} {:<9} {}\n", k.count, ms(k.total_ns),
                     percent(busy > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(busy) : -1),
                     to_string(k.cls.category), to_string(k.cls.op), to_string(k.cls.unit),
                     to_string(k.cls.precision), name);
    }
    if (a.kernels.size() > kShown) fmt::format_to(o, "  ... {} more kernel names\n", a.kernels.size() - kShown);
  }

  if (a.findings.empty()) {
    out += "\nNo findings: nothing here looks slower than it needs to be.\n";
    return out;
  }
  out += "\nFindings, by GPU time they cost\n";
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    const auto group = std::find_if(a.groups.begin(), a.groups.end(),
                                    [&](const GroupStats& g) { return g.group.name == f.group; });
    const std::size_t n = group == a.groups.end() ? 1 : std::max<std::size_t>(1, group->group.instances.size());
    const std::string where = n == 1 ? fmt::format("in '{}'", f.group) : fmt::format("per {}", f.group);
    fmt::format_to(o, "\n  {}. [{}] {} ({}): {} ms {} ({} of its GPU time; seen in {} of {})\n", i + 1,
                   to_string(f.severity), f.id, to_string(f.scope), ms(f.time_ns / static_cast<std::int64_t>(n)),
                   where, percent(f.share), f.instances, n);
    append_wrapped(out, f.title, 5);
    if (!f.detail.empty()) append_wrapped(out, f.detail, 5);
    if (!f.evidence.empty()) {
      out += "     evidence:\n";
      for (std::size_t e = 0; e < f.evidence.size() && e < 8; ++e) {
        const Evidence& ev = f.evidence[e];
        if (ev.total_ns > 0)
          fmt::format_to(o, "       {:>4}x {:>9} ms  {}\n", ev.count, ms(ev.total_ns), ev.what);
        else
          fmt::format_to(o, "       {}\n", ev.what);
      }
    }
    if (!f.fix.empty()) {
      out += "     fix:\n";
      append_wrapped(out, f.fix, 7);
    }
    if (f.after_ns >= 0)
      fmt::format_to(o, "     after the fix: ~{} ms {} for this work (from {} ms)\n",
                     ms(f.after_ns / static_cast<std::int64_t>(n)), where,
                     ms((f.id == "unfused-attention" ? f.time_ns + f.after_ns : f.time_ns) / static_cast<std::int64_t>(n)));
  }
  return out;
}

}  // namespace attnprof
