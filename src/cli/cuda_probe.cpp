// cuda_device_problem (see cuda_probe.h): libcuda.so.1 through dlopen, cuInit,
// cuDeviceGetCount.
#include "cli/cuda_probe.h"

#include <dlfcn.h>

#include <cstdlib>

#include <fmt/core.h>

namespace attnprof::cli {

std::string cuda_device_problem() {
  // Loaded by name, never linked: attnprof itself runs where no CUDA library is installed.
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    const char* why = dlerror();
    return fmt::format("no NVIDIA driver found on this machine (libcuda.so.1 cannot be loaded: {})",
                       why != nullptr ? why : "unknown reason");
  }
  using Init = int (*)(unsigned);
  using Count = int (*)(int*);
  using ErrorString = int (*)(int, const char**);
  const auto init = reinterpret_cast<Init>(dlsym(cuda, "cuInit"));
  const auto count = reinterpret_cast<Count>(dlsym(cuda, "cuDeviceGetCount"));
  const auto error_string = reinterpret_cast<ErrorString>(dlsym(cuda, "cuGetErrorString"));
  if (init == nullptr || count == nullptr) return "the NVIDIA driver's libcuda.so.1 lacks cuInit: a broken install";
  if (const int rc = init(0); rc != 0) {
    const char* text = nullptr;
    if (error_string != nullptr) error_string(rc, &text);
    return fmt::format("the NVIDIA driver found no usable GPU (cuInit: {}, error {})",
                       text != nullptr ? text : "unknown", rc);
  }
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible != nullptr ? fmt::format("no NVIDIA GPU visible (CUDA_VISIBLE_DEVICES={})", visible)
                              : std::string("no NVIDIA GPU found: the driver sees no device");
  }
  return {};  // the library stays loaded: unloading a driver after cuInit is not safe
}

}  // namespace attnprof::cli
