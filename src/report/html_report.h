// Self-contained HTML reports: one file, inline CSS and SVG, no script and no
// network (opens on an air-gapped cluster). doctor's page shows the summary,
// the attention table, a timeline of one instance of each region and of one
// attention call, time by cause and the findings with their fixes; diff's
// page shows the comparison's tables.
#pragma once

#include <string>

#include "analysis/analysis.h"
#include "analysis/diff.h"
#include "analysis/replay.h"
#include "report/diff_report.h"

namespace attnprof {

// `index` is the one `analysis` was made from (kernel times and streams come from it);
// with a replay (doctor --replay), its measured savings get a section.
std::string html_report(const Analysis& analysis, const TraceIndex& index, const Replay* replay = nullptr);
std::string html_diff(const TraceDiff& d, const std::optional<DiffGate>& gate);

}  // namespace attnprof
