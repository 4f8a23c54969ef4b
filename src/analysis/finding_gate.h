// The findings gate of `doctor --fail-on` and `attnprof.check`: which findings
// fail a CI job. A gate is a list of items, each a finding id (fp32-upcast),
// a scope (attention: any finding about the attention calls; model), a
// severity (high, medium, low: that severity or above) or any.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace attnprof {

struct FindingGate {
  std::set<std::string> ids;
  std::set<Scope> scopes;
  std::optional<Severity> at_least;
  bool any = false;
};

// Throws InputError naming an item that is none of the above (and listing what is).
FindingGate parse_finding_gate(const std::vector<std::string>& items);
// The findings the gate catches, in the order given (an analysis's: report order).
std::vector<const Finding*> caught_by(std::span<const Finding> findings, const FindingGate& gate);
std::vector<const Finding*> caught_by(const Analysis& a, const FindingGate& gate);

}  // namespace attnprof
