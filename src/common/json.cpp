// JSON string escaping (see json.h).
#include "common/json.h"

namespace attnprof {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// Bytes that go out as they are: printable ASCII other than the quote and the backslash.
bool plain(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size(); ++i) {
    // A run of plain bytes in one append (kernel names are long and almost all plain).
    std::size_t end = i;
    while (end < s.size() && plain(static_cast<unsigned char>(s[end]))) ++end;
    out.append(s.data() + i, end - i);
    if (end == s.size()) break;
    i = end;
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else if (const std::size_t n = utf8_length(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n - 1;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD for a byte that is not valid UTF-8
    }
  }
  out.push_back('"');
}

std::string quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_quoted(out, s);
  return out;
}

}  // namespace attnprof
