#include "report/ranks_report.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/json.h"
#include "report/format.h"
#include "report/html_page.h"
#include "report/report.h"

namespace attnprof {
namespace {

using report::ms;

double as_ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += fmt::format("{}{}", out.empty() ? "" : ", ", r);
  return out;
}

std::string spread_text(const Spread& s) {
  return fmt::format("{} / {} / {} ms (min rank {}, max rank {})", ms(s.min), ms(s.median), ms(s.max), s.min_rank,
                     s.max_rank);
}

std::string attention_text(const RankSummary& r) {
  std::int64_t ns = 0;
  for (const RankAttention& a : r.attention) ns += a.ns;
  return r.attention.empty() ? "none" : fmt::format("{} ms: {}", ms(ns), r.dispatch());
}

// The title and the verdict (the slowest rank, stragglers, ranks whose attention dispatch differs), one
// sentence a line: what the text and the Markdown report open with.
std::string title_of(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  std::string out = fmt::format("{} trace{} of one job", ranks.size(), report::plural(double(ranks.size())));
  if (c.world_size >= 0) out += fmt::format(" (world size {}", c.world_size);
  if (!c.backend.empty()) out += fmt::format("{}{}", c.world_size >= 0 ? ", " : " (", c.backend);
  if (c.world_size >= 0 || !c.backend.empty()) out += ")";
  return out;
}

std::vector<std::string> verdict_of(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  std::vector<std::string> out;
  if (c.bad > 0)
    out.push_back(
        fmt::format("{} trace{} could not be read (below); the others are analysed", c.bad, report::plural(c.bad)));
  if (c.slowest_rank >= 0) {
    const bool straggles = std::find(c.stragglers.begin(), c.stragglers.end(), c.slowest_rank) != c.stragglers.end();
    std::string line = fmt::format("slowest rank: {}, {} ms of compute a step, {:.2f}x the median rank's ({} ms more)",
                                   c.slowest_rank, ms(c.compute.max), c.slowest_over_median, ms(c.slowest_excess_ns));
    const RankSummary* slow = nullptr;
    for (const RankSummary& r : ranks)
      if (r.ok() && r.rank == c.slowest_rank) slow = &r;
    if (straggles && slow != nullptr)
      line += fmt::format(
          ": a straggler, it waits {} ms less on communication than the median rank, the others wait "
          "for it; evening it out saves up to {} ms a step ({} of the step)",
          ms(c.comm_exposed.median - slow->comm_exposed_ns), ms(c.slowest_excess_ns),
          report::percent(c.span.median > 0 ? double(c.slowest_excess_ns) / double(c.span.median) : 0));
    else
      line += ": not a straggler (under 10% more, or it waits on communication as long as the others)";
    out.push_back(std::move(line));
  }
  if (c.slowest_rank < 0 && c.ranks >= 2)
    out.push_back(fmt::format("no slowest rank: every rank computes {} ms a step", ms(c.compute.median)));
  for (const DispatchDiffers& d : c.dispatch_differs)
    out.push_back(fmt::format("rank{} {} dispatch{} attention differently: {} (the others: {})",
                              d.ranks.size() == 1 ? "" : "s", ranks_text(d.ranks), d.ranks.size() == 1 ? "es" : "",
                              d.dispatch, d.usual));
  return out;
}

std::string findings_text(const RankSummary& r) {
  std::string out;
  for (const std::string& f : r.findings) out += (out.empty() ? "" : ", ") + f;
  return out;
}

// The spreads across ranks: (what, spread).
std::vector<std::pair<const char*, const Spread*>> spreads_of(const CrossRank& c) {
  return {{"step span", &c.span},
          {"GPU busy", &c.busy},
          {"compute", &c.compute},
          {"communication", &c.comm},
          {"comm exposed", &c.comm_exposed}};
}

}  // namespace

std::string text_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  std::string out = "attnprof doctor: " + title_of(ranks, c) + "; each rank's median step, per step\n";
  for (const std::string& line : verdict_of(ranks, c)) out += line + '\n';
  out += '\n';
  out += fmt::format("{:>4}  {:>8}  {:>8}  {:>8}  {:>15}  {:<7}  {}\n", "rank", "step ms", "busy ms", "compute",
                     "comm (exposed)", "bound", "attention; findings");
  for (const RankSummary& r : ranks) {
    const std::string rank = r.rank >= 0 ? fmt::format("{}", r.rank) : "?";
    if (!r.ok()) {  // the reader's errors start with the path already
      out += fmt::format("{:>4}  {}{}\n", rank, r.error.starts_with(r.path) ? "" : r.path + ": ", r.error);
      continue;
    }
    const std::string findings = findings_text(r);
    out += fmt::format("{:>4}  {:>8}  {:>8}  {:>8}  {:>15}  {:<7}  {}{}{}\n", rank, ms(r.span_ns), ms(r.busy_ns),
                       ms(r.compute_ns), fmt::format("{} ({})", ms(r.comm_ns), ms(r.comm_exposed_ns)),
                       to_string(r.bound), attention_text(r), findings.empty() ? "" : "; ", findings);
  }
  if (c.ranks >= 2) {
    out += "\nacross ranks, min / median / max per step:\n";
    for (const auto& [what, spread] : spreads_of(c)) out += fmt::format("  {:<16} {}\n", what, spread_text(*spread));
  }
  out +=
      "\ncompute = GPU busy without exposed communication and copies; exposed = communication with no compute "
      "running.\nEach rank in detail: attnprof doctor TRACE\n";
  return out;
}

