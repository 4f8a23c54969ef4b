// CUPTI record -> event conversion, on synthetic records built here (no GPU).
#include "capture/activity_convert.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>

#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>

#include "capture/api_calls.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace attnprof::capture {
namespace {

CUpti_ActivityKernel10 kernel_record() {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1'000'000;
  k.end = 1'002'500;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 128;
  k.gridY = 16;
  k.gridZ = 4;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 49152;
  k.correlationId = 42;
  k.name = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
  return k;
}

CUpti_ActivityAPI api_record(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation) {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = kind;
  a.cbid = cbid;
  a.start = 999'000;
  a.end = 999'800;
  a.processId = 4242;
  a.threadId = 4243;
  a.correlationId = correlation;
  return a;
}

// A sync record of 400 ns from t=500 (sync records name no thread: it comes from the call).
CUpti_ActivitySynchronization2 sync_record(
    std::uint32_t correlation,
    CUpti_ActivitySynchronizationType type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) {
  CUpti_ActivitySynchronization2 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = 500;
  s.end = 900;
  s.correlationId = correlation;
  return s;
}

CUpti_ActivityMarker2 marker(CUpti_ActivityFlag flag, std::uint32_t id, std::uint64_t ts, const char* name) {
  CUpti_ActivityMarker2 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MARKER;
  m.flags = flag;
  m.timestamp = ts;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = 4242;
  m.objectId.pt.threadId = 4243;
  m.name = name;
  return m;
}

template <typename R>
const CUpti_Activity& as_activity(const R& r) {
  return reinterpret_cast<const CUpti_Activity&>(r);
}

TEST(ActivityConvert, KernelKeepsEveryField) {
  ActivityConverter c;
  c.add(as_activity(kernel_record()));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 1u);
  const Event& e = t.events[0];
  EXPECT_EQ(e.kind, EventKind::Kernel);
  EXPECT_EQ(e.ts_ns, 1'000'000);
  EXPECT_EQ(e.dur_ns, 2'500);
  EXPECT_EQ(e.correlation, 42);
  EXPECT_EQ(e.pid, (Lane{0, false}));
  EXPECT_EQ(e.tid, (Lane{7, false}));
  EXPECT_EQ(t.name(e),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)");
  const GpuArgs* a = t.args(e);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->device, 0);
  EXPECT_EQ(a->context, 1);
  EXPECT_EQ(a->stream, 7);
  EXPECT_EQ(a->grid, (std::array<std::int32_t, 3>{128, 16, 4}));
  EXPECT_EQ(a->block, (std::array<std::int32_t, 3>{256, 1, 1}));
  EXPECT_EQ(a->registers_per_thread, 40);
  EXPECT_EQ(a->shared_memory, 1024 + 49152);
  EXPECT_EQ(a->dynamic_shared_memory, 49152);
}

TEST(ActivityConvert, UnmangledKernelNamePassesThrough) {
  auto k = kernel_record();
  k.name = "triton_poi_fused_add_0";
  ActivityConverter c;
  c.add(as_activity(k));
  const Trace t = c.take(true);
  EXPECT_EQ(t.name(t.events.at(0)), "triton_poi_fused_add_0");
}

// Kernel names are demangled once per kernel, cached by CUPTI's name pointer; memory of an unloaded
// module reused for another kernel's name still gives that kernel's name.
TEST(ActivityConvert, KernelNameCacheFollowsTheNamesText) {
  char name[32] = "_Z3fooi";
  auto k = kernel_record();
  k.name = name;
  ActivityConverter c;
  c.add(as_activity(k));
  c.add(as_activity(k));
  std::strcpy(name, "_Z3barf");
  c.add(as_activity(k));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.name(t.events[0]), "foo(int)");
  EXPECT_EQ(t.name(t.events[1]), "foo(int)");
  EXPECT_EQ(t.name(t.events[2]), "bar(float)");
}

