#include "analysis/ranks_diff.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace attnprof {
namespace {

JobFigures job_figures(const std::vector<RankSummary>& ranks) {
  JobFigures j;
  for (const RankSummary& r : ranks) {
    if (!r.ok()) continue;
    if (j.step_rank < 0 || r.span_ns > j.step_ns) j = JobFigures{r.span_ns, r.rank, j.attention_ns, j.attention_rank};
    std::int64_t ns = 0;
    for (const RankAttention& a : r.attention) ns += a.ns;
    if (j.attention_rank < 0 || ns > j.attention_ns) {
      j.attention_ns = ns;
      j.attention_rank = r.rank;
    }
  }
  return j;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  const std::set<std::string> drop(b.begin(), b.end());
  std::vector<std::string> out;
  for (const std::string& s : a)
    if (!drop.contains(s) && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  return out;
}

double as_ms(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }

double growth_pct(std::int64_t before, std::int64_t after) {
  return before > 0 ? 100.0 * double(after - before) / double(before) : 0.0;
}

}  // namespace

bool RankPair::dispatch_changed() const {
  return before != nullptr && after != nullptr && before->dispatch() != after->dispatch();
}

std::int64_t RankPair::attention_ns(bool after_side) const {
  const RankSummary* r = after_side ? after : before;
  std::int64_t ns = 0;
  if (r != nullptr)
    for (const RankAttention& a : r->attention) ns += a.ns;
  return ns;
}

RanksDiff diff_ranks(std::vector<RankSummary>& before, std::vector<RankSummary>& after) {
  RanksDiff d;
  d.before = compare_ranks(before);
  d.after = compare_ranks(after);
  d.job_before = job_figures(before);
  d.job_after = job_figures(after);
  std::map<int, RankPair> by_rank;
  for (const RankSummary& r : before)
    if (r.ok()) by_rank[r.rank].before = &r;
  for (const RankSummary& r : after)
    if (r.ok()) by_rank[r.rank].after = &r;
  for (auto& [rank, p] : by_rank) {
    p.rank = rank;
    if (p.before != nullptr && p.after != nullptr) {
      p.fixed = minus(p.before->findings, p.after->findings);
      p.added = minus(p.after->findings, p.before->findings);
    }
    d.pairs.push_back(std::move(p));
  }
  return d;
}

GateVerdict ranks_regression_gate(const RanksDiff& d, double max_growth_pct, GateMetric metric) {
  GateVerdict v;
  if (metric == GateMetric::Auto)
    metric = d.job_before.step_ns > 0 && d.job_after.step_ns > 0 ? GateMetric::StepTime : GateMetric::AttentionTime;
  v.metric = metric;
  const bool step = metric == GateMetric::StepTime;
  const std::int64_t a = step ? d.job_before.step_ns : d.job_before.attention_ns;
  const std::int64_t b = step ? d.job_after.step_ns : d.job_after.attention_ns;
  if (growth_pct(a, b) > max_growth_pct) {
    v.regression = true;
    v.reasons.push_back(
        fmt::format("{} {:.3f} -> {:.3f} ms per step (+{:.1f}%, over {:g}%)",
                    step ? "the job's step (its slowest rank's median step)" : "the most attention time of a rank",
                    as_ms(a), as_ms(b), growth_pct(a, b), max_growth_pct));
    for (const RankPair& p : d.pairs) {  // which ranks grew past it
      if (p.before == nullptr || p.after == nullptr) continue;
      const std::int64_t x = step ? p.before->span_ns : p.attention_ns(false);
      const std::int64_t y = step ? p.after->span_ns : p.attention_ns(true);
      if (growth_pct(x, y) > max_growth_pct)
        v.reasons.push_back(
            fmt::format("rank {}: {:.3f} -> {:.3f} ms (+{:.1f}%)", p.rank, as_ms(x), as_ms(y), growth_pct(x, y)));
    }
  }
  for (const RankPair& p : d.pairs) {
    if (p.before == nullptr || p.after == nullptr) continue;  // a rank of one run only: named in the report
    for (const Finding& f : p.after->finding_list) {
      if (f.scope != Scope::Attention || std::find(p.added.begin(), p.added.end(), f.id) == p.added.end()) continue;
      v.regression = true;
      v.reasons.push_back(fmt::format("rank {}: a new attention finding, {}", p.rank, f.id));
    }
  }
  return v;
}

}  // namespace attnprof
