// The fixes and what each is worth per step (fixes.h): the trace's timeline
// replayed as recorded and with the fix applied (step_simulation.h).
#include "analysis/fixes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include <fmt/format.h>

#include "analysis/attention_host.h"
#include "analysis/attention_prep.h"
#include "analysis/fused_estimate.h"
#include "analysis/step_simulation.h"
#include "common/number_text.h"

namespace attnprof {
namespace {

// The CPU time one attention call takes: from the start of the first ATen op
// that launched its GPU work to the end of the last (the Python between them
// included); without CPU ops, from its first launch call to the end of its last.
std::optional<Interval> cpu_interval(const TraceIndex& index, const HostCalls& host, const AttentionCall& call) {
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (std::size_t a : call.activities) {
    const GpuActivity& act = index.activities()[a];
    if (index.has_cpu_ops()) {
      if (const std::int32_t r = index.outermost_op(act); r != kNone) {
        const Event& e = index.event(index.ranges()[static_cast<std::size_t>(r)]);
        lo = std::min(lo, e.ts_ns);
        hi = std::max(hi, e.end_ns());
        continue;
      }
    }
    if (const std::int32_t c = host.call_of[a]; c != kNone) {
      lo = std::min(lo, host.calls[static_cast<std::size_t>(c)].ts);
      hi = std::max(hi, host.calls[static_cast<std::size_t>(c)].end);
    }
  }
  if (hi <= lo) return std::nullopt;
  return Interval{lo, hi};
}

std::int64_t stream_of(const TraceIndex& index, std::size_t activity) {
  const GpuArgs* g = index.trace().args(index.event(index.activities()[activity]));
  return g != nullptr ? g->stream : -1;
}

// The medians of the replayed spans and busy times.
struct Medians {
  std::int64_t span = 0, busy = 0;
};
Medians medians(const std::vector<ReplayedStep>& steps) {
  std::vector<std::int64_t> span, busy;
  for (const ReplayedStep& s : steps) {
    span.push_back(s.span_ns);
    busy.push_back(s.busy_ns);
  }
  return {median_of(span), median_of(busy)};
}

bool in_group(const std::vector<char>& member, const AttentionCall& call) {
  return !call.activities.empty() && member[call.activities.front()] != 0;
}

// Whether (nearly) all of `f`'s GPU work is in `removed`.
bool inside(const Finding& f, const std::vector<char>& removed) {
  if (f.activities.empty()) return false;
  std::size_t in = 0;
  for (std::size_t a : f.activities) in += removed[a] != 0;
  return in * 10 >= f.activities.size() * 9;
}

// A finding's fix in a few words (the finding's own text says it in full).
std::string title_of(std::string_view id) {
  if (id == "cuda-core-gemm") return "run these GEMMs on tensor cores";
  if (id == "fp32-upcast") return "keep 16-bit data in 16 bits (no FP32 round trip)";
  if (id == "mask-rebuilt") return "build the mask once, or pass is_causal=True";
  if (id == "safe-softmax") return "leave SDPA's math backend (its _safe_softmax passes go with it)";
  if (id == "hidden-copy") return "drop the device-to-device copies (in-place ops)";
  if (id == "kv-cache-cat") return "preallocate the KV cache (a static cache: no copy of it per token)";
  if (id == "kv-repeat") return "read K and V once per KV head (grouped-query attention without repeat_kv's copies)";
  if (id == "kv-cache-gather") return "read the paged KV cache in place (no gather of it before each call)";
  if (id == "unsplit-decode") return "split the decode calls' keys over the GPU's SMs (a split-KV decode kernel)";
  if (id == "attention-host") return "let the attention calls repeat their shapes (no plan built per call)";
  return fmt::format("the fix {} names", id);
}

// A strided copy of ATen (clone / contiguous / reshape of a view: the copy without a cast), the
// kernel of a layout copy when the trace has no CPU ops to name it.
bool is_strided_copy(const TraceIndex& index, std::size_t activity) {
  const GpuActivity& g = index.activities()[activity];
  const std::string_view n = index.name(g);
  return g.cls.op == KernelOp::Copy && n.find("direct_copy_kernel") != std::string_view::npos &&
         n.find("nocast") != std::string_view::npos;
}

struct Planner {
  const TraceIndex& index;
  const HostCalls& host;
  const Analysis& a;
  const GroupStats& g;
  const StepModel& model;
  std::optional<StepReplay> replay;
  Medians base;
  std::int64_t recorded_span = 0;
  std::string fidelity;  // how well the replay reproduces the recorded steps, for the basis

