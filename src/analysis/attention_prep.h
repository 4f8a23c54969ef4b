// The CPU ops around an unfused attention call that one fused call does without,
// as the trace's outermost ATen ops tell them (a trace with CPU ops only):
//   - the layout copies next to the call: K/V heads repeated for grouped-query
//     attention (repeat_kv: unsqueeze / expand / reshape, a copy each), the
//     output's transpose made contiguous (a copy), and their backward ops;
//     SDPA takes strided inputs and repeats no heads (enable_gqa), and its
//     output's transpose is a view;
//   - the mask built on every forward before the calls (comparisons of index
//     ranges, where / masked_fill, the scalar fills and copies between them):
//     with is_causal=True a fused call needs none.
// What is between them is a run of whole ops on one thread, with the GPU work
// they launched; the step-time model replaces it with the fused call's. Without
// CPU ops (attnprof record) the mask is told by its launches' kernels instead
// (find_mask_launches).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/attention.h"
#include "analysis/host_calls.h"
#include "analysis/trace_index.h"

namespace attnprof {

// A run of outermost ops [first, last] (positions in OutermostOps::ops()).
struct OpRun {
  std::size_t first = 0, last = 0;
};

// The outermost CPU ops of a trace, per thread in start order, with the GPU
// activities each launched.
class OutermostOps {
 public:
  explicit OutermostOps(const TraceIndex& index);

  struct Op {
    std::int64_t ts, end;
    std::int32_t range;  // index into TraceIndex::ranges()
    std::uint32_t lane;  // the thread
  };
  const std::vector<Op>& ops() const { return ops_; }  // by (lane, start)
  // The position in ops() of the op that launched `activity`, or kNone.
  std::int32_t op_of(std::size_t activity) const { return op_of_[activity]; }
  std::span<const std::size_t> activities(std::size_t op) const;
  std::string_view name(std::size_t op) const { return index_.name(index_.ranges()[ops_[op].range]); }
  // The position of the op on e's thread whose span holds e's time, or kNone.
  std::int32_t holding(const Event& e) const;
  const TraceIndex& index() const { return index_; }

 private:
  const TraceIndex& index_;
  std::vector<Op> ops_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> lanes_;  // (pid, tid) -> lane
  std::vector<std::int32_t> op_of_;
  std::vector<std::int32_t> first_;  // CSR offsets into acts_
  std::vector<std::size_t> acts_;
};

// The ops the autograd engine ran as the backward of forward ops: torch.profiler's "fwdbwd" flows link
// an op that made an autograd node to the node's evaluate_function (none without such flows, e.g. a
// trace without a backward). Built where the backward is priced, not with every OutermostOps.
class BackwardNodes {
 public:
  explicit BackwardNodes(const OutermostOps& ops);
  // The backward nodes of the ops in `forward`, by position, in order.
  std::vector<std::size_t> of(OpRun forward) const;

 private:
  std::vector<std::pair<std::size_t, std::size_t>> links_;  // (forward op, its backward node's op), sorted
};

// Each call's run: the positions of the first and last op that launched its GPU
// work (none when an activity of it has no op, or its ops are on two threads).
std::vector<std::optional<OpRun>> call_runs(const OutermostOps& ops, const std::vector<AttentionCall>& calls);

// The ops of one call (the positions of its first and last op) widened by the
// layout copies next to it, never into the ops of `others` (the calls' runs,
// sorted by first).
OpRun widen_by_layout_copies(const OutermostOps& ops, OpRun call, const std::vector<OpRun>& others);

// The mask builds of a trace: runs of comparison / where / masked_fill ops (two
// at least) outside every run of `calls`, each with the position of the first op
// after it that belongs to a call on its thread (kNone when none).
struct MaskBuild {
  OpRun run;
  std::int32_t next_call = kNone;  // index into `calls`
};
std::vector<MaskBuild> find_mask_builds(const OutermostOps& ops, const std::vector<OpRun>& calls);

// A mask build told by launches alone (a trace without CPU ops): runtime calls on one thread, from
// one launching a kernel that decides mask entries (a comparison, where / masked_fill, triu / tril,
// a logical or bitwise op) to the last such (two at least), with only launches of joining work
// (fills, copies and casts, memcpy / memset) and runtime calls without GPU work (a host
// synchronization) between them, none of it attention; `next_call` is the attention call whose GPU
// work the thread launches next (kNone when none).
struct MaskLaunches {
  std::vector<std::size_t> calls;  // indices into HostCalls::calls, first to last
  std::int32_t next_call = kNone;  // index into view.calls
};
std::vector<MaskLaunches> find_mask_launches(const TraceIndex& index, const HostCalls& host,
                                             const LaunchedBy& launched_by, const AttentionView& view);

// Whether an op name is a view or layout copy (forward or its autograd backward).
bool is_layout_op(std::string_view name);

}  // namespace attnprof
