// Regions on real traces: record_function ranges, profiler steps, --region by
// name / stem / glob, GPU-only spans, the whole-trace fallback.
#include "analysis/regions.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/analysis.h"
#include "analysis/attention.h"
#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

int kernels_in(const TraceIndex& index, const RegionInstance& inst) {
  int n = 0;
  for (std::size_t i : inst.activities) n += index.event(index.activities()[i]).kind == EventKind::Kernel;
  return n;
}

TEST(Regions, Stems) {
  EXPECT_EQ(region_stem("fwd0"), "fwd");
  EXPECT_EQ(region_stem("fwd12"), "fwd");
  EXPECT_EQ(region_stem("ProfilerStep#3"), "ProfilerStep");
  EXPECT_EQ(region_stem("layer_7"), "layer");
  EXPECT_EQ(region_stem("attn_fwd"), "attn_fwd");
  EXPECT_EQ(region_stem("42"), "42");
}

TEST(Regions, RecordFunctionRangesGroupByStem) {
  const Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "sdpa_math.json");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "fwd");
  ASSERT_EQ(groups[0].instances.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(groups[0].instances[i].name, "fwd" + std::to_string(i));
    EXPECT_EQ(kernels_in(index, groups[0].instances[i]), 20);
  }
}

TEST(Regions, DriverLaunchesAreLinked) {
  // cuBLAS on Hopper launches with cuLaunchKernelEx (a driver call): its kernels must land in the region.
  const Trace t = read_trace_file(test::example_trace("manual.json"));
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "manual.json");
  ASSERT_EQ(groups.size(), 1u);
  for (const auto& inst : groups[0].instances) {
    EXPECT_EQ(kernels_in(index, inst), 5);
    EXPECT_EQ(inst.activities.size(), 7u);  // + the masked_fill copy + cuBLAS's workspace memset
  }
}

// Two launches with one correlation id (merged or malformed traces): the kernel
// is linked to the first in the file. Ids close together are looked up in a
// table, ids far apart in a sorted list; both give the same links, and a
// kernel whose id no launch has gets none.
TEST(TraceIndexLinks, DuplicateCorrelationIdLinksTheFirstLaunch) {
  for (const std::int64_t other : {6LL, 900000000000LL}) {
    const std::string o = std::to_string(other);
    const std::string json = R"([
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 10, "dur": 2,
       "args": {"correlation": 5}},
      {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 2, "ts": 15, "dur": 2,
       "args": {"correlation": )" +
                             o + R"(}},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 20, "dur": 2,
       "args": {"correlation": 5}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30, "dur": 3,
       "args": {"correlation": 5, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 40, "dur": 3,
       "args": {"correlation": )" +
                             o + R"(, "stream": 7}},
      {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 50, "dur": 3,
       "args": {"correlation": 77, "stream": 7}}])";
    const Trace t = read_trace_bytes(json, "dup.json");
    const TraceIndex index(t);
    SCOPED_TRACE("other correlation " + o);
    ASSERT_EQ(index.activities().size(), 3u);
    EXPECT_EQ(index.activities()[0].launch, 0);
    EXPECT_EQ(index.activities()[1].launch, 1);
    EXPECT_EQ(index.activities()[2].launch, kNone);
    EXPECT_EQ(index.launch_time(index.activities()[1]), 15000);
  }
}

