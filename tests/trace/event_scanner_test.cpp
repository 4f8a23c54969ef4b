// The value-end scanner: strings, escapes, nesting and partial input.
#include "trace/event_scanner.h"

#include <gtest/gtest.h>

#include <string_view>

namespace attnprof::json_scan {
namespace {

std::ptrdiff_t end_of(std::string_view s, bool eof = false) {
  const char* e = value_end(s.data(), s.data() + s.size(), eof);
  return e == nullptr ? -1 : e - s.data();
}

TEST(EventScanner, FindsTheEndOfValues) {
  EXPECT_EQ(end_of(R"({"a": 1}, {)"), 8);
  EXPECT_EQ(end_of(R"({"a": "}"}])"), 10);    // brace inside a string
  EXPECT_EQ(end_of(R"({"a": "\"}"}x)"), 12);  // escaped quote
  EXPECT_EQ(end_of(R"({"a": "\\"}x)"), 11);   // escaped backslash, then a real quote
  EXPECT_EQ(end_of(R"({"a": [1, {"b": [2]}]} )"), 22);
  EXPECT_EQ(end_of(R"("x\\\"y" ,)"), 8);
  EXPECT_EQ(end_of("123,"), 3);
  EXPECT_EQ(end_of("true}"), 4);
}

TEST(EventScanner, PartialInputNeedsMore) {
  EXPECT_EQ(end_of(R"({"a": 1)"), -1);
  EXPECT_EQ(end_of(R"({"a": "})"), -1);
  EXPECT_EQ(end_of(R"("abc)"), -1);
  EXPECT_EQ(end_of("123"), -1);
  EXPECT_EQ(end_of("123", true), 3);
}

}  // namespace
}  // namespace attnprof::json_scan

namespace attnprof::json_scan {
namespace {

std::vector<const char*> ends_of(std::string_view s, bool simd, const char** closed) {
  std::vector<const char*> ends;
  const ElementScan r = simd ? scan_elements(s.data(), s.data() + s.size(), ends)
                             : scan_elements_scalar(s.data(), s.data() + s.size(), ends);
  *closed = r.closed_at;
  return ends;
}

TEST(ElementScanner, FindsEventEndsAndTheClosingBracket) {
  const std::string s = R"({"a": "}{\"]"}, {"b": [1, {"c": "\\"}]} , [] ]  {"after": 1})";
  const char* closed = nullptr;
  const auto ends = ends_of(s, false, &closed);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(ends[0] - s.data(), 14);
  EXPECT_EQ(*(ends[1] - 1), '}');
  ASSERT_NE(closed, nullptr);
  EXPECT_EQ(*closed, ']');
  EXPECT_EQ(closed - s.data(), 45);
}

// The AVX2 scanner must agree with the scalar one on every input: random
// mixes of quotes, backslash runs, brackets and text, crossing 64-byte blocks.
TEST(ElementScanner, SimdAgreesWithScalarOnRandomInput) {
  if (!simd_scanner_available()) GTEST_SKIP() << "no AVX2/PCLMUL on this CPU";
  std::uint64_t state = 0x12345678;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  // Backslashes only inside strings, as in any valid JSON (outside strings the
  // two scanners may differ, and simdjson rejects such input anyway).
  const std::string structural = "{}[]a, :";
  const std::vector<std::string> in_string = {"a", "\\\\", "\\\"", "{", "]", "}", "[", " "};
  for (int round = 0; round < 3000; ++round) {
    // A valid prefix of events, then random bytes (which may open strings, escape quotes...).
    std::string s;
    const int events = static_cast<int>(next() % 6);
    for (int e = 0; e < events; ++e) {
      s += R"({"name": "k\\\"x}", "args": {"grid": [1, 2, 3]}, "s": ")";
      s += std::string(next() % 70, 'z');
      s += "\"}, ";
    }
    const std::size_t tail = next() % 60;
    for (std::size_t i = 0; i < tail; ++i) {
      if (next() % 4 != 0) {
        s += structural[next() % structural.size()];
        continue;
      }
      s += '"';
      const std::size_t len = next() % 12;
      for (std::size_t k = 0; k < len; ++k) s += in_string[next() % in_string.size()];
      if (i + 1 < tail || next() % 2 == 0) s += '"';  // the last one may run off the end
    }
    const char* closed_scalar = nullptr;
    const char* closed_simd = nullptr;
    const auto a = ends_of(s, false, &closed_scalar);
    const auto b = ends_of(s, true, &closed_simd);
    ASSERT_EQ(a, b) << "round " << round << ": " << s;
    ASSERT_EQ(closed_scalar, closed_simd) << "round " << round << ": " << s;
    ASSERT_GE(a.size(), static_cast<std::size_t>(events));
  }
}

}  // namespace
}  // namespace attnprof::json_scan
