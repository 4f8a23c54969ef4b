#include "common/suggest.h"

#include <algorithm>
#include <cstdint>

namespace attnprof {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closest_word(std::string_view word, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_d = SIZE_MAX;
  for (const std::string& k : known)
    if (const std::size_t d = edit_distance(word, k); d < best_d) {
      best_d = d;
      best = k;
    }
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  return best_d > 0 && best_d <= allowed ? best : std::string();
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& known) {
  const std::string c = closest_word(word, known);
  return c.empty() ? std::string() : "; did you mean '" + c + "'?";
}

}  // namespace attnprof