TEST(ActivityConvert, MemcpyAndMemsetNamedLikeThePyTorchProfiler) {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 110;
  m.streamId = 3;
  m.correlationId = 5;
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  s.start = 200;
  s.end = 210;
  s.streamId = 3;
  ActivityConverter c;
  c.add(as_activity(m));
  c.add(as_activity(s));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::GpuMemcpy);
  EXPECT_EQ(t.name(t.events[0]), "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(t.args(t.events[0])->bytes, 1 << 20);
  EXPECT_EQ(t.events[0].dur_ns, 100);
  EXPECT_EQ(t.events[1].kind, EventKind::GpuMemset);
  EXPECT_EQ(t.name(t.events[1]), "Memset (Device)");
  EXPECT_EQ(t.args(t.events[1])->bytes, 4096);
}

TEST(ActivityConvert, KeepsLaunchAndSyncCallsAndDropsOthers) {
  ActivityConverter c;
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 42)));
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 43)));
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 44)));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::CudaRuntime);
  EXPECT_EQ(t.name(t.events[0]), "cudaLaunchKernel");
  EXPECT_EQ(t.events[0].correlation, 42);
  EXPECT_EQ(t.events[0].pid, (Lane{4242, false}));
  EXPECT_EQ(t.events[0].tid, (Lane{4243, false}));
  EXPECT_EQ(t.events[1].kind, EventKind::CudaDriver);
  EXPECT_EQ(t.name(t.events[1]), "cuLaunchKernelEx");
}

TEST(ActivityConvert, SyncGetsTheThreadOfItsCall) {
  const CUpti_ActivitySynchronization2 s = sync_record(77);
  ActivityConverter c(kAllKinds, 4242);
  c.add(as_activity(s));  // the sync record may arrive before its call's
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 77)));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::CudaSync);
  EXPECT_EQ(t.name(t.events[0]), "Stream Sync");
  EXPECT_EQ(t.events[0].pid, (Lane{4242, false}));
  EXPECT_EQ(t.events[0].tid, (Lane{4243, false}));
  EXPECT_EQ(t.events[0].dur_ns, 400);
}

// Calls seen by callbacks (attnprof record's default) give the same events as API records.
TEST(ActivityConvert, CallbackCallsGiveTheSameEventsAsApiRecords) {
  ActivityConverter c(kAllKinds, 4242);
  c.add_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 42, 1000, 1600, 4242, 4243);
  c.add_call(true, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 43, 2000, 2300, 4242, 4244);
  c.add_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 44, 2500, 2600, 4242, 4243);  // not kept
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::CudaRuntime);
  EXPECT_EQ(t.name(t.events[0]), "cudaLaunchKernel");
  EXPECT_EQ(t.events[0].correlation, 42);
  EXPECT_EQ(t.events[0].ts_ns, 1000);
  EXPECT_EQ(t.events[0].dur_ns, 600);
  EXPECT_EQ(t.events[0].tid, (Lane{4243, false}));
  EXPECT_EQ(t.events[1].kind, EventKind::CudaDriver);
  EXPECT_EQ(t.name(t.events[1]), "cuLaunchKernelEx");
  EXPECT_EQ(t.events[1].tid, (Lane{4244, false}));
}

// A sync record taken in the piece after its call's (the recorder streams pieces) still gets the
// call's thread.
TEST(ActivityConvert, SyncFindsItsCallInThePreviousTake) {
  const CUpti_ActivitySynchronization2 s = sync_record(77, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
  ActivityConverter c(kAllKinds, 4242);
  c.add_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 77, 400, 950, 4242, 4250);
  EXPECT_EQ(c.take(false).events.size(), 1u);
  c.add(as_activity(s));
  const Trace t = c.take(false);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].kind, EventKind::CudaSync);
  EXPECT_EQ(t.events[0].tid, (Lane{4250, false}));
}

