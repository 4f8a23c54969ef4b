// Every attention implementation the bench knows, by name, with where it runs,
// its scratch needs, and why it cannot run when it cannot (the `fused` slot
// until the project's kernel lands, cudnn without cuDNN, ...).
#pragma once

#include <string>
#include <vector>

#include "attention/params.h"

namespace attnprof::bench {

struct Implementation {
  std::string name;
  bool on_gpu = false;
  attention::AttentionFn run = nullptr;
  attention::WorkspaceFn workspace = nullptr;  // null: none
  std::string unavailable;                     // non-empty: why it cannot run
  std::string about;                           // one line for --help and the table legend
};

// In ladder order: the slow path first, then each fix, then the fused ones.
std::vector<Implementation> cpu_implementations();
// Empty when built without CUDA.
std::vector<Implementation> cuda_implementations();

// The CUDA device's name, or empty with *why set when there is none (or no CUDA build).
std::string cuda_device_name(std::string* why);

}  // namespace attnprof::bench
