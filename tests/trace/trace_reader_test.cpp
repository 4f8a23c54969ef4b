// The reader on real traces: the H200 experiment and HTA's traces from other
// GPUs and PyTorch versions, plain and gzip, old and new layouts.
#include "trace/trace_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace attnprof {
namespace {

std::size_t count_kind(const Trace& t, EventKind k) {
  return static_cast<std::size_t>(
      std::count_if(t.events.begin(), t.events.end(), [&](const Event& e) { return e.kind == k; }));
}

TEST(TraceReader, ReadsSdpaMathTraceFromH200) {
  const Trace t = read_trace_file(test::example_trace("sdpa_math.json"));
  EXPECT_EQ(count_kind(t, EventKind::Kernel), 60u);  // 20 kernels x 3 forwards
  EXPECT_EQ(count_kind(t, EventKind::UserAnnotation), 3u);
  EXPECT_EQ(count_kind(t, EventKind::GpuUserAnnotation), 3u);
  EXPECT_EQ(count_kind(t, EventKind::CpuOp), 225u);
  ASSERT_TRUE(t.base_time_ns.has_value());
  EXPECT_EQ(*t.base_time_ns, 1790857026000000000);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H200");
  EXPECT_EQ(t.devices[0].compute_major, 9);
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_EQ(t.cupti_version, 130001);
  EXPECT_EQ(t.trace_name, "/root/out/trace_sdpa_math.json");
}

TEST(TraceReader, KeepsKernelArgumentsAndExactTimes) {
  const Trace t = read_trace_file(test::example_trace("manual.json"));
  const auto it = std::find_if(t.events.begin(), t.events.end(), [&](const Event& e) {
    return e.kind == EventKind::Kernel && t.name(e).starts_with("nvjet_sm90_tst_256x128");
  });
  ASSERT_NE(it, t.events.end());
  // {"ts": 5128492348919.635, "dur": 162.4, "correlation": 15, "registers per thread": 168,
  //  "shared memory": 213188, "grid": [2, 66, 1], "block": [384, 1, 1], "stream": 7}
  EXPECT_EQ(it->ts_ns, 5128492348919635);
  EXPECT_EQ(it->dur_ns, 162400);
  EXPECT_EQ(it->correlation, 15);
  EXPECT_EQ(it->external_id, 13);
  const GpuArgs* g = t.args(*it);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->registers_per_thread, 168);
  EXPECT_EQ(g->shared_memory, 213188);
  EXPECT_EQ(g->grid, (std::array<std::int32_t, 3>{2, 66, 1}));
  EXPECT_EQ(g->block, (std::array<std::int32_t, 3>{384, 1, 1}));
  EXPECT_EQ(g->stream, 7);
  EXPECT_EQ(g->device, 0);
  EXPECT_FLOAT_EQ(g->blocks_per_sm, 1.0f);
  // cuBLAS on Hopper launches through the driver: cuLaunchKernelEx with the same correlation.
  const auto launch = std::find_if(t.events.begin(), t.events.end(), [&](const Event& e) {
    return e.kind == EventKind::CudaDriver && e.correlation == 15;
  });
  ASSERT_NE(launch, t.events.end());
  EXPECT_EQ(t.name(*launch), "cuLaunchKernelEx");
}

TEST(TraceReader, ReadsMemcpyBytesAndFlows) {
  const Trace t = read_trace_file(test::example_trace("manual.json"));
  const auto memcpy =
      std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == EventKind::GpuMemcpy; });
  ASSERT_NE(memcpy, t.events.end());
  EXPECT_EQ(t.args(*memcpy)->bytes, 536870912);
  EXPECT_GT(count_kind(t, EventKind::Flow), 0u);
  for (const Event& e : t.events)
    if (e.kind == EventKind::Flow) {
      EXPECT_GE(e.correlation, 0) << "flow without id";
    }
}

TEST(TraceReader, StringProcessIdsAreInterned) {
  const Trace t = read_trace_file(test::example_trace("manual.json"));
  const auto spans = std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.pid.is_string; });
  ASSERT_NE(spans, t.events.end());
  EXPECT_EQ(t.strings.view(static_cast<StringId>(spans->pid.value())), "Spans");
}