  Planner(const TraceIndex& i, const HostCalls& h, const Analysis& an, const GroupStats& grp)
      : index(i), host(h), a(an), g(grp), model(grp.steps) {
    if (const StepTime* s = model.median_step()) recorded_span = s->span_ns;
    if (!model.has_launches || model.steps.empty()) return;
    replay.emplace(index, host, g.group, model.launch_latency_ns);
    base = medians(replay->run({}));
    if (recorded_span > 0) {
      const double err = std::abs(static_cast<double>(base.span - recorded_span)) / static_cast<double>(recorded_span);
      fidelity = fmt::format("the replay as recorded gives a median step of {} ms against the trace's {} ms ({:.0f}%)",
                             text::ms(base.span), text::ms(recorded_span), 100.0 * err);
    }
  }

  // The activities launch call `k` started.
  std::span<const std::size_t> launched_by(std::int32_t k) const { return launched(static_cast<std::size_t>(k)); }
  LaunchedBy launched{host};

  // Without CPU ops, where the CPU work of what launch call `k` starts begins: the end of the
  // runtime call before it on its thread (the Python and dispatch between them are the launch's
  // op's), not before the step instance holding it began; `k`'s own start where none is.
  std::int64_t dispatch_start(std::size_t k) const {
    const HostCall& h = host.calls[k];
    const Event& e = index.trace().events[static_cast<std::size_t>(h.event)];
    std::int64_t floor = h.ts;
    if (windows.empty()) {  // the instances' CPU windows by start, once
      for (const RegionInstance& inst : g.group.instances) windows.push_back({inst.start_ns, inst.end_ns});
      std::sort(windows.begin(), windows.end());
    }
    auto it = std::upper_bound(windows.begin(), windows.end(), Interval{h.ts, INT64_MAX});
    if (it != windows.begin() && std::prev(it)->second > h.ts) floor = std::prev(it)->first;
    for (std::size_t j = k; j > 0;) {
      --j;
      const HostCall& prev = host.calls[j];
      if (prev.end <= floor) break;
      const Event& pe = index.trace().events[static_cast<std::size_t>(prev.event)];
      if (pe.pid == e.pid && pe.tid == e.tid) return std::clamp(prev.end, floor, h.ts);
    }
    return floor;
  }

  mutable std::vector<Interval> windows;

  // Step time saved by `change`: the median replayed step before minus after.
  Medians saved(const Change& change) const {
    const Medians after = medians(replay->run(change));
    return {base.span - after.span, base.busy - after.busy};
  }
};

// The first and last launch calls of a call's GPU work (indices into HostCalls::calls), kNone when
// none of it has one.
std::pair<std::int32_t, std::int32_t> launch_range(const HostCalls& host, const AttentionCall& call) {
  std::int32_t lo = kNone, hi = kNone;
  for (std::size_t act : call.activities) {
    const std::int32_t k = host.call_of[act];
    if (k == kNone) continue;
    lo = lo == kNone ? k : std::min(lo, k);
    hi = hi == kNone ? k : std::max(hi, k);
  }
  return {lo, hi};
}

// Without CPU ops: the launches next to a forward call's whose kernels are all strided copies (the
// layout copies, as far as kernels tell), the call's interval widened over them. Returns the first
// launch call of the widened interval.
template <typename Remove>
std::int32_t widen_by_copy_launches(const Planner& p, const AttentionView& view, std::size_t c, Replacement& r,
                                    Remove remove, int& widened) {
  const HostCalls& host = p.host;
  const auto [lo, hi] = launch_range(host, view.calls[c]);
  if (lo == kNone) return kNone;
  std::int32_t first = lo;
  // Each launch's activities, for the launches near the call.
  const auto copies_of = [&](std::int32_t k, std::vector<std::size_t>& out) {
    out.clear();
    const HostCall& h = host.calls[static_cast<std::size_t>(k)];
    if (h.kind != HostCallKind::Launch) return h.kind == HostCallKind::Other;  // skip over other runtime calls
    for (std::size_t a : p.launched_by(k)) {
      if (view.in_attention(a) || !is_strided_copy(p.index, a)) return false;
      out.push_back(a);
    }
    return true;
  };
  std::vector<std::size_t> acts;
  bool any = false;
  for (std::int32_t k = lo - 1; k >= 0 && copies_of(k, acts); --k) {
    if (acts.empty()) continue;
    for (std::size_t a : acts) remove(a);
    r.from = std::min(r.from, host.calls[static_cast<std::size_t>(k)].ts);
    first = k;
    any = true;
  }
  for (auto k = static_cast<std::size_t>(hi) + 1;
       k < host.calls.size() && copies_of(static_cast<std::int32_t>(k), acts); ++k) {
    if (acts.empty()) continue;
    for (std::size_t a : acts) remove(a);
    r.to = std::max(r.to, host.calls[k].end);
    any = true;
  }
  widened += any;
  return first;
}

// Fused attention: each unfused call of a pass that unfused-attention was found
// for replaced by one fused call: its CPU ops by one SDPA op, its kernels by one
// fused kernel of the estimated time.
void fused_attention_fix(Planner& p, std::vector<Fix>& out) {
  const Analysis& a = p.a;
  const std::string& group = p.g.group.name;
  std::vector<std::size_t> resolved;
  std::vector<AttentionPass> passes;
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    if (f.id != "unfused-attention" || f.group != group || !f.pass) continue;
    resolved.push_back(i);
    passes.push_back(*f.pass);
  }
  if (resolved.empty()) return;
  const std::vector<char> member = group_members(p.g.group, p.index.activities().size());

