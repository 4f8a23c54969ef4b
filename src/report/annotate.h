// doctor --annotate: a small Chrome/Kineto trace for the Perfetto UI holding
// only what the analysis looked at. Per region group, three instances (the
// fastest, the median and the slowest by GPU busy time): the instances and the
// attention calls in them as spans, their GPU work on lanes (one per stream,
// more where kernels overlap, so none hides another), and a track per finding
// with a span over each of its kernels, linked to the kernel by a flow arrow.
#pragma once

#include <string>

#include "analysis/analysis.h"

namespace attnprof {

// The process ids of the annotated trace.
inline constexpr int kAnnotateRegionsPid = 1;
inline constexpr int kAnnotateGpuPid = 2;
inline constexpr int kAnnotateFindingsPid = 3;

std::string annotated_trace(const Analysis& analysis, const TraceIndex& index);

}  // namespace attnprof
