// diff's HTML page (html_diff in html_report.h): the comparison's tables, per step, in the
// page doctor's report uses (html_page.h).
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "report/html_page.h"
#include "report/html_report.h"

namespace attnprof {

using html::esc;
using html::page;

std::string html_diff(const TraceDiff& d, const std::optional<DiffGate>& gate) {
  std::string s;
  auto out = std::back_inserter(s);
  fmt::format_to(out, "<header><h1>attnprof diff</h1><p class=\"muted\">{} &rarr; {}</p></header>\n",
                 esc(d.before.label), esc(d.after.label));
  if (gate) {
    if (gate->verdict.regression) {
      fmt::format_to(out, "<p class=\"regress\">Regression (gate {:g}%)</p><ul>", gate->max_growth_pct);
      for (const std::string& r : gate->verdict.reasons) fmt::format_to(out, "<li>{}</li>", esc(r));
      s += "</ul>\n";
    } else {
      fmt::format_to(out, "<p class=\"ok\">No regression (gate {:g}%)</p>\n", gate->max_growth_pct);
    }
  }
  for (const std::string& c : diff_caveats(d)) fmt::format_to(out, "<p class=\"regress\">Note: {}</p>\n", esc(c));
  fmt::format_to(
      out,
      "<p class=\"headline\">Steps: {} x {} &rarr; {} x {}. Per step: attention <b>{:.3f} &rarr; {:.3f} "
      "ms</b>, GPU busy {:.3f} &rarr; {:.3f} ms{}.</p>\n",
      d.before.steps, esc(d.before.step), d.after.steps, esc(d.after.step), d.before.attention_ms_per_step,
      d.after.attention_ms_per_step, d.before.busy_ms_per_step, d.after.busy_ms_per_step,
      d.before.step_span_ms > 0 && d.after.step_span_ms > 0
          ? fmt::format("; median step <b>{:.3f} &rarr; {:.3f} ms</b> ({}-bound &rarr; {}-bound)",
                        d.before.step_span_ms, d.after.step_span_ms, esc(d.before.step_bound), esc(d.after.step_bound))
          : std::string());
  s += "<section id=\"attention\"><h2>Attention calls (per step)</h2><table><tr><th>pass</th><th>trace</th>"
       "<th>implementation</th><th class=\"n\">calls</th><th class=\"n\">kernels / call</th><th class=\"n\">ms / "
       "call</th><th class=\"n\">ms</th></tr>\n";
  for (const AttentionChange& c : d.attention)
    for (const auto& [which, side] : {std::pair{"before", &c.before}, std::pair{"after", &c.after}}) {
      if (!side->present) {
        fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td colspan=\"5\">(none)</td></tr>\n", to_string(c.pass), which);
        continue;
      }
      fmt::format_to(out,
                     "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{:g}</td><td class=\"n\">{:.1f}</td>"
                     "<td class=\"n\">{:.3f}</td><td class=\"n\">{:.3f}</td></tr>\n",
                     to_string(c.pass), which, esc(side->implementation), std::round(side->calls_per_step * 100) / 100,
                     side->kernels_per_call, side->ms_per_call, side->ms_per_step);
    }
  s += "</table></section>\n<section id=\"findings\"><h2>Findings (ms per step)</h2><table><tr><th>status</th>"
       "<th>finding</th><th>scope</th><th class=\"n\">before</th><th class=\"n\">after</th><th>what</th></tr>\n";
  for (const FindingChange& f : d.findings)
    fmt::format_to(out,
                   "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td>{}</td></tr>\n",
                   to_string(f.status), esc(f.id), to_string(f.scope),
                   f.before_ms < 0 ? "-" : fmt::format("{:.3f}", f.before_ms),
                   f.after_ms < 0 ? "-" : fmt::format("{:.3f}", f.after_ms), esc(f.title));
  s += "</table></section>\n<section id=\"kernels\"><h2>Kernels by category (per step)</h2><table><tr>"
       "<th>category</th><th class=\"n\">kernels before</th><th class=\"n\">after</th><th class=\"n\">ms "
       "before</th><th class=\"n\">after</th></tr>\n";
  for (const CategoryChange& c : d.categories)
    fmt::format_to(out,
                   "<tr><td>{}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{:.3f}</td>"
                   "<td class=\"n\">{:.3f}</td></tr>\n",
                   to_string(c.category), c.before_kernels, c.after_kernels, c.before_ms, c.after_ms);
  s += "</table></section>\n<section id=\"regions\"><h2>Regions (per instance)</h2><table><tr><th>region</th>"
       "<th class=\"n\">instances</th><th class=\"n\">kernels</th><th class=\"n\">busy ms</th></tr>\n";
  for (const RegionChange& r : d.regions)
    fmt::format_to(out,
                   "<tr><td>{}</td><td class=\"n\">{} &rarr; {}</td><td class=\"n\">{:.1f} &rarr; {:.1f}</td>"
                   "<td class=\"n\">{:.3f} &rarr; {:.3f}</td></tr>\n",
                   esc(r.name), r.before_instances, r.after_instances, r.before_kernels, r.after_kernels,
                   r.before_busy_ms, r.after_busy_ms);
  s += "</table></section>\n";
  return page("attnprof diff: " + d.before.label + " -> " + d.after.label, s);
}

}  // namespace attnprof