  // A call's CPU time; without CPU ops from the end of the runtime call before its first launch
  // (the dispatch and Python leading to it), for unfused and fused calls alike.
  const bool cpu_ops = p.index.has_cpu_ops();
  const auto call_cpu = [&](const AttentionCall& call) -> std::optional<Interval> {
    auto iv = cpu_interval(p.index, p.host, call);
    if (iv && !cpu_ops)
      if (const std::int32_t k = launch_range(p.host, call).first; k != kNone)
        iv->first = std::min(iv->first, p.dispatch_start(static_cast<std::size_t>(k)));
    return iv;
  };
  // The fused calls' own CPU time, per pass, where the trace has some.
  std::vector<std::int64_t> fused_cpu[2];
  for (const AttentionCall& call : a.attention_calls.calls)
    if (call.impl == AttentionImpl::Fused)
      if (const auto iv = call_cpu(call)) fused_cpu[static_cast<int>(call.pass)].push_back(iv->second - iv->first);
  FusedCpuCost cost[2];
  std::string cost_basis;
  const std::int64_t elementwise = cpu_ops ? median_elementwise_op_ns(p.index) : 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto ap = static_cast<AttentionPass>(pass);
    cost[pass] =
        elementwise > 0 ? fused_cpu_cost_from_host(ap, elementwise) : default_fused_cpu_cost(ap, p.model.has_cpu_ops);
    if (std::find(passes.begin(), passes.end(), ap) == passes.end()) continue;
    if (fused_cpu[pass].size() >= 3) {
      const std::int64_t m = median_of(fused_cpu[pass]);
      cost[pass] = {m, m * 3 / 4, m * 5 / 4};
      cost_basis += fmt::format("{}the {} fused call's CPU time as measured in this trace ({} us)",
                                cost_basis.empty() ? "" : "; ", to_string(ap), m / 1000);
    } else if (elementwise > 0) {
      cost_basis += fmt::format(
          "{}a fused {} call's CPU time {} us, {}x this trace's median aten::mul/add ({} us; a range of {}-{} us: the "
          "trace has none to measure)",
          cost_basis.empty() ? "" : "; ", to_string(ap), cost[pass].typical_ns / 1000, host_speed_factors(ap).typical,
          elementwise / 1000, cost[pass].low_ns / 1000, cost[pass].high_ns / 1000);
    } else {
      cost_basis += fmt::format(
          "{}a fused {} call's CPU time {} {} us (a range of {}-{} us: the trace has none to "
          "measure)",
          cost_basis.empty() ? "" : "; ", to_string(ap),
          p.model.has_cpu_ops ? "under torch.profiler" : "without CPU ops", cost[pass].typical_ns / 1000,
          cost[pass].low_ns / 1000, cost[pass].high_ns / 1000);
    }
  }

