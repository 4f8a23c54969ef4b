#include "report/format.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string_view>
#include <vector>

namespace attnprof::report {

std::string change(double before, double after) {
  if (before <= 0 && after <= 0) return "none in either";
  if (before <= 0) return "appeared";
  if (after <= 0) return "gone";
  const double pct = 100.0 * (after - before) / before;
  if (after < before && before / after >= 1.5) return fmt::format("{:+.1f}%, {:.1f}x less", pct, before / after);
  if (after > before && after / before >= 1.5) return fmt::format("{:+.1f}%, {:.1f}x more", pct, after / before);
  return fmt::format("{:+.1f}%", pct);
}

std::string md(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>' && out.empty())  // elsewhere a '>' is text ("5.2 -> 0.3 ms"); first, a quote
      out += "\\>";
    else if (c == '`')
      out += "'";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out.push_back(c);
  }
  return out;
}

std::string percent(double share) {
  if (share < 0) return "-";
  // Rounding would call a sliver nothing (a launch-bound step's GPU busy 0.5%) or a near-whole all of it.
  std::string whole = fmt::format("{:.0f}%", 100.0 * share);
  if (share > 0 && whole == "0%") return "<1%";
  if (share < 1 && whole == "100%") return ">99%";
  return whole;
}

std::string fit(std::string text, std::size_t width) {
  if (text.size() > width) text = text.substr(0, width - 3) + "...";
  return text;
}

std::string shape_text(const AttentionShape& s) {
  // What the trace does not say is said in words, not as "?".
  const auto heads = [&] {
    if (s.from == ShapeFrom::QkBmm || s.batch_x_heads) return fmt::format("B*H {}", s.batch);
    return fmt::format("B{} H{}", s.batch, s.q_heads);
  };
  const std::string kv_len = s.kv_len == s.q_len || s.kv_len <= 0 ? std::string() : fmt::format("x{}", s.kv_len);
  if (s.from == ShapeFrom::Kernels && !s.known() && s.batch > 0 && s.q_len > 0) {  // what the kernels say
    std::vector<std::string_view> missing;
    if (s.q_heads <= 0 && !s.batch_x_heads) missing.push_back("query heads");
    if (s.kv_len <= 0) missing.push_back("key length");
    if (s.head_dim <= 0) missing.push_back("head dim");
    const bool q_heads = s.q_heads > 0 || s.batch_x_heads;
    const std::string b = q_heads ? heads() : fmt::format("B{}", s.batch);
    const std::string kv = s.kv_heads <= 0 ? ""
                           : q_heads       ? fmt::format("/{}", s.kv_heads)
                                           : fmt::format(" H_kv{}", s.kv_heads);
    return fmt::format("{}{} S{}{}{}{}", b, kv, s.q_len, kv_len, s.head_dim > 0 ? fmt::format(" D{}", s.head_dim) : "",
                       missing.empty() ? "" : fmt::format(", {} not in trace", fmt::join(missing, ", ")));
  }
  if (!s.known()) return "";
  const bool split = !(s.from == ShapeFrom::QkBmm || s.batch_x_heads);
  return fmt::format("{}{} S{}{} D{}{}{}", heads(), split && s.kv_heads > 0 ? fmt::format("/{}", s.kv_heads) : "",
                     s.q_len, kv_len, s.head_dim, s.causal.value_or(false) ? " causal" : "",
                     split && s.kv_heads <= 0 ? ", kv heads not in trace" : "");
}

// Wraps `text` at `width` columns, every line indented by `indent`.
void append_wrapped(std::string& out, std::string_view text, std::size_t indent, std::size_t width) {
  std::size_t col = 0;
  const std::string pad(indent, ' ');
  while (!text.empty()) {
    const auto space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    if (col == 0) {
      out += pad;
      col = indent;
    } else if (col + 1 + word.size() > width) {
      out += '\n';
      out += pad;
      col = indent;
    } else {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    if (space == std::string_view::npos) break;
    text.remove_prefix(space + 1);
  }
  out += '\n';
}

}  // namespace attnprof::report