// Ranges and GPU activity need not be written in time order (merged traces,
// other writers): nesting follows the times, a longer range encloses a
// shorter one with the same start, each thread nests on its own, and
// activities come in GPU start order, each with its own launch.
TEST(TraceIndexLinks, RangesNestByTimeNotFileOrder) {
  const std::string json = R"([
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 12, "dur": 4},
    {"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 2, "ts": 10, "dur": 8},
    {"ph": "X", "cat": "user_annotation", "name": "fwd0", "pid": 1, "tid": 2, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "user_annotation", "name": "other_thread", "pid": 1, "tid": 3, "ts": 5, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 13, "dur": 1,
     "args": {"correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 25, "dur": 1,
     "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 50, "dur": 3, "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": 7, "ts": 40, "dur": 3, "args": {"correlation": 7}}])";
  const Trace t = read_trace_bytes(json, "order.json");
  const TraceIndex index(t);
  const auto name = [&](std::int32_t r) {
    return r == kNone ? std::string("none") : std::string(index.name(index.ranges()[static_cast<std::size_t>(r)]));
  };
  const auto parent = [&](std::int32_t r) { return index.ranges()[static_cast<std::size_t>(r)].parent; };
  ASSERT_EQ(index.activities().size(), 2u);
  EXPECT_EQ(index.name(index.activities()[0]), "k1");
  EXPECT_EQ(index.name(index.activities()[1]), "k2");
  EXPECT_EQ(index.launch_time(index.activities()[0]), 13000);
  EXPECT_EQ(index.launch_time(index.activities()[1]), 25000);
  const std::int32_t mm = index.activities()[0].range;
  EXPECT_EQ(name(mm), "aten::mm");
  EXPECT_EQ(name(parent(mm)), "aten::matmul");
  EXPECT_EQ(name(parent(parent(mm))), "fwd0");
  EXPECT_EQ(parent(parent(parent(mm))), kNone);  // not inside the other thread's range
  EXPECT_EQ(name(index.activities()[1].range), "fwd0");
  EXPECT_EQ(name(index.outermost_op(index.activities()[0])), "aten::matmul");
  EXPECT_TRUE(index.under(index.activities()[0], "fwd0"));
  EXPECT_FALSE(index.under(index.activities()[1], "aten::mm"));
}

// CUDA graph replays and their capture (TraceIndex::capture_range), as Kineto writes them: the capture's
// launches ran nothing (no kernel has their correlation ids); a replay's kernels all carry its
// cudaGraphLaunch's. A replay after the capture whose nodes run as the capture's own replay (the first
// after it) takes the capture's ops node by node; a replay before the capture takes none; a second
// capture of the same node sequence whose attention op saw other inputs makes a replay that runs alike
// with both captures' own replays ambiguous: none, never a guess.
// Kineto's events of a CUDA graph capture on thread 2 at t0 (us): an addmm's kernel launch, then an SDPA
// op (q [1, 8, 1, 64] against `len` keys, of `dtype`) with a memset and its kernel's launch, none of
// which ran; correlation ids from corr0.
std::string graph_capture_events(int t0, int corr0, int len, const std::string& dtype = "c10::BFloat16") {
  const auto at = [&](int dt) { return std::to_string(t0 + dt); };
  const auto corr = [&](int k) { return std::to_string(corr0 + k); };
  const std::string dims = "[[1, 8, 1, 64], [1, 8, " + std::to_string(len) + ", 64]]";
  return R"(
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture", "pid": 1, "tid": 2, "ts": )" +
         at(0) + R"(, "dur": 1, "args": {"correlation": )" + corr(0) + R"(}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 2, "ts": )" +
         at(2) + R"(, "dur": 4},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 2, "ts": )" +
         at(3) + R"(, "dur": 1, "args": {"correlation": )" + corr(1) + R"(}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_cudnn_attention", "pid": 1, "tid": 2, "ts": )" +
         at(7) + R"(, "dur": 4, "args": {"Input Dims": )" + dims + R"(, "Input type": [")" + dtype + R"(", ")" + dtype +
         R"("]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemsetAsync", "pid": 1, "tid": 2, "ts": )" +
         at(8) + R"(, "dur": 1, "args": {"correlation": )" + corr(2) + R"(}},
    {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernelEx", "pid": 1, "tid": 2, "ts": )" +
         at(9) + R"(, "dur": 1, "args": {"correlation": )" + corr(3) + R"(}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamEndCapture", "pid": 1, "tid": 2, "ts": )" +
         at(12) + R"(, "dur": 1, "args": {"correlation": )" + corr(4) + "}},";
}

// A replay at t0 of such a graph: its cudaGraphLaunch and the three nodes' GPU work (the attention
// kernel launched with `grid` blocks, on `attention_stream`).
std::string graph_replay_events(int t0, int corr, int grid, int attention_stream = 7) {
  const auto at = [&](int dt) { return std::to_string(t0 + dt); };
  const std::string c = std::to_string(corr);
  return R"(
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 2, "ts": )" +
         at(0) + R"(, "dur": 2, "args": {"correlation": )" + c + R"(}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_gemm", "pid": 0, "tid": 7, "ts": )" +
         at(10) + R"(, "dur": 2, "args": {"correlation": )" + c +
         R"(, "stream": 7, "grid": [8, 1, 1], "block": [128, 1, 1]}},
    {"ph": "X", "cat": "gpu_memset", "name": "Memset", "pid": 0, "tid": 7, "ts": )" +
         at(13) + R"(, "dur": 1, "args": {"correlation": )" + c + R"(, "stream": 7, "bytes": 64}},
    {"ph": "X", "cat": "kernel", "name": "cudnn_generated_fort_native_sdpa_sm90_flash_fprop", "pid": 0, "tid": 7, "ts": )" +
         at(15) + R"(, "dur": 3, "args": {"correlation": )" + c + R"(, "stream": )" + std::to_string(attention_stream) +
         R"(, "grid": [)" + std::to_string(grid) + R"(, 1, 1], "block": [128, 1, 1]}},)";
}

