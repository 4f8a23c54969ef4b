#include "report/ranks_diff_report.h"

#include <fmt/format.h>

#include "common/json.h"
#include "report/format.h"

namespace attnprof {
namespace {

using report::change;
using report::ms;

double as_ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

std::string run_text(const CrossRank& c) {
  std::string out = fmt::format("{} rank{}", c.ranks, report::plural(c.ranks));
  if (c.world_size >= 0) out += fmt::format(" of world size {}", c.world_size);
  if (!c.backend.empty()) out += " (" + c.backend + ")";
  if (c.bad > 0) out += fmt::format(", {} trace{} unread", c.bad, report::plural(c.bad));
  return out;
}

std::string ids_text(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& s : ids) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "-" : out;
}

// The verdict, one sentence a line: the job's step, the slowest rank, dispatch that changed.
std::vector<std::string> verdict_of(const RanksDiff& d) {
  std::vector<std::string> out;
  const JobFigures &a = d.job_before, &b = d.job_after;
  out.push_back(fmt::format("job step (its slowest rank's median step): {} ms (rank {}) -> {} ms (rank {}): {}",
                            ms(a.step_ns), a.step_rank, ms(b.step_ns), b.step_rank,
                            change(double(a.step_ns), double(b.step_ns))));
  out.push_back(fmt::format("most attention on a rank: {} ms (rank {}) -> {} ms (rank {}): {}", ms(a.attention_ns),
                            a.attention_rank, ms(b.attention_ns), b.attention_rank,
                            change(double(a.attention_ns), double(b.attention_ns))));
  for (const RankPair& p : d.pairs) {
    if (p.dispatch_changed())
      out.push_back(fmt::format("rank {} dispatches attention differently: {} -> {}", p.rank, p.before->dispatch(),
                                p.after->dispatch()));
    else if (p.before == nullptr)
      out.push_back(fmt::format("rank {}: in the second run only", p.rank));
    else if (p.after == nullptr)
      out.push_back(fmt::format("rank {}: in the first run only", p.rank));
  }
  auto differs = [](const CrossRank& c) {
    std::string ranks;
    for (const DispatchDiffers& x : c.dispatch_differs)
      for (int r : x.ranks) ranks += fmt::format("{}{}", ranks.empty() ? "" : ", ", r);
    return ranks.empty() ? std::string("none") : ranks;
  };
  out.push_back(
      fmt::format("ranks whose dispatch differs from the others: {} -> {}", differs(d.before), differs(d.after)));
  return out;
}

std::string gate_text(const std::optional<DiffGate>& gate) {
  if (!gate) return {};
  std::string out = fmt::format("gate (regression over {:g}%, on {}): {}\n", gate->max_growth_pct,
                                to_string(gate->verdict.metric), gate->verdict.regression ? "REGRESSION" : "passed");
  for (const std::string& r : gate->verdict.reasons) out += "  " + r + "\n";
  return out;
}

std::string figure(const RankPair& p, std::int64_t RankSummary::* field) {
  if (p.before == nullptr || p.after == nullptr) return "-";
  return fmt::format("{} -> {}", ms(p.before->*field), ms(p.after->*field));
}

std::string attention_of(const RankPair& p) {
  if (p.before == nullptr || p.after == nullptr) return "-";
  std::string out = fmt::format("{} -> {} ms", ms(p.attention_ns(false)), ms(p.attention_ns(true)));
  return p.dispatch_changed() ? out + fmt::format(" ({} -> {})", p.before->dispatch(), p.after->dispatch()) : out;
}

std::string only_in(const RankPair& p) { return p.before == nullptr ? "second run only" : "first run only"; }

void summary_json(JsonWriter& j, const char* key, const RankSummary* r) {
  if (r == nullptr) {
    j.null(key);
    return;
  }
  j.begin_object(key);
  j.str("trace", r->path);
  j.real("span_ms", as_ms(r->span_ns));
  j.real("gpu_busy_ms", as_ms(r->busy_ns));
  j.real("compute_ms", as_ms(r->compute_ns));
  j.real("comm_exposed_ms", as_ms(r->comm_exposed_ns));
  j.str("bound", to_string(r->bound));
  j.str("dispatch", r->dispatch());
  std::int64_t ns = 0;
  for (const RankAttention& a : r->attention) ns += a.ns;
  j.real("attention_ms", as_ms(ns));
  j.begin_array("findings");
  for (const std::string& f : r->findings) j.str({}, f);
  j.end_array();
  j.end_object();
}

void run_json(JsonWriter& j, const char* key, const CrossRank& c, const JobFigures& f) {
  j.begin_object(key);
  j.num("ranks", c.ranks);
  j.num("bad_traces", c.bad);
  if (c.world_size >= 0)
    j.num("world_size", c.world_size);
  else
    j.null("world_size");
  j.real("job_step_ms", as_ms(f.step_ns));
  j.num("job_step_rank", f.step_rank);
  j.real("max_attention_ms", as_ms(f.attention_ns));
  j.num("max_attention_rank", f.attention_rank);
  if (c.slowest_rank >= 0)
    j.num("slowest_rank", c.slowest_rank);
  else
    j.null("slowest_rank");
  j.begin_array("dispatch_differs");
  for (const DispatchDiffers& x : c.dispatch_differs)
    for (int r : x.ranks) j.num({}, r);
  j.end_array();
  j.end_object();
}

}  // namespace

