// What `attnprof record` can capture, as a bit set, and its spelling on the
// command line ("--kinds kernel,memcpy") and in ATTNPROF_RECORD_KINDS.
// Header-only and CUDA-free: the CLI validates kinds without linking CUPTI.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnprof::capture {

enum RecordKind : std::uint32_t {
  kKernels = 1u << 0,  // kernel executions (concurrent kernel records)
  kMemcpy = 1u << 1,   // memory copies
  kMemset = 1u << 2,   // memory sets
  kRuntime = 1u << 3,  // CUDA runtime calls that launch, copy or synchronize
  kDriver = 1u << 4,   // CUDA driver calls that launch, copy or synchronize
  kSync = 1u << 5,     // stream/event/context synchronization
  kNvtx = 1u << 6,     // NVTX ranges and marks
};
inline constexpr std::uint32_t kAllKinds = 0x7f;

struct RecordKindName {
  std::string_view name;
  std::uint32_t bit;
};
inline constexpr std::array<RecordKindName, 7> kRecordKindNames{{
    {"kernel", kKernels},
    {"memcpy", kMemcpy},
    {"memset", kMemset},
    {"runtime", kRuntime},
    {"driver", kDriver},
    {"sync", kSync},
    {"nvtx", kNvtx},
}};

// Parses a comma-separated list ("kernel,nvtx", "all"); nullopt names the
// first unknown word through `bad` so the caller can report it.
inline std::optional<std::uint32_t> parse_record_kinds(std::string_view list, std::string* bad = nullptr) {
  std::uint32_t kinds = 0;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view word = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (word.empty()) continue;
    if (word == "all") {
      kinds |= kAllKinds;
      continue;
    }
    bool known = false;
    for (const auto& k : kRecordKindNames) {
      if (k.name == word) {
        kinds |= k.bit;
        known = true;
      }
    }
    if (!known) {
      if (bad != nullptr) *bad = std::string(word);
      return std::nullopt;
    }
  }
  if (kinds == 0) {
    if (bad != nullptr) bad->clear();
    return std::nullopt;
  }
  return kinds;
}

// CUPTI activity attributes the recorder sets before recording, from ATTNPROF_RECORD_CUPTI_ATTRS
// ("per_thread_buffers=0,host_pinned=1,device_buffer_mb=16"): an A/B knob for the per-launch cost.
// Unset ones keep CUPTI's defaults (per-thread buffers on, device memory, 8 MB per device buffer).
struct CuptiAttributes {
  std::optional<bool> per_thread_buffers;         // CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER
  std::optional<bool> host_pinned;                // CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED
  std::optional<std::uint32_t> device_buffer_mb;  // CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE
};

// nullopt names the first bad item ("name=value") through `bad`.
inline std::optional<CuptiAttributes> parse_cupti_attributes(std::string_view list, std::string* bad = nullptr) {
  CuptiAttributes a;
  while (!list.empty()) {
    const auto comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    const bool is_bool = value == "0" || value == "1";
    std::uint32_t number = 0;
    bool is_number = !value.empty() && value.size() <= 4;
    for (const char c : value) {
      is_number = is_number && c >= '0' && c <= '9';
      number = number * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (name == "per_thread_buffers" && is_bool) {
      a.per_thread_buffers = value == "1";
    } else if (name == "host_pinned" && is_bool) {
      a.host_pinned = value == "1";
    } else if (name == "device_buffer_mb" && is_number && number >= 1 && number <= 1024) {
      a.device_buffer_mb = number;
    } else {
      if (bad != nullptr) *bad = std::string(item);
      return std::nullopt;
    }
  }
  return a;
}

inline std::string record_kinds_list() {
  std::string out;
  for (const auto& k : kRecordKindNames) {
    if (!out.empty()) out += ',';
    out += k.name;
  }
  return out;
}

}  // namespace attnprof::capture
