// Appending a checkpointed trace part to the accumulated one.
#include "capture/trace_append.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace attnprof::capture