// Every real trace we have is read, and its kernel count matches an independent count.
TEST(TraceReader, ReadsEverySharedTrace) {
  const auto files = test::real_trace_files();
  ASSERT_GE(files.size(), 15u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    Trace t;
    ASSERT_NO_THROW(t = read_trace_file(f));
    EXPECT_GT(t.events.size(), 0u);
    EXPECT_GT(t.source_bytes, 0u);
  }
}

TEST(TraceReader, OldLayoutAbsoluteTimestampsAndAsyncFlows) {
  // HTA's trace_diff fixture: absolute microsecond timestamps, no baseTimeNanoseconds,
  // "async_cpu_to_gpu" flows, CUTLASS 2.x tensor-op kernels on an A100.
  const Trace t = read_trace_file(test::data_file("trace_diff__control__control.json.gz"));
  EXPECT_FALSE(t.base_time_ns.has_value());
  EXPECT_EQ(count_kind(t, EventKind::Kernel), 8568u);
  EXPECT_EQ(count_kind(t, EventKind::Flow), 24692u + 9450u);
  const auto k =
      std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == EventKind::Kernel; });
  EXPECT_EQ(k->ts_ns, 1661203463029566000);  // absolute epoch microseconds, read exactly
}

TEST(TraceReader, SmallChunksGiveTheSameTrace) {
  const std::string path = test::example_trace("sdpa_math.json");
  const Trace whole = read_trace_file(path);
  ReadOptions tiny;
  tiny.chunk_bytes = 97;  // forces events to straddle every buffer boundary
  const Trace chunked = read_trace_file(path, tiny);
  ASSERT_EQ(whole.events.size(), chunked.events.size());
  for (std::size_t i = 0; i < whole.events.size(); ++i) {
    EXPECT_EQ(whole.events[i].ts_ns, chunked.events[i].ts_ns);
    EXPECT_EQ(whole.name(whole.events[i]), chunked.name(chunked.events[i]));
  }
}

TEST(TraceReader, LegacyCategoriesAndBeginEndPairs) {
  const std::string json = R"([
    {"ph": "B", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10},
    {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 11, "dur": 2,
     "args": {"correlation": 5}},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 20},
    {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 14,
     "dur": 3.5, "args": {"correlation": 5, "stream": 7}}])";
  const Trace t = read_trace_bytes(json, "legacy.json");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].kind, EventKind::CpuOp);
  EXPECT_EQ(t.events[0].phase, 'X');
  EXPECT_EQ(t.events[0].dur_ns, 10000);
  EXPECT_EQ(t.events[1].kind, EventKind::CudaRuntime);
  EXPECT_EQ(t.events[2].kind, EventKind::Kernel);
  EXPECT_EQ(t.events[2].dur_ns, 3500);
  EXPECT_EQ(t.args(t.events[2])->stream, 7);
}

// "B"/"E" pair per (pid, tid) exactly: lanes that a packed key would confuse stay apart.
TEST(TraceReader, BeginEndPairsStayOnTheirOwnThread) {
  const std::string json = R"([
    {"ph": "B", "name": "outer", "pid": 0, "tid": 1000003, "ts": 10},
    {"ph": "B", "name": "other", "pid": 1, "tid": 0, "ts": 12},
    {"ph": "E", "pid": 0, "tid": 1000003, "ts": 15},
    {"ph": "E", "pid": 1, "tid": 0, "ts": 30}])";
  const Trace t = read_trace_bytes(json, "lanes.json");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.name(t.events[0]), "outer");
  EXPECT_EQ(t.events[0].dur_ns, 5000);
  EXPECT_EQ(t.name(t.events[1]), "other");
  EXPECT_EQ(t.events[1].dur_ns, 18000);
}

// One value far longer than a read chunk (a 2 MB name read 512 bytes at a time)
// is read whole, and in linear time: the reader reads as much again as it keeps.
TEST(TraceReader, ValueMuchLongerThanAChunk) {
  const std::string name(2u << 20, 'n');
  const std::string json = R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": ")" + name +
                           R"(", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]})";
  ReadOptions tiny;
  tiny.chunk_bytes = 512;
  const Trace t = read_trace_bytes(json, "long.json", tiny);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(t.events[0]).size(), name.size());
}

