// The project's one JSON string escaper and one document writer: the doctor
// and bench reports write through JsonWriter, the trace writer streams events
// through append_quoted.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace attnprof {

// Appends `s` as a quoted JSON string (escapes quotes, backslashes, control
// characters; invalid UTF-8 bytes become U+FFFD so the output is always valid).
void append_quoted(std::string& out, std::string_view s);
std::string quoted(std::string_view s);

// A JSON document writer: separators are inserted by the container, so
// callers only name fields; one line per top-level member and per element of
// a top-level array. Strings go through append_quoted.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}
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

 private:
  // Separator before a new member; then its key when in an object.
  void key(std::string_view k) {
    if (!first_.empty()) {
      // One line per top-level member and per element of a top-level array.
      const bool own_line = first_.size() == 1 || (first_.size() == 2 && arrays_.back());
      if (!first_.back()) out_ += own_line ? ",\n  " : ", ";
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
    first_.pop_back();
    arrays_.pop_back();
    out_ += bracket;
  }

  std::string& out_;
  std::vector<bool> first_;   // per open container: no member written yet
  std::vector<bool> arrays_;  // per open container: is it an array
};

}  // namespace attnprof
