// attnprof record: the parts of the command that are plain functions, so the
// argument handling is unit-tested without running CUDA programs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnprof::cli {

struct RecordOptions {
  std::string output = "attnprof_trace.json";  // .json or .json.gz
  std::string kinds = "all";                   // see capture/record_kinds.h
  // How runtime/driver calls are recorded: "callbacks" (a CUPTI callback per kept call into a
  // per-thread log) or "activity" (CUPTI's runtime/driver API activity records).
  std::string calls = "callbacks";
  bool doctor = false;  // print the doctor report afterwards
  // The capture window, seconds from each process's CUDA start: record from `delay` on, for `duration`
  // (0: to the end). Outside it CUPTI is off.
  double delay = 0;
  double duration = 0;
  // Or the window as NVTX ranges: "nvtx:NAME" (capture_range), from the push of its `first`-th
  // occurrence (0-based) over `count` of them; --steps FROM:TO sets first FROM and count TO-FROM+1.
  std::string capture_range;
  int capture_count = 0;             // 0: not given (1)
  std::string steps;                 // "FROM:TO" or ""
  std::vector<std::string> command;  // the program and its arguments
};

// Checks the options; throws InputError (one line naming the bad input).
void validate_record_options(const RecordOptions& options);

// The NVTX capture window the options ask for (range "" when none): the range's name, the first
// occurrence recorded (0-based) and how many. Throws InputError for a bad combination.
struct CaptureWindow {
  std::string range;
  long first = 0;
  long count = 1;
};
CaptureWindow capture_window(const RecordOptions& options);

// The variables the recorded program gets: the injection library for CUDA and
// NVTX, and where and what to record. `output` is made absolute, so the
// program may change directory.
std::vector<std::pair<std::string, std::string>> record_environment(const RecordOptions& options,
                                                                    const std::string& inject_library);

// $ATTNPROF_INJECT_LIBRARY when set, else libattnprof_inject.so next to the
// running attnprof binary; throws InputError when it is not there (attnprof
// built without the CUDA toolkit).
std::string find_inject_library();

// Runs `argv` with `env` added, waits, and returns its exit code (128 + signal
// when a signal ended it, 127 when it could not be started).
int run_with_environment(const std::vector<std::string>& argv,
                         const std::vector<std::pair<std::string, std::string>>& env);

// The whole command: validate, record, optionally run the doctor. Returns the
// recorded program's exit code.
int run_record(const RecordOptions& options);

}  // namespace attnprof::cli
