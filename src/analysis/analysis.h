// The analysed trace: regions with their statistics, the kernels in them, and
// the findings of every diagnosis rule. This is what the reports print.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/regions.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct InstanceStats {
  int kernels = 0;
  int memcpys = 0;
  int memsets = 0;
  std::int64_t kernel_ns = 0;      // sum of kernel durations
  std::int64_t busy_ns = 0;        // GPU busy: union of all activity intervals
  std::int64_t span_ns = 0;        // first GPU start to last GPU end
  std::int64_t idle_ns = 0;        // span - busy: gaps between GPU work
  std::int64_t launch_api_ns = 0;  // CPU time in the launch calls
  std::int64_t matmul_ns = 0;      // GEMM + fused attention kernels
  std::int64_t tensor_core_ns = 0; // ... of which on tensor cores
};

struct GroupStats {
  RegionGroup group;
  std::vector<InstanceStats> instances;
  double kernels_per_instance = 0;
  int min_kernels = 0;
  int max_kernels = 0;
  std::int64_t busy_ns = 0;  // all instances
  double tensor_core_share = 0;  // of GEMM + attention time; -1 when there is none
};

struct KernelSummary {
  std::string name;
  KernelClass cls;
  int count = 0;
  std::int64_t total_ns = 0;
};

enum class Severity { Info, Low, Medium, High };
std::string_view to_string(Severity s);

struct Evidence {
  std::string what;  // a kernel name, an op, a number
  int count = 0;     // over all instances
  std::int64_t total_ns = 0;
};

struct Finding {
  std::string id;       // stable: cuda-core-gemm, fp32-upcast, ...
  Severity severity = Severity::Info;
  std::string group;    // region group it was found in
  std::string title;    // one line, with numbers
  std::string detail;   // what the numbers are and why it matters
  std::int64_t time_ns = 0;  // GPU time it costs, summed over the group's instances
  double share = 0;          // of the group's GPU busy time
  int instances = 0;         // instances it was seen in
  std::vector<Evidence> evidence;
  std::string fix;
};

struct DeviceSummary {
  std::string name;          // "NVIDIA H200", or "" when the trace does not say
  int compute_major = 0;
  int compute_minor = 0;
  int num_sms = 0;
};

struct Analysis {
  std::string label;  // the trace's path
  DeviceSummary device;
  std::vector<GroupStats> groups;
  std::vector<KernelSummary> kernels;  // in any region, by total time
  int unassigned_activities = 0;       // GPU work outside every region
  std::vector<Finding> findings;       // ranked by time
};

Analysis analyze(const Trace& trace, const TraceIndex& index, const RegionOptions& options,
                 const std::string& label);

// Severity from the share of the region's GPU time a finding costs.
Severity severity_for_share(double share);

}  // namespace attnprof
