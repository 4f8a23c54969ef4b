// Reports of an Analysis: a terminal report for people and JSON for tools.
#pragma once

#include <string>

#include "analysis/analysis.h"

namespace attnprof {

// Bumped when a field of the --json report changes meaning or goes away.
inline constexpr int kJsonSchemaVersion = 2;

std::string text_report(const Analysis& analysis);
std::string json_report(const Analysis& analysis);

}  // namespace attnprof
