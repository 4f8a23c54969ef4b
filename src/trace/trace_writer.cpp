// Kineto-compatible Chrome-trace writer. Every key comes from catalogue.h, the
// same table the reader uses; strings go through one escaper, so the output is
// always valid JSON. Writes in ~1 MiB pieces; files are replaced atomically.
#include "trace/trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include "common/input_error.h"
#include "common/json.h"
#include "trace/catalogue.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace cat = catalogue;
using Sink = std::function<void(std::string_view)>;

class JsonOut {
 public:
  explicit JsonOut(const Sink& sink) : sink_(sink) { buf_.reserve(kFlushBytes + 4096); }
  ~JsonOut() { flush(); }
  JsonOut(const JsonOut&) = delete;
  JsonOut& operator=(const JsonOut&) = delete;

  void raw(std::string_view s) { buf_.append(s); }
  void key(std::string_view k) {
    append_quoted(buf_, k);
    buf_ += ": ";
  }
  void str(std::string_view k, std::string_view v) {
    key(k);
    append_quoted(buf_, v);
  }
  void num(std::string_view k, std::int64_t v) {
    key(k);
    fmt::format_to(std::back_inserter(buf_), "{}", v);
  }
  void real(std::string_view k, double v) {
    key(k);
    fmt::format_to(std::back_inserter(buf_), "{}", v);
  }
  void us(std::string_view k, std::int64_t ns) {
    key(k);
    json_text::append_ns_as_us(buf_, ns);
  }
  void lane(std::string_view k, const Lane& l, const StringPool& strings) {
    if (l.is_string)
      str(k, strings.view(static_cast<StringId>(l.value())));
    else
      num(k, l.value());
  }
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
};

// `sep` writes the separator before each field (nothing before the first).
template <typename Sep>
void write_gpu_args(JsonOut& o, const GpuArgs& g, EventKind kind, Sep&& sep) {
  if (g.device >= 0) {
    sep();
    o.num(cat::kDevice, g.device);
  }
  if (g.context >= 0) {
    sep();
    o.num(cat::kContext, g.context);
  }
  if (g.stream >= 0) {
    sep();
    o.num(cat::kStream, g.stream);
  }
  if (kind == EventKind::Kernel) {
    if (g.registers_per_thread >= 0) {
      sep();
      o.num(cat::kRegistersPerThread, g.registers_per_thread);
    }
    if (g.shared_memory >= 0) {
      sep();
      o.num(cat::kSharedMemory, g.shared_memory);
    }
    if (g.dynamic_shared_memory >= 0) {
      sep();
      o.num(cat::kDynamicSharedMemory, g.dynamic_shared_memory);
    }
    if (g.blocks_per_sm >= 0) {
      sep();
      o.real(cat::kBlocksPerSm, g.blocks_per_sm);
    }
    if (g.warps_per_sm >= 0) {
      sep();
      o.real(cat::kWarpsPerSm, g.warps_per_sm);
    }
    if (g.grid[0] >= 0) {
      sep();
      o.key(cat::kGrid);
      o.raw(fmt::format("[{}, {}, {}]", g.grid[0], g.grid[1], g.grid[2]));
    }
    if (g.block[0] >= 0) {
      sep();
      o.key(cat::kBlock);
      o.raw(fmt::format("[{}, {}, {}]", g.block[0], g.block[1], g.block[2]));
    }
    if (g.occupancy_pct >= 0) {
      sep();
      o.real(cat::kOccupancy, g.occupancy_pct);
    }
  }
  if (g.bytes >= 0) {
    sep();
    o.num(cat::kBytes, g.bytes);
  }
}

