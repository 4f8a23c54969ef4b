// The step-time model (step_time.h), the gpu-idle rule and the replay that
// prices each fix in step time (step_simulation.h, fixes.h), on real programs
// traced on an H200 (scripts/corpus/make_steps.py). tests/data/steps/facts.json
// says how each was built: the idle programs with the cause built into them
// (300 tiny kernels a step, CPU work a step, 24 .item() a step, a 256 MiB
// pageable copy a step and its pinned twin, a gloo all_reduce between two ranks,
// back-to-back matmuls as the control), and the twins that differ only in
// attention (eager, SDPA math, SDPA fused), with the wall clock per step the
// program measured itself (perf_counter around the steps). Every expectation
// comes from those facts.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/attention_prep.h"
#include "analysis/replay.h"
#include "analysis/step_simulation.h"
#include "test_doctor.h"
#include "test_paths.h"

namespace attnprof {
namespace {

using test::Doctor;

struct Program {
  std::string name, kind, cause, twin_group, implementation, regime, tracer, attention;
  std::int64_t active_steps = 0, syncs_per_step = 0, kernels_per_step = 0;
  std::int64_t heads = 0, kv_heads = 0, layers = 0, forwards_per_step = 0;
  std::int64_t forward_calls = 0, backward_calls = 0;  // attention calls the program made in its active steps
  double wall_ms = 0;                                  // the program's own perf_counter per step, traced
};
void PrintTo(const Program& p, std::ostream* os) { *os << p.name; }

std::vector<Program> programs() {
  simdjson::dom::parser parser;
  const simdjson::dom::element doc = parser.load(test::data_file("steps/facts.json"));
  std::vector<Program> out;
  for (simdjson::dom::element v : doc.get_array()) {
    Program p;
    p.name = std::string(std::string_view(v["name"]));
    p.kind = std::string(std::string_view(v["kind"]));
    p.tracer = std::string(std::string_view(v["tracer"]));
    p.active_steps = std::int64_t(v["active_steps"]);
    std::string_view s;
    if (v["idle_cause"].get(s) == simdjson::SUCCESS) p.cause = std::string(s);
    if (v["twin_group"].get(s) == simdjson::SUCCESS) p.twin_group = std::string(s);
    if (v["regime"].get(s) == simdjson::SUCCESS) p.regime = std::string(s);
    if (v["expected"]["implementation"].get(s) == simdjson::SUCCESS) p.implementation = std::string(s);
    if (v["attention"].get(s) == simdjson::SUCCESS) p.attention = std::string(s);
    std::int64_t n = 0;
    if (v["heads"].get(n) == simdjson::SUCCESS) p.heads = n;
    if (v["kv_heads"].get(n) == simdjson::SUCCESS) p.kv_heads = n;
    if (v["layers"].get(n) == simdjson::SUCCESS) p.layers = n;
    if (v["forwards_per_step"].get(n) == simdjson::SUCCESS) p.forwards_per_step = n;
    if (v["expected"]["forward_calls"].get(n) == simdjson::SUCCESS) p.forward_calls = n;
    if (v["expected"]["backward_calls"].get(n) == simdjson::SUCCESS) p.backward_calls = n;
    if (v["syncs_per_step"].get(n) == simdjson::SUCCESS) p.syncs_per_step = n;
    if (v["kernels_per_step"].get(n) == simdjson::SUCCESS) p.kernels_per_step = n;
    p.wall_ms = double(v["measured"]["mean_step_ms"]);
    out.push_back(p);
  }
  return out;
}

const Program& program(const std::string& name) {
  static const std::vector<Program> all = programs();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Program& p) { return p.name == name; });
  if (it == all.end()) throw std::runtime_error("no program " + name + " in steps/facts.json");
  return *it;
}

Doctor doctor(const Program& p) { return Doctor(test::data_file("steps/" + p.name + ".json.gz")); }

const GroupStats& step_group(const Doctor& d) {
  EXPECT_GE(d.analysis.step_group, 0);
  return d.analysis.groups.at(static_cast<std::size_t>(d.analysis.step_group));
}

const Finding* idle_finding(const Doctor& d) {
  for (const Finding& f : d.analysis.findings)
    if (f.id == "gpu-idle") return &f;
  return nullptr;
}

