// Region statistics, the kernel summary, and the rules run over every group.
#include "analysis/analysis.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "analysis/fixes.h"
#include "analysis/fused_estimate.h"
#include "analysis/host_calls.h"
#include "analysis/rules/rule.h"

namespace attnprof {
namespace {

InstanceStats instance_stats(const TraceIndex& index, const RegionInstance& inst) {
  InstanceStats s;
  const Trace& t = index.trace();
  std::int64_t first = 0, last = 0, covered_to = 0;
  bool any = false;
  for (std::size_t i : inst.activities) {
    const GpuActivity& a = index.activities()[i];
    const Event& e = index.event(a);
    switch (e.kind) {
      case EventKind::Kernel:
        ++s.kernels;
        s.kernel_ns += e.dur_ns;
        break;
      case EventKind::GpuMemcpy:
        ++s.memcpys;
        break;
      case EventKind::GpuMemset:
        ++s.memsets;
        break;
      default:
        break;
    }
    if (a.cls.category == KernelCategory::Gemm || a.cls.category == KernelCategory::FusedAttention) {
      s.matmul_ns += e.dur_ns;
      if (a.cls.unit == MathUnit::TensorCore) s.tensor_core_ns += e.dur_ns;
    }
    if (a.launch != kNone) s.launch_api_ns += t.events[static_cast<std::size_t>(a.launch)].dur_ns;
    // Activities are in start order: a running union of their intervals.
    if (!any) {
      first = e.ts_ns;
      covered_to = e.ts_ns;
      any = true;
    }
    const std::int64_t from = std::max(e.ts_ns, covered_to);
    if (e.end_ns() > from) s.busy_ns += e.end_ns() - from;
    covered_to = std::max(covered_to, e.end_ns());
    last = std::max(last, e.end_ns());
  }
  if (any) {
    s.span_ns = last - first;
    s.idle_ns = s.span_ns - s.busy_ns;
  }
  return s;
}

GroupStats group_stats(const TraceIndex& index, RegionGroup group) {
  GroupStats g;
  g.group = std::move(group);
  std::int64_t matmul = 0, tc = 0;
  int total_kernels = 0;
  g.min_kernels = g.group.instances.empty() ? 0 : INT32_MAX;
  for (const auto& inst : g.group.instances) {
    InstanceStats s = instance_stats(index, inst);
    total_kernels += s.kernels;
    g.min_kernels = std::min(g.min_kernels, s.kernels);
    g.max_kernels = std::max(g.max_kernels, s.kernels);
    g.busy_ns += s.busy_ns;
    matmul += s.matmul_ns;
    tc += s.tensor_core_ns;
    g.instances.push_back(s);
  }
  if (!g.instances.empty())
    g.kernels_per_instance = static_cast<double>(total_kernels) / static_cast<double>(g.instances.size());
  g.tensor_core_share = matmul > 0 ? static_cast<double>(tc) / static_cast<double>(matmul) : -1.0;
  return g;
}

// AMD's ROCm traces come through Kineto too (roctracer): names, units and
// rates of another vendor, which no rule here knows.
bool rocm_device(const DeviceSummary& d) {
  for (std::string_view vendor : {"AMD", "Radeon", "Instinct", "MI250", "MI300"})
    if (d.name.find(vendor) != std::string::npos) return true;
  return false;
}

// The forwards and tokens of decode calls given with their instance (AttentionSummary::decode_forwards):
// {0, 0} unless every call has a shape, all of one batch and q_len, and each instance holds two or more KV
// lengths, each that of the same number of calls, consecutive ones q_len apart.
std::pair<std::int64_t, std::int64_t> decode_forwards_of(
    const std::vector<std::pair<std::size_t, const AttentionShape*>>& calls) {
  if (calls.empty() || calls.front().second == nullptr) return {0, 0};
  const AttentionShape& first = *calls.front().second;
  std::map<std::size_t, std::map<std::int64_t, std::int64_t>> lengths;  // instance -> KV length -> calls
  for (const auto& [instance, shape] : calls) {
    if (shape == nullptr || shape->batch != first.batch || shape->q_len != first.q_len) return {0, 0};
    ++lengths[instance][shape->kv_len];
  }
  std::int64_t forwards = 0, layers = 0;
  for (const auto& [instance, counts] : lengths) {
    if (counts.size() < 2) return {0, 0};
    std::int64_t previous = -1;
    for (const auto& [kv_len, n] : counts) {
      if (layers == 0) layers = n;
      if (n != layers || (previous >= 0 && kv_len - previous != first.q_len)) return {0, 0};
      previous = kv_len;
    }
    forwards += static_cast<std::int64_t>(counts.size());
  }
  return {forwards, forwards * first.batch * first.q_len};
}

// Per implementation and pass, the calls whose first activity is in `instances`.
std::vector<AttentionSummary> summarize(const AttentionView& view, const std::vector<const RegionInstance*>& instances,
                                        const DeviceSummary& device, const MeasuredFused& measured) {
  std::vector<char> seen(view.calls.size(), 0);
  std::vector<AttentionSummary> out;
  // Per summary, its decode calls' (instance, shape): their forwards and tokens (decode_forwards_of).
  std::vector<std::vector<std::pair<std::size_t, const AttentionShape*>>> decode_shapes;
  for (std::size_t n = 0; n < instances.size(); ++n)
    for (std::size_t i : instances[n]->activities) {
      const std::int32_t c = view.call_of[i];
      if (c == kNone || seen[static_cast<std::size_t>(c)]) continue;
      const AttentionCall& call = view.calls[static_cast<std::size_t>(c)];
      if (call.activities.front() != i) continue;  // counted where it starts
      seen[static_cast<std::size_t>(c)] = 1;
      auto it = std::find_if(out.begin(), out.end(), [&](const AttentionSummary& s) {
        return s.impl == call.impl && s.pass == call.pass && s.phase == call.phase;
      });
      if (it == out.end()) {
        it = out.insert(out.end(), AttentionSummary{});
        decode_shapes.emplace_back();
        it->impl = call.impl;
        it->pass = call.pass;
        it->phase = call.phase;
        it->peak_tb_per_s = peak_memory_tb_per_s(device.name);
        it->precision = call.precision;
        it->kernel = std::string(call.family);
        it->captures_in_trace = view.graph_captures;
        if (call.impl != AttentionImpl::Fused) it->fused_ns = 0;
      }
      ++it->calls;
      if (call.phase == AttentionPhase::Decode)
        decode_shapes[static_cast<std::size_t>(it - out.begin())].push_back(
            {n, call.shape.known() ? &call.shape : nullptr});
      if (!call.math_cause.empty()) {
        auto cause = std::find_if(it->math_causes.begin(), it->math_causes.end(),
                                  [&](const auto& m) { return m.first == call.math_cause; });
        if (cause == it->math_causes.end()) cause = it->math_causes.insert(cause, {call.math_cause, 0});
        ++cause->second;
      }
      it->kernels += call.kernels;
      it->kernel_ns += call.kernel_ns;
      if (call.graph_replay) {
        ++it->graph_calls;
        if (call.shape.at_capture) ++it->capture_shape_calls;
        if (call.shape.at_capture && !call.shape.capture_trace.empty()) it->capture_trace = call.shape.capture_trace;
      }
      if (call.paged) {
        ++it->paged_calls;
        if (call.page_size > 0)
          it->page_size = it->page_size == 0 || it->page_size == call.page_size ? call.page_size : -1;
      }
      if (reads_growing_cache(call.phase) && call.shape.known()) {  // memory-bound or near it
        it->bytes += attention_bytes(call.shape, call.precision);
        it->bytes_ns += call.kernel_ns;
        ++it->bytes_calls;
      }
      if (call.shape.any()) {
        if (!it->shape.any()) {
          it->shape = call.shape;
        } else if (!(it->shape == call.shape)) {
          it->one_shape = false;
          // A whole shape (ops, a graph's capture) over what kernels alone tell of another call.
          if (!it->shape.known() && call.shape.known()) it->shape = call.shape;
        }
      }
      if (call.impl != AttentionImpl::Fused) {
        const FusedEstimate e = estimate_fused(call, measured, device);
        it->fused_ns += std::clamp<std::int64_t>(e.ns, 0, call.kernel_ns);
        if (it->estimate_source.empty()) it->estimate_source = describe(e, call);
      }
    }
  for (std::size_t k = 0; k < decode_shapes.size(); ++k) {
    const auto [forwards, tokens] = decode_forwards_of(decode_shapes[k]);
    out[k].decode_forwards = forwards;
    out[k].tokens = tokens;
  }
  std::stable_sort(out.begin(), out.end(), [](const AttentionSummary& a, const AttentionSummary& b) {
    return std::tuple(a.pass, a.impl, a.phase) < std::tuple(b.pass, b.impl, b.phase);
  });
  return out;
}

}  // namespace

std::string_view to_string(Scope s) { return s == Scope::Attention ? "attention" : "model"; }

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Info:
      return "info";
    case Severity::Low:
      return "low";
    case Severity::Medium:
      return "medium";
    case Severity::High:
      return "high";
  }
  return "info";
}

