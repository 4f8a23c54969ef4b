// Appends one recorded Trace to another: events, their GPU arguments, strings
// (re-interned into the target's pool), devices not yet listed, and counters.
// The injection library checkpoints a trace on SIGINT and finishes it at exit.
#pragma once

#include "trace/trace.h"

namespace attnprof::capture {

void append_trace(Trace& into, const Trace& from);

}  // namespace attnprof::capture
