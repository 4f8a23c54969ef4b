#include "cli/trace_input.h"

#include <iostream>
#include <iterator>

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

}  // namespace attnprof::cli
