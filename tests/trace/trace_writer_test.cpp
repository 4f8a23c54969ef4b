// Writer round trips: what the writer emits, the reader reads back unchanged.
#include "trace/trace_writer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "test_paths.h"
#include "trace/trace_reader.h"

namespace attnprof {
namespace {

void expect_same(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.devices, b.devices);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.trace_name, b.trace_name);
  std::vector<const Event*> ea, eb;
  for (const auto& e : a.events)
    if (e.kind != EventKind::Metadata) ea.push_back(&e);
  for (const auto& e : b.events) eb.push_back(&e);
  ASSERT_EQ(ea.size(), eb.size());
  for (std::size_t i = 0; i < ea.size(); ++i) {
    const Event& x = *ea[i];
    const Event& y = *eb[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.phase, y.phase);
    EXPECT_EQ(a.name(x), b.name(y));
    EXPECT_EQ(x.ts_ns, y.ts_ns);
    EXPECT_EQ(x.dur_ns, y.dur_ns);
    EXPECT_EQ(x.correlation, y.correlation);
    EXPECT_EQ(x.external_id, y.external_id);
    EXPECT_EQ(x.pid.is_string, y.pid.is_string);
    if (!x.pid.is_string) {
      EXPECT_EQ(x.pid.value(), y.pid.value());
    }
    EXPECT_EQ(x.has_gpu_args(), y.has_gpu_args());
    if (x.has_gpu_args()) {
      const GpuArgs& ga = *a.args(x);
      const GpuArgs& gb = *b.args(y);
      EXPECT_EQ(ga.grid, gb.grid);
      EXPECT_EQ(ga.block, gb.block);
      EXPECT_EQ(ga.registers_per_thread, gb.registers_per_thread);
      EXPECT_EQ(ga.shared_memory, gb.shared_memory);
      EXPECT_EQ(ga.bytes, gb.bytes);
      EXPECT_EQ(ga.stream, gb.stream);
    }
  }
}

TEST(TraceWriter, RoundTripsRealTraces) {
  for (const char* name : {"sdpa_math.json", "manual.json", "sdpa_cudnn.json"}) {
    SCOPED_TRACE(name);
    const Trace original = read_trace_file(test::example_trace(name));
    std::ostringstream out;
    write_trace_json(original, out);
    const Trace back = read_trace_bytes(out.str(), "written.json");
    expect_same(original, back);
  }
}

TEST(TraceWriter, AtomicGzipFileRoundTrip) {
  const Trace original = read_trace_file(test::example_trace("sdpa_flash.json"));
  const auto dir = std::filesystem::temp_directory_path() / "attnprof_writer_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.json.gz").string();
  write_trace_file(original, path);
  const Trace back = read_trace_file(path);
  expect_same(original, back);
  // Only the final file is left: no temporary beside it.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  std::filesystem::remove_all(dir);
}

TEST(TraceWriter, EscapesAwkwardNames) {
  Trace t;
  Event e;
  e.kind = EventKind::CpuOp;
  e.name = t.strings.intern("quote\" back\\slash \n newline \x01 ctl \xff bad utf8");
  e.ts_ns = 1234567;
  e.dur_ns = 1;
  t.add(e);
  std::ostringstream out;
  write_trace_json(t, out);
  const Trace back = read_trace_bytes(out.str(), "escaped.json");
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.name(back.events[0]), "quote\" back\\slash \n newline \x01 ctl \xEF\xBF\xBD bad utf8");
  EXPECT_EQ(back.events[0].ts_ns, 1234567);
}

TEST(TraceWriter, UnwritablePathIsAnInputError) {
  Trace t;
  EXPECT_THROW(write_trace_file(t, "/nonexistent-dir/x.json"), InputError);
}

}  // namespace
}  // namespace attnprof
