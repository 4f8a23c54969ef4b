// The CUPTI Activity API recorder (see recorder.h). CUPTI delivers records in
// buffers on its own thread; each completed buffer is converted at once and
// returned to the pool, so the application thread never waits on conversion.
#include "capture/recorder.h"

#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "capture/activity_convert.h"
#include "capture/api_calls.h"
#include "capture/buffer_pool.h"
#include "capture/call_log.h"
#include "capture/cupti_check.h"
#include "capture/device_properties.h"

namespace attnprof::capture {

std::string cupti_error_text(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr)
    return "CUPTI error " + std::to_string(static_cast<int>(result));
  return text;
}

void check_cupti(CUptiResult result, const char* call) {
  if (result != CUPTI_SUCCESS)
    throw RecorderError(std::string("attnprof recorder: ") + call + " failed: " + cupti_error_text(result));
}

namespace {

struct ActivityKindBit {
  CUpti_ActivityKind kind;
  std::uint32_t bit;
  const char* name;
};
// Runtime and driver calls are not here: see enable_api_calls.
constexpr std::array kActivityKinds = {
    ActivityKindBit{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, kKernels, "concurrent kernel"},
    ActivityKindBit{CUPTI_ACTIVITY_KIND_MEMCPY, kMemcpy, "memcpy"},
    ActivityKindBit{CUPTI_ACTIVITY_KIND_MEMSET, kMemset, "memset"},
    ActivityKindBit{CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, kSync, "synchronization"},
    ActivityKindBit{CUPTI_ACTIVITY_KIND_MARKER, kNvtx, "NVTX marker"},
};

// Calls f(domain, cbid) for each kept runtime/driver call (api_calls.cpp) of `kinds`; stops at
// the first failure.
template <typename F>
CUptiResult for_each_kept_call(std::uint32_t kinds, F f) {
  for (const auto& [bit, domain] :
       {std::pair{kRuntime, CUPTI_CB_DOMAIN_RUNTIME_API}, std::pair{kDriver, CUPTI_CB_DOMAIN_DRIVER_API}}) {
    if (!(kinds & bit)) continue;
    for (CUpti_CallbackId cbid : kept_api_calls(domain))
      if (const CUptiResult r = f(domain, cbid); r != CUPTI_SUCCESS) return r;
  }
  return CUPTI_SUCCESS;
}

// Enables (or disables) runtime/driver call records: every call (the converter
// keeps those in api_calls.cpp), or with `filtered` only those, one by one.
CUptiResult enable_api_calls(std::uint32_t kinds, bool enable, bool filtered) {
  if (!filtered) {
    for (const auto& [bit, kind] :
         {std::pair{kRuntime, CUPTI_ACTIVITY_KIND_RUNTIME}, std::pair{kDriver, CUPTI_ACTIVITY_KIND_DRIVER}}) {
      if (!(kinds & bit)) continue;
      const CUptiResult r = enable ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
      if (r != CUPTI_SUCCESS) return r;
    }
    return CUPTI_SUCCESS;
  }
  const std::uint8_t on = enable ? 1 : 0;
  return for_each_kept_call(kinds, [&](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, on)
                                                 : cuptiActivityEnableDriverApi(cbid, on);
  });
}

// Record layouts (CUpti_ActivityKernel10, ...) are fixed within a CUDA major
// release, so any runtime CUPTI of the major release we were built for reads
// them; an older one would hand us records of a shorter layout.
constexpr std::uint32_t kMinCuptiVersion = (CUPTI_API_VERSION / 10000) * 10000;

// Enables (or disables) CUPTI callbacks on the kept runtime/driver calls (CallTracing::Callbacks).
CUptiResult enable_call_callbacks(CUpti_SubscriberHandle subscriber, std::uint32_t kinds, bool enable) {
  const std::uint32_t on = enable ? 1 : 0;
  return for_each_kept_call(kinds, [&](CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return cuptiEnableCallback(on, subscriber, domain, cbid);
  });
}

