// Reading the trace a subcommand was given: a file (.json or .json.gz) or "-"
// for standard input, read for analysis (ReadDetail::Analysis).
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace attnprof::cli {

Trace read_trace_input(const std::string& path);
// The label reports use for `path`: the path, or "<stdin>".
std::string input_label(const std::string& path);
// Refuses an output file that would overwrite an input trace, or whose name says
// it is a trace (`what` is the option, "--html"; `page` whether it writes HTML).
void check_output(const std::string& what, const std::string& out, const std::vector<std::string>& inputs, bool page);

}  // namespace attnprof::cli