// Names are interned by their raw JSON text: one text written with and
// without escapes is one string; texts that only look alike stay apart.
TEST(TraceReader, EscapedNamesInternToTheirDecodedText) {
  const std::string json = R"([
    {"ph": "X", "name": "a\"b", "pid": 1, "tid": "t\u0031", "ts": 1, "dur": 1},
    {"ph": "X", "name": "a\u0022b", "pid": 1, "tid": "t1", "ts": 2, "dur": 1},
    {"ph": "X", "name": "a\\\\b" , "pid": 1, "tid": 1, "ts": 3, "dur": 1},
    {"ph": "X", "name": "a\\b", "pid": 1, "tid": 1, "ts": 4, "dur": 1},
    {"ph": "X", "name": "a\\b", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
    {"ph": "X", "name": "", "pid": 1, "tid": 1, "ts": 6, "dur": 1}])";
  const Trace t = read_trace_bytes(json, "escapes.json");
  ASSERT_EQ(t.events.size(), 6u);
  EXPECT_EQ(t.name(t.events[0]), "a\"b");
  EXPECT_EQ(t.events[1].name, t.events[0].name);
  EXPECT_EQ(t.events[1].tid, t.events[0].tid);
  EXPECT_EQ(t.strings.view(static_cast<StringId>(t.events[0].tid.value())), "t1");
  EXPECT_EQ(t.name(t.events[2]), "a\\\\b");
  EXPECT_EQ(t.name(t.events[3]), "a\\b");
  EXPECT_NE(t.events[3].name, t.events[2].name);
  EXPECT_EQ(t.events[4].name, t.events[3].name);
  EXPECT_EQ(t.events[5].name, kNoString);
}

void expect_same_trace(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const Event& x = a.events[i];
    const Event& y = b.events[i];
    SCOPED_TRACE(i);
    ASSERT_EQ(x.ts_ns, y.ts_ns);
    ASSERT_EQ(x.dur_ns, y.dur_ns);
    ASSERT_EQ(x.correlation, y.correlation);
    ASSERT_EQ(x.external_id, y.external_id);
    ASSERT_EQ(x.kind, y.kind);
    ASSERT_EQ(x.phase, y.phase);
    ASSERT_EQ(a.name(x), b.name(y));
    ASSERT_EQ(x.pid.is_string, y.pid.is_string);
    ASSERT_EQ(x.tid.is_string, y.tid.is_string);
    if (!x.pid.is_string) {
      ASSERT_EQ(x.pid.value(), y.pid.value());
    }
    if (!x.tid.is_string) {
      ASSERT_EQ(x.tid.value(), y.tid.value());
    }
    ASSERT_EQ(x.has_gpu_args(), y.has_gpu_args());
    if (x.has_gpu_args()) {
      ASSERT_EQ(*a.args(x), *b.args(y));
    }
  }
  EXPECT_EQ(a.devices, b.devices);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_EQ(a.source_bytes, b.source_bytes);
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A plain file is mapped and read a line of events at a time, or read() in
// chunks; bytes in memory are copied in chunks. All, with chunks cut
// anywhere, give the same trace.
TEST(TraceReader, MappedFileAndCopiedChunksGiveTheSameTrace) {
  const auto files = test::real_trace_files(/*plain_only=*/true);
  ASSERT_GE(files.size(), 6u);
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    ReadStats map_stats, read_stats;
    ReadOptions map, read;
    map.map_file = true;
    map.stats = &map_stats;
    read.map_file = false;
    read.stats = &read_stats;
    const Trace mapped = read_trace_file(path, map);
    expect_same_trace(mapped, read_trace_file(path, read));
    EXPECT_TRUE(map_stats.mapped_file);  // the comparison is worth something only if both ways ran
    EXPECT_FALSE(read_stats.mapped_file);
    const std::string text = file_text(path);
    for (std::size_t chunk : {std::size_t{97}, std::size_t{4093}, std::size_t{512} << 10}) {
      ReadOptions options;
      options.chunk_bytes = chunk;
      expect_same_trace(mapped, read_trace_bytes(text, "copy", options));
    }
  }
}