IdleCause largest_cause(const StepTime& s) {
  IdleCause best = IdleCause::Launch;
  for (int c = 0; c < kIdleCauses; ++c)
    if (s.idle[static_cast<std::size_t>(c)] > s.cause_ns(best)) best = static_cast<IdleCause>(c);
  return best;
}

double share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

class EveryProgram : public ::testing::TestWithParam<Program> {};

// The model's books balance on every program, and it finds the steps the program made.
TEST_P(EveryProgram, StepsAddUp) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const GroupStats& g = step_group(d);
  EXPECT_EQ(static_cast<std::int64_t>(g.steps.steps.size()), p.active_steps);
  EXPECT_TRUE(g.steps.has_launches);
  EXPECT_EQ(g.steps.has_cpu_ops, p.tracer == "torch.profiler");
  for (const StepTime& s : g.steps.steps) {
    EXPECT_EQ(s.busy_ns + s.idle_ns, s.span_ns);
    std::int64_t split = 0;
    for (std::int64_t v : s.idle) split += v;
    EXPECT_EQ(split, s.idle_ns);
    EXPECT_LE(s.copy_only_ns + s.comm_exposed_ns, s.busy_ns);
  }
  // Consecutive windows never overlap: their spans add up to at most the wall time they cover.
  for (std::size_t i = 1; i < g.steps.steps.size(); ++i)
    EXPECT_GE(g.steps.steps[i].start_ns, g.steps.steps[i - 1].end_ns);
}

// Replayed as recorded, the timeline gives back the trace's median step.
TEST_P(EveryProgram, ReplayAsRecordedIsTheTrace) {
  const Program& p = GetParam();
  const Doctor d = doctor(p);
  const GroupStats& g = step_group(d);
  const HostCalls host = host_calls(*d.index);
  const StepReplay replay(*d.index, host, g.group, g.steps.launch_latency_ns);
  std::vector<std::int64_t> spans;
  for (const ReplayedStep& s : replay.run({})) spans.push_back(s.span_ns);
  const auto recorded = static_cast<double>(g.steps.median_step()->span_ns);
  EXPECT_NEAR(static_cast<double>(median_of(spans)), recorded, 0.05 * recorded) << p.name;
}

// Every step whose built-in cause idles the GPU gets gpu-idle naming that cause; the GPU-bound control none.
TEST_P(EveryProgram, IdleCauseIsNamed) {
  const Program& p = GetParam();
  if (p.kind != "idle") GTEST_SKIP() << "a twin";
  const Doctor d = doctor(p);
  const StepTime& s = *step_group(d).steps.median_step();
  const Finding* f = idle_finding(d);
  if (p.cause == "none") {
    EXPECT_LT(share(s.idle_ns, s.span_ns), 0.10);
    EXPECT_EQ(s.bound, StepBound::Gpu);
    EXPECT_EQ(f, nullptr) << f->title;
    return;
  }
  if (p.cause == "h2d-copy" && p.name.find("pinned") != std::string::npos) {
    // Pinned and non_blocking: the copy is the step's work, no idle time and nothing to fix.
    EXPECT_LT(share(s.idle_ns, s.span_ns), 0.10);
    EXPECT_EQ(f, nullptr) << f->title;
    return;
  }
  ASSERT_NE(f, nullptr) << p.name << " has no gpu-idle";
  const std::map<std::string, std::pair<StepBound, std::string>> built = {
      {"launch", {StepBound::Launch, "launch-bound"}},
      {"cpu", {StepBound::Cpu, "cpu-bound"}},
      {"sync", {StepBound::Gpu, "sync"}},  // 40% idle: the GPU's 24 chunks still set the pace
      {"h2d-copy", {StepBound::Copy, "copy-bound"}},
      {"communication", {StepBound::Comm, "comm-bound"}},
  };
  const auto& [bound, words] = built.at(p.cause);
  EXPECT_EQ(s.bound, bound) << p.name << ": " << to_string(s.bound);
  EXPECT_NE(f->title.find(words), std::string::npos) << f->title;
  if (p.cause == "launch") {
    EXPECT_EQ(largest_cause(s), IdleCause::Launch);
    EXPECT_GE(s.launches, p.kernels_per_step);
    EXPECT_NE(f->fix.find("CUDA graph"), std::string::npos);
  } else if (p.cause == "cpu") {
    EXPECT_EQ(largest_cause(s), IdleCause::Cpu);
    EXPECT_NE(f->fix.find("DataLoader"), std::string::npos);
  } else if (p.cause == "sync") {
    EXPECT_EQ(largest_cause(s), IdleCause::Sync);
    EXPECT_EQ(s.syncs, p.syncs_per_step);
    const auto& ops = step_group(d).steps.sync_ops;
    EXPECT_NE(std::find(ops.begin(), ops.end(), "aten::item"), ops.end());
    EXPECT_NE(f->fix.find(".item()"), std::string::npos);
  } else if (p.cause == "h2d-copy") {
    EXPECT_GT(share(s.copy_only_ns, s.span_ns), 0.5);
    EXPECT_NE(f->fix.find("pin_memory"), std::string::npos);
  } else if (p.cause == "communication") {
    EXPECT_EQ(largest_cause(s), IdleCause::Comm);
    EXPECT_NE(f->fix.find("NCCL"), std::string::npos);
  }
}

