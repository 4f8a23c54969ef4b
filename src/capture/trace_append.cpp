// See trace_append.h.
#include "capture/trace_append.h"

namespace attnprof::capture {

void append_trace(Trace& into, const Trace& from) {
  auto reintern = [&](StringId id) { return id == kNoString ? kNoString : into.strings.intern(from.strings.view(id)); };
  auto lane = [&](Lane l) { return l.is_string ? Lane{reintern(static_cast<StringId>(l.value())), true} : l; };
  into.events.reserve(into.events.size() + from.events.size());
  for (Event e : from.events) {
    e.name = reintern(e.name);
    e.category = reintern(e.category);
    e.pid = lane(e.pid);
    e.tid = lane(e.tid);
    const GpuArgs* args = from.args(e);
    e.gpu_args = Event::kNoGpuArgs;
    into.add(e, args);
  }
  for (const auto& d : from.devices)
    if (into.device(d.id) == nullptr) into.devices.push_back(d);
  into.dropped_records += from.dropped_records;
  if (from.cupti_version >= 0) into.cupti_version = from.cupti_version;
  if (from.cuda_driver_version >= 0) into.cuda_driver_version = from.cuda_driver_version;
  if (from.cuda_runtime_version >= 0) into.cuda_runtime_version = from.cuda_runtime_version;
}

}  // namespace attnprof::capture