std::string text_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate) {
  std::string out = fmt::format("attnprof diff: {} -> {}; each rank's median step, per step\n", run_text(d.before),
                                run_text(d.after));
  for (const std::string& line : verdict_of(d)) out += line + '\n';
  out += gate_text(gate);
  out += fmt::format("\n{:>4}  {:<18}  {:<18}  {:<16}  {:<15}  {}\n", "rank", "step ms", "GPU busy ms",
                     "comm exposed ms", "bound", "attention ms; findings fixed / new");
  for (const RankPair& p : d.pairs) {
    if (p.before == nullptr || p.after == nullptr) {
      out += fmt::format("{:>4}  {}\n", p.rank, only_in(p));
      continue;
    }
    out += fmt::format("{:>4}  {:<18}  {:<18}  {:<16}  {:<15}  {}; fixed {} / new {}\n", p.rank,
                       figure(p, &RankSummary::span_ns), figure(p, &RankSummary::busy_ns),
                       figure(p, &RankSummary::comm_exposed_ns),
                       fmt::format("{} -> {}", to_string(p.before->bound), to_string(p.after->bound)), attention_of(p),
                       ids_text(p.fixed), ids_text(p.added));
  }
  out += "\nEach rank in detail: attnprof diff BEFORE_TRACE AFTER_TRACE\n";
  return out;
}

std::string markdown_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate) {
  using report::md;
  std::string out = fmt::format("### attnprof diff: {} → {}\n\nEach rank's median step, per step.\n\n",
                                md(run_text(d.before)), md(run_text(d.after)));
  if (gate)
    out += fmt::format("**{} (gate {:g}%, {})**\n\n", gate->verdict.regression ? "Regression" : "No regression",
                       gate->max_growth_pct, to_string(gate->verdict.metric));
  for (const std::string& line : verdict_of(d)) out += "- " + md(line) + "\n";
  if (gate)
    for (const std::string& r : gate->verdict.reasons) out += "- gate: " + md(r) + "\n";
  out +=
      "\n| rank | step ms | GPU busy ms | comm exposed ms | bound | attention | fixed | new |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const RankPair& p : d.pairs) {
    if (p.before == nullptr || p.after == nullptr) {
      out += fmt::format("| {} | {} | | | | | | |\n", p.rank, only_in(p));
      continue;
    }
    out += fmt::format("| {} | {} | {} | {} | {} → {} | {} | {} | {} |\n", p.rank, md(figure(p, &RankSummary::span_ns)),
                       md(figure(p, &RankSummary::busy_ns)), md(figure(p, &RankSummary::comm_exposed_ns)),
                       to_string(p.before->bound), to_string(p.after->bound), md(attention_of(p)),
                       md(ids_text(p.fixed)), md(ids_text(p.added)));
  }
  return out;
}

std::string json_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate) {
  std::string out;
  JsonWriter j(out);
  j.begin_object();
  j.num("schema_version", kDiffJsonSchemaVersion);
  j.str("kind", "ranks_diff");
  run_json(j, "before", d.before, d.job_before);
  run_json(j, "after", d.after, d.job_after);
  j.begin_array("ranks");
  for (const RankPair& p : d.pairs) {
    j.begin_object();
    j.num("rank", p.rank);
    summary_json(j, "before", p.before);
    summary_json(j, "after", p.after);
    j.boolean("dispatch_changed", p.dispatch_changed());
    j.begin_array("findings_fixed");
    for (const std::string& f : p.fixed) j.str({}, f);
    j.end_array();
    j.begin_array("findings_new");
    for (const std::string& f : p.added) j.str({}, f);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  gate_json(j, gate);
  j.end_object();
  out += '\n';
  return out;
}

}  // namespace attnprof