// Sync records come when CUPTI hands over a buffer, seconds after their call (or before it): the
// event waits for its call's thread, up to a limit, and is then written without one.
TEST(ActivityConvert, SyncWaitsForItsCallAcrossTakes) {
  ActivityConverter c(kAllKinds, 4242);
  c.add_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 5, 400, 950, 4242, 4251);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.take(false).events.size(), i == 0 ? 1u : 0u);
  c.add(as_activity(sync_record(5)));  // three takes after its call
  c.add(as_activity(sync_record(6)));  // before its call
  c.add(as_activity(sync_record(7)));  // its call never comes
  Trace t = c.take(false);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].tid, (Lane{4251, false}));
  c.add_call(false, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, 6, 450, 960, 4242, 4252);
  t = c.take(false);
  ASSERT_EQ(t.events.size(), 2u);  // the call, and its sync now
  const auto synced =
      std::find_if(t.events.begin(), t.events.end(), [](const Event& e) { return e.kind == EventKind::CudaSync; });
  ASSERT_NE(synced, t.events.end());
  EXPECT_EQ(synced->tid, (Lane{4252, false}));
  EXPECT_EQ(t.name(*synced), "Stream Sync");
  std::size_t later = 0;
  for (int i = 0; i < 40; ++i) later += c.take(false).events.size();
  EXPECT_EQ(later, 1u);  // correlation 7, given up on
}

TEST(ActivityConvert, NvtxRangeBecomesUserAnnotation) {
  ActivityConverter c;
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 9, 1000, "fwd0")));
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 9, 4000, nullptr)));
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 10, 5000, "mark")));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].kind, EventKind::UserAnnotation);
  EXPECT_EQ(t.name(t.events[0]), "fwd0");
  EXPECT_EQ(t.events[0].ts_ns, 1000);
  EXPECT_EQ(t.events[0].dur_ns, 3000);
  EXPECT_EQ(t.events[0].tid, (Lane{4243, false}));
  EXPECT_EQ(t.events[1].kind, EventKind::Instant);
  EXPECT_EQ(t.events[1].phase, 'i');
}

TEST(ActivityConvert, OpenRangeWaitsForItsEndAcrossTakes) {
  ActivityConverter c;
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 100, "attn_fwd")));
  EXPECT_TRUE(c.take(false).events.empty());
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 3, 700, nullptr)));
  const Trace t = c.take(false);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(t.events[0]), "attn_fwd");
  EXPECT_EQ(t.events[0].dur_ns, 600);
}

TEST(ActivityConvert, FinalTakeClosesOpenRangesAtTheLastTimestamp) {
  // A program killed inside a range still gets the range, up to its last work.
  ActivityConverter c;
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 3, 900'000, "fwd2")));
  c.add(as_activity(kernel_record()));
  const Trace t = c.take(true);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].kind, EventKind::UserAnnotation);
  EXPECT_EQ(t.events[1].end_ns(), 1'002'500);
}

TEST(ActivityConvert, KindsNotAskedForAreSkipped) {
  ActivityConverter c(kKernels);
  c.add(as_activity(kernel_record()));
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 42)));
  const Trace t = c.take(true);
  EXPECT_EQ(t.events.size(), 1u);
  EXPECT_EQ(c.skipped(), 1);
}

TEST(ApiCalls, TableRows) {
  EXPECT_EQ(find_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000)->name,
            "__cudaLaunchKernel");
  EXPECT_TRUE(
      find_api_call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020)->synchronizes);
  EXPECT_FALSE(find_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch)->synchronizes);
  EXPECT_EQ(find_api_call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2), nullptr);
}

TEST(ActivityConvert, ConvertedTraceRoundTripsThroughWriterAndReader) {
  ActivityConverter c;
  c.add(as_activity(api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 42)));
  c.add(as_activity(kernel_record()));
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, 998'000, "fwd0")));
  c.add(as_activity(marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, 1'003'000, nullptr)));
  Trace t = c.take(true);
  t.dropped_records = 3;
  std::ostringstream json;
  write_trace_json(t, json);
  const Trace back = read_trace_bytes(json.str(), "converted");
  EXPECT_EQ(back.dropped_records, 3);
  int kernels = 0, launches = 0, ranges = 0;
  for (const auto& e : back.events) {
    if (e.kind == EventKind::Kernel) {
      ++kernels;
      EXPECT_EQ(e.correlation, 42);
      EXPECT_EQ(back.args(e)->grid, (std::array<std::int32_t, 3>{128, 16, 4}));
      EXPECT_EQ(e.dur_ns, 2500);
    }
    launches += e.kind == EventKind::CudaRuntime;
    ranges += e.kind == EventKind::UserAnnotation && back.name(e) == "fwd0";
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(launches, 1);
  EXPECT_EQ(ranges, 1);
}

}  // namespace
}  // namespace attnprof::capture
