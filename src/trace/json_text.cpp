// Exact microsecond <-> nanosecond conversion for the trace's JSON numbers.
#include "trace/json_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace attnprof::json_text {
namespace {

// Up to eight ASCII digits in one 64-bit word (SWAR; the multiply-shift steps
// of simdjson's and fast_float's parse_eight_digits).
std::int64_t eight_digits(std::uint64_t v) {
  v = (v & 0x0F0F0F0F0F0F0F0FULL) * 2561 >> 8;
  v = (v & 0x00FF00FF00FF00FFULL) * 6553601 >> 16;
  return static_cast<std::int64_t>((v & 0x0000FFFF0000FFFFULL) * 42949672960001ULL >> 32);
}

// How many of the word's bytes, from its first, are ASCII digits (0-8).
int leading_digits(std::uint64_t v) {
  constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0ULL, kZeros = 0x3030303030303030ULL;
  // Non-zero in each byte that is not a digit. A carry out of a non-digit byte
  // can only spoil the test of later bytes, never of an earlier one.
  const std::uint64_t bad = ((v & kHigh) ^ kZeros) | (((v + 0x0606060606060606ULL) & kHigh) ^ kZeros);
  return bad == 0 ? 8 : __builtin_ctzll(bad) / 8;
}

// The value of the first `n` (1-8) digit bytes of the word.
std::int64_t digits_value(std::uint64_t v, int n) {
  if (n < 8) v = (v << (8 * (8 - n))) | (0x3030303030303030ULL >> (8 * n));  // left-pad with '0'
  return eight_digits(v);
}

constexpr std::int64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};

}  // namespace

std::optional<std::int64_t> microseconds_to_ns(std::string_view t) {
  // Copied where 8 bytes after it are readable (zero bytes: not digits).
  std::string copy(t);
  copy.append(8, '\0');
  return microseconds_to_ns_padded({copy.data(), t.size()});
}

std::optional<std::int64_t> microseconds_to_ns_padded(std::string_view t) {
  // Kineto writes "%.3f": 1-16 digits, '.', three digits. That shape takes two
  // or three word steps and no loop; anything else goes the general way.
  if (const std::size_t n = t.size(); n >= 5 && n <= 20 && t[n - 4] == '.') {
    const auto whole_digits = static_cast<int>(n - 4);
    const std::uint64_t frac = padded_word(t, n - 3);
    const std::uint64_t head = padded_word(t, 0);
    if (leading_digits(frac) == 3) {
      std::int64_t whole = -1;
      if (whole_digits <= 8) {
        if (leading_digits(head) == whole_digits) whole = digits_value(head, whole_digits);
      } else if (leading_digits(head) == 8) {
        const std::uint64_t rest = padded_word(t, 8);
        if (leading_digits(rest) == whole_digits - 8)
          whole = eight_digits(head) * kPow10[whole_digits - 8] + digits_value(rest, whole_digits - 8);
      }
      if (whole >= 0 && whole <= INT64_MAX / 1000 - 1) return whole * 1000 + digits_value(frac, 3);
    }
  }
  if (t.empty()) return std::nullopt;
  std::size_t i = 0;
  const bool negative = t[0] == '-';
  if (negative) ++i;
  // Integer part, eight digits per step: Kineto's timestamps have 13-16.
  std::int64_t whole = 0;
  std::size_t digits = 0;
  for (;;) {
    const std::uint64_t w = padded_word(t, i);
    const int n = leading_digits(w);
    if (n == 0) break;
    if (digits + static_cast<std::size_t>(n) > 18) return std::nullopt;  // far out of range as ns
    whole = whole * kPow10[n] + digits_value(w, n);
    digits += static_cast<std::size_t>(n);
    i += static_cast<std::size_t>(n);
    if (n < 8) break;
  }
  if (digits == 0) return std::nullopt;
  // Fraction: three digits of nanoseconds, rounded half up on the fourth.
  std::int64_t frac_ns = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    const std::uint64_t w = padded_word(t, i);
    const int n = leading_digits(w);
    if (n == 0) return std::nullopt;
    const auto d = [w](int k) { return static_cast<std::int64_t>((w >> (8 * k)) & 0xF); };
    frac_ns = n >= 3 ? d(0) * 100 + d(1) * 10 + d(2) : digits_value(w, n) * kPow10[3 - n];
    if (n > 3 && d(3) >= 5) ++frac_ns;
    i += static_cast<std::size_t>(n);
    if (n == 8)
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    // Rare: scientific notation. Go through a double.
    char* endp = nullptr;
    const std::string copy(t);
    const double us = std::strtod(copy.c_str(), &endp);
    if (endp != copy.c_str() + copy.size() || !std::isfinite(us) || std::fabs(us) > 9.0e15) return std::nullopt;
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
