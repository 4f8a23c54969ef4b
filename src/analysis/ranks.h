// Many traces of one job (one per rank): each reduced to a per-rank summary as
// it is read, in parallel, then compared across ranks: the spread of the step
// figures, the slowest rank, and ranks whose attention dispatch differs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/trace_index.h"

namespace attnprof {

// Attention of one rank by implementation and pass, per step of its step group.
struct RankAttention {
  AttentionImpl impl = AttentionImpl::Unfused;
  AttentionPass pass = AttentionPass::Forward;
  std::string kernel;            // the fused kernel family, "" when not fused
  double calls = 0;              // per step
  std::int64_t ns = 0;           // kernel time per step
  std::string dispatch() const;  // "fused (FlashAttention)", "sdpa-math", "unfused"
};

// The median step of a rank drawn as kStripBins bins of equal time, each by what mostly ran in it: one
// character a bin, '.' idle (under 5% of it busy), 'c' compute, 'a' attention, 'n' communication, 'm'
// copies, in capitals where the GPU was busy half the bin or more. What doctor DIR --html draws, and
// small enough to travel in the summary.
inline constexpr int kStripBins = 120;

struct RankSummary {
  std::string path;
  std::string error;  // a trace that could not be read or diagnosed: why; the figures are unset
  int rank = -1;
  std::string rank_from;  // "distributedInfo", "file name" or "order"
  int world_size = -1;    // from distributedInfo; -1 when absent
  std::string backend;    // the process group's backend (nccl, gloo), "" when absent
  std::string device;
  std::string region;  // the step group ("ProfilerStep", a range's name, or "whole trace")
  int steps = 0;
  // Per step, the median step of the rank (StepModel::median_step):
  std::int64_t span_ns = 0;
  std::int64_t busy_ns = 0;
  std::int64_t compute_ns = 0;       // busy without exposed communication and copies: the rank's own work
  std::int64_t comm_ns = 0;          // communication, kernels and CPU ranges
  std::int64_t comm_exposed_ns = 0;  // ... of it with no compute running (the step waits on it)
  StepBound bound = StepBound::None;
  std::vector<RankAttention> attention;
  std::vector<std::string> findings;  // ids, in the report's order
  std::vector<Finding> finding_list;  // for --fail-on: id, scope and severity only
  std::uint64_t bytes = 0;            // of JSON text read
  std::string strip;                  // the median step, kStripBins characters; "" when unknown
  bool ok() const { return error.empty(); }
  // The attention dispatch in words ("fused (FlashAttention) fwd+bwd"): what a rank compares on.
  std::string dispatch() const;
};

RankSummary summarize_rank(const Analysis& a, const TraceIndex& index, const std::string& path);
// Reads, analyses and summarizes one trace file (or its bytes, named `label`); a bad trace becomes a
// summary with its error.
RankSummary summarize_trace(const std::string& path, const RegionOptions& options);
RankSummary summarize_trace_bytes(std::string_view bytes, const std::string& label, const RegionOptions& options);

// A summary as JSON and back, exactly (times in ns): what a worker elsewhere hands back to be
// compared (attnprof.doctor_many). Throws InputError for a document that is not one.
std::string rank_summary_json(const RankSummary& r);
RankSummary rank_summary_from_json(std::string_view json);

// The traces of a job in a folder: its .json / .json.gz files, sorted; where some names state a
// rank (trace_rank-3.json.gz), those alone (a facts.json beside them is not a rank).
std::vector<std::string> job_traces(const std::string& folder);

// How summarize_ranks reads in parallel: threads of this process, or worker processes (Linux; the CLI's:
// no contention between the workers' allocators and page tables, and a worker that crashes on one trace
// loses that trace alone). A process that runs other threads (a Python interpreter) keeps to threads.
enum class RankWorkers { Threads, Processes };

// Reads and analyses each trace on `jobs` workers (0: the machine's cores), each
// reduced to its summary before the next is read; a bad trace becomes a summary
// with its error. `progress(done, total, bytes)` is called after each trace.
std::vector<RankSummary> summarize_ranks(const std::vector<std::string>& paths, const RegionOptions& options,
                                         unsigned jobs,
                                         const std::function<void(int, int, std::uint64_t)>& progress = {},
                                         RankWorkers workers = RankWorkers::Threads);

struct Spread {
  std::int64_t min = 0, median = 0, max = 0;
  int min_rank = -1, max_rank = -1;
};

struct DispatchDiffers {
  std::vector<int> ranks;  // the ranks that differ from the most common dispatch
  std::string dispatch;    // theirs
  std::string usual;       // the others'
};

struct CrossRank {
  int ranks = 0;  // summaries compared (good ones)
  int bad = 0;    // traces that could not be read
  int world_size = -1;
  std::string backend;
  Spread span, busy, compute, comm, comm_exposed;
  // The rank with the most compute per step: at each collective the others wait for it.
  int slowest_rank = -1;
  double slowest_over_median = 0;      // its compute over the median rank's
  std::int64_t slowest_excess_ns = 0;  // its compute minus the median rank's
  std::vector<int> stragglers;         // ranks with >= 10% and >= 5% of the step more compute than the median
  std::vector<DispatchDiffers> dispatch_differs;
};

// Orders the summaries by rank, assigning ranks where the traces do not say
// (from the file name, rank<R> / rank-<R>, else the order given), and compares
// them. Throws InputError for a set that is not one job (world sizes differ, a
// rank twice, a rank outside the world size, steps of another region).
CrossRank compare_ranks(std::vector<RankSummary>& ranks);

// The rank a file name states (".../trace_rank-3.json.gz" -> 3), if any.
std::optional<int> rank_in_name(const std::string& path);

}  // namespace attnprof
