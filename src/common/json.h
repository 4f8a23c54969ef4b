// The project's one JSON string escaper and one document writer: the doctor
// and bench reports and the trace writer all write through JsonWriter.
#pragma once

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attnprof {

// Appends `s` as a quoted JSON string (escapes quotes, backslashes, control
// characters; invalid UTF-8 bytes become U+FFFD so the output is always valid).
void append_quoted(std::string& out, std::string_view s);
std::string quoted(std::string_view s);

// Where line breaks go. Either way each top-level member, and each element of
// an array that is a top-level member, gets a line of its own; deeper values
// stay on that line.
enum class JsonLayout {
  Compact,  // the first member on the opening bracket's line, closing brackets inline (reports)
  Lines,    // every such member on its own indented line, closing brackets too (traces, as Kineto)
};

// A JSON document writer: separators are inserted by the container, so
// callers only name fields. Strings go through append_quoted. The writer only
// ever appends to `out`, so a caller may pass the text on and clear `out`
// between members (the trace writer streams large traces this way).
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, JsonLayout layout = JsonLayout::Compact) : out_(out), layout_(layout) {}
  void begin_object(std::string_view k = {}) { open(k, '{'); }
  void begin_array(std::string_view k = {}) { open(k, '['); }
  void end_object() { close('}'); }
  void end_array() { close(']'); }
  void str(std::string_view k, std::string_view v) {
    key(k);
    append_quoted(out_, v);
  }
  template <typename T>
  void num(std::string_view k, T v) {
    key(k);
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void real(std::string_view k, double v, int decimals = 3) {
    key(k);
    fmt::format_to(std::back_inserter(out_), "{:.{}f}", v, decimals);
  }
  void boolean(std::string_view k, bool v) {
    key(k);
    out_ += v ? "true" : "false";
  }
  void null(std::string_view k) {
    key(k);
    out_ += "null";
  }
  // The value, or null: an empty text, an unset number. Reports write unknowns as null, never a sentinel.
  void str_or_null(std::string_view k, std::string_view v) {
    if (v.empty())
      null(k);
    else
      str(k, v);
  }
  void real_or_null(std::string_view k, const std::optional<double>& v, int decimals = 3) {
    if (v)
      real(k, *v, decimals);
    else
      null(k);
  }
  // Writes the key (and separator) and returns the output, for a value the
  // caller appends itself as JSON text (e.g. a number in its own format).
  std::string& value(std::string_view k) {
    key(k);
    return out_;
  }

 private:
  // Whether the members of the innermost open container go on lines of their own.
  bool own_line() const { return first_.size() == 1 || (first_.size() == 2 && arrays_.back()); }
  void new_line(std::size_t depth) {
    out_ += '\n';
    out_.append(layout_ == JsonLayout::Lines ? 2 * depth : 2, ' ');
  }
  // Separator before a new member; then its key when in an object.
  void key(std::string_view k) {
    if (!first_.empty()) {
      const bool line = own_line();
      if (!first_.back()) out_ += line ? "," : ", ";
      if (line && (!first_.back() || layout_ == JsonLayout::Lines)) new_line(first_.size());
      first_.back() = false;
    }
    if (!k.empty()) {
      append_quoted(out_, k);
      out_ += ": ";
    }
  }
  void open(std::string_view k, char bracket) {
    key(k);
    out_ += bracket;
    first_.push_back(true);
    arrays_.push_back(bracket == '[');
  }
  void close(char bracket) {
    if (layout_ == JsonLayout::Lines && own_line() && !first_.back()) new_line(first_.size() - 1);
    first_.pop_back();
    arrays_.pop_back();
    out_ += bracket;
  }

  std::string& out_;
  JsonLayout layout_;
  std::vector<bool> first_;   // per open container: no member written yet
  std::vector<bool> arrays_;  // per open container: is it an array
};

}  // namespace attnprof