std::string test_name(const ::testing::TestParamInfo<Program>& p) {
  std::string n = p.param.name;
  std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return n;
}
INSTANTIATE_TEST_SUITE_P(Steps, EveryProgram, ::testing::ValuesIn(programs()), test_name);

// The pinned twin of the pageable copy is the faster step, as the program measured.
TEST(StepTime, PinnedCopyIsTheFasterTwin) {
  const Program& pageable = program("idle_h2d-pageable");
  const Program& pinned = program("idle_h2d-pinned");
  ASSERT_GT(pageable.wall_ms, 2 * pinned.wall_ms);  // the facts
  const double a = static_cast<double>(step_group(doctor(pageable)).steps.median_step()->span_ns) / 1e6;
  const double b = static_cast<double>(step_group(doctor(pinned)).steps.median_step()->span_ns) / 1e6;
  EXPECT_NEAR(a, pageable.wall_ms, 0.1 * pageable.wall_ms);
  EXPECT_NEAR(b, pinned.wall_ms, 0.1 * pinned.wall_ms);
}

// The two ranks of one job wait on each other: both comm-bound, their steps as long.
TEST(StepTime, BothRanksOfTheAllReduce) {
  const Doctor r0 = doctor(program("idle_comm_rank0"));
  const Doctor r1 = doctor(program("idle_comm_rank1"));
  const StepTime& a = *step_group(r0).steps.median_step();
  const StepTime& b = *step_group(r1).steps.median_step();
  EXPECT_EQ(a.bound, StepBound::Comm);
  EXPECT_EQ(b.bound, StepBound::Comm);
  EXPECT_NEAR(static_cast<double>(a.span_ns), static_cast<double>(b.span_ns), 0.1 * static_cast<double>(a.span_ns));
}

// The fused-attention fix in step time, against what the program's fused twin measured on the wall
// clock: the GPU-bound twins (the large regime, steady on the H200), where the change is well above
// the run-to-run noise of the small ones. The tolerance: max(20% of the change, 5% of the step).
TEST(StepTime, FusedAttentionFixMatchesTheFusedTwin) {
  const std::vector<Program> all = programs();  // the map's pointers are into it
  std::map<std::string, const Program*> fused;
  for (const Program& p : all)
    if (p.kind == "twin" && p.implementation == "fused") fused[p.twin_group] = &p;
  int checked = 0;
  for (const Program& p : all) {
    if (p.kind != "twin" || p.implementation != "sdpa-math" || p.regime != "large") continue;
    const Program& twin = *fused.at(p.twin_group);
    const Doctor d = doctor(p);
    const auto fix = std::find_if(d.analysis.fixes.begin(), d.analysis.fixes.end(),
                                  [](const Fix& f) { return f.id == "fused-attention"; });
    ASSERT_NE(fix, d.analysis.fixes.end()) << p.name;
    EXPECT_NE(std::find(fix->findings.begin(), fix->findings.end(), "unfused-attention"), fix->findings.end());
    const double measured = p.wall_ms - twin.wall_ms;
    const double predicted = static_cast<double>(fix->step_ns) / 1e6;
    EXPECT_NEAR(predicted, measured, std::max(0.2 * std::abs(measured), 0.05 * p.wall_ms))
        << p.name << " -> " << twin.name;
    ++checked;
  }
  EXPECT_EQ(checked, 2);  // inference and training
}

