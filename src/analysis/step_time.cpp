// The step-time model (step_time.h): each instance's window, its GPU busy time,
// and its GPU idle time split by what the CPU was doing meanwhile.
#include "analysis/step_time.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

namespace attnprof {
namespace {

// A CPU stretch without a launch up to this long is the cost of issuing the next
// kernel (an ATen op's dispatch and its launch call, with the Python between
// two ops); longer ones are CPU work of their own (data loading, an optimizer or
// pre-processing on the CPU, Python).
constexpr std::int64_t kIssueNs = 100'000;

bool is_comm_kernel(const GpuActivity& a) { return a.cls.category == KernelCategory::Communication; }
bool is_copy(const Event& e) { return e.kind == EventKind::GpuMemcpy; }

// The merged busy intervals of the whole trace: all GPU work, compute kernels
// (neither copies nor communication), communication kernels, copies.
struct BusyLists {
  std::vector<Interval> all, compute, comm, copy;
  std::vector<Interval> kernels;  // compute and communication kernels: what a copy can hide behind
};

BusyLists busy_lists(const TraceIndex& index) {
  BusyLists b;
  for (const GpuActivity& a : index.activities()) {
    const Event& e = index.event(a);
    if (e.dur_ns <= 0) continue;
    const Interval x{e.ts_ns, e.end_ns()};
    b.all.push_back(x);
    if (is_copy(e))
      b.copy.push_back(x);
    else if (is_comm_kernel(a))
      b.comm.push_back(x);
    else
      b.compute.push_back(x);
  }
  for (auto* v : {&b.all, &b.compute, &b.comm, &b.copy}) merge_intervals(*v);
  b.kernels = b.compute;
  b.kernels.insert(b.kernels.end(), b.comm.begin(), b.comm.end());
  merge_intervals(b.kernels);
  return b;
}

// |A \ B| over [from, to): time in A not covered by B (both merged).
std::int64_t uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b, std::int64_t from,
                       std::int64_t to) {
  std::int64_t sum = 0;
  auto it = std::upper_bound(a.begin(), a.end(), from, [](std::int64_t v, const Interval& x) { return v < x.second; });
  for (; it != a.end() && it->first < to; ++it) {
    const std::int64_t x0 = std::max(from, it->first), x1 = std::min(to, it->second);
    sum += (x1 - x0) - covered(b, x0, x1);
  }
  return sum;
}

// The typical delay from a launch call to its kernel's start when the GPU had
// nothing queued: the median over activities that started on an idle GPU.
std::int64_t typical_latency(const TraceIndex& index, const HostCalls& host, const std::vector<Interval>& busy) {
  std::vector<std::int64_t> d;
  const auto& acts = index.activities();
  for (std::size_t a = 0; a < acts.size() && d.size() < 20000; ++a) {
    const std::int32_t c = host.call_of[a];
    if (c == kNone) continue;
    const Event& e = index.event(acts[a]);
    const HostCall& call = host.calls[static_cast<std::size_t>(c)];
    // Idle GPU at the launch: nothing ran between the launch and this start.
    if (e.ts_ns <= call.ts || covered(busy, call.ts, e.ts_ns) > 0) continue;
    d.push_back(e.ts_ns - call.ts);
  }
  if (d.empty()) return 5'000;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// The last host call that started at or before `t` (index into calls), or -1.
std::ptrdiff_t call_before(const std::vector<HostCall>& calls, std::int64_t t) {
  auto it = std::upper_bound(calls.begin(), calls.end(), t, [](std::int64_t v, const HostCall& c) { return v < c.ts; });
  return (it - calls.begin()) - 1;
}

struct GapSplit {
  std::array<std::int64_t, kIdleCauses> ns{};
  std::vector<std::ptrdiff_t> syncs;  // the host calls charged with a gap (IdleCause::Sync)
  void add(IdleCause c, std::int64_t v) {
    if (v > 0) ns[static_cast<std::size_t>(c)] += v;
  }
};

// Splits one GPU idle gap [g0, g1) by cause. `next_launch` is the launch call of
// the activity that ends the gap (or of the next one after the window), -1 none.
void split_gap(const HostCalls& host, std::int64_t latency, std::int64_t g0, std::int64_t g1,
               std::int64_t next_launch_ts, GapSplit& out) {
  // A host synchronization waiting when the GPU went idle: the CPU was blocked
  // while the GPU drained its queue, so the whole gap, the sync's return and the
  // issue of the next kernels to an empty GPU, is the sync's cost.
  // The CPU inside a collective when the GPU went idle (gloo's copies and waits, a
  // wait on another rank): the collective's time is the wait on communication.
  if (covered(host.comm_ranges, g0, g0 + 1) > 0) {
    const std::int64_t comm = covered(host.comm_ranges, g0, g1);
    out.add(IdleCause::Comm, comm);
    out.add(IdleCause::Launch, (g1 - g0) - comm);
    return;
  }
  const std::ptrdiff_t last = call_before(host.calls, g1);
  for (std::ptrdiff_t c = call_before(host.calls, g0); c >= 0; --c) {
    const HostCall& call = host.calls[static_cast<std::size_t>(c)];
    if (call.ts < g0 - 100 * kIssueNs) break;  // in start order: a sync this old has ended long ago
    if (call.kind == HostCallKind::Sync && call.ts <= g0 && call.end >= g0 - latency) {
      out.add(IdleCause::Sync, g1 - g0);
      out.syncs.push_back(c);
      return;
    }
  }
  // The part after the launch call: the launch's way to an idle GPU takes about
  // `latency`; a kernel that starts much later (or was queued before the GPU went
  // idle and still waited) waited on something else: another stream, an event.
  std::int64_t cpu_to = g1;
  if (next_launch_ts >= 0 && next_launch_ts < g1) {
    const std::int64_t from = std::max(g0, next_launch_ts);
    const std::int64_t due = std::max(g0, next_launch_ts + 3 * latency + 5'000);
    const std::int64_t launch_part = std::clamp<std::int64_t>(due - from, 0, g1 - from);
    out.add(IdleCause::Launch, launch_part);
    out.add(IdleCause::Other, (g1 - from) - launch_part);
    cpu_to = from;
  }
  if (cpu_to <= g0) return;
  // Before it: the CPU had not yet asked for the next kernel. What was it doing?
  std::int64_t rest = cpu_to - g0;
  // Communication on the CPU (gloo collectives, waits on a collective).
  const std::int64_t comm = covered(host.comm_ranges, g0, cpu_to);
  out.add(IdleCause::Comm, comm);
  rest -= comm;
  // Host copies: the CPU inside a memcpy call (a pageable copy stages through a pinned buffer).
  std::int64_t copy = 0;
  for (std::ptrdiff_t c = last; c >= 0 && rest - copy > 0; --c) {
    const HostCall& call = host.calls[static_cast<std::size_t>(c)];
    if (call.end < g0 - 4 * kIssueNs) break;  // calls long over do not matter (they are in start order, not end)
    if (call.memcpy && call.kind != HostCallKind::Sync)
      copy += std::max<std::int64_t>(0, std::min(cpu_to, call.end) - std::max(g0, call.ts));
  }
  copy = std::min(copy, rest);
  out.add(IdleCause::Copy, copy);
  rest -= copy;
  // What is left is the CPU's own: a short stretch is the cost of issuing the next kernel.
  out.add(rest <= kIssueNs ? IdleCause::Launch : IdleCause::Cpu, rest);
}

// Each idle cause, by its enum value: its name (--json, the report's "idle:" line), its words, and
// the bound of a step whose idle time is most of that cause (Other's: the GPU's own pace).
struct CauseRow {
  std::string_view name, words;
  StepBound bound;
};
constexpr CauseRow kCauses[] = {
    {"launch", "the CPU issuing kernels one by one (launch-bound: each kernel ends before the next is launched)",
     StepBound::Launch},
    {"cpu", "CPU work without launches (data loading, Python, work on the CPU)", StepBound::Cpu},
    {"sync", "host synchronizations (the CPU waits for the GPU, then the GPU waits for the CPU)", StepBound::Sync},
    {"copy", "host-device copies on the CPU's path", StepBound::Copy},
    {"comm", "waiting on communication", StepBound::Comm},
    {"other", "waits the trace does not explain (queued work waiting on another stream or event)", StepBound::Gpu},
};
static_assert(std::size(kCauses) == kIdleCauses && kIdleCauses == static_cast<int>(IdleCause::Other) + 1);

constexpr std::string_view kBoundNames[] = {"gpu", "launch", "cpu", "sync", "copy", "comm", "none"};
static_assert(std::size(kBoundNames) == static_cast<std::size_t>(StepBound::None) + 1);

}  // namespace

std::string_view to_string(IdleCause c) { return kCauses[static_cast<std::size_t>(c)].name; }
std::string_view describe(IdleCause c) { return kCauses[static_cast<std::size_t>(c)].words; }
StepBound bound_of(IdleCause c) { return kCauses[static_cast<std::size_t>(c)].bound; }
std::string_view to_string(StepBound b) { return kBoundNames[static_cast<std::size_t>(b)]; }

std::vector<Interval> step_windows(const TraceIndex& index, const RegionGroup& group) {
  std::vector<Interval> out;
  std::int64_t prev_end = INT64_MIN;
  for (const RegionInstance& inst : group.instances) {
    std::int64_t start = inst.start_ns, end = inst.end_ns;
    bool any = false;
    for (std::size_t i : inst.activities) {
      const Event& e = index.event(index.activities()[i]);
      if (!any && end <= start) start = std::min(index.launch_time(index.activities()[i]), e.ts_ns);
      any = true;
      end = std::max(end, e.end_ns());
    }
    start = std::max(start, prev_end);
    end = std::max(end, start);
    out.push_back({start, end});
    prev_end = end;
  }
  return out;
}

StepModel model_steps(const TraceIndex& index, const HostCalls& host, const RegionGroup& group) {
  StepModel m;
  m.has_launches = std::any_of(host.call_of.begin(), host.call_of.end(), [](std::int32_t c) { return c != kNone; });
  m.has_cpu_ops = host.has_cpu_ops;
  m.sync_ops.assign(host.sync_op_names.begin(), host.sync_op_names.end());
  const BusyLists busy = busy_lists(index);
  m.launch_latency_ns = typical_latency(index, host, busy.all);
  const auto& acts = index.activities();
  const std::vector<Interval> windows = step_windows(index, group);
  std::vector<Interval> comm = busy.comm;
  comm.insert(comm.end(), host.comm_ranges.begin(), host.comm_ranges.end());
  merge_intervals(comm);
  for (const auto& [w0, w1] : windows) {
    StepTime s;
    s.start_ns = w0;
    s.end_ns = w1;
    s.span_ns = w1 - w0;
    s.busy_ns = covered(busy.all, w0, w1);
    s.idle_ns = s.span_ns - s.busy_ns;
    s.comm_exposed_ns = uncovered(busy.comm, busy.compute, w0, w1);
    s.comm_ns = covered(comm, w0, w1);
    {
      auto first = std::upper_bound(busy.all.begin(), busy.all.end(), w0,
                                    [](std::int64_t v, const Interval& x) { return v < x.second; });
      s.lead_in_ns = first == busy.all.end() ? s.span_ns : std::clamp<std::int64_t>(first->first - w0, 0, s.span_ns);
    }
    s.copy_only_ns = uncovered(busy.copy, busy.kernels, w0, w1);
    // The step's own launches (of its GPU work, wherever the window starts: a GPU-bound step's window
    // begins after its CPU launched it) and the synchronizations inside its CPU range.
    const RegionInstance& inst = group.instances[m.steps.size()];
    std::vector<std::int32_t> calls;
    for (std::size_t a : inst.activities)
      if (host.call_of[a] != kNone) calls.push_back(host.call_of[a]);
    std::sort(calls.begin(), calls.end());
    s.launches = static_cast<int>(std::unique(calls.begin(), calls.end()) - calls.begin());
    const std::int64_t cpu0 = inst.end_ns > inst.start_ns ? inst.start_ns : w0;
    const std::int64_t cpu1 = inst.end_ns > inst.start_ns ? inst.end_ns : w1;
    GapSplit split;
    for (auto c = call_before(host.calls, cpu0) + 1; static_cast<std::size_t>(c) < host.calls.size(); ++c) {
      const HostCall& call = host.calls[static_cast<std::size_t>(c)];
      if (call.ts >= cpu1) break;
      if (call.kind == HostCallKind::Sync && call.ts >= cpu0) split.syncs.push_back(c);
    }
    if (!m.has_launches) {
      split.add(IdleCause::Other, s.idle_ns);
    } else {
      // The gaps of the busy union inside the window, each with the activity that ends it.
      std::int64_t t = w0;
      auto it = std::upper_bound(busy.all.begin(), busy.all.end(), w0,
                                 [](std::int64_t v, const Interval& x) { return v < x.second; });
      for (;; ++it) {
        const std::int64_t gap_end = it == busy.all.end() ? w1 : std::min(w1, it->first);
        if (gap_end > t) {
          // The activity that starts when the gap ends (the first one at or after gap_end), and its launch.
          auto next = std::lower_bound(acts.begin(), acts.end(), gap_end,
                                       [&](const GpuActivity& a, std::int64_t v) { return index.event(a).ts_ns < v; });
          std::int64_t launch_ts = -1;
          if (next != acts.end()) {
            const std::int32_t c = host.call_of[static_cast<std::size_t>(next - acts.begin())];
            if (c != kNone) launch_ts = host.calls[static_cast<std::size_t>(c)].ts;
          }
          split_gap(host, m.launch_latency_ns, t, gap_end, launch_ts, split);
        }
        if (it == busy.all.end() || it->first >= w1) break;
        t = std::max(t, it->second);
        if (t >= w1) break;
      }
    }
    s.idle = split.ns;
    // The synchronizations of the step's CPU range, and those outside every step's range whose wait idled its
    // GPU window (a GPU-bound step's window starts before its CPU range, after the loop's synchronize
    // between two steps); a sync of another step's range is that step's.
    std::erase_if(split.syncs, [&](std::ptrdiff_t c) {
      const std::int64_t ts = host.calls[static_cast<std::size_t>(c)].ts;
      if (ts >= cpu0 && ts < cpu1) return false;
      return std::any_of(group.instances.begin(), group.instances.end(), [&](const RegionInstance& other) {
        return other.end_ns > other.start_ns && ts >= other.start_ns && ts < other.end_ns;
      });
    });
    std::sort(split.syncs.begin(), split.syncs.end());
    s.syncs = static_cast<int>(std::unique(split.syncs.begin(), split.syncs.end()) - split.syncs.begin());
    // What bounds the step: the largest of the GPU's own work and each cause of its idle time.
    const std::int64_t gpu = s.busy_ns - s.comm_exposed_ns - s.copy_only_ns + s.cause_ns(IdleCause::Other);
    std::int64_t best = gpu;
    s.bound = s.span_ns > 0 ? StepBound::Gpu : StepBound::None;
    for (IdleCause c : {IdleCause::Launch, IdleCause::Cpu, IdleCause::Sync, IdleCause::Copy, IdleCause::Comm}) {
      std::int64_t v = s.cause_ns(c);
      if (c == IdleCause::Copy) v += s.copy_only_ns;
      if (c == IdleCause::Comm) v += s.comm_exposed_ns;
      if (v > best) {
        best = v;
        s.bound = bound_of(c);
      }
    }
    m.steps.push_back(s);
  }
  if (!m.steps.empty()) {
    std::vector<std::size_t> order(m.steps.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return m.steps[a].span_ns < m.steps[b].span_ns; });
    m.median = order[order.size() / 2];
  }
  if (!m.has_launches)
    m.unknowns.push_back("the trace has no launch calls (no CPU side): GPU idle time is not split by cause");
  else if (!m.has_cpu_ops)
    m.unknowns.push_back(
        "the trace has no CPU ops (attnprof record): host synchronizations are named by their runtime calls only");
  return m;
}

}  // namespace attnprof
