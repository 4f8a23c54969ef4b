#include "report/gpu_lanes.h"

namespace attnprof {

GpuLanes assign_lanes(const TraceIndex& index, const std::vector<std::size_t>& activities) {
  GpuLanes out;
  std::map<std::int64_t, std::vector<std::int64_t>> ends;  // stream -> end of the last activity on each lane
  out.places.reserve(activities.size());
  for (const std::size_t i : activities) {
    const Event& e = index.event(index.activities()[i]);
    const GpuArgs* g = index.trace().args(e);
    const std::int64_t stream = g != nullptr ? g->stream : -1;
    auto& lanes = ends[stream];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > e.ts_ns) ++lane;
    if (lane == lanes.size()) lanes.push_back(0);
    lanes[lane] = e.end_ns();
    out.places.push_back({stream, lane});
  }
  for (const auto& [stream, lanes] : ends) out.per_stream[stream] = lanes.size();
  return out;
}

}  // namespace attnprof