std::string json_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.num("schema_version", kJsonSchemaVersion);
  j.str("kind", "ranks");
  j.begin_array("ranks");
  for (const RankSummary& r : ranks) {
    j.begin_object();
    if (r.rank >= 0)
      j.num("rank", r.rank);
    else
      j.null("rank");
    j.str_or_null("rank_from", r.rank_from);
    j.str("trace", r.path);
    j.str_or_null("error", r.error);
    if (r.ok()) {
      j.str_or_null("device", r.device);
      j.str("region", r.region);
      j.num("steps", r.steps);
      j.real("span_ms", as_ms(r.span_ns));
      j.real("gpu_busy_ms", as_ms(r.busy_ns));
      j.real("compute_ms", as_ms(r.compute_ns));
      j.real("comm_ms", as_ms(r.comm_ns));
      j.real("comm_exposed_ms", as_ms(r.comm_exposed_ns));
      j.str("bound", to_string(r.bound));
      j.str_or_null("median_step_strip", r.strip);
      j.str("dispatch", r.dispatch());
      j.begin_array("attention");
      for (const RankAttention& a : r.attention) {
        j.begin_object();
        j.str("implementation", to_string(a.impl));
        j.str("pass", to_string(a.pass));
        j.str_or_null("kernel", a.kernel);
        j.real("calls", a.calls, 2);
        j.real("time_ms", as_ms(a.ns));
        j.end_object();
      }
      j.end_array();
      j.begin_array("findings");
      for (const std::string& f : r.findings) j.str({}, f);
      j.end_array();
    }
    j.end_object();
  }
  j.end_array();
  j.begin_object("cross_rank");
  j.num("ranks", c.ranks);
  j.num("bad_traces", c.bad);
  if (c.world_size >= 0)
    j.num("world_size", c.world_size);
  else
    j.null("world_size");
  j.str_or_null("backend", c.backend);
  for (const auto& [name, s] :
       {std::pair{"span_ms", &c.span}, std::pair{"gpu_busy_ms", &c.busy}, std::pair{"compute_ms", &c.compute},
        std::pair{"comm_ms", &c.comm}, std::pair{"comm_exposed_ms", &c.comm_exposed}}) {
    j.begin_object(name);
    j.real("min", as_ms(s->min));
    j.real("median", as_ms(s->median));
    j.real("max", as_ms(s->max));
    j.num("min_rank", s->min_rank);
    j.num("max_rank", s->max_rank);
    j.end_object();
  }
  if (c.slowest_rank >= 0) {
    j.begin_object("slowest");
    j.num("rank", c.slowest_rank);
    j.real("compute_over_median", c.slowest_over_median);
    j.real("excess_ms", as_ms(c.slowest_excess_ns));
    j.end_object();
  } else {
    j.null("slowest");
  }
  j.begin_array("stragglers");
  for (int r : c.stragglers) j.num({}, r);
  j.end_array();
  j.begin_array("dispatch_differs");
  for (const DispatchDiffers& d : c.dispatch_differs) {
    j.begin_object();
    j.begin_array("ranks");
    for (int r : d.ranks) j.num({}, r);
    j.end_array();
    j.str("dispatch", d.dispatch);
    j.str("others", d.usual);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  j.end_object();
  out += '\n';
  return out;
}

std::string markdown_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  using report::md;
  std::string out = "### attnprof doctor: " + md(title_of(ranks, c)) + "\n\nEach rank's median step, per step.\n\n";
  for (const std::string& line : verdict_of(ranks, c)) out += "- " + md(line) + "\n";
  out +=
      "\n| rank | step ms | GPU busy ms | compute ms | comm ms (exposed) | bound | attention | findings |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const RankSummary& r : ranks) {
    const std::string rank = r.rank >= 0 ? fmt::format("{}", r.rank) : "?";
    if (!r.ok()) {
      out += fmt::format("| {} | {} | | | | | | |\n", rank,
                         md(r.error.starts_with(r.path) ? r.error : r.path + ": " + r.error));
      continue;
    }
    std::string findings;
    for (const std::string& f : r.findings) findings += fmt::format("{}`{}`", findings.empty() ? "" : ", ", f);
    out += fmt::format("| {} | {} | {} | {} | {} ({}) | {} | {} | {} |\n", rank, ms(r.span_ns), ms(r.busy_ns),
                       ms(r.compute_ns), ms(r.comm_ns), ms(r.comm_exposed_ns), to_string(r.bound),
                       md(attention_text(r)), findings);
  }
  if (c.ranks >= 2) {
    out += "\n| across ranks, per step | min | median | max |\n| --- | --- | --- | --- |\n";
    for (const auto& [what, spread] : spreads_of(c))
      out += fmt::format("| {} | {} ms (rank {}) | {} ms | {} ms (rank {}) |\n", what, ms(spread->min),
                         spread->min_rank, ms(spread->median), ms(spread->max), spread->max_rank);
  }
  out +=
      "\nCompute = GPU busy without exposed communication and copies; exposed = communication with no compute "
      "running. Each rank in detail: `attnprof doctor TRACE`.\n";
  return out;
}

