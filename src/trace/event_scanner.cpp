// The byte scanner behind streaming reads (see event_scanner.h).
#include "trace/event_scanner.h"

#include <cstring>

namespace attnprof::json_scan {

const char* string_end(const char* p, const char* end) {
  for (;;) {
    const auto* q = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)));
    if (q == nullptr) return nullptr;
    // A quote is escaped when an odd number of backslashes precede it. The
    // opening quote stops the walk, so it never leaves the string.
    const char* b = q;
    while (b[-1] == '\\') --b;
    if (((q - b) & 1) == 0) return q + 1;
    p = q + 1;
  }
}

const char* value_end(const char* p, const char* end, bool at_eof) {
  if (p >= end) return nullptr;
  const char first = *p;
  if (first == '"') return string_end(p + 1, end);
  if (first != '{' && first != '[') {
    while (p < end) {
      const char c = *p;
      if (c == ',' || c == '}' || c == ']' || is_space(c)) return p;
      ++p;
    }
    return at_eof ? end : nullptr;
  }
  int depth = 0;
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      p = string_end(p + 1, end);
      if (p == nullptr) return nullptr;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return p + 1;
    }
    ++p;
  }
  return nullptr;
}

}  // namespace attnprof::json_scan
