// Finds where a JSON value ends without parsing it: tracks strings (with
// escapes) and bracket depth. The reader uses it to cut the traceEvents array
// into batches of whole events that simdjson then parses.
#pragma once

#include <vector>

namespace attnprof::json_scan {

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* skip_space(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}

// `p` is at the first character of a value. Returns one past the value's last
// character, or nullptr when [p, end) ends before the value does. Scalars
// (numbers, true/false/null) end at the first delimiter, or at `end` when
// `at_eof`. Does not validate: simdjson does that when the value is parsed.
const char* value_end(const char* p, const char* end, bool at_eof);

// `p` is just past an opening quote. Returns one past the closing quote, or
// nullptr when [p, end) ends inside the string.
const char* string_end(const char* p, const char* end);

}  // namespace attnprof::json_scan

namespace attnprof::json_scan {

// Result of scanning a run of array elements.
struct ElementScan {
  const char* closed_at = nullptr;  // the array's closing ']' when it was reached
};

// Scans from `p` (outside any string, at depth 0 inside an array) to `end`,
// appending one-past-the-end of every complete top-level element (object or
// array) to `ends`; stops at the array's closing bracket or at `end`. Uses
// AVX2 + PCLMUL when the CPU has them (quote/escape/bracket masks 64 bytes at
// a time, as in simdjson's stage 1), else a scalar loop; both agree exactly.
ElementScan scan_elements(const char* p, const char* end, std::vector<const char*>& ends);
ElementScan scan_elements_scalar(const char* p, const char* end, std::vector<const char*>& ends);
bool simd_scanner_available();

}  // namespace attnprof::json_scan
