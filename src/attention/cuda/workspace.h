// Carving one workspace allocation into typed buffers, 256-byte aligned. Run
// with a null base it only counts, so the WorkspaceFn and the implementation
// share the same carving code and cannot disagree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include <fmt/core.h>

#include "attention/params.h"

namespace attnprof::attention::cuda {

// Throws when the caller's workspace is smaller than the implementation `name` needs.
inline void require_workspace(const ExecContext& ctx, std::size_t need, const char* name) {
  if (ctx.workspace_bytes < need)
    throw std::runtime_error(
        fmt::format("{}: workspace of {} bytes is below the {} needed", name, ctx.workspace_bytes, need));
}

class WorkspaceCarver {
 public:
  explicit WorkspaceCarver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(std::int64_t count) {
    const std::size_t at = used_;
    used_ += (static_cast<std::size_t>(count) * sizeof(T) + 255) / 256 * 256;
    return base_ ? reinterpret_cast<T*>(base_ + at) : nullptr;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

}  // namespace attnprof::attention::cuda