  // With CPU ops: each call's run of outermost ops, widened by the layout copies next to it.
  std::optional<OutermostOps> ops;
  std::vector<std::optional<OpRun>> runs(a.attention_calls.calls.size());
  if (cpu_ops) {
    ops.emplace(p.index);
    runs = call_runs(*ops, a.attention_calls.calls);
  }
  std::vector<OpRun> known_runs;      // the calls' runs, for the calls that have one
  std::vector<std::size_t> run_call;  // ... and the index of each one's call
  for (std::size_t c = 0; c < runs.size(); ++c)
    if (runs[c]) {
      known_runs.push_back(*runs[c]);
      run_call.push_back(c);
    }
  std::vector<OpRun> sorted_runs = known_runs;
  std::sort(sorted_runs.begin(), sorted_runs.end(), [](const OpRun& x, const OpRun& y) { return x.first < y.first; });
  int widened = 0, masks = 0;
  // The backward nodes of the forward ops a fused call does without (the attention's ops and the layout
  // copies next to them): with the backward fixed too, one fused backward node runs instead of them all,
  // so their CPU time (and the engine's time before each) and their GPU work go, wherever the autograd
  // engine ran them. Only where the trace links the two (torch.profiler's fwdbwd flows).
  std::vector<char> unneeded_backward;
  if (ops && std::find(passes.begin(), passes.end(), AttentionPass::Backward) != passes.end()) {
    unneeded_backward.assign(ops->ops().size(), 0);
    const BackwardNodes backward(*ops);
    for (std::size_t c = 0; c < a.attention_calls.calls.size(); ++c) {
      const AttentionCall& call = a.attention_calls.calls[c];
      if (call.impl == AttentionImpl::Fused || call.pass != AttentionPass::Forward || !runs[c] ||
          !in_group(member, call))
        continue;
      for (std::size_t b : backward.of(widen_by_layout_copies(*ops, *runs[c], sorted_runs))) unneeded_backward[b] = 1;
    }
  }
  std::vector<char> in_backward_call;  // ops inside a replaced backward call's run
  if (ops) in_backward_call.assign(ops->ops().size(), 0);

