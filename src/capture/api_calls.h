// The CUDA runtime and driver calls the recorder keeps: those that launch work,
// copy or set memory, or synchronize. A table, so each row is testable and
// adding a call is one line. Needs only CUPTI's callback-id headers.
#pragma once

#include <cupti_callbacks.h>

#include <string_view>
#include <vector>

namespace attnprof::capture {

struct ApiCall {
  std::string_view name;  // as the profiler names it ("cudaLaunchKernel")
  bool synchronizes;      // blocks the CPU thread (or a stream) until GPU work is done
};

// The row for (domain, cbid), or nullptr when the call is not kept.
const ApiCall* find_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

// Every kept call of a domain: the recorder asks CUPTI to trace only these,
// since tracing every runtime/driver call costs microseconds per launch.
std::vector<CUpti_CallbackId> kept_api_calls(CUpti_CallbackDomain domain);

}  // namespace attnprof::capture
