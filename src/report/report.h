// Reports of an Analysis: a terminal report for people and JSON for tools.
#pragma once

#include <string>

#include "analysis/analysis.h"
#include "analysis/replay.h"

namespace attnprof {

// Bumped when a field of the --json report changes meaning or goes away.
inline constexpr int kJsonSchemaVersion = 4;

// With a replay (doctor --replay), the measured savings follow: a section of the
// text, a "replay" object of the JSON.
std::string text_report(const Analysis& analysis, const Replay* replay = nullptr);
std::string json_report(const Analysis& analysis, const Replay* replay = nullptr);
// The first screen alone (doctor --brief): the trace, the step and what bounds it, the fixes with what
// each is worth, attention's share, the findings' ids.
std::string text_brief(const Analysis& analysis);
// doctor --markdown: a pull-request or issue comment (the step, the fixes, attention, the findings;
// with a replay, its tables folded at the end).
std::string markdown_report(const Analysis& analysis, const Replay* replay = nullptr);

}  // namespace attnprof
