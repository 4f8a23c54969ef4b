// See trace_append.h.
#include "capture/trace_append.h"

#include <unordered_set>

namespace attnprof::capture {

void append_trace(Trace& into, const Trace& from) {
  into.append_events(from, 0, from.events.size());
  into.merge_metadata(from);
}

void drop_after(Trace& trace, std::int64_t end_ns, bool launches_recorded) {
  // Correlation ids count up across the process's calls, so GPU work whose launch is not in `trace`
  // (written out earlier) came after the end only when its id is past the first late launch's.
  std::unordered_set<std::int64_t> launched, late;  // correlation ids of the launches, and of those after the end
  std::int64_t first_late = -1;
  for (const Event& e : trace.events)
    if (is_launch_api(e.kind) && e.correlation >= 0) {
      launched.insert(e.correlation);
      if (e.ts_ns <= end_ns) continue;
      late.insert(e.correlation);
      if (first_late < 0 || e.correlation < first_late) first_late = e.correlation;
    }
  std::erase_if(trace.events, [&](const Event& e) {
    if (e.kind == EventKind::Metadata) return false;
    if (is_gpu_activity(e.kind) && e.correlation >= 0 && launches_recorded) {
      if (launched.count(e.correlation) > 0) return late.count(e.correlation) > 0;
      return first_late >= 0 && e.correlation > first_late;
    }
    return e.ts_ns > end_ns;
  });
}

}  // namespace attnprof::capture
