// The report of many traces of one job: a row per rank, then the cross-rank figures.
#pragma once

#include <string>
#include <vector>

#include "analysis/ranks.h"

namespace attnprof {

std::string text_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);
// The same for a pull request or an issue (doctor DIR --markdown).
std::string markdown_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);
// A self-contained page (doctor DIR --html): the verdict, a row per rank, and each rank's median step as a
// strip on one time axis (idle, compute, attention, communication, copies).
std::string html_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);
// One document: {"schema_version", "kind": "ranks", "ranks": [...], "cross_rank": {...}}; times in ms per step.
std::string json_ranks_report(const std::vector<RankSummary>& ranks, const CrossRank& cross);

}  // namespace attnprof
