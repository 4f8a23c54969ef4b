// Kineto-compatible Chrome-trace writer. Every key comes from catalogue.h, the
// same table the reader uses; the project's JsonWriter (Kineto's line layout)
// writes the text, so the output is always valid JSON. Writes in ~1 MiB pieces
// through an AtomicFile: a file is replaced whole or not at all.
#include "trace/trace_writer.h"

#include <unistd.h>
#include <zlib.h>

#include <array>
#include <functional>

#include "common/json.h"
#include "common/write_file.h"
#include "trace/catalogue.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace cat = catalogue;
using Sink = std::function<void(std::string_view)>;

// Streams the document through a JsonWriter in the Kineto layout, handing the
// text to the sink in ~1 MiB pieces between events.
class Out {
 public:
  explicit Out(const Sink& sink) : sink_(sink) { buf_.reserve(kFlushBytes + 4096); }
  ~Out() { flush(); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;

  JsonWriter& json() { return w_; }
  void us(std::string_view k, std::int64_t ns) { json_text::append_ns_as_us(w_.value(k), ns); }
  void lane(std::string_view k, const Lane& l, const StringPool& strings) {
    if (l.is_string)
      w_.str(k, strings.view(static_cast<StringId>(l.value())));
    else
      w_.num(k, l.value());
  }
  void end_line() { buf_ += '\n'; }
  void maybe_flush() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    if (!buf_.empty()) sink_(buf_);
    buf_.clear();
  }

 private:
  static constexpr std::size_t kFlushBytes = 1u << 20;
  const Sink& sink_;
  std::string buf_;
  JsonWriter w_{buf_, JsonLayout::Lines};
};

void write_triple(JsonWriter& w, std::string_view k, const std::array<std::int32_t, 3>& v) {
  w.begin_array(k);
  for (const std::int32_t x : v) w.num({}, x);
  w.end_array();
}

void write_gpu_args(JsonWriter& w, const GpuArgs& g, EventKind kind) {
  if (g.device >= 0) w.num(cat::kDevice, g.device);
  if (g.context >= 0) w.num(cat::kContext, g.context);
  if (g.stream >= 0) w.num(cat::kStream, g.stream);
  if (kind == EventKind::Kernel) {
    if (g.registers_per_thread >= 0) w.num(cat::kRegistersPerThread, g.registers_per_thread);
    if (g.shared_memory >= 0) w.num(cat::kSharedMemory, g.shared_memory);
    if (g.dynamic_shared_memory >= 0) w.num(cat::kDynamicSharedMemory, g.dynamic_shared_memory);
    if (g.blocks_per_sm >= 0) w.num(cat::kBlocksPerSm, g.blocks_per_sm);
    if (g.warps_per_sm >= 0) w.num(cat::kWarpsPerSm, g.warps_per_sm);
    if (g.grid[0] >= 0) write_triple(w, cat::kGrid, g.grid);
    if (g.block[0] >= 0) write_triple(w, cat::kBlock, g.block);
    if (g.occupancy_pct >= 0) w.num(cat::kOccupancy, g.occupancy_pct);
  }
  if (g.bytes >= 0) w.num(cat::kBytes, g.bytes);
}

void write_event(Out& o, const Trace& t, const Event& e) {
  JsonWriter& w = o.json();
  w.begin_object();
  w.str(cat::kPh, std::string_view(&e.phase, 1));
  std::string_view category = cat::category_of_kind(e.kind);
  if (category.empty() || e.kind == EventKind::Flow) category = t.strings.view(e.category);
  if (!category.empty()) w.str(cat::kCat, category);
  w.str(cat::kName, t.name(e));
  o.lane(cat::kPid, e.pid, t.strings);
  o.lane(cat::kTid, e.tid, t.strings);
  o.us(cat::kTs, e.ts_ns);
  if (e.phase == 'X') o.us(cat::kDur, e.dur_ns);
  if (e.kind == EventKind::Flow) {
    w.num(cat::kId, e.correlation);
    if (e.phase == 'f') w.str(cat::kBindingPoint, "e");
  } else if (e.external_id >= 0 || e.correlation >= 0 || e.has_gpu_args()) {
    w.begin_object(cat::kArgs);
    if (e.external_id >= 0) w.num(cat::kExternalId, e.external_id);
    if (e.correlation >= 0) w.num(cat::kCorrelation, e.correlation);
    if (const GpuArgs* g = t.args(e)) write_gpu_args(w, *g, e.kind);
    w.end_object();
  }
  w.end_object();
}

void render(const Trace& t, const Sink& sink) {
  Out o(sink);
  JsonWriter& w = o.json();
  w.begin_object();
  w.num(cat::kSchemaVersion, t.schema_version);
  if (!t.devices.empty()) {
    w.begin_array(cat::kDeviceProperties);
    for (const DeviceProperties& d : t.devices) {
      w.begin_object();
      w.str(cat::kDevName, d.name);
      for (const cat::DeviceField& f : cat::device_fields()) w.num(f.key, f.get(d));
      w.end_object();
    }
    w.end_array();
  }
  auto opt = [&](std::string_view k, std::int64_t v) {
    if (v >= 0) w.num(k, v);
  };
  opt(cat::kCudaRuntimeVersion, t.cuda_runtime_version);
  opt(cat::kCudaDriverVersion, t.cuda_driver_version);
  opt(cat::kCuptiVersion, t.cupti_version);
  if (t.dropped_records > 0) opt(cat::kDroppedRecords, t.dropped_records);
  w.str(cat::kDisplayTimeUnit, "ms");
  if (t.base_time_ns) opt(cat::kBaseTimeNanoseconds, *t.base_time_ns);
  w.begin_array(cat::kTraceEvents);
  for (const Event& e : t.events) {
    if (e.kind == EventKind::Metadata) continue;  // process/thread names are not kept
    write_event(o, t, e);
    o.maybe_flush();
  }
  w.end_array();
  if (!t.trace_name.empty()) w.str(cat::kTraceName, t.trace_name);
  w.end_object();
  o.end_line();
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void write_trace_json(const Trace& trace, std::ostream& out) {
  render(trace, [&](std::string_view s) { out.write(s.data(), static_cast<std::streamsize>(s.size())); });
}

void write_trace_file(const Trace& trace, const std::string& path) {
  AtomicFile file(path);
  if (ends_with(path, ".gz")) {
    const int fd = file.take_fd();
    gzFile gz = gzdopen(fd, "wb6");
    if (gz == nullptr) {
      ::close(fd);
      file.fail("cannot start gzip");
    } else {
      bool ok = true;
      render(trace, [&](std::string_view s) {
        if (ok && gzwrite(gz, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) {
          ok = false;
          file.fail("gzip write failed");
        }
      });
      if (gzclose(gz) != Z_OK) file.fail("gzip close failed");
    }
  } else {
    render(trace, [&](std::string_view s) { file.write(s); });
  }
  file.commit();
}

}  // namespace attnprof