// A launch-bound step gains little from shorter kernels: the GPU saving of a model-scope fix
// stays on the GPU, its step saving near zero.
TEST(StepTime, GpuSavingsInALaunchBoundStepAreNotStepSavings) {
  const Doctor d = doctor(program("llama-small_sdpa_bf16_train"));
  const StepTime& s = *step_group(d).steps.median_step();
  ASSERT_EQ(s.bound, StepBound::Launch);
  for (const Fix& f : d.analysis.fixes)
    if (f.id != "gpu-idle" && f.gpu_ns > 0) {
      EXPECT_LT(f.step_ns, f.gpu_ns / 2 + 20'000) << f.id;
    }
}

// A fix is priced only where the finding says what its work takes afterwards. The DDP Llama job's ranks
// (tests/data/ranks/facts.json): LlamaRMSNorm computes in FP32 (hidden_states.to(torch.float32)) on
// every rank, casts outside attention that the finding says to keep, so no fix offers to remove them;
// rank 2 is built with attn_implementation='eager', whose softmax runs in FP32 (softmax(dtype=float32))
// inside attention, and fusing attention removes those casts.
TEST(StepTime, CastsKeptOnPurposeAreNoFix) {
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE(rank);
    const Doctor d(test::data_file("ranks/ddp_llama_rank" + std::to_string(rank) + ".json.gz"));
    std::vector<char> fixed(d.analysis.findings.size(), 0);
    for (const Fix& f : d.analysis.fixes)
      for (std::size_t i : f.finding_of) fixed[i] = 1;
    int kept = 0, removed = 0;
    for (std::size_t i = 0; i < d.analysis.findings.size(); ++i) {
      const Finding& f = d.analysis.findings[i];
      if (f.id != "fp32-upcast") continue;
      if (f.scope == Scope::Model) {
        ++kept;
        EXPECT_FALSE(fixed[i]);
      } else {
        ++removed;
        EXPECT_TRUE(fixed[i]);
      }
    }
    EXPECT_EQ(kept, 1);
    EXPECT_EQ(removed, rank == 2 ? 1 : 0);
  }
}

// The calls' runs that are known, by their first op (what widen_by_layout_copies takes as the others).
std::vector<OpRun> by_start(const std::vector<std::optional<OpRun>>& runs) {
  std::vector<OpRun> out;
  for (const auto& r : runs)
    if (r) out.push_back(*r);
  std::sort(out.begin(), out.end(), [](const OpRun& x, const OpRun& y) { return x.first < y.first; });
  return out;
}

// f(program, its outermost ops, its attention calls, each call's run, the known runs by start) on each
// unfused twin traced by torch.profiler (CPU ops); the number of programs.
template <typename F>
int for_each_unfused_twin(F&& f) {
  int n = 0;
  for (const Program& p : programs()) {
    if (p.kind != "twin" || p.tracer != "torch.profiler" || p.implementation == "fused") continue;
    const Doctor d = doctor(p);
    const OutermostOps ops(*d.index);
    const auto& calls = d.analysis.attention_calls.calls;
    const auto runs = call_runs(ops, calls);
    f(p, ops, calls, runs, by_start(runs));
    ++n;
  }
  return n;
}

// The ops a fused call does without, counted per unfused forward call: the copies next to it. Built as
// HF eager_attention_forward runs: repeat_kv copies K and V when kv_heads < heads (two copies before the
// QK^T GEMM), and the output's transpose(1, 2).contiguous() is one copy after the PV GEMM; SDPA's math
// backend (enable_gqa, no repeat_kv outside it) leaves only that output copy.
TEST(AttentionPrep, LayoutCopiesNextToTheCalls) {
  const int checked =
      for_each_unfused_twin([](const Program& p, const OutermostOps& ops, const std::vector<AttentionCall>& calls,
                               const std::vector<std::optional<OpRun>>& runs, const std::vector<OpRun>& sorted) {
        const auto copies = [&](std::size_t from, std::size_t to) {  // ops in [from, to) that launched GPU work
          int n = 0;
          for (std::size_t o = from; o < to; ++o) n += !ops.activities(o).empty();
          return n;
        };
        const int before = p.attention == "eager" && p.kv_heads < p.heads ? 2 : 0;
        int forward = 0;
        for (std::size_t c = 0; c < calls.size(); ++c) {
          if (calls[c].pass != AttentionPass::Forward) continue;
          ASSERT_TRUE(runs[c].has_value()) << p.name << " call " << c;
          const OpRun w = widen_by_layout_copies(ops, *runs[c], sorted);
          EXPECT_EQ(copies(w.first, runs[c]->first), before) << p.name << " call " << c;
          EXPECT_EQ(copies(runs[c]->last + 1, w.last + 1), 1) << p.name << " call " << c;
          // repeat_kv's K starts at its view hidden_states[:, :, None] (then expand, then the copy).
          if (before > 0) {
            EXPECT_EQ(ops.name(w.first), "aten::unsqueeze") << p.name << " call " << c;
          }
          ++forward;
        }
        EXPECT_GT(forward, 0) << p.name;
      });
  EXPECT_GE(checked, 8);
}

