// Collects the CPU side of a trace for the step-time model (host_calls.h).
#include "analysis/host_calls.h"

#include <algorithm>

namespace attnprof {
namespace {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

bool is_sync_call(std::string_view n) {
  // cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, cuStreamSynchronize, cuCtxSynchronize, ...
  if (contains(n, "Synchronize")) return true;
  // The synchronous copies (no Async): they return when the copy is done.
  for (std::string_view sync_copy :
       {"cudaMemcpy", "cudaMemcpy2D", "cudaMemcpy3D", "cudaMemcpyPeer", "cudaMemcpyToSymbol", "cudaMemcpyFromSymbol",
        "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpy"})
    if (n == sync_copy) return true;
  return false;
}

bool is_memcpy_call(std::string_view n) { return contains(n, "Memcpy") || contains(n, "cuMemcpy"); }

bool is_comm_range(std::string_view n) {
  for (std::string_view prefix : {"c10d::", "nccl:", "gloo:", "record_param_comms", "ProcessGroup"})
    if (n.starts_with(prefix)) return true;
  return false;
}

void merge_intervals(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (const Interval& x : v) {
    if (out > 0 && x.first <= v[out - 1].second)
      v[out - 1].second = std::max(v[out - 1].second, x.second);
    else
      v[out++] = x;
  }
  v.resize(out);
}

std::int64_t covered(const std::vector<Interval>& merged, std::int64_t from, std::int64_t to) {
  if (to <= from) return 0;
  auto it = std::upper_bound(merged.begin(), merged.end(), from,
                             [](std::int64_t v, const Interval& x) { return v < x.second; });
  std::int64_t sum = 0;
  for (; it != merged.end() && it->first < to; ++it) sum += std::min(to, it->second) - std::max(from, it->first);
  return sum;
}

HostCalls host_calls(const TraceIndex& index) {
  const Trace& t = index.trace();
  HostCalls h;
  h.has_cpu_ops = index.has_cpu_ops();
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.phase != 'X') continue;
    if (is_launch_api(e.kind)) {
      const std::string_view n = t.name(e);
      HostCall c{e.ts_ns, e.end_ns(), static_cast<std::int32_t>(i), HostCallKind::Other, is_memcpy_call(n)};
      if (is_sync_call(n)) c.kind = HostCallKind::Sync;
      h.calls.push_back(c);
    } else if ((e.kind == EventKind::CpuOp || e.kind == EventKind::UserAnnotation) && is_comm_range(t.name(e))) {
      h.comm_ranges.push_back({e.ts_ns, e.end_ns()});
    }
  }
  std::stable_sort(h.calls.begin(), h.calls.end(), [](const HostCall& a, const HostCall& b) { return a.ts < b.ts; });
  // Activity -> its launch call; a call that launched GPU work is a launch (a synchronous copy stays a sync).
  std::vector<std::pair<std::int32_t, std::int32_t>> by_event;  // (event, call)
  by_event.reserve(h.calls.size());
  for (std::size_t c = 0; c < h.calls.size(); ++c) by_event.push_back({h.calls[c].event, static_cast<std::int32_t>(c)});
  std::sort(by_event.begin(), by_event.end());
  const auto& acts = index.activities();
  h.call_of.assign(acts.size(), kNone);
  for (std::size_t a = 0; a < acts.size(); ++a) {
    if (acts[a].launch == kNone) continue;
    const auto it = std::lower_bound(by_event.begin(), by_event.end(), std::pair{acts[a].launch, std::int32_t{-1}});
    if (it == by_event.end() || it->first != acts[a].launch) continue;
    h.call_of[a] = it->second;
    HostCall& c = h.calls[static_cast<std::size_t>(it->second)];
    if (c.kind == HostCallKind::Other) c.kind = HostCallKind::Launch;
  }
  merge_intervals(h.comm_ranges);

  // The CPU ops around the host synchronizations: what to name in a fix (aten::item, ...).
  std::vector<std::pair<std::int64_t, std::size_t>> syncs;  // (ts, call)
  for (std::size_t c = 0; c < h.calls.size(); ++c)
    if (h.calls[c].kind == HostCallKind::Sync) syncs.push_back({h.calls[c].ts, c});
  if (!syncs.empty() && h.has_cpu_ops) {
    std::vector<std::int32_t> outer(syncs.size(), kNone);  // the outermost op around each sync, by range index
    const auto& ranges = index.ranges();
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      if (ranges[r].kind != EventKind::CpuOp) continue;
      bool outermost = true;  // no op around it (annotations, the profiler step, may be)
      for (std::int32_t p = ranges[r].parent; p != kNone && outermost; p = ranges[static_cast<std::size_t>(p)].parent)
        outermost = ranges[static_cast<std::size_t>(p)].kind != EventKind::CpuOp;
      if (!outermost) continue;
      const Event& e = index.event(ranges[r]);
      auto it = std::lower_bound(syncs.begin(), syncs.end(), std::pair{e.ts_ns, std::size_t{0}});
      for (; it != syncs.end() && it->first <= e.end_ns(); ++it) {
        const Event& call = t.events[static_cast<std::size_t>(h.calls[it->second].event)];
        if (call.tid == e.tid && call.pid == e.pid)
          outer[static_cast<std::size_t>(it - syncs.begin())] = static_cast<std::int32_t>(r);
      }
    }
    for (std::size_t s = 0; s < syncs.size(); ++s) {
      if (outer[s] == kNone) continue;
      const CpuRange& r = index.ranges()[static_cast<std::size_t>(outer[s])];
      const Event& e = index.event(r);
      h.sync_ops.push_back({e.ts_ns, e.end_ns()});
      const std::string_view name = index.name(r);
      if (std::find(h.sync_op_names.begin(), h.sync_op_names.end(), name) == h.sync_op_names.end())
        h.sync_op_names.push_back(name);
    }
    merge_intervals(h.sync_ops);
  }
  return h;
}

LaunchedBy::LaunchedBy(const HostCalls& host) : first_(host.calls.size() + 1, 0), acts_(host.call_of.size()) {
  std::size_t n = 0;
  for (std::int32_t c : host.call_of)
    if (c != kNone) ++first_[static_cast<std::size_t>(c) + 1], ++n;
  for (std::size_t c = 0; c < host.calls.size(); ++c) first_[c + 1] += first_[c];
  acts_.resize(n);
  std::vector<std::size_t> fill(first_.begin(), first_.end() - 1);
  for (std::size_t a = 0; a < host.call_of.size(); ++a)
    if (host.call_of[a] != kNone) acts_[fill[static_cast<std::size_t>(host.call_of[a])]++] = a;
}

}  // namespace attnprof
