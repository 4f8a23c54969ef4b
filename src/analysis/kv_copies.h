// What the KV-copy findings' detectors share (kv_repeat.h, kv_cache_gather.h): a copy kernel's op, told
// at its launch or, for a CUDA graph's replay, at the graph's capture; the forward call the copy feeds;
// and the bytes the op wrote, counted once per op (and per replay).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "analysis/attention.h"
#include "analysis/trace_index.h"

namespace attnprof {

// Whether a record_shapes dim is a tensor's (positive, under 2^31), not a scalar's or a stray value.
inline bool tensor_dim(std::int64_t v) { return v > 0 && v < (std::int64_t{1} << 31); }

// The op around kernel activity i's launch (a replay's at the graph's capture; kNone for a replay whose
// capture the trace does not hold): the nearest, walking out, for which take(range) is true.
template <typename Take>
std::int32_t launching_op(const TraceIndex& index, std::size_t i, Take&& take) {
  const std::int32_t captured = index.capture_range(i);
  std::int32_t r = captured != kNone ? captured : index.graph_replayed(i) ? kNone : index.activities()[i].range;
  for (; r != kNone; r = index.ranges()[static_cast<std::size_t>(r)].parent)
    if (take(index.ranges()[static_cast<std::size_t>(r)])) return r;
  return kNone;
}

// The first forward attention call after kernel activity i on its stream (an index into view.calls).
std::optional<std::size_t> next_forward_call(const TraceIndex& index, const AttentionView& view, std::size_t i);

// The bytes of `elements` elements of call c's precision (bf16 where it is not known).
double bytes_of(const AttentionCall& c, double elements);

// Which kernels first write an op's tensor: an op's later kernels (a copy over 2^31 elements runs in
// pieces) write no more of it; a graph's op writes again at every replay.
class FirstWrites {
 public:
  bool first(const TraceIndex& index, std::size_t i, std::int32_t op) {
    return seen_.insert({op, index.capture_range(i) != kNone ? index.activities()[i].launch : kNone}).second;
  }

 private:
  std::set<std::pair<std::int32_t, std::int32_t>> seen_;
};

}  // namespace attnprof
