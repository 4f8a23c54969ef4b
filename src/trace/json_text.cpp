// JSON escaping and exact microsecond <-> nanosecond conversion.
#include "trace/json_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace attnprof::json_text {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) n = 3;
  else if (c >= 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

// Eight ASCII digits read as one 64-bit word (SWAR; the checks and the
// multiply-shift steps of simdjson's and fast_float's parse_eight_digits).
bool is_eight_digits(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return ((v & 0xF0F0F0F0F0F0F0F0ULL) | (((v + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ==
         0x3333333333333333ULL;
}
std::int64_t eight_digits(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  v = (v & 0x0F0F0F0F0F0F0F0FULL) * 2561 >> 8;
  v = (v & 0x00FF00FF00FF00FFULL) * 6553601 >> 16;
  return static_cast<std::int64_t>((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL >> 32);
}

}  // namespace

void append_quoted(std::string& out, std::string_view s) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else if (c < 0x80) {
      out.push_back(static_cast<char>(c));
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

std::optional<std::int64_t> microseconds_to_ns(std::string_view t) {
  if (t.empty()) return std::nullopt;
  std::size_t i = 0;
  const bool negative = t[0] == '-';
  if (negative) ++i;
  std::int64_t whole = 0;
  std::size_t digits = 0;
  // Timestamps have 13-16 digits: the first eight in one step (no overflow
  // possible), the rest one by one with the overflow check.
  if (t.size() - i >= 8 && is_eight_digits(t.data() + i)) {
    whole = eight_digits(t.data() + i);
    i += 8;
    digits = 8;
  }
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) {
    if (whole > INT64_MAX / 10 - 1) return std::nullopt;  // far out of range as ns
    whole = whole * 10 + (t[i] - '0');
  }
  if (digits == 0) return std::nullopt;
  std::int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    std::size_t frac_digits = 0;
    int round_digit = -1;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++frac_digits) {
      if (frac_digits < 3) frac_ns = frac_ns * 10 + (t[i] - '0');
      else if (frac_digits == 3) round_digit = t[i] - '0';
    }
    if (frac_digits == 0) return std::nullopt;
    for (std::size_t k = frac_digits; k < 3; ++k) frac_ns *= 10;
    if (round_digit >= 5) ++frac_ns;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    // Rare: scientific notation. Go through a double.
    char* endp = nullptr;
    const std::string copy(t);
    const double us = std::strtod(copy.c_str(), &endp);
    if (endp != copy.c_str() + copy.size() || !std::isfinite(us) || std::fabs(us) > 9.0e15)
      return std::nullopt;
    return static_cast<std::int64_t>(std::llround(us * 1000.0));
  }
  if (i != t.size()) return std::nullopt;
  std::int64_t ns = 0;
  if (__builtin_mul_overflow(whole, 1000, &ns) || __builtin_add_overflow(ns, frac_ns, &ns)) return std::nullopt;
  return negative ? -ns : ns;
}

std::optional<std::int64_t> double_to_int64(double d) {
  if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;  // also false for NaN
  return static_cast<std::int64_t>(d);
}

void append_ns_as_us(std::string& out, std::int64_t ns) {
  if (ns < 0) {
    out.push_back('-');
    ns = -ns;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, ns / 1000);
  out.append(buf, r.ptr);
  const auto frac = static_cast<int>(ns % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + frac / 10 % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

}  // namespace attnprof::json_text
