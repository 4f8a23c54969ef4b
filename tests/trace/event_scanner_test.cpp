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
  EXPECT_EQ(end_of(R"({"a": "}"}])"), 10);              // brace inside a string
  EXPECT_EQ(end_of(R"({"a": "\"}"}x)"), 12);            // escaped quote
  EXPECT_EQ(end_of(R"({"a": "\\"}x)"), 11);             // escaped backslash, then a real quote
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