// Both layouts in use take the fast path for all but the last window:
// Kineto's (an event over several lines, as in the real H200 traces) and one
// event per line (attnprof's writer).
TEST(TraceReader, RealLayoutsAreReadALineBatchAtATime) {
  for (const std::string& path :
       {test::example_trace("sdpa_math.json"), test::data_file("sdpa_math_attnprof_record.json")}) {
    SCOPED_TRACE(path);
    const std::string text = file_text(path);
    const bool kineto_layout = text.find("\n    \"ph\"") != std::string::npos;  // an event over several lines
    EXPECT_EQ(kineto_layout, !path.ends_with("record.json"));
    ReadStats stats;
    ReadOptions options;
    options.chunk_bytes = 4096;
    options.stats = &stats;
    const Trace t = read_trace_bytes(text, "layout", options);
    EXPECT_GT(stats.line_batches, text.size() / 4096 / 2);
    EXPECT_EQ(stats.line_misses, 0u);
    EXPECT_LE(stats.scanned_batches, 1u);  // the window holding the array's end
    expect_same_trace(t, read_trace_bytes(text, "whole"));
  }
}

// Traces as users have them, re-saved by Python's json.dump: on one line (its
// default) and indented (indent=2). Both take the fast path (one line: cut at
// the last "}, {"), and read the same trace as Kineto's own layout.
TEST(TraceReader, JsonDumpLayoutsAreReadABatchAtATime) {
  const Trace kineto = read_trace_file(test::data_file("corpus/llama_sdpa-math_bf16_infer.json.gz"));
  for (const char* layout : {"oneline", "indent"}) {
    SCOPED_TRACE(layout);
    const std::string path = test::data_file(std::string("layouts/llama_sdpa-math_bf16_infer.") + layout + ".json.gz");
    ReadStats stats;
    ReadOptions options;
    options.chunk_bytes = 4096;
    options.stats = &stats;
    Trace t = read_trace_file(path, options);
    EXPECT_GT(stats.line_batches, t.source_bytes / 4096 / 2);
    EXPECT_EQ(stats.line_misses, 0u);
    EXPECT_LE(stats.scanned_batches, 2u);  // the windows holding the array's start and end
    const bool one_line = std::string_view(layout) == "oneline";
    EXPECT_EQ(t.source_bytes < kineto.source_bytes, one_line) << "json.dump drops Kineto's indentation";
    t.source_bytes = kineto.source_bytes;
    expect_same_trace(kineto, t);
  }
}

// Events spread over several lines (pretty-printed JSON) are read by the
// scanner path, with the same result.
TEST(TraceReader, EventsSpanningLinesGiveTheSameTrace) {
  const std::string text = file_text(test::example_trace("sdpa_math.json"));
  std::string spread;
  for (std::size_t i = 0; i < text.size(); ++i) {
    spread.push_back(text[i]);
    if (text[i] == ',' && i + 2 < text.size() && text[i + 1] == ' ' && text[i + 2] == '"') spread += "\n   ";
  }
  ASSERT_GT(spread.size(), text.size() + 10000);
  for (std::size_t chunk : {std::size_t{97}, std::size_t{4093}, std::size_t{512} << 10}) {
    ReadOptions options;
    options.chunk_bytes = chunk;
    const Trace a = read_trace_bytes(text, "lines", options);
    Trace b = read_trace_bytes(spread, "spread", options);
    b.source_bytes = a.source_bytes;
    expect_same_trace(a, b);
  }
}

// Reads `json` in windows of `chunk` bytes and expects `events` events.
void expect_events(const std::string& json, std::size_t chunk, std::size_t events) {
  SCOPED_TRACE(chunk);
  ReadOptions options;
  options.chunk_bytes = chunk;
  Trace t;
  ASSERT_NO_THROW(t = read_trace_bytes(json, "events.json", options));
  EXPECT_EQ(t.events.size(), events);
}

