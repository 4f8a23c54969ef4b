// The page both HTML reports are written into (html_report.cpp, html_diff.cpp): one
// self-contained file with its CSS inline, and the one escaper for text put into it.
#pragma once

#include <string>
#include <string_view>

namespace attnprof::html {

// `s` with & < > " ' as entities: safe in element text and quoted attributes.
std::string esc(std::string_view s);
// A whole HTML document: `title` (escaped here), the report's style sheet and `body` as given.
std::string page(std::string_view title, const std::string& body);

}  // namespace attnprof::html
