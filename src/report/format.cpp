#include "report/format.h"

#include <fmt/format.h>

namespace attnprof::report {

std::string ms(std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e6); }

std::string percent(double share) {
  if (share < 0) return "-";
  return fmt::format("{:.0f}%", 100.0 * share);
}

std::string fit(std::string text, std::size_t width) {
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text;
}

std::string shape_text(const AttentionShape& s) {
  if (!s.known()) return "";
  return fmt::format("{} S{}{} D{}{}",
                     s.from == ShapeFrom::QkBmm ? fmt::format("BxH{}", s.batch)
                                                : fmt::format("B{} H{}/{}", s.batch, s.q_heads,
                                                              s.kv_heads > 0 ? std::to_string(s.kv_heads) : "?"),
                     s.q_len, s.kv_len == s.q_len ? std::string() : fmt::format("x{}", s.kv_len), s.head_dim,
                     s.causal.value_or(false) ? " causal" : "");
}

}  // namespace attnprof::report
