// Loads the CUDA plugin (cuda_backend.h) on first use: from
// $ATTNPROF_BENCH_CUDA_PLUGIN, beside the running binary, or in the build tree.
#include <dlfcn.h>

#include <filesystem>
#include <system_error>

#include <fmt/core.h>

#include "bench/cuda_backend.h"
#include "common/input_error.h"

namespace attnprof::bench {
namespace {

constexpr const char* kPlugin = "libattnprof_bench_cuda.so";

struct Loaded {
  const CudaBackend* backend = nullptr;
  std::string why;  // when backend is null
};

Loaded load() {
#ifndef ATTNPROF_BENCH_CUDA_PLUGIN_DIR
  return {nullptr, "attnprof was built without CUDA"};
#else
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ATTNPROF_BENCH_CUDA_PLUGIN"); env != nullptr && *env != '\0')
    candidates.emplace_back(env);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / kPlugin).string());
  candidates.push_back(std::string(ATTNPROF_BENCH_CUDA_PLUGIN_DIR) + "/" + kPlugin);
  std::string errors;
  for (const auto& path : candidates) {
    if (!std::filesystem::exists(path, ec)) continue;
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);  // never closed: its functions stay in use
    if (handle == nullptr) {
      errors = ::dlerror();
      continue;
    }
    using Entry = const CudaBackend* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, "attnprof_bench_cuda_backend"));
    if (entry == nullptr) {
      errors = fmt::format("{} has no attnprof_bench_cuda_backend", path);
      continue;
    }
    return {entry(), {}};
  }
  if (!errors.empty()) return {nullptr, fmt::format("cannot load the CUDA bench plugin: {}", errors)};
  return {nullptr, fmt::format("the CUDA bench plugin ({}) is not beside attnprof", kPlugin)};
#endif
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::vector<Implementation> cuda_implementations() {
  return loaded().backend != nullptr ? loaded().backend->implementations() : std::vector<Implementation>{};
}

std::string cuda_device_name(std::string* why) {
  if (loaded().backend == nullptr) {
    if (why != nullptr) *why = loaded().why;
    return {};
  }
  return loaded().backend->device_name(why);
}

void run_on_cuda(const Plan& plan, BenchRun& run) {
  if (loaded().backend == nullptr) throw InputError(fmt::format("--device cuda: {}", loaded().why));
  loaded().backend->run(plan, run);
}

}  // namespace attnprof::bench
