// The field catalogue: every JSON category and key the reader understands and
// the writer emits, in one place, so the two cannot drift apart (Kineto's idea).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "trace/event.h"

namespace attnprof::catalogue {

struct CategoryName {
  std::string_view json;
  EventKind kind;
  bool written;  // the name the writer uses for this kind (one per kind)
};

// All category names, current and legacy (older Kineto / HTA test traces).
std::span<const CategoryName> categories();
// Kind for a category as written in a trace; nullopt for unknown categories.
std::optional<EventKind> kind_of_category(std::string_view category);
// The category the writer uses for a kind ("" for Metadata/Instant/Other).
std::string_view category_of_kind(EventKind kind);

// Top-level keys.
inline constexpr std::string_view kTraceEvents = "traceEvents";
inline constexpr std::string_view kDeviceProperties = "deviceProperties";
inline constexpr std::string_view kBaseTimeNanoseconds = "baseTimeNanoseconds";
inline constexpr std::string_view kSchemaVersion = "schemaVersion";
inline constexpr std::string_view kTraceName = "traceName";
inline constexpr std::string_view kDisplayTimeUnit = "displayTimeUnit";
inline constexpr std::string_view kCudaRuntimeVersion = "cuda_runtime_version";
inline constexpr std::string_view kCudaDriverVersion = "cuda_driver_version";
inline constexpr std::string_view kCuptiVersion = "cupti_version";
inline constexpr std::string_view kDroppedRecords = "attnprof_dropped_records";
inline constexpr std::string_view kDistributedInfo =
    "distributedInfo";  // torch.distributed's rank, world size, backend

// Event keys.
inline constexpr std::string_view kPh = "ph";
inline constexpr std::string_view kCat = "cat";
inline constexpr std::string_view kName = "name";
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kTid = "tid";
inline constexpr std::string_view kTs = "ts";
inline constexpr std::string_view kDur = "dur";
inline constexpr std::string_view kId = "id";
inline constexpr std::string_view kArgs = "args";
inline constexpr std::string_view kBindingPoint = "bp";

// Keys inside "args".
inline constexpr std::string_view kExternalId = "External id";
inline constexpr std::string_view kCorrelation = "correlation";
inline constexpr std::string_view kDevice = "device";
inline constexpr std::string_view kContext = "context";
inline constexpr std::string_view kStream = "stream";
inline constexpr std::string_view kGrid = "grid";
inline constexpr std::string_view kBlock = "block";
inline constexpr std::string_view kRegistersPerThread = "registers per thread";
inline constexpr std::string_view kSharedMemory = "shared memory";
inline constexpr std::string_view kDynamicSharedMemory = "dynamic shared memory";
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kBlocksPerSm = "blocks per SM";
inline constexpr std::string_view kWarpsPerSm = "warps per SM";
inline constexpr std::string_view kOccupancy = "est. achieved occupancy %";
inline constexpr std::string_view kMemoryBandwidth = "memory bandwidth (GB/s)";
// CPU ops recorded with record_shapes=True.
inline constexpr std::string_view kInputDims = "Input Dims";
inline constexpr std::string_view kInputStrides = "Input Strides";
inline constexpr std::string_view kInputType = "Input type";
inline constexpr std::string_view kConcreteInputs = "Concrete Inputs";

// Keys inside each "deviceProperties" entry.
inline constexpr std::string_view kDevId = "id";
inline constexpr std::string_view kDevName = "name";
inline constexpr std::string_view kDevTotalGlobalMem = "totalGlobalMem";
inline constexpr std::string_view kDevComputeMajor = "computeMajor";
inline constexpr std::string_view kDevComputeMinor = "computeMinor";
inline constexpr std::string_view kDevMaxThreadsPerBlock = "maxThreadsPerBlock";
inline constexpr std::string_view kDevMaxThreadsPerSm = "maxThreadsPerMultiprocessor";
inline constexpr std::string_view kDevRegsPerBlock = "regsPerBlock";
inline constexpr std::string_view kDevRegsPerSm = "regsPerMultiprocessor";
inline constexpr std::string_view kDevWarpSize = "warpSize";
inline constexpr std::string_view kDevSharedMemPerBlock = "sharedMemPerBlock";
inline constexpr std::string_view kDevSharedMemPerBlockOptin = "sharedMemPerBlockOptin";
inline constexpr std::string_view kDevSharedMemPerSm = "sharedMemPerMultiprocessor";
inline constexpr std::string_view kDevNumSms = "numSms";

// The integer fields of a deviceProperties entry, each with how to read and
// write it on DeviceProperties: the reader and the writer both walk this table.
struct DeviceField {
  std::string_view key;
  std::int64_t (*get)(const DeviceProperties&);
  void (*set)(DeviceProperties&, std::int64_t);
};
std::span<const DeviceField> device_fields();

}  // namespace attnprof::catalogue
