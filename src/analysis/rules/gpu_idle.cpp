// gpu-idle: the GPU waits for the CPU for much of each step, so the step is
// bound by something other than its kernels. Read off the step-time model
// (step_time.h): the median step's idle time and its causes, each with the
// fixes that fit it. None on a GPU-bound step.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "analysis/attention_host.h"
#include "analysis/rules/rule.h"

namespace attnprof {
namespace {

// The idle share of a step from which it is worth a finding, and the share of
// the step its CPU-side causes must reach.
constexpr double kIdleShare = 0.2;
constexpr double kCpuSideShare = 0.15;
// A range's first kernel waits for its op to be dispatched, whatever the program
// does: up to this much of the wait before the first GPU work is not a cause to act on.
constexpr std::int64_t kFirstIssueNs = 200'000;

std::string fix_for(IdleCause c, const StepModel& m, const StepTime& s, int graph_launches) {
  switch (c) {
    case IdleCause::Launch:
      if (graph_launches > 0)  // the step replays graphs already: the launches left are around them
        return fmt::format(
            "Launch-bound: {} launches per step, each kernel done before the CPU issues the next (~{:.0f} us from a "
            "launch to its kernel's start), although {} of them replay a CUDA graph already: the idle time is in "
            "the work launched op by op around the replays (a generate() loop's sampling, stopping checks and "
            "cache updates, the prefill, the optimizer). Bring that work into the graph or into torch.compile "
            "(a compiled sampling step, a static cache), or give each replay more work (a larger batch).",
            s.launches, static_cast<double>(m.launch_latency_ns) / 1e3, graph_launches);
      return fmt::format(
          "Launch-bound: {} launches per step, each kernel done before the CPU issues the next (~{:.0f} us from a "
          "launch to its kernel's start). Capture the step in a CUDA graph (torch.compile(mode=\"reduce-overhead\"), "
          "or torch.cuda.CUDAGraph), let torch.compile fuse the small ops, or give each kernel more work (a larger "
          "batch or sequence).",
          s.launches, static_cast<double>(m.launch_latency_ns) / 1e3);
    case IdleCause::Cpu:
      return "CPU-bound: the CPU worked without launching anything (data loading, Python, pre-processing or an "
             "optimizer on the CPU). Load data in DataLoader workers (num_workers > 0, pin_memory=True, "
             "persistent_workers=True) and prefetch the next batch, move the CPU-side work to the GPU, or overlap it "
             "with the GPU's work of the step before.";
    case IdleCause::Sync: {
      std::string ops;
      for (const std::string& op : m.sync_ops) ops += (ops.empty() ? "" : ", ") + op;
      return fmt::format(
          "Host synchronizations: {} per step{}, each leaving the GPU empty until the CPU issues more. Remove "
          ".item(), .cpu(), .tolist(), printing CUDA tensors and torch.cuda.synchronize() from the step (keep "
          "the values on the GPU and read them once every N steps), and use non_blocking=True copies.",
          s.syncs, ops.empty() ? "" : fmt::format(" (in {})", ops));
    }
    case IdleCause::Copy:
      return "Host-device copies on the CPU's path (a pageable copy holds the CPU until it is staged): pin the host "
             "memory (pin_memory=True in the DataLoader, tensor.pin_memory()) and copy with .to('cuda', "
             "non_blocking=True), so the copy overlaps the GPU's work.";
    case IdleCause::Comm:
      return "Waiting on communication: overlap it with compute (DDP's bucketed all-reduce during the backward, "
             "FSDP's prefetch), use NCCL rather than gloo for CUDA tensors, and look for a straggling rank.";
    case IdleCause::Other:
      return "";
  }
  return "";
}

}  // namespace

void rule_gpu_idle(const RuleContext& ctx, std::vector<Finding>& out) {
  const StepModel& m = ctx.group.steps;
  const StepTime* s = m.median_step();
  if (s == nullptr || s->span_ns <= 0 || !m.has_launches) return;
  // Copies from pageable host memory with no kernel running: the GPU computes nothing while the
  // CPU stages them (counted with the idle time, as its Copy cause), per instance.
  std::vector<std::int64_t> pageable_of(m.steps.size(), 0);
  for (std::size_t k = 0; k < m.steps.size(); ++k) {
    for (std::size_t i : ctx.group.group.instances[k].activities)
      if (ctx.event(i).kind == EventKind::GpuMemcpy &&
          ctx.index.name(ctx.activity(i)).find("Pageable") != std::string_view::npos)
        pageable_of[k] += ctx.event(i).dur_ns;
    pageable_of[k] = std::min(pageable_of[k], m.steps[k].copy_only_ns);
  }
  const std::int64_t pageable = pageable_of[m.median];
  const double idle_share = static_cast<double>(s->idle_ns + pageable) / static_cast<double>(s->span_ns);
  std::int64_t cpu_side = pageable;
  for (IdleCause c : {IdleCause::Launch, IdleCause::Cpu, IdleCause::Sync, IdleCause::Copy, IdleCause::Comm})
    cpu_side += s->cause_ns(c);
  const std::int64_t actionable = cpu_side - std::min(s->lead_in_ns, kFirstIssueNs);
  if (idle_share < kIdleShare || static_cast<double>(actionable) < kCpuSideShare * static_cast<double>(s->span_ns))
    return;
  // Its causes, the largest first.
  std::vector<IdleCause> causes = {IdleCause::Launch, IdleCause::Cpu, IdleCause::Sync, IdleCause::Copy,
                                   IdleCause::Comm};
  const auto cause_ns = [&](IdleCause c) { return s->cause_ns(c) + (c == IdleCause::Copy ? pageable : 0); };
  std::stable_sort(causes.begin(), causes.end(), [&](IdleCause x, IdleCause y) { return cause_ns(x) > cause_ns(y); });
  Finding f;
  f.id = "gpu-idle";
  f.scope = Scope::Model;
  f.wall = true;
  f.group = ctx.group.group.name;
  for (const StepTime& st : m.steps) f.time_ns += st.idle_ns;
  for (std::int64_t p : pageable_of) f.time_ns += p;
  for (std::size_t k = 0; k < m.steps.size(); ++k) {
    const StepTime& st = m.steps[k];
    f.instances += st.span_ns > 0 &&
                   static_cast<double>(st.idle_ns + pageable_of[k]) >= kIdleShare * static_cast<double>(st.span_ns);
  }
  f.share = idle_share;
  f.severity = severity_for_share(idle_share);
  // The title's numbers per instance as every finding's are (the mean over the group's instances, so
  // that they agree with the report's header); the decision above is the median step's.
  const auto n = static_cast<std::int64_t>(m.steps.size());
  std::array<std::int64_t, kIdleCauses> mean{};
  std::int64_t span = 0;
  for (const StepTime& st : m.steps) {
    span += st.span_ns;
    for (std::size_t c = 0; c < mean.size(); ++c) mean[c] += st.idle[c];
  }
  for (std::int64_t p : pageable_of) mean[static_cast<std::size_t>(IdleCause::Copy)] += p;
  f.share = static_cast<double>(f.time_ns) / static_cast<double>(std::max<std::int64_t>(1, span));
  f.severity = severity_for_share(f.share);
  const auto mean_of = [&](IdleCause c) { return mean[static_cast<std::size_t>(c)] / n; };
  const auto ms = [](std::int64_t ns) { return format_ms(ns); };
  std::string split;
  for (IdleCause c : causes)
    if (mean_of(c) * 20 >= f.time_ns / n && mean_of(c) > 0)
      split += fmt::format("{}{} {}", split.empty() ? "" : ", ", to_string(c), ms(mean_of(c)));
  if (mean_of(IdleCause::Other) * 20 >= f.time_ns / n && mean_of(IdleCause::Other) > 0)
    split += fmt::format("{}unexplained {}", split.empty() ? "" : ", ", ms(mean_of(IdleCause::Other)));
  const std::string pace = s->bound == StepBound::Gpu ? std::string("the GPU's own work still sets the pace")
                                                      : fmt::format("{}-bound", to_string(s->bound));
  f.title = fmt::format(
      "GPU idle {} {} of a {} span ({:.0f}%), {}; idle: {}", ms(f.time_ns / n), per_instance(ctx), ms(span / n),
      100.0 * static_cast<double>(f.time_ns) / static_cast<double>(std::max<std::int64_t>(1, span)), pace, split);
  if (pageable > 0) f.title += " (copy: from pageable host memory, no kernel running)";
  f.detail = fmt::format(
      "While the GPU had nothing to run, the CPU was: {}. GPU work saved in such a step shortens the step only "
      "once the GPU sets its pace again.",
      describe(causes.front()));
  for (const std::string& u : m.unknowns) f.detail += fmt::format(" ({})", u);
  // Host time inside attention ops far above their typical call's (attention-host's calls): part of it.
  const std::vector<char> member = group_members(ctx.group.group, ctx.index.activities().size());
  std::int64_t in_attention_ops = 0;
  for (const SlowHostCall& sc : slow_host_calls(ctx.index, ctx.attention))
    if (member[ctx.attention.calls[sc.call].activities.front()]) in_attention_ops += sc.host_ns - sc.typical_ns;
  if (in_attention_ops * 20 >= f.time_ns)
    f.detail += fmt::format(
        " Of it, {} {} the CPU spent in attention ops far slower than their typical call (see "
        "attention-host).",
        ms(in_attention_ops / n), per_instance(ctx));
  // The median step's CUDA graph replays (cudaGraphLaunch calls with GPU work).
  std::vector<std::int32_t> graphs;
  for (std::size_t i : ctx.group.group.instances[m.median].activities)
    if (ctx.index.graph_replayed(i)) graphs.push_back(ctx.activity(i).launch);
  std::sort(graphs.begin(), graphs.end());
  const auto graph_launches = static_cast<int>(std::unique(graphs.begin(), graphs.end()) - graphs.begin());
  for (IdleCause c : causes) {
    if (cause_ns(c) * 4 < cpu_side && c != causes.front()) continue;
    const std::string text = fix_for(c, m, *s, graph_launches);
    if (!text.empty()) f.fix += (f.fix.empty() ? "" : " ") + text;
  }
  f.evidence.push_back(
      {fmt::format("{} launches, {} host synchronizations in the median step", s->launches, s->syncs), 0, 0});
  out.push_back(std::move(f));
}

}  // namespace attnprof