  const MeasuredFused measured(a.attention_calls.calls);
  struct Planned {
    Replacement rep;
    int pass;  // the call's, or one of these
  };
  constexpr int kNoCpu = -1;    // work the fix makes unneeded, CPU time and all (a mask build)
  constexpr int kKeepCpu = -2;  // GPU work the fix makes unneeded, its CPU time as recorded
  std::vector<Planned> planned;
  std::vector<char> removed(p.index.activities().size(), 0);
  std::int64_t gpu_removed = 0, gpu_added = 0;
  std::vector<char> replaced(a.attention_calls.calls.size(), 0);
  const auto remove = [&](Replacement& r, std::size_t act) {
    if (removed[act] || member[act] == 0) return;
    removed[act] = 1;
    r.removed.push_back(act);
    gpu_removed += p.index.event(p.index.activities()[act]).dur_ns;
  };
  for (std::size_t c = 0; c < a.attention_calls.calls.size(); ++c) {
    const AttentionCall& call = a.attention_calls.calls[c];
    if (call.impl == AttentionImpl::Fused || !in_group(member, call)) continue;
    if (std::find(passes.begin(), passes.end(), call.pass) == passes.end()) continue;
    replaced[c] = 1;
    const std::int64_t fused = std::clamp<std::int64_t>(estimate_fused(call, measured, a.device).ns, 0, call.kernel_ns);
    gpu_added += fused;
    Replacement r;
    for (std::size_t i : call.activities) remove(r, i);
    r.gpu_ns = fused;
    r.stream = stream_of(p.index, call.activities.front());
    if (const auto iv = call_cpu(call)) {
      r.from = iv->first;
      r.to = iv->second;
    }
    if (runs[c]) {
      // The call's ops with the layout copies next to it, and every GPU activity they launched. In the
      // forward, their CPU time goes too; the backward's layout ops keep theirs (the autograd engine runs
      // them where its order puts them, not only next to the call).
      const OpRun w = widen_by_layout_copies(*ops, *runs[c], sorted_runs);
      widened += w.first != runs[c]->first || w.last != runs[c]->last;
      if (call.pass == AttentionPass::Forward) {
        r.from = std::min(r.to > r.from ? r.from : INT64_MAX, ops->ops()[w.first].ts);
        r.to = std::max(r.to, ops->ops()[w.last].end);
        for (std::size_t o = w.first; o <= w.last; ++o)
          for (std::size_t act : ops->activities(o)) remove(r, act);
      } else {
        for (std::size_t o = w.first; o <= w.last; ++o) {
          if (o >= runs[c]->first && o <= runs[c]->last) {
            for (std::size_t act : ops->activities(o)) remove(r, act);
            in_backward_call[o] = 1;
            continue;
          }
          if (!unneeded_backward.empty() && unneeded_backward[o]) continue;  // goes whole, below
          Replacement k;  // a layout op of the backward: its CPU time stays, its GPU work goes
          k.from = ops->ops()[o].ts;
          k.to = ops->ops()[o].end;
          k.cpu_ns = k.to - k.from;
          for (std::size_t act : ops->activities(o)) remove(k, act);
          if (!k.removed.empty()) planned.push_back({std::move(k), kKeepCpu});
        }
      }
    }
    if (!runs[c] && !cpu_ops && call.pass == AttentionPass::Forward && r.to > r.from) {
      const std::int32_t first =
          widen_by_copy_launches(p, a.attention_calls, c, r, [&](std::size_t act) { remove(r, act); }, widened);
      if (first != kNone) r.from = std::min(r.from, p.dispatch_start(static_cast<std::size_t>(first)));
    }
    planned.push_back({std::move(r), static_cast<int>(call.pass)});
  }
  for (std::size_t o = 0; o < unneeded_backward.size(); ++o) {
    if (!unneeded_backward[o] || in_backward_call[o]) continue;
    const auto& v = ops->ops();
    Replacement r;
    r.from = o > 0 && v[o - 1].lane == v[o].lane && v[o - 1].end <= v[o].ts ? v[o - 1].end : v[o].ts;
    r.to = v[o].end;
    for (std::size_t act : ops->activities(o)) remove(r, act);
    planned.push_back({std::move(r), kNoCpu});
  }
  // The masks built for the replaced forward calls: with is_causal=True the fused calls need none.
  if (!cpu_ops && p.replay) {
    for (const MaskLaunches& m : find_mask_launches(p.index, p.host, p.launched, a.attention_calls)) {
      if (m.next_call == kNone) continue;
      const auto next = static_cast<std::size_t>(m.next_call);
      if (!replaced[next] || a.attention_calls.calls[next].pass != AttentionPass::Forward) continue;
      Replacement r;
      r.from = p.dispatch_start(m.calls.front());
      r.to = p.host.calls[m.calls.back()].end;
      for (std::size_t k : m.calls)
        for (std::size_t act : p.launched_by(static_cast<std::int32_t>(k))) remove(r, act);
      if (r.removed.empty()) continue;  // not in the group's steps
      ++masks;
      planned.push_back({std::move(r), kNoCpu});
    }
  }
  if (ops) {
    for (const MaskBuild& m : find_mask_builds(*ops, known_runs)) {
      if (m.next_call == kNone) continue;
      const std::size_t next = run_call[static_cast<std::size_t>(m.next_call)];
      if (!replaced[next] || a.attention_calls.calls[next].pass != AttentionPass::Forward) continue;
      Replacement r;
      r.from = ops->ops()[m.run.first].ts;
      r.to = ops->ops()[m.run.last].end;
      for (std::size_t o = m.run.first; o <= m.run.last; ++o)
        for (std::size_t act : ops->activities(o)) remove(r, act);
      if (r.removed.empty()) continue;  // not in the group's steps
      ++masks;
      planned.push_back({std::move(r), kNoCpu});
    }
  }
  Fix fix;
  fix.id = "fused-attention";
  // What runs these calls fused, as their form allows (the unfused-attention finding's fix says it in full).
  SharedForms forms;
  for (std::size_t c = 0; c < a.attention_calls.calls.size(); ++c)
    if (replaced[c]) forms.add(a.attention_calls.calls[c]);
  const bool softcap = forms.softcap, sinks = forms.sinks;
  fix.title =
      forms.calls == 0   ? "run attention as one fused kernel per call (SDPA's flash / cuDNN backends)"
      : softcap || sinks ? fmt::format("run attention as one fused kernel per call ({}: SDPA has no {})",
                                       softcap ? "flex_attention" : "flex_attention with the sink through its LSE",
                                       softcap && sinks ? "soft-capping or sink logits"
                                       : softcap        ? "soft-capping"
                                                        : "sink logits")
      : forms.alibi ? "run attention as one fused kernel per call (FlashAttention's alibi_slopes or flex_attention)"
      : forms.position_bias
          ? "run attention as one fused kernel per call (SDPA with the bias as a contiguous float attn_mask)"
      : forms.mha_module ? "run attention as one fused kernel per call (nn.MultiheadAttention with need_weights=False)"
                         : "run attention as one fused kernel per call (SDPA's flash / cuDNN backends)";
  for (std::size_t i : resolved) fix.finding_of.push_back(i);
  // The findings inside the calls: their work goes with them.
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    const Finding& f = a.findings[i];
    if (f.group == group && f.scope == Scope::Attention && f.id != "unfused-attention" && inside(f, removed))
      fix.finding_of.push_back(i);
  }
  std::sort(fix.finding_of.begin(), fix.finding_of.end());
  for (std::size_t i : fix.finding_of)
    if (std::find(fix.findings.begin(), fix.findings.end(), a.findings[i].id) == fix.findings.end())
      fix.findings.push_back(a.findings[i].id);
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, p.g.group.instances.size()));

  if (!p.replay) {
    fix.gpu_ns = (gpu_removed - gpu_added) / n;
    fix.step_ns = fix.gpu_ns;
    fix.step_low_ns = 0;
    fix.step_high_ns = fix.gpu_ns;
    fix.basis =
        "the trace has no CPU side (launch calls): the step saving is the GPU saving if the step is "
        "GPU-bound, down to nothing if it is not";
    out.push_back(std::move(fix));
    return;
  }
  // With the CPU cost of the fused call at its typical, low and high value.
  const auto change_at = [&](int which) {
    Change c;
    for (const Planned& x : planned) {
      Replacement r = x.rep;
      if (x.pass == kKeepCpu) {
        c.replacements.push_back(r);
        continue;
      }
      if (x.pass >= 0) {
        const FusedCpuCost& k = cost[x.pass];
        r.cpu_ns = which == 0 ? k.typical_ns : which == 1 ? k.low_ns : k.high_ns;
      }
      if (r.to <= r.from) r.cpu_ns = 0;  // no CPU side known for this call: its CPU time stays
      c.replacements.push_back(std::move(r));
    }
    // Calls whose CPU intervals overlap (one op holding two calls): one replacement.
    std::sort(c.replacements.begin(), c.replacements.end(),
              [](const Replacement& x, const Replacement& y) { return x.from < y.from; });
    std::vector<Replacement> merged;
    for (Replacement& r : c.replacements) {
      if (!merged.empty() && r.from < merged.back().to) {
        Replacement& m = merged.back();
        m.to = std::max(m.to, r.to);
        m.cpu_ns = std::max(m.cpu_ns, r.cpu_ns);
        m.gpu_ns += r.gpu_ns;
        m.removed.insert(m.removed.end(), r.removed.begin(), r.removed.end());
      } else {
        merged.push_back(std::move(r));
      }
    }
    c.replacements = std::move(merged);
    return c;
  };
  const Medians typical = p.saved(change_at(0));
  const Medians low_cpu = p.saved(change_at(1));  // a cheaper fused call: more saved
  const Medians high_cpu = p.saved(change_at(2));
  fix.gpu_ns = typical.busy;
  fix.step_ns = typical.span;
  fix.step_low_ns = std::min({typical.span, low_cpu.span, high_cpu.span});
  fix.step_high_ns = std::max({typical.span, low_cpu.span, high_cpu.span});
  std::string prep;
  if (widened > 0)
    prep += fmt::format(
        "; with the layout copies next to {} calls (K/V heads repeated, the output's transpose made "
        "contiguous), which SDPA does without",
        widened);
  if (masks > 0)
    prep += fmt::format(
        "; without the {} mask builds before the calls ({} per step: a fused call with "
        "is_causal=True needs none; a padding mask would stay)",
        masks, fmt::format("{:.1f}", static_cast<double>(masks) / static_cast<double>(n)));
  fix.basis = fmt::format(
      "the trace's timeline replayed with each unfused call's CPU ops and kernels replaced by one fused call (its "
      "kernel as the finding estimates it; {}){}; {}",
      cost_basis, prep, p.fidelity);
  out.push_back(std::move(fix));
}

