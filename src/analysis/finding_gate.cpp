#include "analysis/finding_gate.h"

#include <fmt/format.h>

#include "analysis/rules/rule.h"
#include "common/input_error.h"
#include "common/suggest.h"

namespace attnprof {

FindingGate parse_finding_gate(const std::vector<std::string>& items) {
  FindingGate g;
  for (const std::string& item : items) {
    bool known = false;
    for (const RuleEntry& r : all_rules()) known |= r.id == item;
    if (known) {
      g.ids.insert(item);
    } else if (item == "attention" || item == "model") {
      g.scopes.insert(item == "attention" ? Scope::Attention : Scope::Model);
    } else if (item == "high" || item == "medium" || item == "low" || item == "info") {
      const Severity s = item == "high"     ? Severity::High
                         : item == "medium" ? Severity::Medium
                         : item == "low"    ? Severity::Low
                                            : Severity::Info;
      g.at_least = g.at_least ? std::min(*g.at_least, s) : s;
    } else if (item == "any") {
      g.any = true;
    } else {
      std::string ids;
      std::vector<std::string> words = {"attention", "model", "high", "medium", "low", "info", "any"};
      for (const RuleEntry& r : all_rules()) {
        ids += fmt::format("{}{}", ids.empty() ? "" : ", ", r.id);
        words.emplace_back(r.id);
      }
      throw InputError(
          fmt::format("--fail-on {}: not a finding id ({}), a scope (attention, model), a severity "
                      "(high, medium, low, info) or any{}",
                      item.empty() ? "''" : item, ids, did_you_mean(item, words)));
    }
  }
  if (items.empty()) throw InputError("--fail-on: give at least one finding id, scope, severity or any");
  return g;
}

std::vector<const Finding*> caught_by(std::span<const Finding> findings, const FindingGate& g) {
  std::vector<const Finding*> out;
  for (const Finding& f : findings)
    if (g.any || g.ids.count(f.id) || g.scopes.count(f.scope) || (g.at_least && f.severity >= *g.at_least))
      out.push_back(&f);
  return out;
}

std::vector<const Finding*> caught_by(const Analysis& a, const FindingGate& g) { return caught_by(a.findings, g); }

}  // namespace attnprof