std::string trace_json(std::initializer_list<std::string> parts) {
  std::string json(1, '[');
  for (const std::string& part : parts) json += part;
  json.back() = ']';  // for the last comma
  return json;
}

TEST(TraceIndexLinks, GraphReplaysTakeTheOpsOfTheirCapture) {
  const std::string json = trace_json({graph_replay_events(50, 90, 16), graph_capture_events(100, 10, 2048),
                                       graph_replay_events(200, 91, 16), graph_replay_events(300, 92, 32),
                                       graph_replay_events(350, 93, 16), graph_capture_events(400, 20, 4096),
                                       graph_replay_events(500, 94, 16), graph_replay_events(600, 95, 16)});
  const Trace t = read_trace_bytes(json, "graphs.json");
  const TraceIndex index(t);
  ASSERT_EQ(index.activities().size(), 18u);  // six replays of three nodes, by GPU start
  EXPECT_EQ(index.graph_replays().captures, 2);
  EXPECT_EQ(index.graph_replays().replays, 6);
  EXPECT_EQ(index.graph_replays().matched, 3);
  const auto op = [&](std::size_t i) {
    const std::int32_t r = index.capture_range(i);
    return r == kNone ? std::string("none") : std::string(index.name(index.ranges()[static_cast<std::size_t>(r)]));
  };
  const auto replay_ops = [&](std::size_t replay) {
    return op(3 * replay) + ", " + op(3 * replay + 1) + ", " + op(3 * replay + 2);
  };
  const std::string captured =
      "aten::addmm, aten::_scaled_dot_product_cudnn_attention, "
      "aten::_scaled_dot_product_cudnn_attention";  // node by node
  EXPECT_EQ(replay_ops(0), "none, none, none");     // before the capture
  EXPECT_EQ(replay_ops(1), captured);               // the capture's own replay
  EXPECT_EQ(replay_ops(2), "none, none, none");     // another graph's launch configuration
  EXPECT_EQ(replay_ops(3), captured);               // alike with the own replay
  EXPECT_EQ(replay_ops(4), captured);               // the second capture's own replay
  EXPECT_EQ(replay_ops(5), "none, none, none");     // alike with both captures' own replays, other inputs
  // The replayed attention calls: their capture-time op's shape, said so.
  const AttentionView view = find_attention(index);
  std::vector<std::int64_t> kv;
  for (const AttentionCall& c : view.calls) {
    EXPECT_TRUE(c.graph_replay);
    if (!c.shape.at_capture) continue;
    kv.push_back(c.shape.kv_len);
    EXPECT_NE(c.shape.source().find("capture"), std::string::npos);
  }
  EXPECT_EQ(kv, (std::vector<std::int64_t>{2048, 2048, 4096}));
}

// The same rules where the inputs differ in dtype only (two captures of one node sequence and one set of
// dims, bf16 and fp16: a later replay like both is told from neither), and where a graph runs its
// nodes on two streams (their GPU order need not be the capture's: never matched).
TEST(TraceIndexLinks, GraphReplaysOfOtherDtypesOrStreamsTakeNone) {
  const Trace t =
      read_trace_bytes(trace_json({graph_capture_events(100, 10, 2048, "c10::BFloat16"),
                                   graph_replay_events(120, 91, 16), graph_capture_events(200, 20, 2048, "c10::Half"),
                                   graph_replay_events(220, 92, 16), graph_replay_events(300, 93, 16),
                                   graph_capture_events(400, 30, 1024), graph_replay_events(420, 94, 16, 8)}),
                       "graphs2.json");
  const TraceIndex index(t);
  ASSERT_EQ(index.activities().size(), 12u);
  EXPECT_EQ(index.graph_replays().captures, 3);
  EXPECT_EQ(index.graph_replays().replays, 4);
  EXPECT_EQ(index.graph_replays().matched, 2);  // each capture's own replay
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NE(index.capture_range(i), kNone);
  for (std::size_t i = 6; i < 12; ++i) EXPECT_EQ(index.capture_range(i), kNone);
}

