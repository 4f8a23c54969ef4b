// Appends one recorded Trace to another: events, their GPU arguments, strings
// (re-interned into the target's pool), devices not yet listed, and counters.
// The injection library checkpoints a trace on SIGINT and finishes it at exit.
#pragma once

#include "trace/trace.h"

namespace attnprof::capture {

void append_trace(Trace& into, const Trace& from);

// Drops what began after `end_ns` (the recorder's clock): CPU-side events that started later, and the
// GPU work their launches started; GPU work launched before it stays, even when it ran after. GPU
// work whose launch is not in `trace` (already written out) goes when its correlation id is past a
// late launch's; recorded without launch calls (`launches_recorded` false), when it began after
// end_ns. For a capture window that closed at end_ns while CUPTI was still on.
void drop_after(Trace& trace, std::int64_t end_ns, bool launches_recorded);

}  // namespace attnprof::capture
