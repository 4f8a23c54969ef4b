// The runtime and driver calls seen by CUPTI's callbacks, kept with the least work on the calling
// thread: each thread appends to a log of its own under its own (uncontended) lock, and the
// recorder drains the finished calls of all threads now and then. This is how `attnprof record`
// ties kernels to their launches (correlation id, time, thread, the call's name) without CUPTI's
// runtime/driver activity records, which cost microseconds per launch. CUDA-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace attnprof::capture {

struct CallRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = -1;  // -1 while the call runs
  std::int64_t tid = 0;      // the system thread id
  std::uint32_t correlation = 0;
  std::uint32_t cbid = 0;  // CUPTI's callback id of the call
  bool driver = false;     // a driver (cu*) call, else a runtime (cuda*) one
};

class CallLog {
 public:
  CallLog();
  CallLog(const CallLog&) = delete;
  CallLog& operator=(const CallLog&) = delete;

  // On the calling thread, at the call's entry and exit. A driver call inside a running call (the
  // runtime's own launch through the driver) is not kept: the outer call stands for it.
  void enter(bool driver, std::uint32_t cbid, std::uint32_t correlation, std::int64_t ts_ns);
  void exit(std::uint32_t correlation, std::int64_t ts_ns);

  // Moves out the finished calls of every thread, each thread's in the order they finished; calls
  // still running stay until they finish, and so do the calls of a thread that holds its log's lock
  // right now (it may be stopped in a signal handler). Logs of threads that ended are dropped.
  std::vector<CallRecord> drain();
  // Drops everything, running calls included (a new recording starts clean).
  void clear();
  // How many threads have a log now.
  std::size_t thread_logs();

 private:
  struct ThreadLog {
    std::mutex mutex;
    std::int64_t tid = 0;
    std::vector<CallRecord> done;
    std::vector<CallRecord> running;  // a stack: the innermost call last
  };
  ThreadLog& mine();

  const std::uint64_t serial_;
  std::mutex registry_mutex_;
  std::vector<std::unique_ptr<ThreadLog>> logs_;  // one per thread that made a call; kept for the log's life
};

}  // namespace attnprof::capture
