// Converts CUPTI activity records into trace events (see activity_convert.h).
#include "capture/activity_convert.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "capture/api_calls.h"
#include "trace/demangle.h"

namespace attnprof::capture {
namespace {

std::int64_t ns(std::uint64_t t) { return static_cast<std::int64_t>(t); }
std::int64_t duration(std::uint64_t start, std::uint64_t end) {
  return end >= start ? static_cast<std::int64_t>(end - start) : 0;
}

std::string_view copy_kind_name(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view memory_kind_name(std::uint16_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

std::string_view sync_name(CUpti_ActivitySynchronizationType type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

Lane lane(std::int64_t v) { return Lane{v, false}; }

}  // namespace

std::string memcpy_name(std::uint8_t copy_kind, std::uint8_t src_kind, std::uint8_t dst_kind) {
  std::string s = "Memcpy ";
  s += copy_kind_name(copy_kind);
  s += " (";
  s += memory_kind_name(src_kind);
  s += " -> ";
  s += memory_kind_name(dst_kind);
  s += ")";
  return s;
}

std::string memset_name(std::uint16_t memory_kind) {
  return "Memset (" + std::string(memory_kind_name(memory_kind)) + ")";
}

void ActivityConverter::seen(std::int64_t ts_ns) { latest_ns_ = std::max(latest_ns_, ts_ns); }

void ActivityConverter::add(const CUpti_Activity& record) {
  // CUPTI hands out records as the newest struct version of each kind this
  // header declares; the recorder refuses a runtime CUPTI older than these.
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      if (kinds_ & kKernels) return add_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      if (kinds_ & kMemcpy) return add_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      if (kinds_ & kMemset) return add_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      if (kinds_ & kRuntime) return add_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), false);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      if (kinds_ & kDriver) return add_api(reinterpret_cast<const CUpti_ActivityAPI&>(record), true);
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      if (kinds_ & kSync) return add_sync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      if (kinds_ & kNvtx) return add_marker(reinterpret_cast<const CUpti_ActivityMarker2&>(record));
      break;
    default:
      break;
  }
  ++skipped_;
}

// The fields kernel, memcpy and memset records share (same names in each record).
template <typename Record>
void ActivityConverter::add_gpu(EventKind kind, const Record& r, std::string_view name, GpuArgs args) {
  args.device = static_cast<std::int32_t>(r.deviceId);
  args.context = static_cast<std::int32_t>(r.contextId);
  args.stream = r.streamId;
  Event e;
  e.kind = kind;
  e.ts_ns = ns(r.start);
  e.dur_ns = duration(r.start, r.end);
  e.correlation = r.correlationId;
  e.pid = lane(r.deviceId);
  e.tid = lane(r.streamId);
  e.name = intern(name);
  trace_.add(e, &args);
  seen(e.end_ns());
}

void ActivityConverter::add_kernel(const CUpti_ActivityKernel10& k) {
  GpuArgs args;
  args.grid = {k.gridX, k.gridY, k.gridZ};
  args.block = {k.blockX, k.blockY, k.blockZ};
  args.registers_per_thread = k.registersPerThread;
  args.shared_memory = k.staticSharedMemory + k.dynamicSharedMemory;
  args.dynamic_shared_memory = k.dynamicSharedMemory;
  std::string_view name = "<unnamed kernel>";
  if (k.name != nullptr) {
    KernelName& known = kernel_names_[k.name];
    if (known.mangled != k.name) known = KernelName{k.name, demangle(k.name)};
    name = known.demangled;
  }
  add_gpu(EventKind::Kernel, k, name, args);
}

void ActivityConverter::add_memcpy(const CUpti_ActivityMemcpy6& m) {
  GpuArgs args;
  args.bytes = static_cast<std::int64_t>(m.bytes);
  add_gpu(EventKind::GpuMemcpy, m, memcpy_name(m.copyKind, m.srcKind, m.dstKind), args);
}

void ActivityConverter::add_memset(const CUpti_ActivityMemset4& m) {
  GpuArgs args;
  args.bytes = static_cast<std::int64_t>(m.bytes);
  add_gpu(EventKind::GpuMemset, m, memset_name(m.memoryKind), args);
}

void ActivityConverter::add_api(const CUpti_ActivityAPI& a, bool driver) {
  add_call(driver, a.cbid, a.correlationId, ns(a.start), ns(a.start) + duration(a.start, a.end), a.processId,
           a.threadId);
}

void ActivityConverter::add_call(bool driver, std::uint32_t cbid, std::uint32_t correlation, std::int64_t start_ns,
                                 std::int64_t end_ns, std::int64_t pid, std::int64_t tid) {
  const ApiCall* call = find_api_call(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  if (call == nullptr) return;  // a call that neither launches nor synchronizes
  Event e;
  e.kind = driver ? EventKind::CudaDriver : EventKind::CudaRuntime;
  e.ts_ns = start_ns;
  e.dur_ns = std::max<std::int64_t>(0, end_ns - start_ns);
  e.correlation = correlation;
  e.pid = lane(pid);
  e.tid = lane(tid);
  e.name = intern(call->name);
  trace_.add(e);
  if (call->synchronizes) sync_call_threads_[correlation] = SyncCall{tid, takes_};
  seen(e.end_ns());
}

void ActivityConverter::add_sync(const CUpti_ActivitySynchronization2& s) {
  Event e;
  e.kind = EventKind::CudaSync;
  e.ts_ns = ns(s.start);
  e.dur_ns = duration(s.start, s.end);
  e.correlation = s.correlationId;
  e.pid = lane(process_id_);
  e.tid = lane(-1);  // resolved from the synchronizing call in take()
  e.name = intern(sync_name(s.type));
  trace_.add(e);
  seen(e.end_ns());
}

void ActivityConverter::add_marker(const CUpti_ActivityMarker2& m) {
  const auto ts = ns(m.timestamp);
  seen(ts);
  const bool thread_object =
      m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS;
  const std::int64_t pid = thread_object ? m.objectId.pt.processId : process_id_;
  const std::int64_t tid = thread_object ? m.objectId.pt.threadId : 0;
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    open_ranges_[m.id] = OpenRange{ts, pid, tid, intern(m.name != nullptr ? m.name : "")};
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    const auto it = open_ranges_.find(m.id);
    if (it == open_ranges_.end()) return;  // its start came before recording began
    Event e;
    e.kind = EventKind::UserAnnotation;
    e.ts_ns = it->second.start_ns;
    e.dur_ns = std::max<std::int64_t>(0, ts - it->second.start_ns);
    e.pid = lane(it->second.pid);
    e.tid = lane(it->second.tid);
    e.name = it->second.name;
    trace_.add(e);
    open_ranges_.erase(it);
    return;
  }
  if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    Event e;
    e.kind = EventKind::Instant;
    e.phase = 'i';
    e.ts_ns = ts;
    e.pid = lane(pid);
    e.tid = lane(tid);
    e.name = intern(m.name != nullptr ? m.name : "");
    trace_.add(e);
    return;
  }
  ++skipped_;
}

