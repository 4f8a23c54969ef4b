// Device properties through the driver API (see device_properties.h). The
// recorder asks only for devices that ran work, after the program set them up.
// libcuda is looked up at run time, not linked: the recorder's libraries and
// tests must load (and skip) on machines without a driver.
#include "capture/device_properties.h"

#include <cuda.h>
#include <dlfcn.h>

#include <array>

namespace attnprof::capture {
namespace {

struct Driver {
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) get_name = nullptr;
  decltype(&::cuDeviceTotalMem) total_mem = nullptr;
  decltype(&::cuDeviceGetAttribute) get_attribute = nullptr;
  decltype(&::cuDriverGetVersion) driver_version = nullptr;
  bool ok() const { return device_get && get_name && total_mem && get_attribute && driver_version; }
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // loaded by the program
    if (lib == nullptr) lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == nullptr) return r;
    r.device_get = reinterpret_cast<decltype(r.device_get)>(dlsym(lib, "cuDeviceGet"));
    r.get_name = reinterpret_cast<decltype(r.get_name)>(dlsym(lib, "cuDeviceGetName"));
    r.total_mem = reinterpret_cast<decltype(r.total_mem)>(dlsym(lib, "cuDeviceTotalMem_v2"));
    r.get_attribute = reinterpret_cast<decltype(r.get_attribute)>(dlsym(lib, "cuDeviceGetAttribute"));
    r.driver_version = reinterpret_cast<decltype(r.driver_version)>(dlsym(lib, "cuDriverGetVersion"));
    return r;
  }();
  return d;
}

bool attribute(CUdevice dev, CUdevice_attribute attr, int& out) {
  return driver().get_attribute(&out, attr, dev) == CUDA_SUCCESS;
}

}  // namespace

std::optional<DeviceProperties> query_device_properties(int device) {
  if (!driver().ok()) return std::nullopt;
  CUdevice dev = 0;
  if (driver().device_get(&dev, device) != CUDA_SUCCESS) return std::nullopt;
  DeviceProperties p;
  p.id = device;
  std::array<char, 256> name{};
  if (driver().get_name(name.data(), static_cast<int>(name.size()), dev) != CUDA_SUCCESS) return std::nullopt;
  p.name = name.data();
  std::size_t total = 0;
  if (driver().total_mem(&total, dev) != CUDA_SUCCESS) return std::nullopt;
  p.total_global_mem = static_cast<std::int64_t>(total);
  const bool ok = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, p.compute_major) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, p.compute_minor) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, p.num_sms) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, p.max_threads_per_block) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, p.max_threads_per_sm) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, p.regs_per_block) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, p.regs_per_sm) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, p.warp_size) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, p.shared_mem_per_block) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, p.shared_mem_per_block_optin) &&
                  attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, p.shared_mem_per_sm);
  if (!ok) return std::nullopt;
  return p;
}

int driver_version() {
  int v = -1;
  return driver().ok() && driver().driver_version(&v) == CUDA_SUCCESS ? v : -1;
}

}  // namespace attnprof::capture