struct State {
  std::mutex control;  // start/stop/take
  std::mutex data;     // converter, counters
  bool recording = false;
  bool callbacks_registered = false;
  std::uint32_t kinds = 0;
  bool filtered = false;                      // filter_api_calls_in_cupti of the running session
  CallTracing calls = CallTracing::Activity;  // of the running session
  std::map<int, DeviceProperties> devices;    // queried once per device
  bool armed = false;                         // arm(): the subscription outlives stop()
  CUpti_SubscriberHandle subscriber = nullptr;
  std::optional<BufferPool> pool;
  std::optional<ActivityConverter> converter;
  std::int64_t dropped = 0;      // records CUPTI reported dropped, since the last take
  std::size_t refused_seen = 0;  // pool refusals already reported
  std::uint64_t buffers_done = 0;
};

State& state() {
  static State* s = new State;  // never destroyed: CUPTI may call back during exit
  return *s;
}

// Before the buffer callbacks are registered and any kind is enabled, as CUPTI asks.
void set_cupti_attributes(const CuptiAttributes& a) {
  auto set = [](CUpti_ActivityAttribute attr, auto value, const char* name) {
    std::size_t size = sizeof value;
    if (const CUptiResult r = cuptiActivitySetAttribute(attr, &size, &value); r != CUPTI_SUCCESS)
      throw RecorderError(std::string("attnprof recorder: cannot set CUPTI attribute ") + name + ": " +
                          cupti_error_text(r));
  };
  if (a.per_thread_buffers)
    set(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, std::uint8_t(*a.per_thread_buffers), "per_thread_buffers");
  if (a.host_pinned)
    set(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, std::uint8_t(*a.host_pinned), "host_pinned");
  if (a.device_buffer_mb)
    set(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, std::size_t(*a.device_buffer_mb) << 20, "device_buffer_mb");
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  auto& s = state();
  *buffer = s.pool ? s.pool->acquire() : nullptr;
  *size = *buffer != nullptr ? s.pool->buffer_bytes() : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream_id, std::uint8_t* buffer, std::size_t /*size*/,
                               std::size_t valid_size) {
  auto& s = state();
  {
    std::lock_guard lock(s.data);
    if (s.converter) {
      CUpti_Activity* record = nullptr;
      CUptiResult r = CUPTI_SUCCESS;
      while ((r = cuptiActivityGetNextRecord(buffer, valid_size, &record)) == CUPTI_SUCCESS) s.converter->add(*record);
      if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)  // the normal end of a buffer
        std::fprintf(stderr, "attnprof recorder: warning: reading an activity buffer stopped early: %s\n",
                     cupti_error_text(r).c_str());
    }
    std::size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS)
      s.dropped += static_cast<std::int64_t>(dropped);
    ++s.buffers_done;
  }
  if (s.pool) s.pool->release(buffer);
}

std::atomic<NvtxHook> g_nvtx_hook{nullptr};
// The calls seen by callbacks while CallTracing::Callbacks records (never destroyed: see state()).
CallLog& g_calls = *new CallLog;
std::atomic<bool> g_calls_on{false};

void on_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& call) {
  if (!g_calls_on.load(std::memory_order_relaxed)) return;
  if (call.callbackSite == CUPTI_API_ENTER)
    g_calls.enter(domain == CUPTI_CB_DOMAIN_DRIVER_API, cbid, call.correlationId, timestamp_ns());
  else
    g_calls.exit(call.correlationId, timestamp_ns());
}

const char* ascii_message(const nvtxEventAttributes_t* a) {
  return a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii != nullptr ? a->message.ascii
                                                                                                  : "";
}

// Holding CUPTI's single subscriber slot is how we learn that another client (torch.profiler,
// Nsight) owns CUPTI; once armed, NVTX range pushes and pops go to the hook.
void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (data == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
    return on_call(domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
  if (domain != CUPTI_CB_DOMAIN_NVTX) return;
  const NvtxHook hook = g_nvtx_hook.load(std::memory_order_acquire);
  if (hook == nullptr) return;
  const void* params = static_cast<const CUpti_NvtxData*>(data)->functionParams;
  if (params == nullptr) return;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const char* m = static_cast<const nvtxRangePushA_params*>(params)->message;
      hook(true, m != nullptr ? m : "");
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      hook(true, ascii_message(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib));
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      hook(true, ascii_message(static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib));
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      hook(false, "");
      break;
    default:
      break;
  }
}

