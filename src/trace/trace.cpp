// Small helpers on the in-memory trace.
#include "trace/trace.h"

namespace attnprof {

const DeviceProperties* Trace::device(int id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

Event& Trace::add(Event e, const GpuArgs* args) {
  if (args != nullptr) {
    e.gpu_args = static_cast<std::uint32_t>(gpu_args.size());
    gpu_args.push_back(*args);
  }
  events.push_back(e);
  return events.back();
}

}  // namespace attnprof
