// Small helpers on the in-memory trace.
#include "trace/trace.h"

namespace attnprof {

const DeviceProperties* Trace::device(int id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

}  // namespace attnprof
