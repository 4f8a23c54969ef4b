// "Did you mean": the closest of a few known words to a mistyped one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attnprof {

// Levenshtein distance between two words.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The known word closest to `word` when it is close enough to be a typo (at most
// 2 edits, or a third of the word's length for long words), else "".
std::string closest_word(std::string_view word, const std::vector<std::string>& known);
// "; did you mean 'X'?" for closest_word's answer, or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string>& known);

}  // namespace attnprof
