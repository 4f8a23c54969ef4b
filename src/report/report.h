// Reports of an Analysis: a terminal report for people and JSON for tools.
#pragma once

#include <string>

#include "analysis/analysis.h"

namespace attnprof {

std::string text_report(const Analysis& analysis);
std::string json_report(const Analysis& analysis);

}  // namespace attnprof