// The fix of one finding: its id, its title, the finding it resolves.
Fix fix_of(const Planner& p, std::size_t finding) {
  Fix fix;
  fix.id = p.a.findings[finding].id;
  fix.title = title_of(fix.id);
  fix.findings = {fix.id};
  fix.finding_of = {finding};
  return fix;
}

// A fix priced by replaying the trace's timeline with `change`: its GPU and step savings, one value.
void price_by_replay(const Planner& p, const Change& change, const std::string& what, Fix& fix) {
  const Medians s = p.saved(change);
  fix.gpu_ns = s.busy;
  fix.step_ns = fix.step_low_ns = fix.step_high_ns = s.span;
  fix.basis = fmt::format("the trace's timeline replayed with {}; {}", what, p.fidelity);
}

// Every other finding: its GPU work made as fast as the finding says it would be.
void gpu_work_fix(Planner& p, std::size_t finding, std::vector<Fix>& out) {
  const Finding& f = p.a.findings[finding];
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, p.g.group.instances.size()));
  const std::int64_t saving = std::max<std::int64_t>(0, f.time_ns - std::max<std::int64_t>(0, f.after_ns));
  Fix fix = fix_of(p, finding);
  std::int64_t work = 0;
  for (std::size_t i : f.activities) work += p.index.event(p.index.activities()[i]).dur_ns;
  if (!p.replay || work <= 0) {
    fix.gpu_ns = saving / n;
    fix.step_ns = fix.gpu_ns;
    fix.step_high_ns = fix.gpu_ns;
    fix.basis = "the GPU time saved; the trace cannot tell the step's (no CPU side or no GPU work to replay)";
    out.push_back(std::move(fix));
    return;
  }
  const double factor = std::clamp(1.0 - static_cast<double>(saving) / static_cast<double>(work), 0.0, 1.0);
  Change c;
  for (std::size_t i : f.activities) c.scaled.push_back({i, factor});
  price_by_replay(
      p, c, fmt::format("this work {:.0f}% shorter on the GPU (its CPU side as recorded)", 100.0 * (1.0 - factor)),
      fix);
  out.push_back(std::move(fix));
}