void check_version() {
  std::uint32_t version = 0;
  ATTNPROF_CUPTI_CHECK(cuptiGetVersion(&version));
  if (version < kMinCuptiVersion)
    throw RecorderError("attnprof recorder: the CUPTI library loaded (API version " + std::to_string(version) +
                        ") is older than the one attnprof was built for (" + std::to_string(CUPTI_API_VERSION) +
                        "); put a matching libcupti.so first on LD_LIBRARY_PATH");
}

// NVTX calls reach CUPTI only through NVTX's injection hook; point it at the
// loaded libcupti unless the user (or attnprof record) already chose one.
void route_nvtx_to_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiGetVersion), &info) != 0 && info.dli_fname != nullptr)
    setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

// How a session records runtime/driver calls.
struct CallSetup {
  std::uint32_t kinds;
  CallTracing calls;
  bool filtered;  // Activity only: CUPTI traces the kept calls only
};

// Turns the recording of runtime/driver calls on or off.
CUptiResult switch_calls(CUpti_SubscriberHandle subscriber, const CallSetup& c, bool enable) {
  if (c.calls == CallTracing::Activity) return enable_api_calls(c.kinds, enable, c.filtered);
  if (enable) g_calls.clear();
  g_calls_on.store(enable);
  return enable_call_callbacks(subscriber, c.kinds, enable);
}

void disable_kinds(CUpti_SubscriberHandle subscriber, const CallSetup& c) {  // best effort: stopping or unwinding
  for (const auto& k : kActivityKinds)
    if (c.kinds & k.bit) cuptiActivityDisable(k.kind);
  switch_calls(subscriber, c, false);
}

void report_drops(std::int64_t dropped, std::size_t refused) {
  if (dropped > 0 || refused > 0)
    std::fprintf(stderr,
                 "attnprof recorder: warning: CUPTI dropped %lld records (%zu activity buffers "
                 "refused by the pool); the trace is incomplete\n",
                 static_cast<long long>(dropped), refused);
}

}  // namespace

namespace {

void subscribe(State& s) {
  if (s.subscriber != nullptr) return;  // armed: subscribed already
  const CUptiResult sub = cuptiSubscribe(&s.subscriber, &on_callback, nullptr);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    throw RecorderError(
        "attnprof recorder: another CUPTI client already owns this process (torch.profiler, "
        "Nsight Systems, ...); stop it, or record without it");
  check_cupti(sub, "cuptiSubscribe");
}

void unsubscribe(State& s) {  // unless armed: then the subscription stays for the next start()
  if (s.armed || s.subscriber == nullptr) return;
  cuptiUnsubscribe(s.subscriber);
  s.subscriber = nullptr;
}

}  // namespace

std::int64_t timestamp_ns() {
  std::uint64_t t = 0;
  return cuptiGetTimestamp(&t) == CUPTI_SUCCESS ? static_cast<std::int64_t>(t) : -1;
}

void arm(NvtxHook hook) {
  auto& s = state();
  std::lock_guard control(s.control);
  check_version();
  route_nvtx_to_cupti();
  subscribe(s);
  g_nvtx_hook.store(hook, std::memory_order_release);
  const CUptiResult r = cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_NVTX);
  if (r != CUPTI_SUCCESS) {
    g_nvtx_hook.store(nullptr);
    if (!s.recording) {
      cuptiUnsubscribe(s.subscriber);
      s.subscriber = nullptr;
    }
    throw RecorderError(std::string("attnprof recorder: cannot follow NVTX ranges: ") + cupti_error_text(r));
  }
  s.armed = true;
}

