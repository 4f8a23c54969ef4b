// Reads a GPU's properties through the CUDA driver, for the trace's
// "deviceProperties" (the fields the PyTorch profiler writes).
#pragma once

#include <optional>

#include "trace/event.h"

namespace attnprof::capture {

// nullopt when the driver cannot describe `device` (not initialized, bad id).
std::optional<DeviceProperties> query_device_properties(int device);

// The driver's CUDA version (13000 = 13.0), or -1.
int driver_version();

}  // namespace attnprof::capture
