// An NVTX range as a scope: `auto r = attnprof::capture::range("attn_fwd");`
// pushes on construction and pops on destruction. The recorder turns it into a
// user_annotation event; Nsight Systems sees it too. Header-only (NVTX v3).
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace attnprof::capture {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Guaranteed copy elision makes this a scope guard: `auto r = range("fwd");`.
[[nodiscard]] inline NvtxRange range(const char* name) { return NvtxRange(name); }

}  // namespace attnprof::capture