TEST(Regions, ChosenByNameStemOrGlob) {
  const Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  const TraceIndex index(t);
  auto one = find_regions(index, {"fwd1"}, "x");
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(one[0].instances.size(), 1u);
  EXPECT_EQ(one[0].instances[0].name, "fwd1");
  EXPECT_EQ(find_regions(index, {"fwd"}, "x")[0].instances.size(), 3u);
  EXPECT_EQ(find_regions(index, {"fwd[02]"}, "x")[0].instances.size(), 2u);
  // An ATen op can be a region too (record_function is not required).
  const auto ops = find_regions(index, {"aten::_safe_softmax"}, "x");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].instances.size(), 3u);
  EXPECT_EQ(kernels_in(index, ops[0].instances[0]), 5);  // softmax, isneginf, all, fill, where
}

TEST(Regions, UnknownNameIsAnInputErrorListingWhatExists) {
  const Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  const TraceIndex index(t);
  try {
    find_regions(index, {"attn_fwd"}, "sdpa_math.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "sdpa_math.json: no range named 'attn_fwd' in the trace (ranges: fwd)");
  }
}

TEST(Regions, ProfilerStepsWinInTrainingTraces) {
  const Trace t = read_trace_file(test::data_file("trace_diff__control__control.json.gz"));
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "x");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "ProfilerStep");
  EXPECT_EQ(groups[0].instances.size(), 6u);
  for (const auto& inst : groups[0].instances) EXPECT_GT(kernels_in(index, inst), 1000);
}

TEST(Regions, GpuOnlySpansWhenNoCpuRangeMatches) {
  // Keep only the GPU side of the annotations: --region must fall back to gpu_user_annotation spans.
  Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  std::erase_if(t.events, [](const Event& e) { return e.kind == EventKind::UserAnnotation; });
  const TraceIndex index(t);
  const auto groups = find_regions(index, {"fwd"}, "x");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].source, "GPU annotation spans");
  ASSERT_EQ(groups[0].instances.size(), 3u);
  for (const auto& inst : groups[0].instances) EXPECT_EQ(kernels_in(index, inst), 20);
}

TEST(Regions, GpuSpansChosenAutomaticallyWithoutCpuEvents) {
  // A trace with only GPU-side events and gpu_user_annotation spans.
  Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  std::erase_if(t.events, [](const Event& e) {
    return e.kind == EventKind::UserAnnotation || e.kind == EventKind::CpuOp || is_launch_api(e.kind);
  });
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "x");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "fwd");
  EXPECT_EQ(groups[0].source, "GPU annotation spans");
  ASSERT_EQ(groups[0].instances.size(), 3u);
  for (const auto& inst : groups[0].instances) EXPECT_EQ(kernels_in(index, inst), 20);
}

TEST(Regions, WholeTraceWithoutAnnotations) {
  const Trace t = read_trace_file(test::data_file("triton_example__triton_example.json.gz"));
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "x");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "whole trace");
  EXPECT_EQ(kernels_in(index, groups[0].instances[0]), 1);
}

TEST(Regions, StatisticsPerInstance) {
  const Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  const TraceIndex index(t);
  const Analysis a = analyze(index, {}, "sdpa_math.json");
  ASSERT_EQ(a.groups.size(), 1u);
  const GroupStats& g = a.groups[0];
  EXPECT_EQ(g.kernels_per_instance, 20.0);
  EXPECT_EQ(g.tensor_core_share, 0.0);
  for (const InstanceStats& s : g.instances) {
    EXPECT_EQ(s.kernels, 20);
    EXPECT_GT(s.busy_ns, 5'000'000);  // ~5.2 ms of GPU work per forward
    EXPECT_LT(s.busy_ns, 5'400'000);
    EXPECT_EQ(s.span_ns, s.busy_ns + s.idle_ns);
  }
  EXPECT_EQ(a.unassigned_activities, 0);
}

}  // namespace
}  // namespace attnprof

