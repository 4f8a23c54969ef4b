// Kineto-compatible Chrome-trace writer. Every key comes from catalogue.h, the
// same table the reader uses; the project's JsonWriter (Kineto's line layout)
// writes the text, so the output is always valid JSON. Writes in ~1 MiB pieces
// through an AtomicFile: a file is replaced whole or not at all.
#include "trace/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <functional>
#include <utility>

#include "common/input_error.h"
#include "common/json.h"
#include "common/write_file.h"
#include "trace/catalogue.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace cat = catalogue;
using Sink = std::function<void(std::string_view)>;

void write_us(JsonWriter& w, std::string_view k, std::int64_t ns) { json_text::append_ns_as_us(w.value(k), ns); }

void write_lane(JsonWriter& w, std::string_view k, const Lane& l, const StringPool& strings) {
  if (l.is_string)
    w.str(k, strings.view(static_cast<StringId>(l.value())));
  else
    w.num(k, l.value());
}

// Streams the document through a JsonWriter in the Kineto layout, handing the
// text to the sink in ~1 MiB pieces between events.
class Out {
 public:
  explicit Out(const Sink& sink) : sink_(sink) { buf_.reserve(kFlushBytes + 4096); }
  ~Out() { flush(); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;

  JsonWriter& json() { return w_; }
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

void write_event(JsonWriter& w, const Trace& t, const Event& e) {
  w.begin_object();
  w.str(cat::kPh, std::string_view(&e.phase, 1));
  std::string_view category = cat::category_of_kind(e.kind);
  if (category.empty() || e.kind == EventKind::Flow) category = t.strings.view(e.category);
  if (!category.empty()) w.str(cat::kCat, category);
  w.str(cat::kName, t.name(e));
  write_lane(w, cat::kPid, e.pid, t.strings);
  write_lane(w, cat::kTid, e.tid, t.strings);
  write_us(w, cat::kTs, e.ts_ns);
  if (e.phase == 'X') write_us(w, cat::kDur, e.dur_ns);
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

// The document's members other than the events and the trace's name, in the PyTorch profiler's order.
void write_metadata(JsonWriter& w, const Trace& t) {
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
  if (t.rank >= 0 || t.world_size >= 0 || !t.dist_backend.empty()) {
    w.begin_object(cat::kDistributedInfo);
    if (!t.dist_backend.empty()) w.str("backend", t.dist_backend);
    opt("rank", t.rank);
    opt("world_size", t.world_size);
    w.end_object();
  }
  w.str(cat::kDisplayTimeUnit, "ms");
  if (t.base_time_ns) opt(cat::kBaseTimeNanoseconds, *t.base_time_ns);
}

void write_events(JsonWriter& w, const Trace& t, Out* o) {
  for (const Event& e : t.events) {
    if (e.kind == EventKind::Metadata) continue;  // process/thread names are not kept
    write_event(w, t, e);
    if (o != nullptr) o->maybe_flush();
  }
}

void render(const Trace& t, const Sink& sink) {
  Out o(sink);
  JsonWriter& w = o.json();
  w.begin_object();
  w.num(cat::kSchemaVersion, t.schema_version);
  write_metadata(w, t);
  w.begin_array(cat::kTraceEvents);
  write_events(w, t, &o);
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

namespace {

// `text` as one whole gzip member; level 0 stores it, so its size follows from the text's alone.
std::string gzip_member(std::string_view text, int level) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&zs, static_cast<uLong>(text.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return rc == Z_STREAM_END ? out : std::string{};
}

// Streamed pieces are compressed on the recorder's writer thread while the program runs: fast
// compression (level 1) costs it less CPU than the whole-file writer's level 6.
constexpr int kStreamGzipLevel = 1;
constexpr std::size_t kTrailerPadding = 256;  // the trailer grows in steps of this many characters

}  // namespace

TraceStream::TraceStream(std::string path) : path_(std::move(path)), gzip_(ends_with(path_, ".gz")) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot write: {}", path_, std::strerror(errno)));
  json_ = std::make_unique<JsonWriter>(buf_, JsonLayout::Lines);
  json_->begin_object();
  json_->num(cat::kSchemaVersion, meta_.schema_version);
  json_->begin_array(cat::kTraceEvents);
  std::string header = std::exchange(buf_, {});
  trailer_at_ = 0;
  try {
    write_tail(header);
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

TraceStream::~TraceStream() {
  if (fd_ >= 0) ::close(fd_);
}

void TraceStream::append(const Trace& chunk) {
  meta_.merge_metadata(chunk);
  if (!chunk.trace_name.empty()) meta_.trace_name = chunk.trace_name;
  // A failed write leaves the file as it was (the old trailer in place): the writer's state goes
  // back too, so the next piece is not written as if this one were there.
  auto before = std::make_unique<JsonWriter>(*json_);
  write_events(*json_, chunk, nullptr);
  std::string text = std::exchange(buf_, {});
  try {
    write_tail(text);
  } catch (...) {
    buf_.clear();
    json_ = std::move(before);
    throw;
  }
  for (const Event& e : chunk.events) {
    events_ += e.kind != EventKind::Metadata;
    kernels_ += e.kind == EventKind::Kernel;
  }
}

// Writes `events_text` (already JSON of the open event array) and a new trailer at the old
// trailer's place, in one write.
void TraceStream::write_tail(std::string_view events_text) {
  JsonWriter trailer = *json_;  // a copy: closes the document without closing the stream's writer
  trailer.end_array();
  write_metadata(trailer, meta_);
  if (!meta_.trace_name.empty()) trailer.str(cat::kTraceName, meta_.trace_name);
  trailer.end_object();
  std::string tail = std::exchange(buf_, {});
  trailer_chars_ =
      std::max(trailer_chars_, (tail.size() + 1 + kTrailerPadding - 1) / kTrailerPadding * kTrailerPadding);
  tail.append(trailer_chars_ - 1 - tail.size(), ' ');
  tail += '\n';
  std::string piece;
  if (gzip_) {
    if (!events_text.empty()) piece = gzip_member(events_text, kStreamGzipLevel);
    const std::size_t events_bytes = piece.size();
    piece += gzip_member(tail, 0);
    if (piece.empty() || (!events_text.empty() && events_bytes == 0))
      throw InputError(fmt::format("{}: cannot write: gzip compression failed", path_));
    write_at(piece, events_bytes);
  } else {
    piece.reserve(events_text.size() + tail.size());
    piece.append(events_text);
    piece.append(tail);
    write_at(piece, events_text.size());
  }
}

// One pwrite (looping on short writes) at the trailer's offset; the trailer then starts `events_bytes`
// further on.
void TraceStream::write_at(std::string_view piece, std::size_t events_bytes) {
  std::size_t done = 0;
  while (done < piece.size()) {
    const ssize_t n = ::pwrite(fd_, piece.data() + done, piece.size() - done, static_cast<off_t>(trailer_at_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(n < 0 ? errno : ENOSPC);
      // Part of the piece may be in: put the old trailer back over it (those bytes exist, so this
      // needs no new space) and cut the file after it, so it reads as before.
      if (done > 0 && !trailer_.empty() &&
          ::pwrite(fd_, trailer_.data(), trailer_.size(), static_cast<off_t>(trailer_at_)) ==
              static_cast<ssize_t>(trailer_.size())) [[maybe_unused]]
        const int cut = ::ftruncate(fd_, static_cast<off_t>(trailer_at_ + trailer_.size()));
      throw InputError(fmt::format("{}: cannot write: {}", path_, why));
    }
    done += static_cast<std::size_t>(n);
  }
  trailer_at_ += events_bytes;
  trailer_.assign(piece.substr(events_bytes));
}

}  // namespace attnprof