// gpu-idle: what the step would be without the idle time of its cause.
void idle_fix(Planner& p, std::size_t finding, std::vector<Fix>& out) {
  const StepTime* s = p.model.median_step();
  if (s == nullptr) return;
  Fix fix;
  fix.id = "gpu-idle";
  fix.title = "keep the GPU fed (the cause named in the finding)";
  fix.findings = {p.a.findings[finding].id};
  fix.finding_of = {finding};
  std::int64_t cause = 0;
  for (int c = 0; c < kIdleCauses; ++c)
    if (static_cast<IdleCause>(c) != IdleCause::Other) cause += s->idle[static_cast<std::size_t>(c)];
  fix.gpu_ns = 0;
  fix.step_ns = cause;
  fix.step_low_ns = 0;
  fix.step_high_ns = cause;
  fix.basis = "at most the median step's GPU idle time with a CPU-side cause: the step then runs at the GPU's pace";
  out.push_back(std::move(fix));
}

// attention-host: the step replayed with each slow call's op as long on the CPU as the typical call's,
// its kernels as recorded.
void host_time_fix(Planner& p, std::size_t finding, std::vector<Fix>& out) {
  const std::vector<char> member = group_members(p.g.group, p.index.activities().size());
  Change change;
  std::int64_t excess = 0;
  for (const SlowHostCall& s : slow_host_calls(p.index, p.a.attention_calls)) {
    const AttentionCall& call = p.a.attention_calls.calls[s.call];
    if (!member[call.activities.front()]) continue;
    const Event& op = p.index.event(p.index.ranges()[static_cast<std::size_t>(s.op)]);
    Replacement r;
    r.from = op.ts_ns;
    r.to = op.end_ns();
    r.cpu_ns = s.typical_ns;
    for (std::size_t i : call.activities) {
      r.removed.push_back(i);
      r.gpu_ns += p.index.event(p.index.activities()[i]).dur_ns;
    }
    r.stream = stream_of(p.index, call.activities.front());
    excess += s.host_ns - s.typical_ns;
    change.replacements.push_back(std::move(r));
  }
  std::sort(change.replacements.begin(), change.replacements.end(),
            [](const Replacement& x, const Replacement& y) { return x.from < y.from; });
  Fix fix = fix_of(p, finding);
  const auto n = static_cast<std::int64_t>(std::max<std::size_t>(1, p.g.group.instances.size()));
  if (!p.replay) {
    fix.step_ns = fix.step_high_ns = excess / n;
    fix.basis = "the host time above the typical call's; the trace cannot replay the step";
  } else {
    price_by_replay(p, change, "these calls' ops as long on the CPU as the typical call's, their kernels as recorded",
                    fix);
  }
  out.push_back(std::move(fix));
}

}  // namespace