namespace attnprof {
namespace {

// A Llama training step under `attnprof record` showed CUB's own NVTX ranges
// (cub::DeviceRadixSort, from embedding backward's sort) as the regions. A
// library's ranges are never regions: here only CUB ranged anything, so the
// unit is the whole program.
TEST(Regions, LibraryRangesAreNotRegions) {
  const std::string json = R"([
    {"ph": "X", "cat": "user_annotation", "name": "cub::DeviceRadixSort::SortPairs", "pid": 1, "tid": 2, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 12, "dur": 1,
     "args": {"correlation": 7}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 40, "dur": 1,
     "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "cub_sort", "pid": 0, "tid": 7, "ts": 50, "dur": 3, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 60, "dur": 3, "args": {"correlation": 8}}])";
  const Trace t = read_trace_bytes(json, "cub.json");
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "cub.json");
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "whole trace");
  EXPECT_EQ(groups[0].instances[0].activities.size(), 2u);
}

// With a torch.profiler schedule, kernels launched in the warm-up step run in
// the first recorded one; their launch is not in the trace. They were placed
// by their GPU time on the CPU clock and counted in that step (23.3 kernels a
// step where each launched 20). Now they are left out, unless a GPU-side span
// of the step holds them.
TEST(Regions, KernelsLaunchedBeforeTheWindowAreLeftOut) {
  const std::string json = R"([
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 2, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 110, "dur": 1,
     "args": {"correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "from_warmup", "pid": 0, "tid": 7, "ts": 120, "dur": 3,
     "args": {"correlation": 5, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "own", "pid": 0, "tid": 7, "ts": 130, "dur": 3,
     "args": {"correlation": 8, "stream": 7}}])";
  const Trace t = read_trace_bytes(json, "window.json");
  const TraceIndex index(t);
  const Analysis a = analyze(index, {}, "window.json");
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].group.name, "ProfilerStep");
  EXPECT_EQ(a.groups[0].instances[0].kernels, 1);
  EXPECT_EQ(a.launchless_activities, 1);
}

// Repeated range names: a launchless kernel goes to the instance whose GPU-side
// span holds it, not to the last instance of that name.
TEST(Regions, LaunchlessKernelsFollowTheirGpuSpan) {
  const std::string json = R"([
    {"ph": "X", "cat": "user_annotation", "name": "fwd", "pid": 1, "tid": 2, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 110, "dur": 1,
     "args": {"correlation": 8}},
    {"ph": "X", "cat": "user_annotation", "name": "fwd", "pid": 1, "tid": 2, "ts": 300, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 310, "dur": 1,
     "args": {"correlation": 9}},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "fwd", "pid": 0, "tid": 7, "ts": 150, "dur": 100},
    {"ph": "X", "cat": "gpu_user_annotation", "name": "fwd", "pid": 0, "tid": 7, "ts": 350, "dur": 100},
    {"ph": "X", "cat": "kernel", "name": "own1", "pid": 0, "tid": 7, "ts": 150, "dur": 3,
     "args": {"correlation": 8, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "no_launch", "pid": 0, "tid": 7, "ts": 160, "dur": 3,
     "args": {"correlation": 5, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "own2", "pid": 0, "tid": 7, "ts": 350, "dur": 3,
     "args": {"correlation": 9, "stream": 7}}])";
  const Trace t = read_trace_bytes(json, "spans.json");
  const TraceIndex index(t);
  const auto groups = find_regions(index, {}, "spans.json");
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].instances.size(), 2u);
  EXPECT_EQ(groups[0].instances[0].activities.size(), 2u);  // own1 and no_launch
  EXPECT_EQ(groups[0].instances[1].activities.size(), 1u);  // own2
}

// Host-to-device copies of a whole-program trace are its set-up (weights), not its work.
TEST(Regions, WeightUploadIsReportedApart) {
  const Trace t = read_trace_file(test::data_file("corpus/llama_eager_bf16_train_record.json.gz"));
  const TraceIndex index(t);
  const Analysis a = analyze(index, {}, "record");
  ASSERT_EQ(a.groups.size(), 1u);
  for (std::size_t i : a.groups[0].group.instances[0].activities)
    EXPECT_FALSE(is_host_to_device(index, index.activities()[i]));
  EXPECT_GT(a.setup_copies.count, 0);
  ASSERT_FALSE(a.kernels.empty());
  EXPECT_EQ(a.kernels.front().name.find("Memcpy HtoD"), std::string::npos) << "the top kernel is not the upload";
}

}  // namespace
}  // namespace attnprof
