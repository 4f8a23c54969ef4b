// The registry: one row per attention implementation, with everything the
// bench needs of it (how to run it, its scratch, its byte model, the step of
// the ladder that leads to it, one line about it, and why it cannot run where
// it cannot). The ladder, `bench --list` and the table legend come from these
// rows; adding an implementation is one row plus its code.
#pragma once

#include <string>
#include <vector>

#include "attention/params.h"

namespace attnprof::bench {

using ByteModel = double (*)(const attention::AttentionParams& p);

struct Implementation {
  std::string name;
  bool on_gpu = false;
  attention::AttentionFn run = nullptr;
  attention::WorkspaceFn workspace = nullptr;  // null: none
  std::string unavailable;                     // non-empty: why it cannot run
  std::string about;                           // one line for --list and the table legend
  ByteModel bytes = nullptr;                   // bytes a forward moves (bytes_model.h)
  std::string ladder_from;                     // the implementation one cause away, "" if none
  std::string ladder_cause;                    // the cause this one removes from ladder_from
  bool takes_fp32 = true;                      // false: bf16/fp16 only
  bool takes_every_shape = true;               // false: refuses some shapes (InputError saying why)
  bool on_request = false;                     // true: runs only when --impl names it
  bool takes_dropout = false;                  // applies AttentionParams::dropout
  bool takes_paged_kv = false;                 // reads a paged cache (AttentionParams::block_table)
  // The backward (training), null: none. Its workspace begins with the forward's (BackwardFn).
  attention::BackwardFn backward = nullptr;
  attention::WorkspaceFn backward_workspace = nullptr;
  bool backward_takes_every_shape = true;  // false: its backward refuses some shapes (InputError saying why)
};

// In ladder order: the slow path first, then each fix, then the fused ones.
std::vector<Implementation> cpu_implementations();
// Empty when built without CUDA.
std::vector<Implementation> cuda_implementations();

// The CUDA device's name, or empty with *why set when there is none (or no CUDA build).
std::string cuda_device_name(std::string* why);

}  // namespace attnprof::bench
