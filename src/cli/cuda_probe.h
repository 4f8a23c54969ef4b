// Is there an NVIDIA driver and GPU here? Asked by `record` before it starts a
// program and by `bench` before it picks a device, without linking CUDA: the
// driver library is loaded at run time.
#pragma once

#include <string>

namespace attnprof::cli {

// Why CUDA programs cannot run here ("no NVIDIA driver found ...", "no NVIDIA
// GPU found ..."), or "" when the driver loads and sees a GPU.
std::string cuda_device_problem();

}  // namespace attnprof::cli
