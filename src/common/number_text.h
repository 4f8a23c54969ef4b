// Numbers as attnprof's messages write them, the same in the analysis's findings
// and plans and in every report: milliseconds, the plural of a counted noun.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace attnprof::text {

// Nanoseconds as milliseconds with three decimals: "5.170".
std::string ms(std::int64_t ns);
// The plural ending of a counted noun: "" for exactly one, else `ending` ("1 call", "2 calls",
// "0.5 calls"; "1 process", "2 processes" with "es").
constexpr std::string_view plural(double count, std::string_view ending = "s") { return count == 1 ? "" : ending; }

}  // namespace attnprof::text
