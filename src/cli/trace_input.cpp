#include "cli/trace_input.h"

#include <filesystem>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "common/input_error.h"
#include "trace/byte_source.h"
#include "trace/trace_reader.h"

namespace attnprof::cli {

Trace read_trace_input(const std::string& path) {
  const ReadOptions options{.detail = ReadDetail::Analysis};
  if (path != "-") return read_trace_file(path, options);
  std::string bytes{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (bytes.empty()) throw InputError("<stdin>: empty input (- reads the trace from standard input)");
  return read_trace_bytes(bytes, "<stdin>", options);
}

std::string input_label(const std::string& path) { return path == "-" ? "<stdin>" : path; }

namespace {

// What an existing file at an output path holds, from its first bytes (gunzipped): a trace attnprof's
// --annotate wrote (ours to replace), another trace (someone's data), or something else.
enum class Held { Nothing, OurAnnotatedTrace, Trace, Other };

Held held_at(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) == 0) return Held::Nothing;
  std::string head(4096, '\0');
  try {
    const auto source = open_file_source(path, false);
    std::size_t got = 0;
    while (got < head.size()) {
      const std::size_t n = source->read(head.data() + got, head.size() - got);
      if (n == 0) break;
      got += n;
    }
    head.resize(got);
  } catch (const InputError&) {
    return Held::Other;  // unreadable, or a gzip stream that is not one: not a trace we can tell
  }
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (head[first] != '{' && head[first] != '[')) return Held::Other;
  if (head.find("\"traceName\": \"attnprof doctor --annotate") != std::string::npos) return Held::OurAnnotatedTrace;
  return head.find("traceEvents") != std::string::npos || head[first] == '[' ? Held::Trace : Held::Other;
}

}  // namespace

void check_output(const std::string& what, const std::string& out, const std::vector<std::string>& inputs, bool page) {
  namespace fs = std::filesystem;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (in != "-" && (in == out || fs::equivalent(in, out, ec)))
      throw InputError(
          fmt::format("{} {}: that is the input trace; writing it would overwrite the trace (name "
                      "another file)",
                      what, out));
  }
  if (page && (out.ends_with(".json") || out.ends_with(".gz")))  // .json.gz too
    throw InputError(
        fmt::format("{} {}: an HTML page, not a trace, goes there; name it .html (two traces "
                    "given? doctor reads one)",
                    what, out));
  // A trace already there is someone's data: only an annotated trace attnprof wrote is replaced.
  if (const Held held = held_at(out); held == Held::Trace || (page && held == Held::OurAnnotatedTrace))
    throw InputError(
        fmt::format("{} {}: that file holds a trace; writing there would overwrite it (name another file)", what, out));
}

}  // namespace attnprof::cli