FusedCpuCost default_fused_cpu_cost(AttentionPass pass, bool has_cpu_ops) {
  // torch 2.11 on the H200 host, measured in traces of Llama, GPT-2 and BERT: aten::scaled_dot_product_attention
  // (flash, cuDNN) 83-175 us under torch.profiler, its backward's evaluate_function 119-305 us.
  if (has_cpu_ops)
    return pass == AttentionPass::Forward ? FusedCpuCost{140'000, 80'000, 200'000}
                                          : FusedCpuCost{200'000, 120'000, 320'000};
  // Without CPU ops (attnprof record): from the end of the runtime call before the fused call's first
  // launch to the end of its last (its dispatch and Python included), measured the same way in
  // `attnprof record` traces of Llama on the H200 host: forward 74-212 us, backward 119-235 us.
  return pass == AttentionPass::Forward ? FusedCpuCost{120'000, 70'000, 210'000}
                                        : FusedCpuCost{180'000, 110'000, 280'000};
}

FusedCpuCost fused_cpu_cost_from_host(AttentionPass pass, std::int64_t elementwise_ns) {
  const HostSpeedFactors k = host_speed_factors(pass);
  const auto times = [&](double f) { return static_cast<std::int64_t>(f * static_cast<double>(elementwise_ns)); };
  return {times(k.typical), times(k.low), times(k.high)};
}

std::int64_t median_elementwise_op_ns(const TraceIndex& index) {
  std::vector<std::int64_t> d;
  for (const CpuRange& r : index.ranges()) {
    if (r.kind != EventKind::CpuOp) continue;
    const std::string_view n = index.name(r);
    if (n == "aten::mul" || n == "aten::add") d.push_back(index.event(r).dur_ns);
  }
  return d.size() < 16 ? 0 : median_of(std::move(d));
}

std::vector<Fix> plan_fixes(const TraceIndex& index, const HostCalls& host, const Analysis& a) {
  std::vector<Fix> out;
  if (a.step_group < 0) return out;
  const GroupStats& g = a.groups[static_cast<std::size_t>(a.step_group)];
  Planner p(index, host, a, g);
  fused_attention_fix(p, out);
  std::vector<char> taken(a.findings.size(), 0);
  for (const Fix& f : out)
    for (std::size_t i : f.finding_of) taken[i] = 1;
  for (std::size_t i = 0; i < a.findings.size(); ++i) {
    if (taken[i] || a.findings[i].group != g.group.name) continue;
    // A GPU-time finding that does not say what its work takes after the fix has none to price: its work
    // stays and its speed-up is not known (FP32 casts outside attention, kept on purpose; GEMMs on a GPU
    // without tensor cores; unsplit-decode without shapes). Findings whose fix removes the work say 0.
    if (!a.findings[i].wall && a.findings[i].after_ns < 0) continue;
    if (a.findings[i].id == "gpu-idle")
      idle_fix(p, i, out);
    else if (a.findings[i].id == "attention-host")
      host_time_fix(p, i, out);
    else
      gpu_work_fix(p, i, out);
  }
  std::stable_sort(out.begin(), out.end(), [](const Fix& x, const Fix& y) { return x.step_ns > y.step_ns; });
  return out;
}

}  // namespace attnprof
