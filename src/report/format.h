// The small text pieces every report writes the same way: times, shares,
// cut names, an attention shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/attention.h"
#include "common/number_text.h"

namespace attnprof::report {

// Milliseconds and plurals, written as the analysis writes them in findings (common/number_text.h).
using text::ms;
using text::plural;
// A share as a whole percent ("97%"), "-" when negative (unknown).
std::string percent(double share);
// How a figure changed: "-94.0%, 16.6x less" / "+12.0%" / "appeared" / "gone" / "none in either".
std::string change(double before, double after);
// `text` cut to `width` characters, "..." marking the cut.
std::string fit(std::string text, std::size_t width);
// "B2 H8/2 S512 D64 causal" ("B*H 16 ..." when only batch x heads is known, "S512x700" when the key
// length differs; what the trace does not say in words: ", head dim not in trace"); "" when unknown.
std::string shape_text(const AttentionShape& shape);
// Text for a Markdown table cell or line: no bar, tag, code span, quote or line break of its own.
std::string md(std::string_view text);
// Appends `text` wrapped at `width` columns, every line indented by `indent`, and a newline.
void append_wrapped(std::string& out, std::string_view text, std::size_t indent, std::size_t width = 100);

}  // namespace attnprof::report
