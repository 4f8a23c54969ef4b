// The page of the HTML reports (see html_page.h).
#include "report/html_page.h"

#include <fmt/format.h>

namespace attnprof::html {
namespace {

constexpr std::string_view kStyle = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;max-width:1120px;margin:0 auto;padding:16px 20px 48px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}.muted{color:#666}.headline{font-size:16px;background:#f4f7fb;border-left:4px solid #1f77b4;padding:8px 12px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#fafafa}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}pre{background:#f6f8fa;padding:8px 10px;overflow-x:auto;border-radius:4px;white-space:pre-wrap}
.finding{border:1px solid #e4e4e4;border-radius:6px;padding:6px 14px 10px;margin:10px 0}
.sev{display:inline-block;border-radius:3px;padding:0 6px;color:#fff;font-size:12px;margin-right:6px}
.sev-high{background:#c0392b}.sev-medium{background:#e67e22}.sev-low{background:#7f8c8d}.sev-info{background:#95a5a6}
.legend span{display:inline-block;margin-right:12px;font-size:12px}.legend i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
svg{display:block;margin:4px 0 6px}svg text{font:11px system-ui,sans-serif;fill:#333}.regress{color:#c0392b;font-weight:600}.ok{color:#1e8449;font-weight:600}
)";

}  // namespace

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string page(std::string_view title, const std::string& body) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n{}"
      "<p class=\"muted\">Made by attnprof. This page is self-contained: no script, nothing fetched.</p>\n"
      "</body>\n</html>\n",
      esc(title), kStyle, body);
}

}  // namespace attnprof::html
