// Category names, current and legacy, and the kind each one means.
#include "trace/catalogue.h"

#include <array>

namespace attnprof::catalogue {
namespace {

constexpr std::array kCategories = {
    CategoryName{"cpu_op", EventKind::CpuOp, true},
    CategoryName{"user_annotation", EventKind::UserAnnotation, true},
    CategoryName{"gpu_user_annotation", EventKind::GpuUserAnnotation, true},
    CategoryName{"cuda_runtime", EventKind::CudaRuntime, true},
    CategoryName{"cuda_driver", EventKind::CudaDriver, true},
    CategoryName{"cuda_sync", EventKind::CudaSync, true},
    CategoryName{"kernel", EventKind::Kernel, true},
    CategoryName{"gpu_memcpy", EventKind::GpuMemcpy, true},
    CategoryName{"gpu_memset", EventKind::GpuMemset, true},
    CategoryName{"python_function", EventKind::PythonFunction, true},
    CategoryName{"ac2g", EventKind::Flow, true},
    // Legacy and alternative spellings (older Kineto, HTA fixtures, other writers).
    CategoryName{"async_cpu_to_gpu", EventKind::Flow, false},
    CategoryName{"fwdbwd", EventKind::Flow, false},
    CategoryName{"Operator", EventKind::CpuOp, false},
    CategoryName{"operator", EventKind::CpuOp, false},
    CategoryName{"Kernel", EventKind::Kernel, false},
    CategoryName{"Runtime", EventKind::CudaRuntime, false},
    CategoryName{"runtime", EventKind::CudaRuntime, false},
    CategoryName{"Driver", EventKind::CudaDriver, false},
    CategoryName{"Memcpy", EventKind::GpuMemcpy, false},
    CategoryName{"Memset", EventKind::GpuMemset, false},
    CategoryName{"Python", EventKind::PythonFunction, false},
};

#define ATTNPROF_DEVICE_FIELD(key, member)                                                         \
  DeviceField {                                                                                    \
    key, [](const DeviceProperties& d) -> std::int64_t { return d.member; },                       \
        [](DeviceProperties& d, std::int64_t v) { d.member = static_cast<decltype(d.member)>(v); } \
  }

const std::array kDeviceFields = {
    ATTNPROF_DEVICE_FIELD(kDevId, id),
    ATTNPROF_DEVICE_FIELD(kDevTotalGlobalMem, total_global_mem),
    ATTNPROF_DEVICE_FIELD(kDevComputeMajor, compute_major),
    ATTNPROF_DEVICE_FIELD(kDevComputeMinor, compute_minor),
    ATTNPROF_DEVICE_FIELD(kDevMaxThreadsPerBlock, max_threads_per_block),
    ATTNPROF_DEVICE_FIELD(kDevMaxThreadsPerSm, max_threads_per_sm),
    ATTNPROF_DEVICE_FIELD(kDevRegsPerBlock, regs_per_block),
    ATTNPROF_DEVICE_FIELD(kDevRegsPerSm, regs_per_sm),
    ATTNPROF_DEVICE_FIELD(kDevWarpSize, warp_size),
    ATTNPROF_DEVICE_FIELD(kDevSharedMemPerBlock, shared_mem_per_block),
    ATTNPROF_DEVICE_FIELD(kDevSharedMemPerBlockOptin, shared_mem_per_block_optin),
    ATTNPROF_DEVICE_FIELD(kDevSharedMemPerSm, shared_mem_per_sm),
    ATTNPROF_DEVICE_FIELD(kDevNumSms, num_sms),
};
#undef ATTNPROF_DEVICE_FIELD

}  // namespace

std::span<const DeviceField> device_fields() { return kDeviceFields; }

std::span<const CategoryName> categories() { return kCategories; }

std::optional<EventKind> kind_of_category(std::string_view category) {
  for (const auto& c : kCategories)
    if (c.json == category) return c.kind;
  return std::nullopt;
}

std::string_view category_of_kind(EventKind kind) {
  for (const auto& c : kCategories)
    if (c.written && c.kind == kind) return c.json;
  return {};
}

}  // namespace attnprof::catalogue
