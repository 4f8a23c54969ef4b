// Reading the trace a subcommand was given: a file (.json or .json.gz) or "-"
// for standard input, read for analysis (ReadDetail::Analysis).
#pragma once

#include <string>

#include "trace/trace.h"

namespace attnprof::cli {

Trace read_trace_input(const std::string& path);
// The label reports use for `path`: the path, or "<stdin>".
std::string input_label(const std::string& path);

}  // namespace attnprof::cli