// Text up to an event boundary ("},<newline>{") that is not a run of whole
// events must not be taken for one: here the window's last such boundary is
// inside a later top-level value, after traceEvents has closed, so the array
// parsed there ends early and the text after it must be noticed.
TEST(TraceReader, LineAfterTheEventsIsNotTakenForEvents) {
  const std::string event = R"({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1})";
  const std::string json =
      "{\"traceEvents\": [" + event + ",\n" + event + "], \"x\": [1,\n2], \"y\": [{\"z\": 3},\n{\"z\": 4}]}";
  for (std::size_t chunk : {std::size_t{16}, std::size_t{64}, std::size_t{4096}}) expect_events(json, chunk, 2);
}

// Invalid JSON inside a line of events gives the scanner path's error, at the
// same event, however the input is cut.
TEST(TraceReader, ErrorInsideALineOfEventsNamesTheEvent) {
  const std::string good = R"({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1})";
  const std::string bad = R"({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1,})";
  std::string json = "{\"traceEvents\": [\n";
  for (int i = 0; i < 40; ++i) json += (i == 25 ? bad : good) + ",\n";
  json += good + "\n]}";
  std::string first;
  for (std::size_t chunk : {std::size_t{50}, std::size_t{700}, std::size_t{4096}}) {
    SCOPED_TRACE(chunk);
    ReadOptions options;
    options.chunk_bytes = chunk;
    try {
      read_trace_bytes(json, "bad.json", options);
      FAIL() << "no error";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("traceEvents[25]"), std::string::npos) << what;
      if (first.empty()) first = what;
      EXPECT_EQ(what, first);
    }
  }
}

// doctor reads with ReadDetail::Analysis: no flows, of args only what the
// analysis reads (the reports are compared in report_test).
TEST(TraceReader, AnalysisDetailKeepsWhatTheAnalysisReads) {
  const Trace full = read_trace_file(test::example_trace("sdpa_math.json"));
  const Trace lean =
      read_trace_file(test::example_trace("sdpa_math.json"), ReadOptions{.detail = ReadDetail::Analysis});
  const auto is_flow = [](const Event& e) { return is_flow_phase(e.phase); };
  const auto flows = static_cast<std::size_t>(std::count_if(full.events.begin(), full.events.end(), is_flow));
  EXPECT_GT(flows, 0u);
  EXPECT_EQ(std::count_if(lean.events.begin(), lean.events.end(), is_flow), 0);
  EXPECT_EQ(lean.events.size(), full.events.size() - flows);
  std::size_t j = 0;
  for (const Event& e : full.events) {
    if (is_flow(e)) continue;
    const Event& l = lean.events[j++];
    ASSERT_EQ(full.name(e), lean.name(l));
    ASSERT_EQ(e.ts_ns, l.ts_ns);
    ASSERT_EQ(l.external_id, -1);
    if (is_gpu_activity(e.kind) || is_launch_api(e.kind)) {
      ASSERT_EQ(e.correlation, l.correlation);
    }
    ASSERT_EQ(e.has_gpu_args(), l.has_gpu_args());
    if (e.has_gpu_args()) {
      const GpuArgs& a = *full.args(e);
      const GpuArgs& b = *lean.args(l);
      EXPECT_EQ(a.grid, b.grid);
      EXPECT_EQ(a.block, b.block);
      EXPECT_EQ(a.bytes, b.bytes);
      EXPECT_EQ(b.registers_per_thread, -1);  // not read for the analysis
      EXPECT_EQ(b.blocks_per_sm, -1.0f);
    }
  }
}

// A chunk that ends right after an event's closing brace: the ']' written
// after that event for simdjson still leaves simdjson its full padding.
TEST(TraceReader, ChunkEndingRightAfterAnEvent) {
  const std::string first = R"({"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1})";
  const std::string head = R"({"traceEvents": [)";
  const std::string json = head + first + ", " + first + "]}";
  for (std::size_t cut = head.size() + first.size() - 2; cut <= head.size() + first.size() + 2; ++cut)
    expect_events(json, cut, 2);
}

}  // namespace
}  // namespace attnprof
