// Appending a checkpointed trace part to the accumulated one.
#include "capture/trace_append.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace attnprof::capture {
namespace {

TEST(TraceAppend, ReinternsNamesAndKeepsGpuArgs) {
  Trace into;
  Event a;
  a.kind = EventKind::UserAnnotation;
  a.name = into.strings.intern("fwd0");
  into.add(a);
  Trace part;
  part.strings.intern("padding so ids differ");
  Event k;
  k.kind = EventKind::Kernel;
  k.name = part.strings.intern("gemm");
  GpuArgs args;
  args.grid = {4, 2, 1};
  part.add(k, &args);
  part.devices.push_back(DeviceProperties{.id = 0, .name = "GPU"});
  part.dropped_records = 2;
  into.dropped_records = 1;
  append_trace(into, part);
  append_trace(into, part);
  ASSERT_EQ(into.events.size(), 3u);
  EXPECT_EQ(into.name(into.events[1]), "gemm");
  EXPECT_EQ(into.args(into.events[2])->grid, (std::array<std::int32_t, 3>{4, 2, 1}));
  EXPECT_EQ(into.devices.size(), 1u);
  EXPECT_EQ(into.dropped_records, 5);
}

// A capture window closed at t=100: what began later goes, but the GPU work launched before it.
TEST(TraceAppend, DropAfterTheWindowKeepsWorkLaunchedInIt) {
  Trace t;
  const auto add = [&](EventKind kind, const char* name, std::int64_t ts, std::int64_t corr) {
    Event e;
    e.kind = kind;
    e.name = t.strings.intern(name);
    e.ts_ns = ts;
    e.dur_ns = 5;
    e.correlation = corr;
    t.add(e);
  };
  add(EventKind::UserAnnotation, "step", 10, -1);
  add(EventKind::CudaRuntime, "cudaLaunchKernel", 20, 1);
  add(EventKind::Kernel, "in_window", 30, 1);
  add(EventKind::CudaRuntime, "cudaLaunchKernel", 90, 2);
  add(EventKind::Kernel, "launched_in_ran_after", 150, 2);  // stays: its launch is the window's
  add(EventKind::CudaRuntime, "cudaLaunchKernel", 120, 3);
  add(EventKind::Kernel, "launched_after", 125, 3);  // goes with its launch
  // Launched, but the launch was written out with an earlier part of the stream: by correlation id.
  add(EventKind::Kernel, "launch_written_before", 160, 0);  // before the first late launch (3): stays
  add(EventKind::Kernel, "launch_lost_after", 130, 7);      // past it: goes, whatever its time
  add(EventKind::UserAnnotation, "step", 110, -1);
  Event meta;
  meta.kind = EventKind::Metadata;
  meta.phase = 'M';
  meta.ts_ns = 500;
  t.add(meta);
  drop_after(t, 100, true);
  std::vector<std::string> kept;
  for (const Event& e : t.events) kept.emplace_back(e.kind == EventKind::Metadata ? "meta" : t.name(e));
  EXPECT_EQ(kept, (std::vector<std::string>{"step", "cudaLaunchKernel", "in_window", "cudaLaunchKernel",
                                            "launched_in_ran_after", "launch_written_before", "meta"}));
}

// Recorded without launches (--kinds kernel): GPU work goes by its own time.
TEST(TraceAppend, DropAfterWithoutLaunchesGoesByTime) {
  Trace t;
  for (const auto& [name, ts, corr] : {std::tuple{"before", 95, 8}, std::tuple{"after", 130, 9}}) {
    Event e;
    e.kind = EventKind::Kernel;
    e.name = t.strings.intern(name);
    e.ts_ns = ts;
    e.correlation = corr;
    t.add(e);
  }
  drop_after(t, 100, false);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(t.events[0]), "before");
}

// The last piece of a window may hold no launch at all (all written out before the end): its GPU
// work was all launched inside the window and stays, even what ran after the end.
TEST(TraceAppend, DropAfterKeepsLateRunningWorkOfEarlierLaunches) {
  Trace t;
  Event k;
  k.kind = EventKind::Kernel;
  k.name = t.strings.intern("launched_in_ran_after");
  k.ts_ns = 150;
  k.correlation = 4;
  t.add(k);
  drop_after(t, 100, true);
  EXPECT_EQ(t.events.size(), 1u);
}

}  // namespace
}  // namespace attnprof::capture