Trace ActivityConverter::take(bool close_open_ranges) {
  // The thread of a sync event's call, when known (the entry is used up).
  const auto resolve = [&](Event& e) {
    const auto it = sync_call_threads_.find(static_cast<std::uint32_t>(e.correlation));
    if (it == sync_call_threads_.end()) return false;
    e.tid = lane(it->second.tid);
    sync_call_threads_.erase(it);
    return true;
  };
  std::vector<HeldSync> waiting = std::exchange(held_syncs_, {});
  std::erase_if(trace_.events, [&](Event& e) {
    if (e.kind != EventKind::CudaSync || e.tid.value() != -1 || resolve(e) || close_open_ranges) return false;
    held_syncs_.push_back(HeldSync{e, std::string(trace_.strings.view(e.name)), takes_});
    return true;
  });
  // Those held before: out when their call came, when they waited long enough, or at the end.
  for (HeldSync& h : waiting) {
    if (resolve(h.event) || close_open_ranges || takes_ - h.since >= kSyncWait) {
      h.event.name = intern(h.name);
      trace_.add(h.event);
    } else {
      held_syncs_.push_back(std::move(h));
    }
  }
  std::erase_if(sync_call_threads_,
                [&](const auto& entry) { return close_open_ranges || takes_ - entry.second.take >= kSyncWait; });
  ++takes_;
  if (close_open_ranges) {
    for (const auto& [id, r] : open_ranges_) {
      Event e;
      e.kind = EventKind::UserAnnotation;
      e.ts_ns = r.start_ns;
      e.dur_ns = std::max<std::int64_t>(0, latest_ns_ - r.start_ns);
      e.pid = lane(r.pid);
      e.tid = lane(r.tid);
      e.name = trace_.strings.intern(trace_.strings.view(r.name));
      trace_.add(e);
    }
    open_ranges_.clear();
  }
  Trace out = std::move(trace_);
  trace_ = Trace{};
  // Open ranges keep their names: re-intern them into the fresh pool.
  for (auto& [id, r] : open_ranges_) r.name = trace_.strings.intern(out.strings.view(r.name));
  return out;
}

}  // namespace attnprof::capture
