// Helpers shared by the rules: cost, evidence rows, readable kernel names.
#include <algorithm>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/rules/rule.h"

namespace attnprof {

void set_cost(Finding& f, const RuleContext& ctx, std::int64_t time_ns, int instances) {
  f.group = ctx.group.group.name;
  f.time_ns = time_ns;
  f.instances = instances;
  f.share = ctx.group.busy_ns > 0 ? static_cast<double>(time_ns) / static_cast<double>(ctx.group.busy_ns) : 0.0;
  f.severity = severity_for_share(f.share);
}

void add_kernel_evidence(Finding& f, const RuleContext& ctx, const std::vector<std::size_t>& activities) {
  // Rows in first-seen order, found by interned name (one id per distinct
  // text; kernel names are long, so comparing them costs).
  std::vector<Evidence> rows;
  std::unordered_map<StringId, std::size_t> row_of;
  for (std::size_t i : activities) {
    const Event& e = ctx.event(i);
    const auto [it, fresh] = row_of.try_emplace(e.name, rows.size());
    if (fresh) rows.push_back({short_kernel_name(ctx.trace().name(e)), 0, 0});
    Evidence& row = rows[it->second];
    ++row.count;
    row.total_ns += e.dur_ns;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Evidence& a, const Evidence& b) { return a.total_ns > b.total_ns; });
  for (auto& e : rows) f.evidence.push_back(std::move(e));
}

std::string short_kernel_name(std::string_view name) {
  if (name.starts_with("void ")) name.remove_prefix(5);
  // Drop the parameter list: the last top-level "(...)".
  int depth = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<')
      ++depth;
    else if (c == '>')
      --depth;
    else if (c == '(' && depth == 0 && i > 0 && name[i - 1] != ' ') {
      // "(anonymous namespace)" is part of a name, not a parameter list.
      if (name.substr(i).starts_with("(anonymous namespace)")) {
        i += 20;
        continue;
      }
      name = name.substr(0, i);
      break;
    }
  }
  constexpr std::size_t kMax = 120;
  if (name.size() <= kMax) return std::string(name);
  return std::string(name.substr(0, kMax)) + "...";
}

int instances_with(const RuleContext& ctx, const std::vector<std::size_t>& activities) {
  std::vector<char> wanted(ctx.index.activities().size(), 0);
  for (std::size_t i : activities) wanted[i] = 1;
  int n = 0;
  for (const auto& inst : ctx.group.group.instances)
    n += std::any_of(inst.activities.begin(), inst.activities.end(), [&](std::size_t i) { return wanted[i] != 0; });
  return n;
}

ByScope split_by_scope(const RuleContext& ctx, const std::vector<std::size_t>& activities) {
  ByScope out;
  for (std::size_t i : activities) (ctx.in_attention(i) ? out.attention : out.model).push_back(i);
  return out;
}

std::string_view scope_words(Scope s) { return s == Scope::Attention ? "inside attention" : "outside attention"; }

std::string format_ms(std::int64_t ns) { return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6); }

}  // namespace attnprof

namespace attnprof {

std::string per_instance_ms(const RuleContext& ctx, std::int64_t ns) {
  const auto n = std::max<std::size_t>(1, ctx.group.group.instances.size());
  return fmt::format("{} {}", format_ms(ns / static_cast<std::int64_t>(n)), per_instance(ctx));
}

std::string per_instance_count(const RuleContext& ctx, double count) {
  return fmt::format("{:g}", count / static_cast<double>(std::max<std::size_t>(1, ctx.group.group.instances.size())));
}

std::string format_mb(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

std::string calls_by_phase(const RuleContext& ctx, const std::map<AttentionPhase, int>& phases) {
  std::string text;
  for (const auto& [phase, count] : phases)
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", per_instance_count(ctx, count),
                        phase == AttentionPhase::None ? "other" : to_string(phase));
  return text;
}

std::string per_instance(const RuleContext& ctx) {
  if (ctx.group.group.instances.size() <= 1) return fmt::format("in '{}'", ctx.group.group.name);
  return fmt::format("per {}", ctx.group.group.name);
}

}  // namespace attnprof
