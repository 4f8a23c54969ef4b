#include "cli/trace_input.h"

#include <filesystem>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "common/input_error.h"
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
}

}  // namespace attnprof::cli
