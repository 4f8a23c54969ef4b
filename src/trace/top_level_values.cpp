// The top-level values beside traceEvents (see top_level_values.h).
#include "trace/top_level_values.h"

#include <cstdint>
#include <string>

#include <fmt/core.h>

#include "common/input_error.h"
#include "trace/catalogue.h"
#include "trace/json_text.h"

namespace attnprof {
namespace {

namespace cat = catalogue;

[[noreturn]] void fail(std::string_view label, const std::string& what) {
  throw InputError(fmt::format("{}: {}", label, what));
}

// {"backend": "nccl", "rank": 3, "world_size": 8, ...}; fields of other types are ignored.
void read_distributed(simdjson::dom::element v, Trace& trace, std::string_view label) {
  simdjson::dom::object fields;
  if (v.get_object().get(fields)) fail(label, "\"distributedInfo\" must be an object");
  for (auto [k, val] : fields) {
    if (k == "backend" && val.is_string()) trace.dist_backend = std::string(val.get_string().value_unsafe());
    if ((k == "rank" || k == "world_size") && val.is_int64())
      (k == "rank" ? trace.rank : trace.world_size) = val.get_int64().value_unsafe();
  }
}

void read_devices(simdjson::dom::element v, Trace& trace, std::string_view label) {
  simdjson::dom::array list;
  if (v.get_array().get(list)) fail(label, "\"deviceProperties\" must be an array");
  for (simdjson::dom::element d : list) {
    simdjson::dom::object fields;
    if (d.get_object().get(fields)) fail(label, "\"deviceProperties\" entries must be objects");
    DeviceProperties p;
    for (auto [k, val] : fields) {
      if (k == cat::kDevName) {
        if (val.is_string()) p.name = std::string(val.get_string().value_unsafe());
        continue;
      }
      std::int64_t n = 0;
      if (val.is_int64())
        n = val.get_int64().value_unsafe();
      else if (val.is_uint64())
        n = static_cast<std::int64_t>(val.get_uint64().value_unsafe());
      else
        continue;  // tolerate producer-specific fields
      for (const cat::DeviceField& f : cat::device_fields())
        if (k == f.key) f.set(p, n);
    }
    trace.devices.push_back(std::move(p));
  }
}

}  // namespace

void read_top_level_value(simdjson::dom::parser& dom, const std::string& key, std::string_view text, Trace& trace,
                          std::string_view label) {
  const bool wanted = key == cat::kDeviceProperties || key == cat::kBaseTimeNanoseconds || key == cat::kSchemaVersion ||
                      key == cat::kTraceName || key == cat::kCudaRuntimeVersion || key == cat::kCudaDriverVersion ||
                      key == cat::kCuptiVersion || key == cat::kDroppedRecords || key == cat::kDistributedInfo;
  simdjson::padded_string padded(text);
  simdjson::dom::element v;
  if (auto err = dom.parse(padded).get(v); err)
    fail(label, fmt::format("invalid JSON in the value of \"{}\": {}", key, simdjson::error_message(err)));
  if (!wanted) return;
  auto want_int = [&](std::int64_t& out) {
    std::int64_t i = 0;
    double d = 0;
    if (v.get_int64().get(i) == simdjson::SUCCESS) {
      out = i;
    } else if (v.get_double().get(d) == simdjson::SUCCESS) {
      const auto n = json_text::double_to_int64(d);
      if (!n) fail(label, fmt::format("\"{}\" is out of range", key));
      out = *n;
    } else {
      fail(label, fmt::format("\"{}\" must be a number", key));
    }
  };
  if (key == cat::kBaseTimeNanoseconds) {
    std::int64_t base = 0;
    want_int(base);
    trace.base_time_ns = base;
  } else if (key == cat::kSchemaVersion) {
    want_int(trace.schema_version);
  } else if (key == cat::kCudaRuntimeVersion) {
    want_int(trace.cuda_runtime_version);
  } else if (key == cat::kCudaDriverVersion) {
    want_int(trace.cuda_driver_version);
  } else if (key == cat::kCuptiVersion) {
    want_int(trace.cupti_version);
  } else if (key == cat::kDroppedRecords) {
    want_int(trace.dropped_records);
  } else if (key == cat::kTraceName) {
    if (!v.is_string()) fail(label, "\"traceName\" must be a string");
    trace.trace_name = std::string(v.get_string().value_unsafe());
  } else if (key == cat::kDeviceProperties) {
    read_devices(v, trace, label);
  } else if (key == cat::kDistributedInfo) {
    read_distributed(v, trace, label);
  }
}

}  // namespace attnprof
