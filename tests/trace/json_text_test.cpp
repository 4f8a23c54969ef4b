// Exact microsecond parsing and JSON escaping.
#include "trace/json_text.h"

#include "common/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

namespace attnprof::json_text {
namespace {

TEST(JsonText, MicrosecondsToNanoseconds) {
  EXPECT_EQ(microseconds_to_ns("5128492346300.414"), 5128492346300414);
  EXPECT_EQ(microseconds_to_ns("1694039969479080"), 1694039969479080000);
  EXPECT_EQ(microseconds_to_ns("162.4"), 162400);
  EXPECT_EQ(microseconds_to_ns("0.0005"), 1);  // rounds past the third decimal
  EXPECT_EQ(microseconds_to_ns("0.0004"), 0);
  EXPECT_EQ(microseconds_to_ns("-2.5"), -2500);
  EXPECT_EQ(microseconds_to_ns("1.5e3"), 1500000);
  EXPECT_EQ(microseconds_to_ns("abc"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("1."), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("99999999999999999999"), std::nullopt);  // overflows int64 ns
  // Around the eight-digits-at-once step: digit runs of 7 to 17, non-digits inside it.
  EXPECT_EQ(microseconds_to_ns("1234567"), 1234567000);
  EXPECT_EQ(microseconds_to_ns("12345678"), 12345678000);
  EXPECT_EQ(microseconds_to_ns("12345678.9"), 12345678900);
  EXPECT_EQ(microseconds_to_ns("-98765432.1015"), -98765432102);
  // The largest that fits in int64 nanoseconds, and just past it.
  EXPECT_EQ(microseconds_to_ns("9223372036854775.807"), INT64_MAX);
  EXPECT_EQ(microseconds_to_ns("-9223372036854775.807"), -INT64_MAX);
  EXPECT_EQ(microseconds_to_ns("9223372036854775.808"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("9223372036854776"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("9223372036854779.9"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("12345678901234567"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("1234:678"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("1234/678"), std::nullopt);
  EXPECT_EQ(microseconds_to_ns("00000000"), 0);
}

// The word-at-a-time parse against a digit-by-digit one in 128-bit
// arithmetic, on random numbers around every digit-count boundary and with
// stray characters put in.
__extension__ using I128 = __int128;

std::optional<std::int64_t> reference_us_to_ns(const std::string& t) {
  std::size_t i = 0;
  const bool negative = !t.empty() && t[0] == '-';
  if (negative) ++i;
  I128 whole = 0;
  std::size_t digits = 0;
  for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++digits) whole = whole * 10 + (t[i] - '0');
  if (digits == 0 || digits > 18) return std::nullopt;
  I128 frac = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    std::size_t f = 0;
    int round = 0;
    for (; i < t.size() && t[i] >= '0' && t[i] <= '9'; ++i, ++f) {
      if (f < 3)
        frac = frac * 10 + (t[i] - '0');
      else if (f == 3)
        round = t[i] - '0';
    }
    if (f == 0) return std::nullopt;
    for (std::size_t k = f; k < 3; ++k) frac *= 10;
    if (round >= 5) ++frac;
  }
  if (i != t.size()) return std::nullopt;
  const I128 ns = whole * 1000 + frac;
  if (ns > INT64_MAX) return std::nullopt;
  return static_cast<std::int64_t>(negative ? -ns : ns);
}

TEST(JsonText, MicrosecondsToNanosecondsMatchesDigitByDigit) {
  std::mt19937_64 rng(7);
  const std::string junk = ".-:/ e";
  for (int n = 0; n < 200000; ++n) {
    std::string s = rng() % 4 == 0 ? "-" : "";
    const std::size_t whole = 1 + rng() % 18;
    for (std::size_t k = 0; k < whole; ++k) s.push_back(static_cast<char>('0' + rng() % 10));
    if (rng() % 3 != 0) {
      s.push_back('.');
      const std::size_t frac = rng() % 13;
      for (std::size_t k = 0; k < frac; ++k) s.push_back(static_cast<char>('0' + rng() % 10));
    }
    if (rng() % 8 == 0) s[rng() % s.size()] = junk[rng() % junk.size()];
    if (s.find('e') != std::string::npos) continue;  // exponents go through strtod
    ASSERT_EQ(microseconds_to_ns(s), reference_us_to_ns(s)) << s;
  }
}

TEST(JsonText, NanosecondsBackToMicroseconds) {
  for (std::int64_t ns : {0LL, 1LL, 999LL, 1000LL, 5128492346300414LL, -2500LL}) {
    std::string s;
    append_ns_as_us(s, ns);
    EXPECT_EQ(microseconds_to_ns(s), ns) << s;
  }
  std::string s;
  append_ns_as_us(s, 162400);
  EXPECT_EQ(s, "162.400");
}

TEST(JsonText, DoublesToInt64OnlyInRange) {
  EXPECT_EQ(double_to_int64(42.9), 42);
  EXPECT_EQ(double_to_int64(-1e18), -1000000000000000000);
  EXPECT_EQ(double_to_int64(1.79086e22), std::nullopt);
  EXPECT_EQ(double_to_int64(std::nan("")), std::nullopt);
}

TEST(JsonText, Quoting) {
  using attnprof::quoted;
  EXPECT_EQ(quoted("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(quoted("\x1f"), "\"\\u001f\"");
  EXPECT_EQ(quoted("caf\xC3\xA9"), "\"caf\xC3\xA9\"");  // valid UTF-8 kept
  EXPECT_EQ(quoted("\xC3"), "\"\xEF\xBF\xBD\"");        // truncated sequence replaced
  // Runs of plain bytes between escapes, at the start, middle and end.
  EXPECT_EQ(quoted("void f<\"x\">(int)\\n\tend\xC3\xA9z\xFFq"),
            "\"void f<\\\"x\\\">(int)\\\\n\\tend\xC3\xA9z\xEF\xBF\xBDq\"");
  EXPECT_EQ(quoted(""), "\"\"");
}

}  // namespace
}  // namespace attnprof::json_text
