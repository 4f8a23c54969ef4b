// Every CUPTI call in the recorder goes through this check; a failure becomes
// a RecorderError naming the call and CUPTI's reason.
#pragma once

#include <cupti.h>

#include <string>

#include "capture/recorder.h"

namespace attnprof::capture {

std::string cupti_error_text(CUptiResult result);
void check_cupti(CUptiResult result, const char* call);

}  // namespace attnprof::capture

#define ATTNPROF_CUPTI_CHECK(call) ::attnprof::capture::check_cupti((call), #call)
