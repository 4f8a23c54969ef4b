// Writes a Trace as Kineto-compatible Chrome-trace JSON (the same categories and
// args keys as the PyTorch profiler), so Perfetto, HolisticTraceAnalysis and
// attnprof doctor read it. Keys come from catalogue.h, shared with the reader.
#pragma once

#include <ostream>
#include <string>

#include "trace/trace.h"

namespace attnprof {

void write_trace_json(const Trace& trace, std::ostream& out);

// Writes to `path` atomically (a temporary file in the same folder, then
// rename), gzip-compressed when `path` ends in ".gz". Throws InputError
// naming the path when it cannot be written.
void write_trace_file(const Trace& trace, const std::string& path);

}  // namespace attnprof