Severity severity_for_share(double share) {
  if (share >= 0.25) return Severity::High;
  if (share >= 0.05) return Severity::Medium;
  if (share > 0) return Severity::Low;
  return Severity::Info;
}

Analysis analyze(const TraceIndex& index, const RegionOptions& options, const std::string& label,
                 const CapturedShapes* captured) {
  const Trace& trace = index.trace();
  Analysis out;
  out.label = label;
  if (!trace.devices.empty()) {
    const DeviceProperties& d = trace.devices.front();
    out.device = {d.name, d.compute_major, d.compute_minor, d.num_sms};
  }
  if (rocm_device(out.device))
    out.unsupported =
        fmt::format("{} is an AMD GPU (a ROCm trace): attnprof diagnoses NVIDIA GPUs only, for now", out.device.name);
  for (const GpuActivity& a : index.activities()) out.gpu_kernels += index.event(a).kind == EventKind::Kernel;
  if (out.unsupported.empty())
    out.attention_calls = find_attention(index, captured);
  else
    out.attention_calls.call_of.assign(index.activities().size(), kNone);
  std::vector<char> assigned(index.activities().size(), 0);
  std::vector<const RegionInstance*> all_instances;
  for (RegionGroup& g : find_regions(index, options, label)) {
    for (const auto& inst : g.instances)
      for (std::size_t i : inst.activities) assigned[i] = 1;
    out.groups.push_back(group_stats(index, std::move(g)));
  }
  const HostCalls host = host_calls(index);
  for (GroupStats& g : out.groups) g.steps = model_steps(index, host, g.group);
  const MeasuredFused measured(out.attention_calls.calls);
  for (GroupStats& g : out.groups) {
    std::vector<const RegionInstance*> instances;
    for (const RegionInstance& inst : g.group.instances) instances.push_back(&inst);
    all_instances.insert(all_instances.end(), instances.begin(), instances.end());
    g.attention = summarize(out.attention_calls, instances, out.device, measured);
    for (const AttentionSummary& s : g.attention) g.attention_ns += s.kernel_ns;
  }
  out.attention = summarize(out.attention_calls, all_instances, out.device, measured);
  // The group the step figures are about: the most attention time, else the most GPU time.
  for (std::size_t i = 0; i < out.groups.size(); ++i) {
    const GroupStats& g = out.groups[i];
    if (g.group.instances.empty()) continue;
    if (out.step_group < 0) {
      out.step_group = static_cast<int>(i);
      continue;
    }
    const GroupStats& best = out.groups[static_cast<std::size_t>(out.step_group)];
    if (std::pair(g.attention_ns, g.busy_ns) > std::pair(best.attention_ns, best.busy_ns))
      out.step_group = static_cast<int>(i);
  }
  const bool any_launch = std::any_of(index.activities().begin(), index.activities().end(),
                                      [](const GpuActivity& a) { return a.launch != kNone; });
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    if (assigned[i]) continue;
    const GpuActivity& a = index.activities()[i];
    if (is_host_to_device(index, a)) {
      const Event& e = index.event(a);
      ++out.setup_copies.count;
      out.setup_copies.ns += e.dur_ns;
      if (const GpuArgs* g = trace.args(e); g && g->bytes > 0) out.setup_copies.bytes += g->bytes;
    } else if (a.launch == kNone && any_launch) {
      ++out.launchless_activities;
    } else {
      ++out.unassigned_activities;
    }
  }

  // One summary per kernel name, found by interned id (kernel names are long:
  // comparing them per activity costs), listed by name, then by time.
  std::vector<std::int32_t> summary_of(trace.strings.size(), -1);
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    if (!assigned[i]) continue;
    const GpuActivity& a = index.activities()[i];
    const Event& e = index.event(a);
    std::int32_t& slot = summary_of[e.name];
    if (slot < 0) {
      slot = static_cast<std::int32_t>(out.kernels.size());
      out.kernels.push_back({std::string(trace.name(e)), a.cls, 0, 0});
    }
    KernelSummary& k = out.kernels[static_cast<std::size_t>(slot)];
    ++k.count;
    k.total_ns += e.dur_ns;
  }
  std::sort(out.kernels.begin(), out.kernels.end(),
            [](const KernelSummary& a, const KernelSummary& b) { return a.name < b.name; });
  std::stable_sort(out.kernels.begin(), out.kernels.end(),
                   [](const KernelSummary& a, const KernelSummary& b) { return a.total_ns > b.total_ns; });

  for (const GroupStats& g : out.groups) {
    if (!out.unsupported.empty()) break;
    if (g.kernels_per_instance == 0 && g.group.instances.empty()) continue;
    const RuleContext ctx{index, out.device, g, out.attention_calls};
    for (const RuleEntry& rule : all_rules()) rule.run(ctx, out.findings);
  }
  // Attention first (what this tool is for), then by the time each costs.
  std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.scope != b.scope) return a.scope == Scope::Attention;
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    return a.severity > b.severity;
  });
  if (out.unsupported.empty()) out.fixes = plan_fixes(index, host, out);
  return out;
}

std::vector<std::size_t> instances_by_busy(const GroupStats& g) {
  std::vector<std::size_t> order(g.instances.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return g.instances[x].busy_ns < g.instances[y].busy_ns; });
  return order;
}

std::size_t median_instance(const GroupStats& g) {
  const std::vector<std::size_t> order = instances_by_busy(g);
  return order.empty() ? 0 : order[order.size() / 2];
}

}  // namespace attnprof
