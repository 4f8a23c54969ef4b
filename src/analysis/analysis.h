// The analysed trace: regions with their statistics, the kernels in them, and
// the findings of every diagnosis rule. This is what the reports print.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/attention.h"
#include "analysis/regions.h"
#include "analysis/step_time.h"
#include "analysis/trace_index.h"

namespace attnprof {

struct InstanceStats {
  int kernels = 0;
  int memcpys = 0;
  int memsets = 0;
  std::int64_t kernel_ns = 0;       // sum of kernel durations
  std::int64_t busy_ns = 0;         // GPU busy: union of all activity intervals
  std::int64_t span_ns = 0;         // first GPU start to last GPU end
  std::int64_t idle_ns = 0;         // span - busy: gaps between GPU work
  std::int64_t launch_api_ns = 0;   // CPU time in the launch calls
  std::int64_t matmul_ns = 0;       // GEMM + fused attention kernels
  std::int64_t tensor_core_ns = 0;  // ... of which on tensor cores
};

// One implementation and pass of attention in a region group (or, in
// Analysis::attention, in all of them).
struct AttentionSummary {
  AttentionImpl impl = AttentionImpl::Unfused;
  AttentionPass pass = AttentionPass::Forward;
  AttentionPhase phase = AttentionPhase::None;
  int calls = 0;
  int kernels = 0;             // over all calls
  std::int64_t kernel_ns = 0;  // over all calls
  Precision precision = Precision::Unknown;
  std::string kernel;          // fused kernel family, "" when not fused
  AttentionShape shape;        // of the first call with a known shape
  bool one_shape = true;       // every call with a known shape has that one
  std::int64_t fused_ns = -1;  // estimated, as fused kernels (not fused calls only)
  std::string estimate_source;
  std::vector<std::pair<std::string, int>> math_causes;  // SDPA math: each distinct cause and its calls
  // Calls whose kernel reads a paged KV cache (AttentionCall::paged), and their page size in tokens
  // where every one that says it says the same (0: not said, -1: sizes differ).
  int paged_calls = 0;
  int page_size = 0;
  // Calls run by CUDA graph replays, and of them those whose shape is their ops' at the graph's capture.
  int graph_calls = 0;
  int capture_shape_calls = 0;
  bool captures_in_trace = false;  // AttentionView::graph_captures
  std::string capture_trace;       // the second trace that held the captures (doctor --capture-trace), if any
  // Decode: the bytes its calls must move (attention_bytes, summed over the calls with a known shape),
  // the kernel time of those calls, and the GPU's peak bandwidth (0: not known).
  double bytes = 0;
  std::int64_t bytes_ns = 0;
  int bytes_calls = 0;  // the calls with a known shape, whose bytes and time those are
  double bytes_per_call() const { return bytes / std::max(1, bytes_calls); }
  double peak_tb_per_s = 0;
  // Decode: the forwards its calls make and the tokens they generate (a forward adds batch x q_len tokens: a
  // token a sequence, or a request's packed), over all instances, where the calls' shapes tell them: in each
  // instance two or more KV lengths, each that of as many calls (the layers), a forward's tokens apart (a
  // growing cache); 0 where they do not (a static cache's calls all read its whole length, no shapes).
  std::int64_t decode_forwards = 0;
  std::int64_t tokens = 0;
  // The achieved share of the peak, -1 when not known.
  double bandwidth_share() const {
    return bytes > 0 && bytes_ns > 0 && peak_tb_per_s > 0
               ? bytes / static_cast<double>(bytes_ns) / (peak_tb_per_s * 1e3)
               : -1;
  }
};

struct GroupStats {
  RegionGroup group;
  std::vector<InstanceStats> instances;
  double kernels_per_instance = 0;
  int min_kernels = 0;
  int max_kernels = 0;
  std::int64_t busy_ns = 0;                 // all instances
  double tensor_core_share = 0;             // of GEMM + attention time; -1 when there is none
  std::vector<AttentionSummary> attention;  // by implementation and pass
  std::int64_t attention_ns = 0;            // kernel time of the attention calls in the group
  StepModel steps;                          // each instance on the wall clock (step_time.h)
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

// What a finding is about: the attention calls, or the rest of the model.
enum class Scope : std::uint8_t { Attention, Model };
std::string_view to_string(Scope s);

struct Finding {
  std::string id;  // stable: cuda-core-gemm, fp32-upcast, ...
  Scope scope = Scope::Model;
  Severity severity = Severity::Info;
  std::string group;           // region group it was found in
  std::string title;           // one line, with numbers
  std::string detail;          // what the numbers are and why it matters
  std::int64_t time_ns = 0;    // GPU time it costs (wall: wall time), summed over the group's instances
  std::int64_t after_ns = -1;  // estimated GPU time of the same work after the fix (0: the work goes); -1
                               // unknown: the work stays at a speed not known, no fix is priced
  double share = 0;            // of the group's GPU busy time (wall: of its steps' span)
  bool wall = false;           // time_ns and share are the steps' wall time (gpu-idle, attention-host)
  int instances = 0;           // instances it was seen in
  std::vector<Evidence> evidence;
  std::string fix;
  std::vector<std::size_t> activities;  // the GPU work it is about (indices into TraceIndex::activities())
  std::optional<AttentionPass> pass;    // unfused-attention: the pass of its calls
};

// What one fix is worth, per step of the group doctor reports on (Analysis::step_group):
// the GPU busy time it removes and the change of the step's span, from a replay
// of the trace's timeline with the fix applied (step_simulation.h).
struct Fix {
  std::string id;                       // "fused-attention", "gpu-idle", or the id of the one finding it resolves
  std::string title;                    // what to do, in a few words
  std::vector<std::string> findings;    // ids of the findings it resolves (one id per finding, in order)
  std::vector<std::size_t> finding_of;  // ... as indices into Analysis::findings
  std::int64_t gpu_ns = 0;              // GPU busy time saved per step
  std::int64_t step_ns = 0;             // step span saved per step (the replay's median step)
  std::int64_t step_low_ns = 0;         // the range where the trace cannot tell (the fused call's CPU cost)
  std::int64_t step_high_ns = 0;
  std::string basis;  // how the numbers were found, in words
};

struct DeviceSummary {
  std::string name;  // "NVIDIA H200", or "" when the trace does not say
  int compute_major = 0;
  int compute_minor = 0;
  int num_sms = 0;
};

// Host-to-device copies outside every profiler step or annotation (weights and
// data loaded before the work): reported apart, never as a region's work.
struct HostCopies {
  int count = 0;
  std::int64_t bytes = 0;
  std::int64_t ns = 0;
};

struct Analysis {
  std::string label;  // the trace's path
  DeviceSummary device;
  std::string unsupported;                  // why this trace cannot be diagnosed (e.g. a ROCm trace); "" when it can
  int gpu_kernels = 0;                      // in the whole trace
  AttentionView attention_calls;            // every call in the trace
  std::vector<AttentionSummary> attention;  // in the analysed regions, by implementation and pass
  HostCopies setup_copies;
  int launchless_activities = 0;  // GPU work whose launch is not in the trace (before its window): left out
  std::vector<GroupStats> groups;
  std::vector<KernelSummary> kernels;  // in any region, by total time
  int unassigned_activities = 0;       // GPU work outside every region
  std::vector<Finding> findings;       // ranked by time
  // The group the step figures are about (the one with the most attention time,
  // else the most GPU time): an index into groups, -1 when there is none.
  int step_group = -1;
  std::vector<Fix> fixes;  // by step time saved, the most first
};

// `index` holds the trace it was made from (TraceIndex::trace); `label` names it (its path).
// `captured`: CUDA graphs captured in a second trace (doctor --capture-trace), or null.
Analysis analyze(const TraceIndex& index, const RegionOptions& options, const std::string& label,
                 const CapturedShapes* captured = nullptr);
// Severity from the share of the region's GPU time a finding costs.
Severity severity_for_share(double share);

// A group's instances by GPU busy time, the fastest first (a stable order); the
// reports show the median one (median_instance), the annotated trace three.
std::vector<std::size_t> instances_by_busy(const GroupStats& g);
std::size_t median_instance(const GroupStats& g);  // 0 when the group has none

}  // namespace attnprof
