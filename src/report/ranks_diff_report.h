// Reports of two runs of one job compared rank by rank (attnprof diff DIR_A DIR_B): text,
// Markdown and JSON; the gate's verdict, when one was asked for, in each.
#pragma once

#include <optional>
#include <string>

#include "analysis/ranks_diff.h"
#include "report/diff_report.h"

namespace attnprof {

std::string text_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate);
std::string markdown_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate);
// {"schema_version", "kind": "ranks_diff", "before": {...}, "after": {...}, "ranks": [...], "gate"}; ms per step.
std::string json_ranks_diff(const RanksDiff& d, const std::optional<DiffGate>& gate);

}  // namespace attnprof