void write_event(JsonOut& o, const Trace& t, const Event& e) {
  o.raw("  {");
  o.str(cat::kPh, std::string_view(&e.phase, 1));
  std::string_view category = cat::category_of_kind(e.kind);
  if (category.empty() || e.kind == EventKind::Flow) category = t.strings.view(e.category);
  if (!category.empty()) {
    o.raw(", ");
    o.str(cat::kCat, category);
  }
  o.raw(", ");
  o.str(cat::kName, t.name(e));
  o.raw(", ");
  o.lane(cat::kPid, e.pid, t.strings);
  o.raw(", ");
  o.lane(cat::kTid, e.tid, t.strings);
  o.raw(", ");
  o.us(cat::kTs, e.ts_ns);
  if (e.phase == 'X') {
    o.raw(", ");
    o.us(cat::kDur, e.dur_ns);
  }
  if (e.kind == EventKind::Flow) {
    o.raw(", ");
    o.num(cat::kId, e.correlation);
    if (e.phase == 'f') {
      o.raw(", ");
      o.str(cat::kBindingPoint, "e");
    }
    o.raw("}");
    return;
  }
  const bool args = e.external_id >= 0 || e.correlation >= 0 || e.has_gpu_args();
  if (args) {
    o.raw(", ");
    o.key(cat::kArgs);
    o.raw("{");
    bool first = true;
    auto sep = [&] {
      if (!first) o.raw(", ");
      first = false;
    };
    if (e.external_id >= 0) {
      sep();
      o.num(cat::kExternalId, e.external_id);
    }
    if (e.correlation >= 0) {
      sep();
      o.num(cat::kCorrelation, e.correlation);
    }
    if (const GpuArgs* g = t.args(e)) write_gpu_args(o, *g, e.kind, sep);
    o.raw("}");
  }
  o.raw("}");
}

void render(const Trace& t, const Sink& sink) {
  JsonOut o(sink);
  o.raw("{\n  ");
  o.num(cat::kSchemaVersion, t.schema_version);
  if (!t.devices.empty()) {
    o.raw(",\n  ");
    o.key(cat::kDeviceProperties);
    o.raw("[");
    for (std::size_t i = 0; i < t.devices.size(); ++i) {
      const DeviceProperties& d = t.devices[i];
      o.raw(i == 0 ? "\n    {" : ",\n    {");
      o.str(cat::kDevName, d.name);
      for (const cat::DeviceField& f : cat::device_fields()) {
        o.raw(", ");
        o.num(f.key, f.get(d));
      }
      o.raw("}");
    }
    o.raw("\n  ]");
  }
  auto opt = [&](std::string_view k, std::int64_t v) {
    if (v >= 0) {
      o.raw(",\n  ");
      o.num(k, v);
    }
  };
  opt(cat::kCudaRuntimeVersion, t.cuda_runtime_version);
  opt(cat::kCudaDriverVersion, t.cuda_driver_version);
  opt(cat::kCuptiVersion, t.cupti_version);
  if (t.dropped_records > 0) opt(cat::kDroppedRecords, t.dropped_records);
  o.raw(",\n  ");
  o.str(cat::kDisplayTimeUnit, "ms");
  if (t.base_time_ns) opt(cat::kBaseTimeNanoseconds, *t.base_time_ns);
  o.raw(",\n  ");
  o.key(cat::kTraceEvents);
  o.raw("[\n");
  bool first = true;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::Metadata) continue;  // process/thread names are not kept
    if (!first) o.raw(",\n");
    first = false;
    write_event(o, t, e);
    o.maybe_flush();
  }
  o.raw("\n  ]");
  if (!t.trace_name.empty()) {
    o.raw(",\n  ");
    o.str(cat::kTraceName, t.trace_name);
  }
  o.raw("\n}\n");
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

void write_trace_json(const Trace& trace, std::ostream& out) {
  render(trace, [&](std::string_view s) { out.write(s.data(), static_cast<std::streamsize>(s.size())); });
}

void write_trace_file(const Trace& trace, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp = (folder / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw InputError(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  bool ok = true;
  std::string error;
  if (ends_with(path, ".gz")) {
    gzFile gz = gzdopen(fd, "wb6");
    if (gz == nullptr) {
      ::close(fd);
      ok = false;
      error = "cannot start gzip";
    } else {
      render(trace, [&](std::string_view s) {
        if (ok && gzwrite(gz, s.data(), static_cast<unsigned>(s.size())) != static_cast<int>(s.size())) {
          ok = false;
          error = "gzip write failed";
        }
      });
      if (gzclose(gz) != Z_OK && ok) {
        ok = false;
        error = "gzip close failed";
      }
    }
  } else {
    render(trace, [&](std::string_view s) {
      std::size_t done = 0;
      while (ok && done < s.size()) {
        const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          ok = false;
          error = std::strerror(errno);
        } else {
          done += static_cast<std::size_t>(n);
        }
      }
    });
    if (::close(fd) != 0 && ok) {
      ok = false;
      error = std::strerror(errno);
    }
  }
  if (ok) ::chmod(tmp.c_str(), 0644);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) error = std::strerror(errno);
    std::remove(tmp.c_str());
    throw InputError(fmt::format("{}: cannot write: {}", path, error));
  }
}

}  // namespace attnprof
