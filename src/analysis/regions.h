// Regions: the units a user thinks in. GPU work is grouped by the CPU range
// that contains its launch: ProfilerStep#N, a record_function / NVTX range
// chosen by name (--region attn_fwd), or the whole trace. Repeated ranges with
// one stem (fwd0, fwd1, fwd2 -> "fwd") form one group of instances.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/trace_index.h"

namespace attnprof {

struct RegionInstance {
  std::string name;           // "fwd0", "ProfilerStep#3", "whole trace"
  std::int64_t start_ns = 0;  // the range, on the CPU (or GPU for GPU-only spans)
  std::int64_t end_ns = 0;
  std::vector<std::size_t> activities;  // indices into TraceIndex::activities(), in GPU time order
};

struct RegionGroup {
  std::string name;    // "fwd", "ProfilerStep", "whole trace"
  std::string source;  // how the group was chosen, for the report
  std::vector<RegionInstance> instances;
};

// By activity (of `activities`): 1 where one of the group's instances holds it.
std::vector<char> group_members(const RegionGroup& group, std::size_t activities);

struct RegionOptions {
  std::string name;  // --region NAME: a range name, its stem, or a glob (fwd*); empty: automatic
};

// A host-to-device memcpy (weights and data being loaded).
bool is_host_to_device(const TraceIndex& index, const GpuActivity& a);

// The stem of a range name: trailing digits and separators removed ("fwd0" -> "fwd").
std::string region_stem(std::string_view name);

// Groups GPU activity into regions. Throws InputError when `options.name` is
// given and no range in the trace matches it (the message lists what exists).
std::vector<RegionGroup> find_regions(const TraceIndex& index, const RegionOptions& options,
                                      std::string_view trace_label);

}  // namespace attnprof
