// JSON number helpers of the trace reader and writer (strings: common/json.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace attnprof::json_text {

// Parses a JSON number of microseconds ("5128492346300.414", "1694039969479080",
// "1.5e3") into integer nanoseconds, exactly for plain decimals (rounded past
// the third fractional digit). nullopt when `token` is not a number.
std::optional<std::int64_t> microseconds_to_ns(std::string_view token);
// The same, faster, for text followed by at least 8 readable bytes (the
// reader's buffers are: simdjson's padding follows them).
std::optional<std::int64_t> microseconds_to_ns_padded(std::string_view token);

// The 8 bytes of `t` from `i` (i <= t.size()) as a little-endian word, the
// bytes past t's end read as zero; 8 bytes past t's end must be readable.
inline std::uint64_t padded_word(std::string_view t, std::size_t i = 0) {
  std::uint64_t v;
  std::memcpy(&v, t.data() + i, sizeof v);
  const std::size_t left = t.size() - i;
  return left >= 8 ? v : v & ((std::uint64_t{1} << (8 * left)) - 1);
}

// A double that fits in int64, else nullopt (casting it would be undefined).
std::optional<std::int64_t> double_to_int64(double d);

// Writes nanoseconds as microseconds with three decimals ("12.345"), exactly.
void append_ns_as_us(std::string& out, std::int64_t ns);

}  // namespace attnprof::json_text
