// Reports of a TraceDiff: terminal text, Markdown (a pull-request comment) and
// JSON. The gate's verdict, when one was asked for, closes each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/diff.h"

namespace attnprof {

// Bumped when a field of the diff --json report changes meaning or goes away.
inline constexpr int kDiffJsonSchemaVersion = 4;  // the same number as doctor's (kJsonSchemaVersion)

struct DiffGate {
  double max_growth_pct = kDefaultRegressionPct;
  GateMetric metric = GateMetric::Auto;  // what was asked for; verdict.metric what was gated on
  GateVerdict verdict;
};

// What a reader must know before trusting a diff's numbers (a trace not diagnosed, steps that differ).
std::vector<std::string> diff_caveats(const TraceDiff& d);

std::string text_diff(const TraceDiff& d, const std::optional<DiffGate>& gate);
std::string markdown_diff(const TraceDiff& d, const std::optional<DiffGate>& gate);
std::string json_diff(const TraceDiff& d, const std::optional<DiffGate>& gate);

class JsonWriter;
// The "gate" member of a diff document (null without a gate): also attnprof diff DIR_A DIR_B's.
void gate_json(JsonWriter& j, const std::optional<DiffGate>& gate);

}  // namespace attnprof
