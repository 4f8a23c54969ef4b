// Lanes for drawing GPU work: one per stream, and more on a stream wherever an
// activity starts before the last one on every lane of it has ended, so no
// bar hides another (the HTML timeline and the annotated trace).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "analysis/trace_index.h"

namespace attnprof {

struct GpuLanes {
  struct Place {
    std::int64_t stream;  // -1 when the trace does not say
    std::size_t lane;     // within the stream, 0 first
  };
  std::vector<Place> places;                       // by position in the activities given
  std::map<std::int64_t, std::size_t> per_stream;  // stream -> its number of lanes
};

// `activities`: indices into index.activities(), in GPU start order.
GpuLanes assign_lanes(const TraceIndex& index, const std::vector<std::size_t>& activities);

}  // namespace attnprof
