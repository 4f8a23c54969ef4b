// The report of many traces of one job: a row per rank, then the cross-rank figures.
#pragma once

#include <string>
#include <vector>

#include "analysis/ranks.h"

namespace attnprof {

std::string text_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);
// The same for a pull request or an issue (doctor DIR --markdown).
std::string markdown_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);
// One document: {"schema_version", "kind": "ranks", "ranks": [...], "cross_rank": {...}}; times in ms per step.
std::string json_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);

}  // namespace attnprof