// The causal mask: HF's eager attention gets a 4-d mask built once per forward (create_causal_mask);
// its SDPA twins pass is_causal=True with no mask (no padding in these programs): none built.
TEST(AttentionPrep, MaskBuiltOncePerEagerForward) {
  int checked = 0;
  for (const Program& p : programs()) {
    if (p.kind != "twin" || p.tracer != "torch.profiler") continue;
    const Doctor d = doctor(p);
    const OutermostOps ops(*d.index);
    std::vector<OpRun> runs;
    for (const auto& r : call_runs(ops, d.analysis.attention_calls.calls))
      if (r) runs.push_back(*r);
    std::int64_t builds = 0;
    for (const MaskBuild& m : find_mask_builds(ops, runs)) {
      if (m.next_call == kNone) continue;
      ++builds;
      // transformers' sdpa_mask compares index ranges it makes first (torch.arange of the batch, the
      // head and the key positions, offsets added): the build starts at the first of them.
      EXPECT_EQ(ops.name(m.run.first), "aten::arange") << p.name;
    }
    EXPECT_EQ(builds, p.attention == "eager" ? p.active_steps * p.forwards_per_step : 0) << p.name;
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

// The backward nodes of an unfused forward call's ops, as torch.profiler's fwdbwd flows link them: HF's
// eager_attention_forward and SDPA's math backend both run QK^T and PV as batched matmuls around one
// softmax (math's _safe_softmax), so each training forward call's ops made one SoftmaxBackward0 (math:
// SafeSoftmaxBackward0) and two BmmBackward0 nodes, all run on the autograd engine's thread; inference
// programs made none.
TEST(AttentionPrep, BackwardNodesOfEachForwardCall) {
  const int checked =
      for_each_unfused_twin([](const Program& p, const OutermostOps& ops, const std::vector<AttentionCall>& calls,
                               const std::vector<std::optional<OpRun>>& runs, const std::vector<OpRun>& sorted) {
        const BackwardNodes backward(ops);
        std::int64_t forward = 0;
        for (std::size_t c = 0; c < calls.size(); ++c) {
          if (calls[c].pass != AttentionPass::Forward) continue;
          ++forward;
          const auto nodes = backward.of(widen_by_layout_copies(ops, *runs[c], sorted));
          if (p.backward_calls == 0) {
            EXPECT_TRUE(nodes.empty()) << p.name << " call " << c;
            continue;
          }
          int softmax = 0, bmm = 0;
          for (std::size_t b : nodes) {
            EXPECT_TRUE(ops.name(b).starts_with("autograd::engine::evaluate_function: ")) << ops.name(b);
            EXPECT_NE(ops.ops()[b].lane, ops.ops()[runs[c]->first].lane) << p.name;
            softmax += ops.name(b).ends_with(p.attention == "eager" ? " SoftmaxBackward0" : " SafeSoftmaxBackward0");
            bmm += ops.name(b).ends_with(" BmmBackward0");
          }
          EXPECT_EQ(softmax, 1) << p.name << " call " << c;
          EXPECT_EQ(bmm, 2) << p.name << " call " << c;
        }
        EXPECT_EQ(forward, p.forward_calls) << p.name;
      });
  EXPECT_GE(checked, 10);
}

// The same mask told by its launches alone (`attnprof record`: no CPU ops), once per eager forward,
// before that forward's first call; none in the SDPA twins.
TEST(AttentionPrep, MaskBuiltOncePerEagerForwardByLaunches) {
  int checked = 0;
  for (const Program& p : programs()) {
    if (p.kind != "twin" || p.tracer != "attnprof record") continue;
    const Doctor d = doctor(p);
    ASSERT_FALSE(d.index->has_cpu_ops()) << p.name;
    const HostCalls host = host_calls(*d.index);
    const AttentionView& view = d.analysis.attention_calls;
    std::vector<std::size_t> next;  // the call after each build
    for (const MaskLaunches& m : find_mask_launches(*d.index, host, LaunchedBy(host), view))
      if (m.next_call != kNone) next.push_back(static_cast<std::size_t>(m.next_call));
    EXPECT_EQ(std::ssize(next), p.attention == "eager" ? p.active_steps * p.forwards_per_step : 0) << p.name;
    // Each opens a forward: its layers' forward calls come before the next build.
    std::sort(next.begin(), next.end());
    for (std::size_t i = 0; i < next.size(); ++i) {
      const std::size_t end = i + 1 < next.size() ? next[i + 1] : view.calls.size();
      std::int64_t forward = 0;
      for (std::size_t c = next[i]; c < end; ++c) forward += view.calls[c].pass == AttentionPass::Forward;
      EXPECT_EQ(forward, p.layers) << p.name << " build " << i;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

// The fix's GPU saving covers what the fused twin does without (the calls, the copies next to them,
// the mask): within 20% of the measured GPU-busy change between the twins (issue 36), on every
// twin, torch.profiler's and `attnprof record`'s (copies and mask told by their kernels).
TEST(StepTime, FusedAttentionFixGpuSavingMatchesTheFusedTwin) {
  const std::vector<Program> all = programs();  // the map's pointers are into it
  std::map<std::string, const Program*> fused;
  for (const Program& p : all)
    if (p.kind == "twin" && p.implementation == "fused") fused[p.twin_group] = &p;
  int checked = 0;
  for (const Program& p : all) {
    if (p.kind != "twin" || p.implementation == "fused") continue;
    const Doctor d = doctor(p);
    const Doctor t = doctor(*fused.at(p.twin_group));
    const auto fix = std::find_if(d.analysis.fixes.begin(), d.analysis.fixes.end(),
                                  [](const Fix& f) { return f.id == "fused-attention"; });
    ASSERT_NE(fix, d.analysis.fixes.end()) << p.name;
    const double measured =
        static_cast<double>(step_group(d).steps.median_step()->busy_ns - step_group(t).steps.median_step()->busy_ns);
    EXPECT_NEAR(static_cast<double>(fix->gpu_ns), measured, 0.2 * std::abs(measured)) << p.name;
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// doctor --replay of a training trace replays each forward call's backward too: every backward
// call the program made is paired with a forward of its shape (one per forward: no checkpointing
// in these programs), and the plan benches the backward; inference plans none.
TEST(Replay, TrainingTwinsReplayEachForwardsBackward) {
  int training = 0;
  for (const Program& p : programs()) {
    if (p.kind != "twin") continue;
    const Doctor d = doctor(p);
    const Replay r = plan_replay(d.analysis, *d.index, {});
    int forward = 0, backward = 0;
    for (const ReplayShape& s : r.shapes) {
      forward += s.traced.calls;
      backward += s.backward_calls;
      EXPECT_EQ(s.backward_calls, p.backward_calls > 0 ? s.traced.calls : 0) << p.name << " " << s.shape_text;
      if (!s.problem.empty()) continue;
      EXPECT_EQ(s.command.find("--pass backward") != std::string::npos, p.backward_calls > 0) << p.name << s.command;
      if (p.backward_calls > 0) {
        EXPECT_NEAR(s.backward_calls_per_step,
                    static_cast<double>(p.backward_calls) / static_cast<double>(p.active_steps), 1e-9)
            << p.name;
      }
    }
    EXPECT_EQ(forward, p.forward_calls) << p.name;
    EXPECT_EQ(backward, p.backward_calls) << p.name;
    EXPECT_EQ(r.backward_unpaired, 0) << p.name;
    training += p.backward_calls > 0;
  }
  EXPECT_GE(training, 8);
}

}  // namespace
}  // namespace attnprof
