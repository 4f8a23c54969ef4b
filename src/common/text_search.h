// Substring tests on names (kernel, op and API names), shared by the analysis's name rules.
#pragma once

#include <string_view>

namespace attnprof {

// Whether `part` occurs in `s`.
inline bool has(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace attnprof
