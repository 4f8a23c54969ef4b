// doctor --markdown: the report as a pull-request or issue comment. The first screen's figures (the
// step, the fixes with what each is worth, attention's share) as text and tables, the findings as a
// table, what to do about each folded under it; all per step, as the terminal report.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "report/format.h"
#include "report/replay_report.h"
#include "report/report.h"
#include "report/summary_text.h"

namespace attnprof {

std::string markdown_report(const Analysis& a, const Replay* replay) {
  using report::md;
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "### attnprof doctor: {}\n\n", md(a.label));
  if (!a.device.name.empty())
    fmt::format_to(out, "GPU: {}{}\n\n", md(a.device.name),
                   a.unsupported.empty() ? fmt::format(" (sm_{}{}, {} SMs)", a.device.compute_major,
                                                       a.device.compute_minor, a.device.num_sms)
                                         : std::string());
  if (!a.unsupported.empty()) {
    fmt::format_to(out, "Not diagnosed: {}.\n", md(a.unsupported));
    return o;
  }
  if (a.gpu_kernels == 0) {
    o += "No GPU kernels in this trace: it was recorded without CUDA activity.\n";
    return o;
  }
  if (const std::string step = report::step_sentence(a); !step.empty()) {
    fmt::format_to(out, "**Step:** {}.", md(step));
    if (const std::string idle = report::idle_sentence(a); !idle.empty()) fmt::format_to(out, " Idle: {}.", md(idle));
    o += "\n\n";
  }
  if (!a.fixes.empty()) {
    fmt::format_to(out, "| # | fix | step time per {} | GPU time | resolves |\n| --- | --- | --- | --- | --- |\n",
                   md(report::step_unit(a)));
    for (std::size_t i = 0; i < a.fixes.size(); ++i) {
      const Fix& f = a.fixes[i];
      std::string ids;
      for (const std::string& id : f.findings) ids += fmt::format("{}`{}`", ids.empty() ? "" : ", ", id);
      fmt::format_to(out, "| {} | {} | {} | {} ms | {} |\n", i + 1, md(f.title), md(report::fix_step_text(f)),
                     report::signed_ms(f.gpu_ns), ids);
    }
    o += "\n";
  }
  if (const GroupStats* g = report::lead_group(a); g != nullptr) {
    fmt::format_to(out, "{}.\n\n", md(report::attention_sentence(*g)));
    if (!g->attention.empty()) {
      o += "| attention | pass | calls | kernels/call | ms | fused ms | precision | kernel / shape |\n"
           "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
      for (const report::AttentionRow& r : report::attention_rows(*g))
        fmt::format_to(out, "| {} | {} | {} | {} | {} | {} | {} | {} |\n", r.impl, r.pass, r.calls, r.kernels_per_call,
                       r.ms, r.fused_ms, r.precision, md(r.what.empty() ? "-" : r.what));
      o += "\n";
    }
  }
  if (a.findings.empty()) {
    o += "No findings: nothing here looks slower than it needs to be.\n";
  } else {
    o += "| finding | severity | scope | time | share | what |\n| --- | --- | --- | --- | --- | --- |\n";
    const std::vector<int> parents = report::finding_parents(a);
    for (std::size_t i = 0; i < a.findings.size(); ++i) {
      const Finding& f = a.findings[i];
      const std::size_t n = report::finding_instances(a, f);
      fmt::format_to(
          out, "| `{}` | {} | {} | {} ms {} | {} | {} |\n", f.id, to_string(f.severity), to_string(f.scope),
          report::ms(f.time_ns / static_cast<std::int64_t>(n)), md(report::finding_where(a, f)),
          report::percent(f.share),
          (parents[i] >= 0 ? fmt::format("(part of `{}`) ", a.findings[static_cast<std::size_t>(parents[i])].id)
                           : std::string()) +
              md(f.title));
    }
    o += "\n<details><summary>What to do, finding by finding</summary>\n\n";
    for (const Finding& f : a.findings)
      if (!f.fix.empty()) fmt::format_to(out, "- **`{}`** ({}): {}\n", f.id, to_string(f.scope), md(f.fix));
    o += "\n</details>\n";
  }
  if (replay != nullptr) {  // the replay's tables as the terminal prints them
    std::string text;
    report::replay_text(text, *replay);
    fmt::format_to(out, "\n<details><summary>Replay on {}</summary>\n\n```\n{}```\n\n</details>\n",
                   replay->device.empty() ? std::string("no GPU") : md(replay->device), text);
  }
  return o;
}

}  // namespace attnprof