std::string html_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& c) {
  using html::esc;
  std::string body =
      "<h1>attnprof doctor: " + esc(title_of(ranks, c)) + "</h1>\n<p>Each rank's median step, per step.</p>\n<ul>\n";
  for (const std::string& line : verdict_of(ranks, c)) body += "<li>" + esc(line) + "</li>\n";
  body += "</ul>\n";
  // The strips share one axis: the longest median step is the full width.
  std::int64_t longest = 0;
  for (const RankSummary& r : ranks)
    if (r.ok()) longest = std::max(longest, r.span_ns);
  constexpr int kWidth = 480, kHeight = 14;
  const auto strip_svg = [&](const RankSummary& r) {
    if (r.strip.empty() || longest <= 0) return std::string("-");
    const double w = kWidth * static_cast<double>(r.span_ns) / static_cast<double>(longest) / kStripBins;
    std::string svg = fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"median step of rank {}\">",
                                  kWidth, kHeight, r.rank);
    svg += fmt::format("<rect x=\"0\" y=\"{}\" width=\"{:.2f}\" height=\"1\" fill=\"#bbb\"/>", kHeight - 1,
                       w * kStripBins);  // the step's span
    for (std::size_t b = 0; b < r.strip.size(); ++b) {
      const char k = r.strip[b];
      if (k == '.') continue;
      const char lo = static_cast<char>(std::tolower(k));
      const char* color = lo == 'a' ? "#d62728" : lo == 'n' ? "#1f77b4" : lo == 'm' ? "#9467bd" : "#7f7f7f";
      const int h = k == lo ? kHeight / 2 : kHeight;  // a bin busy less than half: half height
      svg += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>",
                         static_cast<double>(b) * w, kHeight - h, w + 0.05, h, color);
    }
    return svg + "</svg>";
  };
  body +=
      "<table>\n<tr><th>rank</th><th>step ms</th><th>GPU busy ms</th><th>compute ms</th><th>comm ms (exposed)</th>"
      "<th>bound</th><th>attention</th><th>findings</th><th>median step</th></tr>\n";
  for (const RankSummary& r : ranks) {
    const std::string rank = r.rank >= 0 ? fmt::format("{}", r.rank) : "?";
    if (!r.ok()) {
      body += fmt::format("<tr><td>{}</td><td colspan=\"8\">{}</td></tr>\n", rank,
                          esc(r.error.starts_with(r.path) ? r.error : r.path + ": " + r.error));
      continue;
    }
    body += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "</tr>\n",
        rank, ms(r.span_ns), ms(r.busy_ns), ms(r.compute_ns), ms(r.comm_ns), ms(r.comm_exposed_ns),
        esc(to_string(r.bound)), esc(attention_text(r)), esc(findings_text(r)), strip_svg(r));
  }
  body += "</table>\n";
  body += fmt::format(
      "<p class=\"muted\">Median step of each rank on one axis ({} ms the full width): "
      "<span style=\"color:#7f7f7f\">&#9632; compute</span> <span style=\"color:#d62728\">&#9632; attention</span> "
      "<span style=\"color:#1f77b4\">&#9632; communication with no compute</span> "
      "<span style=\"color:#9467bd\">&#9632; copies</span>; half height: busy under half the time, blank: idle. "
      "Compute = GPU busy without exposed "
      "communication and copies. Each rank in detail: attnprof doctor TRACE --html.</p>\n",
      ms(longest));
  if (c.ranks >= 2) {
    body += "<table>\n<tr><th>across ranks, per step</th><th>min</th><th>median</th><th>max</th></tr>\n";
    for (const auto& [what, spread] : spreads_of(c))
      body += fmt::format("<tr><td>{}</td><td>{} ms (rank {})</td><td>{} ms</td><td>{} ms (rank {})</td></tr>\n", what,
                          ms(spread->min), spread->min_rank, ms(spread->median), ms(spread->max), spread->max_rank);
    body += "</table>\n";
  }
  return html::page("attnprof doctor: " + title_of(ranks, c), body);
}

}  // namespace attnprof
