// The top-level values of a trace beside traceEvents: the ones the trace model keeps
// (deviceProperties, distributedInfo, baseTimeNanoseconds, schemaVersion, traceName, the
// CUDA and CUPTI versions, dropped records) are read into the Trace; any other is only
// checked to be JSON. Small values, parsed with simdjson's DOM API; the streaming reader
// (trace_reader.cpp) cuts each out of the file whole.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "trace/trace.h"

namespace attnprof {

// `text` is the whole JSON value of the top-level key `key`. Throws InputError naming `label`.
void read_top_level_value(simdjson::dom::parser& dom, const std::string& key, std::string_view text, Trace& trace,
                          std::string_view label);

}  // namespace attnprof