void start(const RecorderOptions& options) {
  auto& s = state();
  std::lock_guard control(s.control);
  if (s.recording) throw RecorderError("attnprof recorder: already recording");
  check_version();
  if (options.kinds & kNvtx) route_nvtx_to_cupti();
  subscribe(s);

  ATTNPROF_CUPTI_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  {
    std::lock_guard lock(s.data);
    if (!s.pool) s.pool.emplace(options.buffer_bytes, options.max_buffers);
    if (!s.converter || s.kinds != options.kinds)
      s.converter.emplace(options.kinds, static_cast<std::int64_t>(getpid()));
  }
  if (!s.callbacks_registered) {
    set_cupti_attributes(options.cupti_attributes);
    ATTNPROF_CUPTI_CHECK(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed));
    s.callbacks_registered = true;
  }
  const CallSetup setup{options.kinds, options.calls, options.filter_api_calls_in_cupti};
  std::uint32_t enabled = 0;
  for (const auto& k : kActivityKinds) {
    if (!(options.kinds & k.bit)) continue;
    const CUptiResult r = cuptiActivityEnable(k.kind);
    if (r != CUPTI_SUCCESS) {
      disable_kinds(s.subscriber, CallSetup{enabled, options.calls, options.filter_api_calls_in_cupti});
      unsubscribe(s);
      throw RecorderError(std::string("attnprof recorder: cannot enable CUPTI ") + k.name +
                          " activity: " + cupti_error_text(r) + " (another profiler may own CUPTI in this process)");
    }
    enabled |= k.bit;
  }
  if (const CUptiResult r = switch_calls(s.subscriber, setup, true); r != CUPTI_SUCCESS) {
    disable_kinds(s.subscriber, setup);
    unsubscribe(s);
    throw RecorderError(std::string("attnprof recorder: cannot record CUDA runtime/driver calls: ") +
                        cupti_error_text(r) + " (another profiler may own CUPTI in this process)");
  }
  s.kinds = options.kinds;
  s.filtered = options.filter_api_calls_in_cupti;
  s.calls = options.calls;
  s.recording = true;
}

void flush() {
  if (!is_recording()) return;
  ATTNPROF_CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}

void stop() {
  auto& s = state();
  std::lock_guard control(s.control);
  if (!s.recording) return;
  // Best effort, unchecked: stop() runs at exit and from signal paths, where a
  // failure must not keep the records already converted from being written.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disable_kinds(s.subscriber, CallSetup{s.kinds, s.calls, s.filtered});
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  unsubscribe(s);
  s.recording = false;
}

bool is_recording() {
  auto& s = state();
  std::lock_guard control(s.control);
  return s.recording;
}

Trace take(Flush flush) {
  auto& s = state();
  std::lock_guard control(s.control);
  if (s.recording)
    ATTNPROF_CUPTI_CHECK(cuptiActivityFlushAll(flush == Flush::Forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
  Trace trace;
  std::int64_t dropped = 0;
  std::size_t refused = 0;
  {
    std::lock_guard lock(s.data);
    if (!s.converter) return trace;
    const std::int64_t pid = getpid();
    for (const CallRecord& c : g_calls.drain())
      s.converter->add_call(c.driver, c.cbid, c.correlation, c.start_ns, c.end_ns, pid, c.tid);
    trace = s.converter->take(!s.recording);
    std::size_t global_dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &global_dropped) == CUPTI_SUCCESS)
      s.dropped += static_cast<std::int64_t>(global_dropped);
    dropped = s.dropped;
    s.dropped = 0;
    const std::size_t total_refused = s.pool ? s.pool->refused() : 0;
    refused = total_refused - s.refused_seen;
    s.refused_seen = total_refused;
  }
  // Events in time order; gpu_args indices travel with their events.
  std::stable_sort(trace.events.begin(), trace.events.end(),
                   [](const Event& a, const Event& b) { return a.ts_ns < b.ts_ns; });
  std::set<int> devices;
  for (const auto& e : trace.events)
    if (const GpuArgs* a = trace.args(e); a != nullptr && a->device >= 0) devices.insert(a->device);
  for (int d : devices) {
    auto known = s.devices.find(d);
    if (known == s.devices.end())
      if (auto p = query_device_properties(d)) known = s.devices.emplace(d, std::move(*p)).first;
    if (known != s.devices.end()) trace.devices.push_back(known->second);
  }
  std::uint32_t cupti_version = 0;
  if (cuptiGetVersion(&cupti_version) == CUPTI_SUCCESS) trace.cupti_version = cupti_version;
  trace.cuda_driver_version = driver_version();
  trace.dropped_records = dropped;
  report_drops(dropped, refused);
  return trace;
}

RecordingScope::~RecordingScope() {
  if (stopped_) return;
  try {
    stop();
  } catch (...) {
    // A destructor must not throw; stop() only throws on CUPTI failures.
  }
}

Trace RecordingScope::stop_and_take() {
  stop();
  stopped_ = true;
  return take();
}

}  // namespace attnprof::capture
