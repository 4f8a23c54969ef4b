// See call_log.h.
#include "capture/call_log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <utility>

namespace attnprof::capture {

namespace {
std::atomic<std::uint64_t> g_next_serial{1};
}  // namespace

CallLog::CallLog() : serial_(g_next_serial.fetch_add(1)) {}

CallLog::ThreadLog& CallLog::mine() {
  // This thread's log in the last CallLog it called (one per process in practice), known by the
  // log's serial number: a new CallLog may sit at a dead one's address.
  thread_local std::uint64_t owner = 0;
  thread_local ThreadLog* log = nullptr;
  if (owner == serial_) return *log;
  std::lock_guard lock(registry_mutex_);
  logs_.push_back(std::make_unique<ThreadLog>());
  logs_.back()->tid = static_cast<std::int64_t>(gettid());
  owner = serial_;
  log = logs_.back().get();
  return *log;
}

void CallLog::enter(bool driver, std::uint32_t cbid, std::uint32_t correlation, std::int64_t ts_ns) {
  ThreadLog& t = mine();
  std::lock_guard lock(t.mutex);
  // A driver call made inside a recorded call (cudaLaunchKernel launching through cuLaunchKernel):
  // the outer call stands for it, and its GPU work carries the outer call's correlation id, as with
  // CUPTI's activity records, which have no record of such inner calls.
  if (driver && !t.running.empty()) return;
  t.running.push_back(CallRecord{ts_ns, -1, t.tid, correlation, cbid, driver});
}

void CallLog::exit(std::uint32_t correlation, std::int64_t ts_ns) {
  ThreadLog& t = mine();
  std::lock_guard lock(t.mutex);
  // The innermost running call, unless an exit was missed (recording began inside a call).
  const auto it = std::find_if(t.running.rbegin(), t.running.rend(),
                               [&](const CallRecord& r) { return r.correlation == correlation; });
  if (it == t.running.rend()) return;
  CallRecord r = *it;
  r.end_ns = ts_ns;
  t.running.erase(std::next(it).base(), t.running.end());  // it, and any call inside it left open
  t.done.push_back(r);
}

std::vector<CallRecord> CallLog::drain() {
  std::vector<CallRecord> out;
  std::lock_guard registry(registry_mutex_);
  for (auto it = logs_.begin(); it != logs_.end();) {
    ThreadLog& t = **it;
    // A thread holding its lock now may be stopped inside a signal handler that waits for this very
    // drain: skip it, its calls come with the next one.
    std::unique_lock lock(t.mutex, std::try_to_lock);
    if (!lock.owns_lock()) {
      ++it;
      continue;
    }
    std::vector<CallRecord> done;
    done.swap(t.done);
    out.insert(out.end(), done.begin(), done.end());
    // The log of a thread that has ended, with nothing left in it, goes: a job that keeps starting
    // threads does not keep a log for each. (Its thread_local pointer died with the thread.)
    const bool gone = t.running.empty() && syscall(SYS_tgkill, getpid(), t.tid, 0) != 0 && errno == ESRCH;
    lock.unlock();
    it = gone ? logs_.erase(it) : it + 1;
  }
  return out;
}

void CallLog::clear() {
  std::lock_guard registry(registry_mutex_);
  for (const auto& t : logs_) {
    std::lock_guard lock(t->mutex);
    t->done.clear();
    t->running.clear();
  }
}

std::size_t CallLog::thread_logs() {
  std::lock_guard registry(registry_mutex_);
  return logs_.size();
}

}  // namespace attnprof::capture
